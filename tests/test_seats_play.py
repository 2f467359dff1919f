"""Playing one step of a real user's world with a person in a seat, stored like any run.

SPEC §4.11 (the wrapper, simulator, memory and scoring treat the person as any PA), §6
(fidelity record stored); user R of tests/fixtures_runner, scripted model over loopback.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_tui_support import USER_MESSAGE, WORLDS, fixed_scorer, run_responder

from mempa_tui.agent.human import HumanAgentSeat, PAAction, PATurnView
from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.runner.play import PlayedStep, PlayRequest, play_step, playable_steps
from mempa_tui.scripts.loader import load_user
from mempa_tui.simulator.human import HumanUserSeat, UserAction, UserPanel
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tools import default_registry


@pytest.fixture
async def client() -> AsyncIterator[LLMClient]:
    async with ScriptedModelServer(run_responder) as server:
        yield LLMClient(server.profile(context_window=131072))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[RunStore]:
    opened = await RunStore(tmp_path / "saves" / "mempa.sqlite").open()
    try:
        yield opened
    finally:
        await opened.close()


def request(step: str, seat: str, **kw: object) -> PlayRequest:
    return PlayRequest(user="R", step_id=step, seat=seat, profile="scripted", worlds_dir=WORLDS, **kw)  # type: ignore[arg-type]


def test_playable_steps_lists_sessions_then_probes() -> None:
    steps = playable_steps(load_user(WORLDS, "R"))
    assert [s.id for s in steps] == [
        "R-s1", "R-s2", "R-final-work-solution_breadth", "R-final-work-verbosity", "R-pre-ev1"]
    assert steps[0].kind == "accumulation" and "verbosity" in steps[0].label
    assert steps[-1].kind == "probe" and steps[-1].label.startswith("pre_event probe")


async def test_person_as_pa_plays_a_final_probe_and_is_scored_and_stored(
    client: LLMClient, store: RunStore, tmp_path: Path
) -> None:
    seat = HumanAgentSeat()
    views: list[PATurnView] = []
    plan = [PAAction(kind="tool", tool="IX_verbosity", arguments={"setting": "Terse"}),
            PAAction(kind="tool", tool="mcp_state_document_read", arguments={"document_id": "doc_0001"}),
            PAAction(kind="reply", text="Replace the breaker panel by June.")]

    def person(view: PATurnView) -> None:
        views.append(view.model_copy(deep=True))
        if view.waiting and plan:
            seat.submit(plan.pop(0))

    seat.on_change = person
    outcome = await play_step(request("R-final-work-verbosity", "agent"), store, client, default_registry(),
                              agent_seat=seat, memory_root=tmp_path / "mem", scorer=fixed_scorer)
    assert outcome.status == "completed", outcome.reason
    assert outcome.selection == "Terse"
    bundle = load_user(WORLDS, "R")
    probe = bundle.probes["R-final-work-verbosity"]
    assert outcome.target == bundle.targets_at(probe.context, probe.starts_at)["verbosity"]
    assert (outcome.scores.brs, outcome.scores.prs) == (4, 5)
    # the person never saw the target: no view mentions it except through their own selection
    assert all(v.oracle is None for v in views)
    assert views[0].user_message == USER_MESSAGE
    # stored: run record, probe result with the selection and scores, transcript with the reply
    run = await store.get_run(outcome.play_id)
    assert run is not None and run.status is RunStatus.COMPLETED and run.memory == "none"
    assert run.profile == "scripted (person as PA)"  # never taken for the model's own results
    [stored] = await store.probe_results(outcome.play_id, with_results=True)
    assert (stored.selection, stored.brs, stored.prs, stored.status) == ("Terse", 4, 5, "completed")
    assert PlayedStep.model_validate_json(stored.result_json).seat == "agent"
    rows = await store.transcript(outcome.play_id, "R-final-work-verbosity", 1)
    assert any(r.kind == "pa_reply" and "breaker panel" in r.event_json for r in rows)
    assert not (tmp_path / "mem" / outcome.play_id).exists()


async def test_person_as_user_plays_a_session_with_the_fidelity_record_stored(
    client: LLMClient, store: RunStore, tmp_path: Path
) -> None:
    plan = [UserAction(kind="say", text="Can you find the boiler inspection email?"),
            UserAction(kind="advance"),
            UserAction(kind="say", text="What's the gist of it?"),
            UserAction(kind="advance"),
            UserAction(kind="say", text="Good, Friday it is."),
            UserAction(kind="advance")]  # the last beat opens with a world event: no words
    panels: list[UserPanel] = []
    seat = HumanUserSeat(client, load_user(WORLDS, "R").persona)

    def person(panel: UserPanel) -> None:
        panels.append(panel)
        if panel.waiting and plan:
            seat.submit(plan.pop(0))

    seat.on_change = person
    outcome = await play_step(request("R-s1", "user"), store, client, default_registry(),
                              user_seat=seat, memory_root=tmp_path / "mem")
    assert outcome.status == "completed", outcome.reason
    assert [p.human_message for p in outcome.fidelity] == [
        "Can you find the boiler inspection email?", "What's the gist of it?", "Good, Friday it is."]
    assert [p.beat_id for p in outcome.fidelity] == ["opening", "ask_summary", "reaction"]
    assert all(p.simulator.message.startswith(USER_MESSAGE) for p in outcome.fidelity)
    # the deadline fact showed in the panel once its beat began
    asked = next(p for p in panels if p.waiting and p.beat and p.beat.id == "ask_summary")
    assert [f.id for f in asked.released] == ["deadline"]
    assert any(sheet.startswith("Acting sheet: Verbosity") for sheet in asked.acting_sheets)
    # a person's session never becomes a donor of the model's reference runs
    assert await store.latest_completed_run("R", "scripted") is None
    [step] = await store.steps(outcome.play_id, with_results=True)
    stored = PlayedStep.model_validate_json(step.result_json)
    assert stored.fidelity == outcome.fidelity and stored.seat == "user"
    kinds = [r.kind for r in await store.transcript(outcome.play_id, "R-s1")]
    assert "notice" in kinds and kinds.count("user_message") == 3
    assert await store.latest_checkpoint(outcome.play_id) is not None


async def test_bad_requests_are_refused_by_name(client: LLMClient, store: RunStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs exactly the matching human seat"):
        await play_step(request("R-s1", "user"), store, client, default_registry(), agent_seat=HumanAgentSeat())
    with pytest.raises(ValueError, match="change event"):
        await play_step(request("R-ev1", "agent"), store, client, default_registry(), agent_seat=HumanAgentSeat())
    with pytest.raises(ValueError, match="source run 'nope'"):
        await play_step(request("R-s1", "agent", source_run="nope"), store, client, default_registry(),
                        agent_seat=HumanAgentSeat())
    assert json.loads(request("R-s1", "user").model_dump_json())["seat"] == "user"


async def test_two_plays_of_one_step_started_in_the_same_second_get_their_own_ids(
    client: LLMClient, store: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12.7: play ids carried the time to the second only, so a second play of the same
    step and seat in that second collided with the first (refused as an existing run)."""
    from datetime import UTC, datetime

    import mempa_tui.runner.play as play_module
    from mempa_tui.runner.play import play_id_for

    second = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr(play_module, "utc_now", lambda: second)

    async def play_once() -> str:
        seat = HumanAgentSeat()
        plan = [PAAction(kind="tool", tool="IX_verbosity", arguments={"setting": "Terse"}),
                PAAction(kind="reply", text="Replace the breaker panel by June.")]

        def person(view: PATurnView) -> None:
            if view.waiting and plan:
                seat.submit(plan.pop(0))

        seat.on_change = person
        outcome = await play_step(request("R-final-work-verbosity", "agent"), store, client, default_registry(),
                                  agent_seat=seat, memory_root=tmp_path / "mem", scorer=fixed_scorer)
        assert outcome.status == "completed", outcome.reason
        return outcome.play_id

    first, again = await play_once(), await play_once()
    base = play_id_for(request("R-final-work-verbosity", "agent"), second)
    assert (first, again) == (base, f"{base}-2")
    for play_id in (first, again):
        run = await store.get_run(play_id)
        assert run is not None and run.status is RunStatus.COMPLETED
        assert len(await store.probe_results(play_id)) == 1
    with pytest.raises(ValueError, match="counts from 1"):
        play_id_for(request("R-s1", "user"), second, 0)


async def test_a_play_carries_its_source_runs_memory_options_and_consolidates_at_session_end(
    client: LLMClient, store: RunStore, tmp_path: Path
) -> None:
    """Issue 12 follow-up: a play built File memory with default options, so a play from a quick
    start (``consolidate_at_session_end``) never consolidated at its session's end and used other
    thresholds than its run. The source run here sets session-end consolidation and thresholds no
    three-turn session reaches: only the session end can consolidate."""
    from mempa_tui.memory._file import FileMemoryState
    from mempa_tui.runner.config import RunConfig
    from mempa_tui.store import CheckpointData, RunRecord

    config = RunConfig(user="R", profile="scripted", memory="file", repeats=1, worlds_dir=WORLDS,
                       memory_options={"consolidate_at_session_end": True},
                       file_memory_budget={"consolidate_at_tokens": 50000, "consolidate_to_tokens": 20000,
                                           "consolidate_at_session_end": 1, "scaled": 0, "set_by_option": 0})
    await store.create_run(RunRecord(
        id=config.run_id, user="R", profile="scripted", memory="file", seed=0, repeats=1,
        config_json=config.model_dump_json(), config_hash=config.config_hash(), status=RunStatus.COMPLETED,
        total_steps=1, total_probes=0))
    world = load_user(WORLDS, "R").world_state()
    await store.write_initial_checkpoint(config.run_id, CheckpointData(
        step_index=-1, world_files=dict(world.files), world_manifest=world.manifest()))

    plan = [UserAction(kind="say", text="Can you find the boiler inspection email?"), UserAction(kind="advance"),
            UserAction(kind="say", text="What's the gist of it?"), UserAction(kind="advance"),
            UserAction(kind="say", text="Good, Friday it is."), UserAction(kind="advance")]
    seat = HumanUserSeat(client, load_user(WORLDS, "R").persona)

    def person(panel: UserPanel) -> None:
        if panel.waiting and plan:
            seat.submit(plan.pop(0))

    seat.on_change = person
    outcome = await play_step(request("R-s1", "user", memory="file", source_run=config.run_id), store, client,
                              default_registry(), user_seat=seat, memory_root=tmp_path / "mem")
    assert outcome.status == "completed", outcome.reason
    # the header says which options apply and where they came from
    assert outcome.memory_settings.startswith(f"memory options of run {config.run_id}: ")
    assert "50,000 -> 20,000" in outcome.memory_settings
    assert "at the end of every session" in outcome.memory_settings
    ckpt = await store.latest_checkpoint(outcome.play_id)
    assert ckpt is not None and ckpt.memory_blob
    state = FileMemoryState.model_validate_json(await store.load_blob(ckpt.memory_blob))
    assert state.stats.turns_written > 0
    assert state.stats.consolidations == 1 and not state.pending  # consolidated at the session's end
    assert state.memory_md.strip()
    # from the fixture world, or with another condition than the run's, the defaults apply, and it says so
    from mempa_tui.runner.play import play_memory

    plain = await play_memory(request("R-s1", "user", memory="file"), store)
    assert plain.options == {} and "default options (played from the fixture world)" in plain.text
    other = await play_memory(request("R-s1", "user", memory="prefstate", source_run=config.run_id), store)
    assert other.options == {} and "it used file" in other.text
    assert (await play_memory(request("R-s1", "user", source_run=config.run_id), store)).text == ""
