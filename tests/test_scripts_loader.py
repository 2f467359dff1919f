"""load_user: the bundle of a valid user, and path:line errors for broken files."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest

from mempa_tui.scripts import WorldFileError, list_users, load_user
from mempa_tui.scripts.loader import scan_user
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent
from mempa_tui.taxonomy import Context

VALID = Path(__file__).parent / "fixtures_world" / "valid"


@pytest.fixture()
def worlds(tmp_path: Path) -> Path:
    shutil.copytree(VALID, tmp_path / "worlds")
    return tmp_path / "worlds"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {path}"
    path.write_text(text.replace(old, new))


def line_of(path: Path, fragment: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if fragment in line:
            return number
    raise AssertionError(f"{fragment!r} not in {path}")


def test_valid_user_loads() -> None:
    bundle = load_user(VALID, "T")
    assert list_users(VALID) == ["T"]
    assert bundle.persona.name == "Tamsin Vale"
    assert set(bundle.sessions) == {"T-s1", "T-s2"} and set(bundle.events) == {"T-ev1"}
    assert set(bundle.probes) == {"T-pre-ev1", "T-final-work-verbosity"}
    assert isinstance(bundle.step("T-s1"), AccumulationSession)
    assert isinstance(bundle.step("T-ev1"), ChangeEvent)
    with pytest.raises(KeyError):
        bundle.step("T-pre-ev1")  # probes are not timeline steps
    assert [s.id for s in bundle.steps()] == ["T-s1", "T-s2", "T-ev1"]
    state = bundle.world_state()
    assert "email/inbox.yaml" in state and not any("_notes" in p for p in state)


def test_targets_apply_change_events_from_their_start() -> None:
    bundle = load_user(VALID, "T")
    event = bundle.events["T-ev1"]
    before = bundle.targets_at(Context.WORK, datetime(2026, 3, 16, 8, 0))
    after = bundle.targets_at("work", event.starts_at)
    assert before["solution_breadth"] == "Low" and after["solution_breadth"] == "High"
    assert {k: v for k, v in before.items() if k != "solution_breadth"} == {
        k: v for k, v in after.items() if k != "solution_breadth"
    }
    assert bundle.targets_at(Context.PERSONAL, event.starts_at)["solution_breadth"] == "High"
    assert len(after) == 14


def test_missing_field_points_at_the_mapping(worlds: Path) -> None:
    path = worlds / "users/T/sessions/T-s1.yaml"
    edit(path, "    goal: Get the inspection email found.\n", "")
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    err = info.value
    assert err.path == str(path) and err.line == line_of(path, "- id: opening")
    assert "missing required field 'goal'" in err.message
    assert str(err).startswith(f"{path}:{err.line}: ")


def test_unknown_setting_points_at_its_value(worlds: Path) -> None:
    path = worlds / "users/T/preferences.yaml"
    text = path.read_text()
    first = text.index("setting: Terse")
    path.write_text(text[:first] + "setting: Chatty" + text[first + len("setting: Terse") :])
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    assert info.value.path == str(path)
    assert info.value.line == line_of(path, "setting: Chatty")
    assert "'Chatty' is not a setting of Verbosity" in info.value.message


def test_unknown_reaction_setting_in_a_decision_point(worlds: Path) -> None:
    path = worlds / "users/T/sessions/T-s1.yaml"
    edit(path, "        Detailed: Skims", "        Wordy: Skims")
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    assert info.value.line == line_of(path, "Wordy: Skims")


def test_unknown_key_points_at_the_key(worlds: Path) -> None:
    path = worlds / "users/T/probes/T-pre-ev1.yaml"
    edit(path, "    conveys: Asks when", "    conveyz: Asks when")
    errors = scan_user(worlds, "T").errors
    found = {(e.path, e.line, e.message) for e in errors}
    assert (
        str(path),
        line_of(path, "conveyz:"),
        "beats.0.conveyz: unknown field 'conveyz' (not allowed here)",
    ) in found
    assert (str(path), line_of(path, "- id: ask"), "beats.0: missing required field 'conveys'") in found


def test_bad_value_points_at_the_value(worlds: Path) -> None:
    path = worlds / "users/T/events/T-ev1.yaml"
    edit(path, "slot: 1", "slot: 9")
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    assert info.value.line == line_of(path, "slot: 9") and "slot" in info.value.message


def test_model_rule_is_located_by_the_field_it_names(worlds: Path) -> None:
    path = worlds / "users/T/sessions/T-s1.yaml"
    edit(path, "    releases: [deadline]", "    releases: [deadlines]")
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    assert info.value.line == line_of(path, "releases: [deadlines]")
    assert "unknown fact 'deadlines'" in info.value.message


def test_yaml_syntax_error_has_a_line(worlds: Path) -> None:
    path = worlds / "users/T/timeline.yaml"
    edit(path, "  - T-s2\n", "  - T-s2\n - broken: [\n")
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    assert info.value.path == str(path) and info.value.line >= line_of(path, "broken")
    assert "invalid YAML" in info.value.message


def test_duplicate_ids_across_files(worlds: Path) -> None:
    src = worlds / "users/T/sessions/T-s1.yaml"
    copy = worlds / "users/T/sessions/T-s1-copy.yaml"
    shutil.copy(src, copy)
    with pytest.raises(WorldFileError) as info:
        load_user(worlds, "T")
    err = info.value
    flagged, other = (src, copy) if err.path == str(src) else (copy, src)
    assert err.path == str(flagged) and err.line == line_of(flagged, "id: T-s1")
    assert f"duplicate id 'T-s1', also used in {other}" in err.message


def test_missing_files_are_named(worlds: Path) -> None:
    (worlds / "users/T/persona.yaml").unlink()
    with pytest.raises(WorldFileError, match="persona.yaml:1: missing persona file"):
        load_user(worlds, "T")
    with pytest.raises(WorldFileError, match="no folder for user 'Q'"):
        load_user(worlds, "Q")


def test_times_like_10_30_stay_text(worlds: Path) -> None:
    path = worlds / "users/T/sessions/T-s1.yaml"
    edit(path, "      query: boiler", "      query: 10:30")
    bundle = load_user(worlds, "T")
    assert bundle.sessions["T-s1"].tool_steps[0].args["query"] == "10:30"
