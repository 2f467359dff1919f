"""Users B, C and D: each passes ``worlds check``, they share no person or institution with another
user, and a run of User B plays its first session to completion through the runner's API with the
real episode loop against the scripted model on loopback HTTP.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from test_runner_support import protocol_responder

from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.runner import RunConfig, RunEvent, Runner, StepEvent
from mempa_tui.scripts import check_worlds
from mempa_tui.scripts.check import check_user
from mempa_tui.scripts.loader import UserBundle, list_users, load_user
from mempa_tui.scripts.schema import Probe
from mempa_tui.simulator import EARLIER_SESSION_PHRASES, LeakRules, rule_check
from mempa_tui.store import RunStore
from mempa_tui.tools import default_registry
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import Contact

WORLDS = Path(__file__).resolve().parents[1] / "worlds"
NEW_USERS = [u for u in ("B", "C", "D") if (WORLDS / "users" / u).is_dir()]


@pytest.mark.parametrize("label", NEW_USERS)
def test_user_passes_worlds_check(label: str) -> None:
    assert [str(v) for v in check_user(WORLDS, label)] == []


@pytest.mark.parametrize("label", NEW_USERS)
def test_user_timeline_counts(label: str) -> None:
    """A slice keeps issue 2's minimums; a full timeline has the paper's counts (Section 3.3):
    94 sessions (23 stable cells x 3, 5 changing cells x 3 before + 2 after), 5 events, 5 + 28 probes."""
    bundle = load_user(WORLDS, label)
    cells = Counter((s.context, s.attribute) for s in bundle.sessions.values())
    finals = sum(1 for p in bundle.probes.values() if p.probe_kind.value == "final")
    pre = sum(1 for p in bundle.probes.values() if p.probe_kind.value != "final")
    assert finals == 28
    if bundle.timeline.scope == "slice":
        assert len(bundle.sessions) >= 12 and len({a for _, a in cells}) >= 6
        assert len({c for c, _ in cells}) == 2  # both contexts
        assert len(bundle.events) >= 1 and pre == len(bundle.events)
        return
    changing = {(e.context, e.attribute) for e in bundle.events.values()}
    assert len(bundle.sessions) == 94 and len(bundle.events) == 5 and pre == 5
    assert len(cells) == 28 and len(changing) == 5
    assert sorted(cells[c] for c in changing) == [5] * 5
    assert {n for c, n in cells.items() if c not in changing} == {3}


def _names(bundle: UserBundle) -> set[str]:
    """People and institutions of a user: persona relationships, contacts and their organisations."""
    wc = WorkingCopy(bundle.world_state(), datetime.max)
    names = {r.name for r in bundle.persona.relationships} | {bundle.persona.name}
    for c in wc.records_as("contacts/contacts", Contact):
        names.add(c.name)
        if c.organization:
            names.add(c.organization.split(",")[0].strip())
    names.add(bundle.persona.workplace.split(",")[0].strip())
    return names


def _pairs() -> Iterator[tuple[str, str]]:
    users = list_users(WORLDS)
    for i, a in enumerate(users):
        for b in users[i + 1 :]:
            yield a, b


@pytest.mark.parametrize(("a", "b"), list(_pairs()))
def test_no_person_or_institution_is_shared(a: str, b: str) -> None:
    shared = _names(load_user(WORLDS, a)) & _names(load_user(WORLDS, b))
    assert not shared, f"users {a} and {b} share {sorted(shared)}"


@pytest.mark.parametrize("label", NEW_USERS)
def test_scripted_user_text_passes_the_simulator_leak_rules(label: str) -> None:
    """Beats and facts give nothing away (Appendix D.4); probes never point at an earlier session."""
    bundle = load_user(WORLDS, label)
    for s in [*bundle.sessions.values(), *bundle.probes.values()]:
        rules = LeakRules(
            probe=isinstance(s, Probe),
            beat_ids=tuple(b.id for b in s.beats),
            script_id=s.id,
            attributes=tuple({a for b in s.beats for a in b.active_attributes}),
        )
        for text in [*(b.conveys for b in s.beats), *(f.text for f in s.facts)]:
            assert not rule_check(text, rules), f"{s.id}: {rule_check(text, rules)} in {text!r}"
            if isinstance(s, Probe):
                hits = [p for p in EARLIER_SESSION_PHRASES if re.search(rf"\b{re.escape(p)}\b", text.lower())]
                assert not hits, f"{s.id}: {hits}"
    for e in bundle.events.values():
        for turn in e.transcript:
            assert not rule_check(turn.user, LeakRules(attributes=(e.attribute,))), e.id


def test_all_users_in_one_town() -> None:
    assert {load_user(WORLDS, u).persona.town for u in list_users(WORLDS)} == {"Hollins Ferry"}


def test_whole_worlds_folder_passes() -> None:
    assert [str(v) for v in check_worlds(WORLDS)] == []


async def test_user_b_first_session_completes_through_the_runner(
    tmp_path: Path,
) -> None:
    config = RunConfig(
        user="B",
        profile="scripted",
        memory="file",
        repeats=1,
        worlds_dir=WORLDS,
        step_attempts=1,
        memory_options={
            "consolidate_at_tokens": 50_000,
            "consolidate_to_tokens": 20_000,
        },
    )
    first = load_user(WORLDS, "B").timeline.steps[0]
    async with ScriptedModelServer(protocol_responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            async with anyio.create_task_group() as tg:

                def observer(item: RunEvent | StepEvent) -> None:
                    if isinstance(item, StepEvent) and item.step_id != first:
                        tg.cancel_scope.cancel()  # the second step has begun: stop here

                runner = Runner(
                    config,
                    store,
                    client,
                    default_registry(),
                    observer,
                    memory_root=tmp_path / "local_memory",
                )
                tg.start_soon(runner.run)
            steps = await store.steps(runner.run_id, with_results=True)
            assert [(s.step_id, s.status) for s in steps] == [(first, "completed")]
            kinds = [e.kind for e in await store.transcript(runner.run_id, first)]
    assert "user_message" in kinds and "pa_reply" in kinds and "ix_selection" in kinds
    assert any(r.model == "scripted-pa" for r in server.requests)
