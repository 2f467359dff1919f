"""worlds check count rules (slice / full scope), cross-user rules and the D.4 line filter.

Each test copies User A to a temporary worlds folder, breaks one thing, and asserts the exact
violation that names it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mempa_tui.scripts import check_worlds
from mempa_tui.scripts._check_timeline import (
    change_direction,
    differing_pairs,
    settings_used,
)
from mempa_tui.scripts._filter import filter_line
from mempa_tui.scripts.loader import load_user, scan_user

WORLDS = Path(__file__).resolve().parents[1] / "worlds"


def _trim_to_slice(user_dir: Path) -> None:
    """Make a copied User A the issue-2 slice: ``scope: slice``, its ``slice:`` steps only, and
    no session, event or pre-event probe outside them."""
    bundle = load_user(WORLDS, "A")
    kept = list(bundle.timeline.slice)
    (user_dir / "timeline.yaml").write_text(
        "user: A\nscope: slice\nsteps:\n" + "".join(f"  - {sid}\n" for sid in kept)
    )
    for sid in [*bundle.sessions, *bundle.events]:
        if sid not in kept:
            folder = "sessions" if sid in bundle.sessions else "events"
            (user_dir / folder / f"{sid}.yaml").unlink()
    for pid, probe in bundle.probes.items():
        if probe.event is not None and probe.event not in kept:
            (user_dir / "probes" / f"{pid}.yaml").unlink()


def _copy_a(dest: Path, labels: tuple[str, ...] = ("A",)) -> Path:
    """A worlds folder holding User A's slice (see :func:`_trim_to_slice`) under each label (ids
    and labels rewritten)."""
    for label in labels:
        target = dest / "users" / label
        shutil.copytree(WORLDS / "users" / "A", target)
        _trim_to_slice(target)
        if label == "A":
            continue
        for path in target.rglob("*.yaml"):
            if "fixtures" in path.parts:
                continue
            text = path.read_text()
            text = re.sub(r"\bA-(S|E|P)", rf"{label}-\1", text)
            text = re.sub(r"^label: A$", f"label: {label}", text, flags=re.MULTILINE)
            text = re.sub(r"^user: A$", f"user: {label}", text, flags=re.MULTILINE)
            path.write_text(text)
            if path.name.startswith("A-"):
                path.rename(path.with_name(label + path.name[1:]))
    return dest


def _set_scope(worlds: Path, label: str, scope: str) -> None:
    path = worlds / "users" / label / "timeline.yaml"
    path.write_text(path.read_text().replace("scope: slice", f"scope: {scope}"))


def _messages(worlds: Path) -> list[str]:
    return [v.message for v in check_worlds(worlds)]


def test_user_a_slice_passes(tmp_path: Path) -> None:
    assert check_worlds(_copy_a(tmp_path / "w")) == []


def _drop(worlds: Path, sid: str) -> None:
    user = worlds / "users" / "A"
    timeline = user / "timeline.yaml"
    timeline.write_text(timeline.read_text().replace(f"  - {sid}\n", ""))
    (user / "sessions" / f"{sid}.yaml").unlink()


def test_slice_needs_sessions_attributes_and_two_per_cell(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w")
    bundle = load_user(WORLDS, "A")
    assert (bundle.sessions["A-S13"].attribute, bundle.sessions["A-S14"].attribute) == (
        "solution_breadth",
        "solution_breadth",
    )
    _drop(worlds, "A-S14")
    assert _messages(worlds) == [
        "scope slice: cell work/solution_breadth has 1 session(s), at least 2 needed"
    ]
    _drop(worlds, "A-S13")  # the cell is gone: five attributes left, 12 sessions still enough
    assert _messages(worlds) == ["scope slice: sessions cover 5 attributes, at least 6 needed"]
    _drop(worlds, "A-S12")
    assert "scope slice: 11 accumulation sessions on the timeline, at least 12 needed" in _messages(worlds)


def test_same_task_in_one_cell_is_reported_at_the_task_line(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w")
    bundle = load_user(WORLDS, "A")
    first = bundle.sessions["A-S01"]
    twin = next(
        s
        for s in bundle.sessions.values()
        if s.id != first.id and (s.context, s.attribute) == (first.context, first.attribute)
    )
    path = worlds / "users" / "A" / "sessions" / f"{twin.id}.yaml"
    path.write_text(path.read_text().replace(f"task: {twin.task}", f"task: {first.task}"))
    found = [v for v in check_worlds(worlds) if "need different tasks" in v.message]
    assert len(found) == 1
    assert found[0].path == str(path)
    assert path.read_text().splitlines()[found[0].line - 1].startswith("task:")


def test_full_scope_reports_every_count_a_slice_misses(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w")
    _set_scope(worlds, "A", "full")
    messages = _messages(worlds)
    assert "scope full: 14 accumulation sessions on the timeline, 94 needed" in messages
    assert "scope full: 1 change events on the timeline, 5 needed" in messages
    assert "scope full: events use slots [1]; need 1, 2, 3 and two of 4, 5, 6" in messages
    assert "scope full: 1 pre-event probes, 5 needed" in messages
    assert (
        "scope full: changing cell work/solution_breadth has 2 session(s) before the event "
        "and 0 after; 3 and 2 needed"
    ) in messages
    stable = [m for m in messages if m.startswith("scope full: stable cell")]
    assert len(stable) == 27  # every cell but the changing one misses its three sessions
    assert "scope full: stable cell work/verbosity has 2 session(s), 3 needed" in stable
    assert "scope full: stable cell work/tone_formality has 0 session(s), 3 needed" in stable
    assert not any(m.startswith("scope slice") for m in messages)


def test_unknown_scope_is_a_schema_error(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w")
    _set_scope(worlds, "A", "partial")
    found = [v for v in check_worlds(worlds) if v.path.endswith("timeline.yaml")]
    assert found and "scope" in found[0].message


def test_four_copies_of_a_break_the_cross_user_matrix_rules(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w", ("A", "B", "C", "D"))
    scans = [scan_user(worlds, label) for label in "ABCD"]
    assert len(differing_pairs(scans)) == 32  # A has 8 differing attributes, four times
    assert len(settings_used(scans)) == 22
    messages = _messages(worlds)
    assert any(
        m.startswith("32 of 56 user-attribute pairs differ") and "exactly 18 needed" in m for m in messages
    )
    unused = next(m for m in messages if m.startswith("the matrices use 22 of 32 settings"))
    assert "process_visibility=Full narration" in unused and "verbosity=Terse" not in unused
    # the event rules wait until every user is full
    assert not any("change events cover" in m for m in messages)
    for label in "ABCD":
        _set_scope(worlds, label, "full")
    messages = _messages(worlds)
    assert "the change events cover 1 attributes, at least 9 needed" in messages
    assert "every change event moves up the setting list; both directions needed" in messages


def test_three_users_skip_the_cross_user_rules(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w", ("A", "B", "C"))
    assert check_worlds(worlds) == []


def test_change_direction_follows_the_setting_list() -> None:
    event = load_user(WORLDS, "A").events["A-E01"]
    assert (event.old_setting, event.new_setting, change_direction(event)) == (
        "Low",
        "High",
        1,
    )
    back = event.model_copy(update={"old_setting": "High", "new_setting": "Low"})
    assert change_direction(back) == -1


@pytest.mark.parametrize(
    ("line", "keys", "expected"),
    [
        (
            "Can you sort out the autonomy level for me?",
            (),
            ["names the attribute 'Autonomy Level'"],
        ),
        (
            "Tone and formality matter here.",
            (),
            ["names the attribute 'Tone & Formality'"],
        ),
        (
            "this is about solution_breadth",
            (),
            ["names the attribute 'Solution Breadth'"],
        ),
        (
            "From now on keep it terse.",
            ("verbosity",),
            ["states the setting 'Terse' as a preference (with 'from now on')"],
        ),
        (
            "I'd rather you gave me full narration.",
            ("process_visibility",),
            ["states the setting 'Full narration' as a preference (with 'i'd rather')"],
        ),
        # a setting word without a preference phrase is ordinary speech
        ("The river is high this week.", ("proactive_outreach",), []),
        # a setting of an attribute not active in the script is not matched
        ("From now on keep it terse.", ("autonomy_level",), []),
        ("Find me Ruth's email about the consultation.", ("verbosity",), []),
    ],
)
def test_filter_line(line: str, keys: tuple[str, ...], expected: list[str]) -> None:
    assert filter_line(line, keys) == expected


def test_filter_hit_in_a_session_fails_the_check_at_its_line(tmp_path: Path) -> None:
    worlds = _copy_a(tmp_path / "w")
    path = worlds / "users" / "A" / "sessions" / "A-S01.yaml"
    text = path.read_text()
    old = "afternoon; ask the assistant to dig it out."
    assert old in text
    path.write_text(text.replace(old, "afternoon; ask the assistant to dig it out. I prefer Terse answers."))
    found = [v for v in check_worlds(worlds) if "Appendix D.4" in v.message]
    assert len(found) == 1, found
    assert found[0].path == str(path)
    assert "'Terse'" in found[0].message
    assert "conveys:" in path.read_text().splitlines()[found[0].line - 1]
