"""worlds check: a complete small user passes; each broken copy fails at the right file and line."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.scripts import Violation, check_worlds
from mempa_tui.taxonomy import ATTRIBUTES, Context

VALID = Path(__file__).parent / "fixtures_world" / "valid"
USER = Path("users") / "T"


def _final_probe(ctx: Context, key: str, when: datetime) -> str:
    """A minimal final probe for one cell; write-lock attributes lock a contact_create call."""
    attr = next(a for a in ATTRIBUTES if a.key == key)
    reactions = "".join(f"        {s}: Carries on.\n" for s in attr.setting_names)
    expected = "".join(f"  {s}: A reply that does it the {s} way.\n" for s in attr.setting_names)
    text = (
        f"id: T-final-{ctx.value}-{key}\ncontext: {ctx.value}\nattribute: {key}\n"
        f"starts_at: {when:%Y-%m-%dT%H:%M}\nscenario: errands\ntask: Add the plumber to the contacts.\n"
        "probe_kind: final\nfacts:\n  - id: details\n    text: The plumber is Piet Koster.\n"
        "beats:\n  - id: ask\n    goal: Get the plumber saved.\n    conveys: Asks to save the plumber.\n"
        "    records: [contacts/contacts:ct_0001]\n    releases: [details]\n"
        f"    active_attributes: [{key}]\n    decision_point:\n      attribute: {key}\n"
        f"      reactions:\n{reactions}      falls_short: Asks again.\n"
        f"expected_replies:\n{expected}"
    )
    if attr.write_lock:
        text += (
            "write_lock:\n  tool: contact_create\n  match: {name: Piet Koster}\n  unlocked_by: details\n"
            "tool_steps:\n  - tool: contact_create\n    args: {name: Piet Koster}\n"
        )
    return text


def complete_tree(dest: Path) -> Path:
    """Copy the small valid user and add a final probe for each of the 27 other cells."""
    shutil.copytree(VALID, dest)
    probes = dest / USER / "probes"
    when = datetime(2026, 6, 21, 9, 0)
    for ctx in Context:
        for attr in ATTRIBUTES:
            if (ctx, attr.key) == (Context.WORK, "verbosity"):
                continue  # written by hand in the fixture
            when += timedelta(hours=1)
            (probes / f"final-{ctx.value}-{attr.key}.yaml").write_text(_final_probe(ctx, attr.key, when))
    return dest


@pytest.fixture()
def worlds(tmp_path: Path) -> Path:
    return complete_tree(tmp_path / "worlds")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {path}"
    path.write_text(text.replace(old, new))


def line_of(path: Path, fragment: str, nth: int = 1) -> int:
    seen = 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if fragment in line:
            seen += 1
            if seen == nth:
                return number
    raise AssertionError(f"{fragment!r} not in {path}")


def only(violations: list[Violation]) -> Violation:
    assert len(violations) == 1, "\n".join(map(str, violations))
    return violations[0]


def test_complete_user_passes(worlds: Path) -> None:
    assert check_worlds(worlds) == []


def test_static_tree_reports_the_cells_without_final_probe() -> None:
    v = only(check_worlds(VALID))
    assert v.path == str(VALID / USER / "timeline.yaml") and v.line == 1
    assert v.message.startswith("27 of 28 cells have no final probe")
    assert "personal/topic_management" in v.message and "work/verbosity" not in v.message


def test_violations_print_as_path_line_message() -> None:
    assert str(Violation("a.yaml", 3, "bad")) == "a.yaml:3: bad"


def test_all_violations_are_collected_and_sorted(worlds: Path) -> None:
    s1 = worlds / USER / "sessions/T-s1.yaml"
    edit(s1, "      - email/inbox:em_0001", "      - email/inbox:em_0077")
    edit(s1, "      message_id: em_0001", "      message_id: em_0004")
    pref = worlds / USER / "preferences.yaml"
    edit(pref, "    setting: Organize", "    setting: Sort")
    found = check_worlds(worlds)
    assert found == sorted(found)
    assert {v.path for v in found} == {str(s1), str(pref)}
    assert len(found) >= 3


def test_schema_error_missing_field(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s2.yaml"
    edit(path, "    goal: Finish.\n", "")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "- id: reaction"))
    assert "missing required field 'goal'" in v.message


def test_unknown_setting_name(worlds: Path) -> None:
    path = worlds / USER / "preferences.yaml"
    edit(path, "    setting: One-at-a-time", "    setting: One-by-one")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "setting: One-by-one"))


def test_beat_record_that_does_not_exist(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "      - email/inbox:em_0001", "      - email/inbox:em_0077")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "email/inbox:em_0077"))
    assert v.message.endswith("no such record in the fixture tree")  # no inbox id is close: nothing offered


def test_misspelt_ids_get_the_closest_ids_of_their_own_kind(worlds: Path) -> None:
    # a record: only record ids of the named collection, compared without the shared prefix
    session = worlds / USER / "sessions/T-s1.yaml"
    edit(session, "      - email/inbox:em_0001", "      - email/inbox:em_001")
    (v,) = [v for v in check_worlds(worlds) if "em_001'" in v.message]
    assert v.message == ("record 'email/inbox:em_001': no such record in the fixture tree "
                         "(closest: email/inbox:em_0001)")
    # a timeline step (case ignored): session and change-event ids, not record or probe ids
    timeline = worlds / USER / "timeline.yaml"
    edit(timeline, "  - T-s2", "  - T-S2")
    # a pre-event probe's event: change-event ids only
    edit(worlds / USER / "probes/T-pre-ev1.yaml", "event: T-ev1", "event: T-evl")
    messages = [v.message for v in check_worlds(worlds)]
    assert "step 'T-S2' names no session or change event (closest: T-s2)" in messages
    assert "event: 'T-evl' names no change event (closest: T-ev1)" in messages


def test_a_misspelt_id_with_nothing_close_gets_no_suggestion(worlds: Path) -> None:
    edit(worlds / USER / "timeline.yaml", "  - T-ev1", "  - T-e9z")  # difflib's own cutoff (0.6) offered T-ev1
    messages = [v.message for v in check_worlds(worlds)]
    assert "step 'T-e9z' names no session or change event" in messages
    assert not any("closest" in m for m in messages)


def test_beat_record_not_yet_visible(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "      - email/inbox:em_0001", "      - email/inbox:em_0002")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "email/inbox:em_0002"))
    assert "enters the world at 2026-03-02T10:30" in v.message


def test_record_visible_only_from_the_world_event_on(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "      at: 2026-03-02T11:00", "      at: 2026-03-02T10:00")
    found = check_worlds(worlds)
    assert [(v.path, v.line) for v in found] == [
        (str(path), line_of(path, "email/inbox:em_0002", 1)),
        (str(path), line_of(path, "email/inbox:em_0002", 2)),
    ]


def test_unknown_collection_in_a_record_ref(worlds: Path) -> None:
    path = worlds / USER / "probes/T-final-work-verbosity.yaml"
    edit(path, "documents/documents:doc_0001", "documents/files:doc_0001")
    v = only(check_worlds(worlds))
    assert v.line == line_of(path, "documents/files:doc_0001") and "unknown collection" in v.message


def test_world_event_before_session_start(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "      at: 2026-03-02T11:00", "      at: 2026-03-02T08:00")
    found = check_worlds(worlds)
    assert (str(path), line_of(path, "at: 2026-03-02T08:00")) in {(v.path, v.line) for v in found}
    assert any("not after the session start" in v.message for v in found)


def test_timeline_step_missing_and_file_not_on_timeline(worlds: Path) -> None:
    path = worlds / USER / "timeline.yaml"
    edit(path, "  - T-s2", "  - T-s3")
    found = check_worlds(worlds)
    s2 = worlds / USER / "sessions/T-s2.yaml"
    assert {(v.path, v.line) for v in found} == {
        (str(path), line_of(path, "T-s3")),
        (str(s2), line_of(s2, "id: T-s2")),
    }
    assert any(v.message.endswith("names no session or change event (closest: T-s1, T-s2)") for v in found)


def test_timeline_order(worlds: Path) -> None:
    path = worlds / USER / "timeline.yaml"
    edit(path, "  - T-s1\n  - T-s2\n", "  - T-s2\n  - T-s1\n")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "T-s1")) and "not after the previous" in v.message


def test_pre_event_probe_must_start_an_hour_before(worlds: Path) -> None:
    path = worlds / USER / "probes/T-pre-ev1.yaml"
    edit(path, "starts_at: 2026-03-16T08:00", "starts_at: 2026-03-16T07:00")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "starts_at:")) and "one hour" in v.message


def test_final_probe_must_follow_the_last_step(worlds: Path) -> None:
    path = worlds / USER / "probes/T-final-work-verbosity.yaml"
    edit(path, "starts_at: 2026-06-20T09:00", "starts_at: 2026-03-10T09:00")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "starts_at:")) and "after the last step" in v.message


def test_change_event_needs_its_pre_event_probe(worlds: Path) -> None:
    (worlds / USER / "probes/T-pre-ev1.yaml").unlink()
    event = worlds / USER / "events/T-ev1.yaml"
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(event), 1) and "no pre-event probe" in v.message


def test_duplicate_final_probe(worlds: Path) -> None:
    src = worlds / USER / "probes/T-final-work-verbosity.yaml"
    dup = worlds / USER / "probes/zz-dup.yaml"
    dup.write_text(src.read_text().replace("id: T-final-work-verbosity", "id: T-final-work-verbosity-2"))
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(dup), line_of(dup, "attribute: verbosity")) and "already has" in v.message


def test_write_lock_attribute_must_declare_a_lock(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s2.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("write_lock:")] + text[text.index("tool_steps:") :])
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (
        str(path),
        line_of(path, "attribute: autonomy_level"),
    ) and "write_lock" in v.message


def test_write_lock_must_name_a_write_tool_and_bite(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s2.yaml"
    edit(path, "  tool: email_message_send\n", "  tool: email_message_read\n")
    found = check_worlds(worlds)
    lines = {v.line: v.message for v in found}
    assert "is a read tool" in lines[line_of(path, "  tool: email_message_read")]
    assert "matches none of the tool_steps" in lines[line_of(path, "write_lock:")]


def test_failing_tool_step(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "      message_id: em_0001", "      message_id: em_0004")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "- tool: email_message_read"))
    assert "message_id 'em_0004' names no email" in v.message


def test_unknown_tool_in_a_step(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(path, "- tool: email_message_search", "- tool: mail_search")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "tool: mail_search")) and "unknown tool" in v.message


def test_change_event_old_setting_must_match_the_matrix(worlds: Path) -> None:
    path = worlds / USER / "events/T-ev1.yaml"
    edit(path, "old_setting: Low\nnew_setting: High", "old_setting: High\nnew_setting: Low")
    edit(path, "      ix_setting: Low", "      ix_setting: High")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "old_setting:")) and "'Low'" in v.message


def test_change_event_scripted_call_is_replayed(worlds: Path) -> None:
    path = worlds / USER / "events/T-ev1.yaml"
    edit(path, "            end_date: 2026-03-20", "            end_date: 2026-03-01")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "- tool: calendar_event_search"))
    assert "end_date '2026-03-01' is before start_date '2026-03-16'" in v.message


def test_fact_released_twice(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s1.yaml"
    edit(
        path,
        "    conveys: Reacts to the summary and confirms the Friday deadline.\n",
        "    conveys: Reacts to the summary and confirms the Friday deadline.\n    releases: [deadline]\n",
    )
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (
        str(path),
        line_of(path, "releases: [deadline]", 2),
    ) and "already released" in v.message


def test_accumulation_needs_a_reaction_beat(worlds: Path) -> None:
    path = worlds / USER / "sessions/T-s2.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("  - id: reaction")] + text[text.index("write_lock:") :])
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(path), line_of(path, "decision_point:")) and "reaction" in v.message


def test_bad_fixture_record_is_located(worlds: Path) -> None:
    path = worlds / USER / "fixtures/contacts/contacts.yaml"
    edit(path, "  relation: brother", "  relation: brother\n  nickname: Raf")
    found = check_worlds(worlds)
    assert (str(path), line_of(path, "nickname: Raf")) in {(v.path, v.line) for v in found}


def test_unknown_fixture_file(worlds: Path) -> None:
    extra = worlds / USER / "fixtures/email/outbox.yaml"
    extra.write_text("[]\n")
    v = only(check_worlds(worlds))
    assert (v.path, v.line) == (str(extra), 1) and "not a known collection" in v.message
