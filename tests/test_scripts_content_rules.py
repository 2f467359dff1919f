"""worlds check content rules and the shortcut classifiers: each rule fails on a broken copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_scripts_check import complete_tree, edit, line_of, only

from mempa_tui.scripts import check_worlds, load_user
from mempa_tui.scripts._check_content import (
    CUE_RULE,
    find_cues,
    manner_feedback,
    setting_words,
    similar_siblings,
)
from mempa_tui.scripts._shortcut import (
    ShortcutItem,
    cue_accuracy,
    definition_accuracy,
    naive_bayes_accuracy,
    shortcut_results,
)
from mempa_tui.taxonomy import Context, attribute

USER = Path("users") / "T"


@pytest.fixture()
def worlds(tmp_path: Path) -> Path:
    return complete_tree(tmp_path / "worlds")


def test_the_complete_small_user_passes_the_content_rules(worlds: Path) -> None:
    assert check_worlds(worlds) == []


def test_update_of_a_record_the_session_never_binds_fails(worlds: Path) -> None:
    # ev_0001 exists in the fixture tree, but the session is about the boiler email only
    s1 = worlds / USER / "sessions" / "T-s1.yaml"
    s1.write_text(
        s1.read_text()
        + "  - tool: calendar_event_update\n    args:\n      event_id: ev_0001\n      location: Room 2\n"
    )
    v = only(check_worlds(worlds))
    assert v.path.endswith("T-s1.yaml") and v.line == line_of(s1, "event_id: ev_0001")
    assert "ev_0001" in v.message and "neither bound" in v.message


def test_update_of_a_bound_record_of_another_domain_fails_and_a_created_one_passes(worlds: Path) -> None:
    s1 = worlds / USER / "sessions" / "T-s1.yaml"
    original = s1.read_text()
    # the event binds email em_0002; a calendar update naming that id is the wrong type
    s1.write_text(original + "  - tool: document_update\n    args: {document_id: em_0002, body: x}\n")
    messages = [v.message for v in check_worlds(worlds) if "changes document_id" in v.message]
    assert len(messages) == 1 and "bound only as a email record, not documents" in messages[0]
    # an event the session created itself may be updated
    s1.write_text(
        original
        + "  - tool: calendar_event_create\n    args: {title: Boiler follow-up, date: 2026-03-20,"
        " start_time: '10:00', end_time: '10:30'}\n"
        + "  - tool: calendar_event_update\n    args: {event_id: ev_0003, location: Plant room}\n"
    )
    assert check_worlds(worlds) == []


def test_manner_feedback_in_a_probe_fails(worlds: Path) -> None:
    probe = worlds / USER / "probes" / "T-final-work-verbosity.yaml"
    edit(probe, "Terse: Takes the action.", "Terse: Says the reply was too long, then takes the action.")
    v = only(check_worlds(worlds))
    assert v.path.endswith("T-final-work-verbosity.yaml") and v.line == line_of(probe, "too long")
    assert "manner of a reply ('too long')" in v.message


def test_setting_words_in_a_reaction_fail(worlds: Path) -> None:
    s1 = worlds / USER / "sessions" / "T-s1.yaml"
    edit(s1, "Takes the one-line answer", "Takes the terse answer")
    v = only(check_worlds(worlds))
    assert v.line == line_of(s1, "terse answer") and "setting phrase 'terse'" in v.message


def test_setting_words_in_a_change_event_transcript_fail(worlds: Path) -> None:
    ev = worlds / USER / "events" / "T-ev1.yaml"
    edit(ev, "Can you find a day next week", "One step at a time, can you find a day next week")
    v = only(check_worlds(worlds))
    assert v.path.endswith("T-ev1.yaml") and "'one step at a time'" in v.message


def test_a_scope_limiter_before_a_task_expansion_decision_fails(worlds: Path) -> None:
    probe = worlds / USER / "probes" / "final-work-task_expansion.yaml"
    edit(probe, "conveys: Asks to save the plumber.", "conveys: Asks to save the plumber. Nothing else.")
    v = only(check_worlds(worlds))
    assert v.line == line_of(probe, "Nothing else.") and "scope limiter 'Nothing else'" in v.message


def test_similar_sessions_of_one_cell_are_reported(worlds: Path) -> None:
    sessions = worlds / USER / "sessions"
    copy = (sessions / "T-s1.yaml").read_text().replace("id: T-s1", "id: T-s3")
    copy = copy.replace("starts_at: 2026-03-02T09:00", "starts_at: 2026-03-03T09:00")
    (sessions / "T-s3.yaml").write_text(copy)
    timeline = worlds / USER / "timeline.yaml"
    edit(timeline, "  - T-s2\n", "  - T-s2\n  - T-s3\n")
    pairs = similar_siblings(load_user(worlds, "T"))
    assert [(a, b) for a, b, _ in pairs] == [("T-s1", "T-s3")]
    found = [v for v in check_worlds(worlds) if "4-grams" in v.message]
    assert len(found) == 1 and found[0].path.endswith("T-s3.yaml") and "T-s1 and T-s3" in found[0].message


def _items(texts: dict[str, list[str]], key: str = "guidance_level") -> list[ShortcutItem]:
    """Items of one attribute; ``texts`` maps a setting to its texts, spread over users A-D."""
    out = []
    for setting, lines in texts.items():
        for n, text in enumerate(lines):
            user = "ABCD"[n % 4]
            out.append(ShortcutItem(user, f"{user}-S{setting}{n}", Context.WORK, key, setting, text))
    return out


def test_cue_balance_finds_a_phrase_that_goes_with_one_setting() -> None:
    guided = [f"I have never done a {thing} before." for thing in ("tax return", "bleed", "visa", "rota", "sample")]
    assumed = [f"Please sort the {thing} for Thursday." for thing in ("tax return", "bleed", "visa", "rota", "sample")]
    cues = find_cues(_items({"Guided": guided, "Assumed": assumed}))
    assert {(c.setting, c.phrase) for c in cues} >= {("Guided", "never")}
    assert all(c.share >= CUE_RULE.min_share for c in cues)
    # the same phrase under both settings carries no information and passes
    assumed_balanced = [f"I have never done a {t} for Thursday." for t in ("tax return", "bleed", "visa", "rota", "sample")]
    balanced = find_cues(_items({"Guided": guided, "Assumed": assumed_balanced}))
    assert not [c for c in balanced if c.phrase == "never"]


def test_naive_bayes_reads_a_cue_across_users_and_scores_chance_without_one() -> None:
    cued = _items({"Guided": ["never done it"] * 8, "Assumed": ["sort it thursday"] * 8})
    assert naive_bayes_accuracy(cued) == 1.0
    blank = _items({"Guided": ["same words here"] * 8, "Assumed": ["same words here"] * 8})
    assert naive_bayes_accuracy(blank) == pytest.approx(0.5)


def test_cue_voting_reads_a_cue_across_users_and_scores_chance_without_one() -> None:
    cued = _items({"Guided": ["I have never done it"] * 8, "Assumed": ["sort it by thursday"] * 8})
    assert cue_accuracy(cued) == 1.0
    blank = _items({"Guided": ["same words here"] * 8, "Assumed": ["same words here"] * 8})
    assert cue_accuracy(blank) == pytest.approx(0.5)


def test_definition_similarity_picks_the_setting_whose_behaviour_is_restated() -> None:
    attr = attribute("process_visibility")
    items = [ShortcutItem("A", f"A-{s.name}", Context.WORK, attr.key, s.name, s.behaviour) for s in attr.settings]
    assert definition_accuracy(items) == 1.0
    empty = [ShortcutItem("A", "A-x", Context.WORK, attr.key, attr.settings[0].name, "zzz qqq")]
    assert definition_accuracy(empty) == pytest.approx(1 / len(attr.settings))


def test_phrase_lists_match_the_reported_leaks() -> None:
    assert setting_words("Drop the formal letter tone") == ["formal"]
    assert setting_words("take it one step at a time") == ["one step at a time"]
    assert setting_words("a high wall and a low gate") == []
    assert manner_feedback("Say you wanted all three at once.") == ["wanted all"]
    assert manner_feedback("Give me all three at once.") == ["all three at once"]
    assert manner_feedback("Say you only needed the day, not the case for it.") == ["only needed", "the case for it"]
    assert manner_feedback("Say it could have picked sensible defaults instead of asking.") == [
        "could have picked",
        "instead of asking",
    ]
    assert manner_feedback("Ask whether Teo can walk.") == []


def test_shortcut_results_cover_probes_decisions_and_personas(worlds: Path) -> None:
    results = {r.kind: r for r in shortcut_results([load_user(worlds, "T")])}
    assert results["probe"].items == 28 and results["decision"].items == 2 and results["persona"].items == 28
    assert results["persona"].chance == pytest.approx(0.452, abs=0.001)
    for r in results.values():
        assert 0.0 <= r.definition <= 1.0 and 0.0 <= r.bag_of_words <= 1.0 and 0.0 <= r.cues <= 1.0


WORLDS = Path(__file__).resolve().parents[1] / "worlds"


def test_a_decision_point_cue_in_the_shipped_worlds_fails(tmp_path: Path) -> None:
    """Broken copy of all four users: an inexperience line at five Guided decision points."""
    import shutil

    from mempa_tui.scripts._shortcut import decision_items

    worlds = tmp_path / "worlds"
    shutil.copytree(WORLDS, worlds)
    bundles = [load_user(worlds, label) for label in "ABCD"]
    guided = [i for i in decision_items(bundles) if i.attribute == "guidance_level" and i.target == "Guided"]
    by_user: dict[str, list[str]] = {}
    for i in sorted(guided, key=lambda i: i.id):
        by_user.setdefault(i.user, []).append(i.id)
    picked = [ids[k] for k in range(2) for ids in by_user.values() if k < len(ids)][:6]
    assert len({sid[0] for sid in picked}) >= 3
    for sid in picked:
        path = worlds / "users" / sid[0] / "sessions" / f"{sid}.yaml"
        text = path.read_text()
        first = re.search(r"\nfacts:\n( *)- id:", text)
        assert first is not None, sid
        pad = first.group(1)
        fact = f"{pad}- id: cue_test\n{pad}  text: I have never done anything like this in my life.\n"
        path.write_text(text[: first.start(1)] + fact + text[first.start(1) :])
    cue = [v for v in check_worlds(worlds) if "decision-point cue" in v.message]
    assert cue and {Path(v.path).stem for v in cue} >= set(picked)
    assert all("guidance_level" in v.message and "Guided" in v.message for v in cue)
