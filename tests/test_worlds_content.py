"""Content checks for User A's quick-start slice (``worlds/users/A``, its timeline's ``slice:``,
the issue-2 slice inside the full timeline).

Every file is loaded through its pydantic model, then the counts and rules of the slice are
asserted: 14 accumulation sessions over 7 cells (two distinct tasks each), one change event with
its pre-event probe one hour earlier, 28 final probes after the last step covering every cell, and
every setting the user holds at some time appearing as a probe target (paper Sections 3.3 and 3.5,
Appendices B.4, C.1, C.3 to C.5, D.4). The repository's own checker (``check_user``) must report
no violation.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from mempa_tui.scripts.check import check_user
from mempa_tui.scripts.loader import UserBundle, load_user
from mempa_tui.scripts.schema import (
    AccumulationSession,
    ChangeEvent,
    Persona,
    PreferenceMatrix,
    Probe,
    ProbeKind,
    SourceLabel,
    Timeline,
)
from mempa_tui.simulator import EARLIER_SESSION_PHRASES, LeakRules, rule_check
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.world import COLLECTIONS, Record, WorkingCopy, WorldState, collection_issues
from mempa_tui.world.records import Contact, EmailMessage, TextMessage

WORLDS = Path(__file__).resolve().parents[1] / "worlds"
USER = WORLDS / "users" / "A"

#: The cells the accumulation sessions of this slice cover (the issue's list).
COVERED_CELLS = {
    (Context.WORK, "verbosity"),
    (Context.PERSONAL, "verbosity"),
    (Context.WORK, "autonomy_level"),
    (Context.WORK, "information_elicitation"),
    (Context.PERSONAL, "proactive_outreach"),
    (Context.PERSONAL, "capability_boundary"),
    (Context.WORK, "solution_breadth"),
}

R = TypeVar("R", bound=Record)

#: Words of the harness that a user line must never use (Appendix D.4).
HARNESS_WORDS = ("setting", "attribute", "probe", "beat", "simulator", "target", "benchmark")


@pytest.fixture(scope="module")
def bundle() -> UserBundle:
    return load_user(WORLDS, "A").sliced()  # the issue-2 slice inside the full timeline


def _yaml(path: Path) -> object:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ---- every file loads through its model -------------------------------------------------------


def test_every_file_loads_through_its_model() -> None:
    Persona.model_validate(_yaml(USER / "persona.yaml"))
    PreferenceMatrix.model_validate(_yaml(USER / "preferences.yaml"))
    Timeline.model_validate(_yaml(USER / "timeline.yaml"))
    for path in sorted((USER / "sessions").glob("*.yaml")):
        AccumulationSession.model_validate(_yaml(path))
    for path in sorted((USER / "events").glob("*.yaml")):
        ChangeEvent.model_validate(_yaml(path))
    for path in sorted((USER / "probes").glob("*.yaml")):
        Probe.model_validate(_yaml(path))
    files = sorted((USER / "fixtures").rglob("*.yaml"))
    assert files, "no fixture files"
    for path in files:
        collection = path.relative_to(USER / "fixtures").with_suffix("").as_posix()
        assert collection in COLLECTIONS, f"{path}: not a known collection"
        issues = collection_issues(collection, path.read_bytes())
        assert not issues, "\n".join(str(i) for i in issues)


def test_checker_reports_no_violation() -> None:
    violations = check_user(WORLDS, "A")
    assert not violations, "\n".join(str(v) for v in violations)


# ---- persona and matrix -------------------------------------------------------------------------


def test_persona_has_recurring_people_in_both_contexts(bundle: UserBundle) -> None:
    rels = bundle.persona.relationships
    assert 5 <= len(rels) <= 8
    assert {r.context for r in rels} == set(Context)
    contacts = {c.name for c in _records("contacts/contacts", Contact)}
    assert all(r.name in contacts for r in rels), "every recurring person is in the address book"


def test_matrix_differs_by_context_and_mixes_sources(bundle: UserBundle) -> None:
    m = bundle.matrix
    differing = [a.key for a in ATTRIBUTES if m.work[a.key].setting != m.personal[a.key].setting]
    assert len(differing) >= 4
    assert "verbosity" in differing
    sources = Counter(cell.source for cells in (m.work, m.personal) for cell in cells.values())
    assert sources[SourceLabel.CONFIRMED_HIGH] > len(ATTRIBUTES)  # most cells
    assert sum(n for s, n in sources.items() if s is not SourceLabel.CONFIRMED_HIGH) >= 3
    manual = {a for cells in (m.work, m.personal) for a, c in cells.items()
              if c.source is SourceLabel.SPECIFIED_MANUALLY}
    assert manual <= {"process_visibility", "solution_breadth", "capability_boundary"}


# ---- timeline and sessions ----------------------------------------------------------------------


def test_timeline_holds_fourteen_sessions_then_the_event_in_time_order(bundle: UserBundle) -> None:
    steps = bundle.steps()
    assert [type(s) for s in steps].count(AccumulationSession) == 14
    assert len(bundle.sessions) == 14 and len(bundle.events) == 1
    times = [s.starts_at for s in steps]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert times[0] >= datetime(2026, 3, 2) and times[-1] <= datetime(2026, 5, 31)
    assert isinstance(steps[-1], ChangeEvent)


def test_seven_cells_two_sessions_each_with_distinct_tasks(bundle: UserBundle) -> None:
    by_cell: dict[tuple[Context, str], list[AccumulationSession]] = {}
    for s in bundle.sessions.values():
        by_cell.setdefault((s.context, s.attribute), []).append(s)
    assert set(by_cell) == COVERED_CELLS
    for cell, sessions in by_cell.items():
        assert len(sessions) == 2, cell
        assert len({s.task for s in sessions}) == 2, f"{cell}: tasks must differ"
        assert len({s.scenario for s in sessions} | {s.beats[0].conveys for s in sessions}) >= 3, cell


@pytest.mark.parametrize("kind", ["sessions", "probes"])
def test_scripts_are_short_and_reach_the_decision_early(bundle: UserBundle, kind: str) -> None:
    scripts = bundle.sessions if kind == "sessions" else bundle.probes
    for s in scripts.values():
        dp = s.decision_beat_index()
        if kind == "sessions":
            assert 2 <= len(s.beats) <= 3, s.id
            assert dp <= 1 and dp < len(s.beats) - 1, s.id
        else:
            assert 1 <= len(s.beats) <= 2, s.id
        assert s.facts, f"{s.id}: the decision point needs a withheld fact"
        assert any(s.beats[i].releases for i in range(dp + 1)), f"{s.id}: no fact released by the decision point"
        assert s.tool_steps, f"{s.id}: no intended path of world calls"


def test_write_locks_where_the_attribute_needs_one(bundle: UserBundle) -> None:
    for s in [*bundle.sessions.values(), *bundle.probes.values()]:
        assert (s.write_lock is not None) == s.attr.write_lock, s.id
        if s.write_lock is not None:
            dp = s.beats[s.decision_beat_index()]
            assert s.write_lock.unlocked_by in dp.releases, f"{s.id}: the lock opens at the decision point"


def test_proactive_outreach_decides_on_a_world_event(bundle: UserBundle) -> None:
    scripts = [s for s in [*bundle.sessions.values(), *bundle.probes.values()]
               if s.attribute == "proactive_outreach"]
    assert len(scripts) == 4
    for s in scripts:
        dp = s.beats[s.decision_beat_index()]
        assert dp.event is not None and dp.event.records, s.id
        assert dp.event.at > s.starts_at, s.id


def test_capability_boundary_has_a_block_and_a_workaround(bundle: UserBundle) -> None:
    scripts = [s for s in [*bundle.sessions.values(), *bundle.probes.values()]
               if s.attribute == "capability_boundary"]
    assert len(scripts) == 4
    for s in scripts:
        blocked = [i for i, t in enumerate(s.tool_steps) if t.expect_error]
        assert len(blocked) == 1, s.id
        later = s.tool_steps[blocked[0] + 1 :]
        assert any(t.tool != s.tool_steps[blocked[0]].tool for t in later), f"{s.id}: no workaround"


# ---- change event and probes --------------------------------------------------------------------


def test_change_event_flips_work_solution_breadth(bundle: UserBundle) -> None:
    (event,) = bundle.events.values()
    assert (event.context, event.attribute) == (Context.WORK, "solution_breadth")
    assert event.old_setting == bundle.matrix.setting(Context.WORK, "solution_breadth")
    others = [n for n in attribute(event.attribute).setting_names if n != event.old_setting]
    assert event.new_setting in others
    sessions = [s for s in bundle.sessions.values() if (s.context, s.attribute) == (event.context, event.attribute)]
    assert all(s.starts_at < event.starts_at for s in sessions)
    assert event.transcript[0].pa is not None and event.transcript[0].pa.ix_setting == event.old_setting
    assert re.search(r"\bI\b", event.simulator_note), "the simulator note is written in the first person"
    assert not re.search(r"\b(?:low|high)\b", " ".join(t.user for t in event.transcript).lower())
    pre = [p for p in bundle.probes.values() if p.probe_kind is ProbeKind.PRE_EVENT]
    assert len(pre) == 1 and pre[0].event == event.id
    assert pre[0].starts_at == event.starts_at - timedelta(hours=1)
    assert bundle.targets_at(Context.WORK, pre[0].starts_at)["solution_breadth"] == event.old_setting
    assert bundle.targets_at(Context.WORK, datetime(2026, 6, 29))["solution_breadth"] == event.new_setting


def test_twenty_eight_final_probes_cover_every_cell_after_the_last_step(bundle: UserBundle) -> None:
    finals = [p for p in bundle.probes.values() if p.probe_kind is ProbeKind.FINAL]
    assert len(finals) == 28
    cells = {(p.context, p.attribute) for p in finals}
    assert cells == {(c, a.key) for c in Context for a in ATTRIBUTES}
    last = max(s.starts_at for s in bundle.steps())
    assert all(p.starts_at >= datetime(2026, 6, 29) > last for p in finals)


def test_every_setting_the_user_holds_is_a_probe_target(bundle: UserBundle) -> None:
    held = {(a, c.setting) for cells in (bundle.matrix.work, bundle.matrix.personal) for a, c in cells.items()}
    held |= {(e.attribute, e.new_setting) for e in bundle.events.values()}
    targeted = {(p.attribute, bundle.targets_at(p.context, p.starts_at)[p.attribute]) for p in bundle.probes.values()}
    assert held - targeted == set()


# ---- user lines and records ---------------------------------------------------------------------


def _user_lines(bundle: UserBundle) -> list[tuple[str, str, str]]:
    """(script id, tested attribute key, line) for every beat's conveys and event user line."""
    out = [(s.id, s.attribute, b.conveys) for s in [*bundle.sessions.values(), *bundle.probes.values()]
           for b in s.beats]
    out += [(e.id, e.attribute, t.user) for e in bundle.events.values() for t in e.transcript]
    return out


def test_user_lines_name_no_setting_attribute_or_harness_word(bundle: UserBundle) -> None:
    attr_names = [a.name.lower() for a in ATTRIBUTES] + [a.key for a in ATTRIBUTES]
    for sid, key, line in _user_lines(bundle):
        low = line.lower()
        for word in HARNESS_WORDS:
            assert not re.search(rf"\b{word}", low), f"{sid}: harness word {word!r} in {line!r}"
        for name in attr_names:
            assert name not in low, f"{sid}: attribute name {name!r} in {line!r}"
        for setting in attribute(key).setting_names:
            assert not re.search(rf"\b{re.escape(setting.lower())}\b", low), f"{sid}: setting {setting!r} in {line!r}"


def test_solution_breadth_requests_state_no_number_of_options(bundle: UserBundle) -> None:
    number = r"\b(?:\d+|two|three|four|five|several|a few|couple)\b"
    for sid, key, line in _user_lines(bundle):
        if key == "solution_breadth":
            assert not re.search(number + r"\s+(?:options?|ways?|ideas?|choices?|alternatives?)", line.lower()), sid


def test_user_lines_pass_the_simulators_leak_rules(bundle: UserBundle) -> None:
    """Conveys, released facts and event lines pass the rule checks a live message must pass.

    Checked with no task material, so nothing is exempted; probes also forbid phrases that point
    back to an earlier conversation (Appendix D.4).
    """
    for s in [*bundle.sessions.values(), *bundle.probes.values()]:
        rules = LeakRules(probe=isinstance(s, Probe), beat_ids=tuple(b.id for b in s.beats), script_id=s.id,
                          attributes=tuple({a for b in s.beats for a in b.active_attributes}))
        for text in [*(b.conveys for b in s.beats), *(f.text for f in s.facts)]:
            assert not rule_check(text, rules), f"{s.id}: {rule_check(text, rules)} in {text!r}"
        if isinstance(s, Probe):
            for text in [*(b.conveys for b in s.beats), *(f.text for f in s.facts)]:
                hits = [p for p in EARLIER_SESSION_PHRASES if re.search(rf"\b{re.escape(p)}\b", text.lower())]
                assert not hits, f"{s.id}: {hits}"
    for e in bundle.events.values():
        rules = LeakRules(attributes=(e.attribute,))
        for turn in e.transcript:
            assert not rule_check(turn.user, rules), f"{e.id}: {rule_check(turn.user, rules)}"


def _records(collection: str, model: type[R]) -> list[R]:
    """Every record of a collection, whenever it enters the world."""
    wc = WorkingCopy(WorldState.from_directory(USER / "fixtures"), datetime.max)
    return wc.records_as(collection, model)


def test_fixture_volumes_give_searches_realistic_distractors() -> None:
    wc = WorkingCopy(WorldState.from_directory(USER / "fixtures"), datetime.max)
    sizes = {c: len(wc.records(c))
             for c in ("email/inbox", "messages/messages", "calendar/events", "documents/documents",
                       "contacts/contacts")}
    # lower bounds: the full timeline's fixtures only add to what the slice needed
    assert sizes["email/inbox"] >= 40 and sizes["messages/messages"] >= 30
    assert sizes["calendar/events"] >= 30 and sizes["documents/documents"] >= 10
    assert sizes["contacts/contacts"] >= 20


def test_scripted_addresses_and_people_exist_in_the_world(bundle: UserBundle) -> None:
    contacts = _records("contacts/contacts", Contact)
    inbox = _records("email/inbox", EmailMessage)
    addresses = {c.email for c in contacts if c.email} | {m.sender_address for m in inbox}
    people = {c.name for c in contacts} | {m.contact for m in _records("messages/messages", TextMessage)}
    calls = [(s.id, t.tool, t.args, t.expect_error)
             for s in [*bundle.sessions.values(), *bundle.probes.values()] for t in s.tool_steps]
    calls += [(e.id, c.tool, c.args, False) for e in bundle.events.values()
              for t in e.transcript if t.pa for c in t.pa.tool_calls]
    for sid, tool, args, expect_error in calls:
        for addr in [*args.get("to", []), *args.get("cc", [])]:
            assert addr in addresses, f"{sid}: {tool} writes to unknown address {addr}"
        for name in args.get("attendees", []):
            assert name in people, f"{sid}: attendee {name!r} is nobody in the world"
        if tool == "message_send":
            # a text only goes to someone the world knows; the blocked texts name someone it doesn't
            assert (args["contact"] in people) != expect_error, sid


def test_records_arriving_mid_story_come_after_their_request(bundle: UserBundle) -> None:
    for s in [*bundle.sessions.values(), *bundle.probes.values()]:
        for b in s.beats:
            if b.event is None:
                continue
            for ref in b.event.records:
                collection, _, rid = ref.partition(":")
                found = [r for r in _records(collection, Record) if r.id == rid]
                assert found, f"{s.id}: {ref} is not in the fixture tree"
                rec = found[0]
                assert s.starts_at < rec.entered_at <= b.event.at, f"{s.id}: {ref} must arrive during the session"
