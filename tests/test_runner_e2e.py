"""Whole runs with the real episode loop against the scripted model on loopback HTTP.

User R (tests/fixtures_runner): two sessions, a change event, two final probes, one pre-event
probe. ``protocol_responder`` plays PA, simulator, checker and judge.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from test_runner_support import protocol_responder, runner_config

from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.memory import FileMemory
from mempa_tui.runner import RunEvent, Runner, StepEvent
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tools import default_registry


@pytest.fixture
async def client() -> AsyncIterator[LLMClient]:
    async with ScriptedModelServer(protocol_responder) as server:
        yield LLMClient(server.profile(context_window=131072))


def _runner(store: RunStore, client: LLMClient, root: Path, observer: object = None) -> Runner:
    return Runner(runner_config(), store, client, default_registry(), observer,  # type: ignore[arg-type]
                  memory_root=root / "local_memory", resamples=200)


async def _final(store: RunStore, run_id: str) -> tuple[dict[str, bytes], bytes, bytes]:
    ckpt = await store.latest_checkpoint(run_id)
    assert ckpt is not None and ckpt.memory_blob and ckpt.simulator_blob
    return (await store.load_world(ckpt.world_manifest), await store.load_blob(ckpt.memory_blob),
            await store.load_blob(ckpt.simulator_blob))


async def test_full_run_with_the_real_episode_loop(client: LLMClient, tmp_path: Path) -> None:
    async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        outcome = await _runner(store, client, tmp_path).run()
        run_id = outcome.run_id
        steps = await store.steps(run_id, with_results=True)
        assert [(s.step_id, s.status) for s in steps] == [
            ("R-s1", "completed"), ("R-s2", "completed"), ("R-ev1", "completed")]
        assert '"transcript"' in steps[0].result_json and '"world"' not in steps[0].result_json
        kinds = {e.kind for e in await store.transcript(run_id, "R-s1")}
        assert {"user_message", "pa_reply", "ix_selection", "step_status"} <= kinds
        results = await store.probe_results(run_id)
        assert len(results) == 6 and {r.status for r in results} == {"completed"}
        assert {(r.brs, r.prs) for r in results if r.kind == "final"} == {(4, 5)}
        # the committed world differs from the fixture (the change event's canned search ran)
        _world, memory_blob, sim = await _final(store, run_id)
        assert sim.count(b"without fuss") == 2 and b"change_note" in sim  # two diary entries, one note
        assert b"R-ev1" in memory_blob and b"R-final" not in memory_blob
    assert outcome.status is RunStatus.COMPLETED and outcome.report is not None
    # probes wrote nothing back: the run's memory folder is exactly the last checkpoint's store
    restored = FileMemory(client, tmp_path / "check")
    restored.restore(memory_blob)
    run_folder = tmp_path / "local_memory" / run_id / "run"
    for path in (tmp_path / "check").iterdir():
        assert (run_folder / path.name).read_bytes() == path.read_bytes(), path.name


async def test_cancel_mid_session_then_resume_equals_an_uninterrupted_run(
    client: LLMClient, tmp_path: Path
) -> None:
    async with RunStore(tmp_path / "a" / "mempa.sqlite") as store:
        async with anyio.create_task_group() as tg:

            def observer(item: RunEvent | StepEvent) -> None:
                if isinstance(item, StepEvent) and item.step_id == "R-s2":
                    tg.cancel_scope.cancel()  # mid-session: after R-s2's first event

            runner = _runner(store, client, tmp_path / "a", observer)
            tg.start_soon(runner.run)
        run_id = runner.run_id
        assert [s.step_id for s in await store.steps(run_id)] == ["R-s1"]
        calls_s1 = len(await store.llm_calls(run_id, "R-s1"))
        outcome = await _runner(store, client, tmp_path / "a").run()
        assert outcome.status is RunStatus.COMPLETED
        assert [s.step_id for s in await store.steps(run_id)] == ["R-s1", "R-s2", "R-ev1"]
        assert len(await store.llm_calls(run_id, "R-s1")) == calls_s1
        assert len(await store.done_probes(run_id)) == 6
        resumed = await _final(store, run_id)
    async with RunStore(tmp_path / "b" / "mempa.sqlite") as store:
        await _runner(store, client, tmp_path / "b").run()
        uninterrupted = await _final(store, run_id)
    assert resumed == uninterrupted


async def test_every_pa_call_of_sessions_and_probes_starts_with_the_warmed_prefix(tmp_path: Path) -> None:
    """Issue 12: the embedded server restores the KV state of the PA's fixed prefix (instructions,
    then the offered world tools: :func:`~mempa_tui.runner.setup.pa_prefix`) into its slot; every PA
    call, in sessions and in probes, must start with exactly that prefix to reuse it, and a turn's
    calls keep one tool block whatever else they are offered after it."""
    from mempa_tui.runner.setup import pa_prefix

    fixed = pa_prefix()
    fixed_tools = [t.name for t in fixed.tools]
    async with ScriptedModelServer(protocol_responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await _runner(store, client, tmp_path).run()
        pa = [r for r in server.requests if r.model == "scripted-pa"]
    assert outcome.status is RunStatus.COMPLETED
    assert len(pa) == sum(c.role.value == "pa" for c in client.calls) > 6  # two sessions and six probe repeats
    for request in pa:
        assert request.messages[0].role == "system" and request.messages[0].content == fixed.messages[0].content
        assert request.tool_names[: len(fixed_tools)] == fixed_tools  # world tools first, in the prefix's order
        assert request.messages[1].role == "system"
        # memory first, the date last: probes after the same sessions share the memory section
        assert request.messages[1].content.startswith("What your memory holds about this person\n")
        assert "\n\nCurrent date and time\nIt is " in request.messages[1].content
        assert request.messages[1].content.rsplit("\n\n", 1)[1].startswith("Current date and time")
