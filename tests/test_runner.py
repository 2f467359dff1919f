"""The runner's bookkeeping: checkpoints, resume after a kill, discard, config refusal, probes.

The episode loop is replaced by ``FakeEpisodes`` (deterministic steps that still call the scripted
model over loopback HTTP and write to the real File memory); see test_runner_e2e.py for runs with
the real episode loop.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_runner_support import (
    LOG,
    WORLDS,
    FakeEpisodes,
    FlakyResponder,
    fake_scorer,
    ok_responder,
    runner_config,
)

from mempa_tui.llm import LLMClient, LLMError, ScriptedModelServer
from mempa_tui.runner import (
    ConfigMismatchError,
    DonorError,
    RunConfig,
    RunEvent,
    Runner,
    RunOutcome,
    StepEvent,
    run_many,
)
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tools import default_registry


@dataclass
class Env:
    """A scripted model server, a client on it, and a folder for saves and memory stores."""

    server: ScriptedModelServer
    client: LLMClient
    root: Path

    def runner(self, store: RunStore, episodes: FakeEpisodes, observer: Any = None, **kw: Any) -> Runner:
        config = kw.pop("config", None) or runner_config(**kw.pop("cfg", {}))
        return Runner(
            config, store, self.client, default_registry(), observer,
            memory_root=self.root / "local_memory", episodes=episodes.functions(), scorer=fake_scorer,
            resamples=200, **kw,
        )


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with ScriptedModelServer(ok_responder) as server:  # a window that holds the 83 tools
        yield Env(server, LLMClient(server.profile(context_window=131072)), tmp_path)


async def _final_state(store: RunStore, run_id: str) -> tuple[dict[str, bytes], bytes, bytes]:
    ckpt = await store.latest_checkpoint(run_id)
    assert ckpt is not None and ckpt.memory_blob and ckpt.simulator_blob
    return (
        await store.load_world(ckpt.world_manifest),
        await store.load_blob(ckpt.memory_blob),
        await store.load_blob(ckpt.simulator_blob),
    )


async def test_full_run_checkpoints_each_step_and_writes_a_report(env: Env) -> None:
    events: list[RunEvent | StepEvent] = []
    episodes = FakeEpisodes()
    async with RunStore(env.root / "saves" / "mempa.sqlite") as store:
        outcome = await env.runner(store, episodes, events.append).run()
        run_id = outcome.run_id
        assert run_id == "R-file-scripted-s0"
        assert outcome.status is RunStatus.COMPLETED
        steps = await store.steps(run_id)
        assert [(s.step_id, s.kind, s.status) for s in steps] == [
            ("R-s1", "accumulation", "completed"),
            ("R-s2", "accumulation", "completed"),
            ("R-ev1", "change_event", "completed"),
        ]
        assert [c.step_index for c in await store.checkpoints(run_id)] == [-1, 0, 1, 2]
        world, _, sim = await _final_state(store, run_id)
        assert world[LOG] == b"R-s1\nR-s2\nR-ev1\n"
        assert sim.count(b"went fine") == 3 and b"change_note" in sim
        # transcripts and calls stored with their step
        assert [e.kind for e in await store.transcript(run_id, "R-s2")] == ["note", "note"]
        assert [c.step_id for c in await store.llm_calls(run_id, "R-s1")] == ["R-s1"]
        results = await store.probe_results(run_id)
        assert len(results) == 3 * 2
        finals = [r for r in results if r.kind == "final"]
        assert all(r.brs == 4 and r.prs == 5 for r in finals)
        assert all(r.brs is None for r in results if r.kind == "pre_event")
    assert outcome.report is not None
    assert outcome.report.paths.main_md == env.root / "saves" / run_id / "report.md"
    assert "File memory" in outcome.report.paths.main_md.read_text()
    assert outcome.report.paths.main_csv.is_file()
    assert outcome.progress.steps_done == 3 and outcome.progress.probes_done == 6
    assert outcome.progress.tokens.by_role["pa"].calls == 3 + 6
    kinds = [e.kind for e in events if isinstance(e, RunEvent)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("step_finished") == 3 and kinds.count("probe_finished") == 6
    step_events = [e for e in events if isinstance(e, StepEvent)]
    assert {(e.step_id, e.repeat) for e in step_events} >= {("R-s1", 0), ("R-final-work-verbosity", 2)}


async def test_cancelled_run_resumes_from_last_checkpoint_with_nothing_done_twice(env: Env) -> None:
    async with RunStore(env.root / "a" / "mempa.sqlite") as store:
        first = FakeEpisodes(block_at="R-s2")
        runner = env.runner(store, first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await first.blocked.wait()
            tg.cancel_scope.cancel()
        run_id = runner.run_id
        stopped = await store.get_run(run_id)
        assert stopped is not None and stopped.status is RunStatus.STOPPED
        assert [s.step_id for s in await store.steps(run_id)] == ["R-s1"]

        second = FakeEpisodes()
        outcome = await env.runner(store, second).run()
        assert outcome.status is RunStatus.COMPLETED
        assert [p for p in second.plays] == ["R-s2", "R-ev1"]
        assert [s.step_id for s in await store.steps(run_id)] == ["R-s1", "R-s2", "R-ev1"]
        assert len(await store.llm_calls(run_id, "R-s1")) == 1
        resumed = await _final_state(store, run_id)

    async with RunStore(env.root / "b" / "mempa.sqlite") as store:
        await env.runner(store, FakeEpisodes()).run()
        uninterrupted = await _final_state(store, run_id)
    assert resumed == uninterrupted


async def test_changed_config_is_refused_naming_the_field_and_fresh_starts_over(env: Env) -> None:
    async with RunStore(env.root / "mempa.sqlite") as store:
        first = FakeEpisodes(block_at="R-s2")
        runner = env.runner(store, first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await first.blocked.wait()
            tg.cancel_scope.cancel()
        with pytest.raises(ConfigMismatchError) as info:
            await env.runner(store, FakeEpisodes(), cfg={"repeats": 3}).run()
        message = str(info.value)
        assert "repeats: 2 -> 3" in message and "--fresh" in message
        assert info.value.differences == ["repeats: 2 -> 3"]
        with pytest.raises(ConfigMismatchError, match=r"memory_options\.consolidate_at_tokens"):
            await env.runner(store, FakeEpisodes(), cfg={"memory_options": {
                "consolidate_at_tokens": 40_000, "consolidate_to_tokens": 20_000}}).run()

        fresh = FakeEpisodes()
        outcome = await env.runner(store, fresh, cfg={"repeats": 3}, fresh=True).run()
        assert outcome.status is RunStatus.COMPLETED
        assert fresh.plays[:3] == ["R-s1", "R-s2", "R-ev1"]
        archived = await store.get_run(f"{outcome.run_id}~1")
        assert archived is not None and archived.repeats == 2
        assert [s.step_id for s in await store.steps(archived.id)] == ["R-s1"]
        assert any("moved the stored run" in n for n in outcome.notes)


async def test_probes_run_on_isolated_branches_and_write_nothing_back(env: Env) -> None:
    episodes = FakeEpisodes()
    async with RunStore(env.root / "mempa.sqlite") as store:
        outcome = await env.runner(store, episodes, cfg={"probe_concurrency": 3}).run()
        run_id = outcome.run_id
        ckpts = {c.step_index: c for c in await store.checkpoints(run_id)}
        snapshots = {i: await store.load_blob(c.memory_blob) for i, c in ckpts.items() if c.memory_blob}
        world, memory_after, _ = await _final_state(store, run_id)
        # one call per probe repeat, attributed to it although probes ran concurrently
        calls = await store.llm_calls(run_id)
        per_unit: dict[tuple[str, int], int] = {}
        for c in calls:
            if c.call.role.value == "pa" and c.repeat:
                per_unit[(c.step_id, c.repeat)] = per_unit.get((c.step_id, c.repeat), 0) + 1
        assert len(per_unit) == 6 and set(per_unit.values()) == {1}
    # the probes' world edits and memory writes reached neither the run world nor its memory
    assert world[LOG] == b"R-s1\nR-s2\nR-ev1\n"
    assert b"probe R-" not in memory_after
    run_folder = env.root / "local_memory" / run_id / "run"
    assert not any("probe R-" in p.read_text() for p in run_folder.iterdir() if p.is_file())
    assert not any((env.root / "local_memory" / run_id / "probes").iterdir())
    # each repeat started from its checkpoint in a fresh memory instance, unaffected by the others
    starts = {(s.probe_id, i): s for i, s in enumerate(episodes.probe_starts)}
    assert len({s.memory_id for s in episodes.probe_starts}) >= 2
    for (probe_id, _), start in starts.items():
        if probe_id == "R-pre-ev1":  # the last checkpoint strictly before its event: after R-s2
            assert start.log == "R-s1\nR-s2\n" and start.snapshot == snapshots[1]
        else:
            assert start.log == "R-s1\nR-s2\nR-ev1\n" and start.snapshot == snapshots[2]
        assert b"probe R-" not in start.snapshot


async def test_discarded_step_is_retried_then_recorded_and_the_run_goes_on(env: Env) -> None:
    episodes = FakeEpisodes(fail={"R-s1": ["invalid"], "R-s2": ["failed", "failed"]})
    async with RunStore(env.root / "mempa.sqlite") as store:
        outcome = await env.runner(store, episodes).run()
        run_id = outcome.run_id
        steps = {s.step_id: s for s in await store.steps(run_id)}
        assert (steps["R-s1"].status, steps["R-s1"].attempts) == ("completed", 2)
        assert (steps["R-s2"].status, steps["R-s2"].attempts, steps["R-s2"].reason) == (
            "failed", 2, "scripted failed")
        assert [a.status for a in await store.attempts(run_id, "R-s2")] == ["failed"]
        assert steps["R-ev1"].status == "completed"
        c0, c1 = await store.checkpoint(run_id, 0), await store.checkpoint(run_id, 1)
        assert c0 is not None and c1 is not None
        # the failed step changed nothing: same world, same memory, same simulator memory
        assert (c1.world_manifest, c1.memory_blob, c1.simulator_blob) == (
            c0.world_manifest, c0.memory_blob, c0.simulator_blob)
        world, memory, _ = await _final_state(store, run_id)
        assert world[LOG] == b"R-s1\nR-ev1\n"
        assert memory.count(b"R-s1") >= 1 and b"R-s2" not in memory
        summary = await store.summary(run_id)
        assert (summary.steps_done, summary.steps_completed) == (3, 2)
    assert outcome.status is RunStatus.COMPLETED
    assert outcome.progress.steps_discarded == 1
    assert episodes.plays == ["R-s1", "R-s1", "R-s2", "R-s2", "R-ev1"]


async def test_oracle_probes_from_the_donor_with_memory_cleared_and_the_target_inside_probes(env: Env) -> None:
    async with RunStore(env.root / "mempa.sqlite") as store:
        donor = await env.runner(store, FakeEpisodes()).run()
        episodes = FakeEpisodes()
        outcome = await env.runner(store, episodes, cfg={"memory": "oracle"}).run()
        assert outcome.status is RunStatus.COMPLETED
        assert outcome.run_id == "R-oracle-scripted-s0"
        assert any(donor.run_id in n for n in outcome.notes)
        assert await store.steps(outcome.run_id) == []
        results = await store.probe_results(outcome.run_id)
        assert {r.checkpoint_run for r in results} == {donor.run_id}
        run = await store.get_run(outcome.run_id)
        assert run is not None and run.total_steps == 0
    assert episodes.plays == []
    for start in episodes.probe_starts:
        assert start.oracle
        assert b"R-s1" not in start.snapshot  # no donor memory
        if start.probe_id == "R-final-work-solution_breadth":
            assert "Required setting: High" in start.evidence
            assert start.log == "R-s1\nR-s2\nR-ev1\n"
        if start.probe_id == "R-pre-ev1":
            assert "Required setting: Low" in start.evidence
            assert start.log == "R-s1\nR-s2\n"


async def test_no_memory_without_a_file_memory_donor_is_refused(env: Env) -> None:
    # Issue 11.4: never the fixture world, never a donor of another memory condition.
    async with RunStore(env.root / "mempa.sqlite") as store:
        with pytest.raises(DonorError, match=r"no completed File memory run of user R.*"
                           r"play `mempa run --user R --memory file --model scripted --seed 0` \(run R-file-scripted-s0\)"):
            await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        assert await store.get_run("R-none-scripted-s0") is None  # refused before anything was stored
        other = await env.runner(store, FakeEpisodes(), cfg={"memory": "prefstate", "memory_options": {}}).run()
        assert other.status is RunStatus.COMPLETED
        with pytest.raises(DonorError, match="no completed File memory run"):
            await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        with pytest.raises(DonorError, match=r"is a prefstate run; No Memory and Oracle probe only from a File memory"):
            await env.runner(store, FakeEpisodes(), cfg={"memory": "oracle", "donor_run": other.run_id}).run()
        assert await store.get_run("R-oracle-scripted-s0") is None


async def test_a_named_donor_must_have_completed(env: Env) -> None:
    async with RunStore(env.root / "mempa.sqlite") as store:
        first = FakeEpisodes(block_at="R-s2")
        runner = env.runner(store, first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await first.blocked.wait()
            tg.cancel_scope.cancel()
        with pytest.raises(DonorError, match=r"R-file-scripted-s0 has not completed \(it is stopped\)"):
            await env.runner(store, FakeEpisodes(), cfg={"memory": "none", "donor_run": "R-file-scripted-s0"}).run()


async def test_probes_only_waits_for_missing_checkpoints(env: Env) -> None:
    async with RunStore(env.root / "mempa.sqlite") as store:
        first = FakeEpisodes(block_at="R-ev1")
        runner = env.runner(store, first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await first.blocked.wait()
            tg.cancel_scope.cancel()
        outcome = await env.runner(store, FakeEpisodes(), probes_only=True).run()
        assert outcome.status is RunStatus.STOPPED
        waits = [n for n in outcome.notes if " wait: " in n]
        assert len(waits) == 1 and waits[0].startswith(  # the two final probes, in one line
            "2 probe(s) wait: run R-file-scripted-s0 has no checkpoint after step 3 yet (play the timeline first): ")
        done = await store.done_probes(outcome.run_id)
        assert done == {("R-pre-ev1", 1), ("R-pre-ev1", 2)}
        finished = await env.runner(store, FakeEpisodes()).run()
        assert finished.status is RunStatus.COMPLETED
        assert len(await store.done_probes(outcome.run_id)) == 6
        # --probes-only on the completed run changes nothing and leaves it completed
        again = await env.runner(store, FakeEpisodes(), probes_only=True).run()
        assert again.status is RunStatus.COMPLETED and again.progress.steps_done == 3


async def test_run_many_plays_accumulation_before_reference_conditions(env: Env) -> None:
    async with RunStore(env.root / "mempa.sqlite") as store:
        configs = [runner_config(memory="oracle"), runner_config()]
        results = await run_many(
            configs, store, env.client, default_registry(), memory_root=env.root / "lm",
            episodes=FakeEpisodes().functions(), scorer=fake_scorer, resamples=100,
        )
        assert all(isinstance(r, RunOutcome) and r.status is RunStatus.COMPLETED for r in results)
        oracle = await store.probe_results("R-oracle-scripted-s0")
        assert {r.checkpoint_run for r in oracle} == {"R-file-scripted-s0"}


async def test_a_failed_model_call_stops_the_run_instead_of_discarding_the_step(tmp_path: Path) -> None:
    responder = FlakyResponder(down_for="play R-s2")
    async with ScriptedModelServer(responder) as server, RunStore(tmp_path / "mempa.sqlite") as store:
        env = Env(server, LLMClient(server.profile()), tmp_path)
        with pytest.raises(LLMError, match=r"HTTP 503.*step R-s2 was not kept"):
            await env.runner(store, FakeEpisodes()).run()
        run_id = runner_config().run_id
        run = await store.get_run(run_id)
        assert run is not None and run.status is RunStatus.FAILED and "503" in (run.error or "")
        assert [s.step_id for s in await store.steps(run_id)] == ["R-s1"]
        assert await store.attempts(run_id, "R-s2") != []  # the first failed attempt is on record
        responder.down_for = None  # the server is back: the same run resumes and completes
        episodes = FakeEpisodes()
        outcome = await env.runner(store, episodes).run()
        assert outcome.status is RunStatus.COMPLETED and episodes.plays[:2] == ["R-s2", "R-ev1"]
        assert {s.status for s in await store.steps(run_id)} == {"completed"}


async def test_edited_world_files_refuse_the_resume(env: Env) -> None:
    worlds = env.root / "worlds"
    shutil.copytree(WORLDS, worlds)
    async with RunStore(env.root / "mempa.sqlite") as store:
        first = FakeEpisodes(block_at="R-s2")
        runner = env.runner(store, first, cfg={"worlds_dir": worlds})
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await first.blocked.wait()
            tg.cancel_scope.cancel()
        probe = worlds / "users" / "R" / "probes" / "R-pre-ev1.yaml"
        probe.write_text(probe.read_text().replace("lift service visit", "lift inspection visit"))
        with pytest.raises(ConfigMismatchError, match="the files of user R's world changed"):
            await env.runner(store, FakeEpisodes(), cfg={"worlds_dir": worlds}).run()


def test_a_prompt_too_long_for_the_window_fails_the_step_but_an_outage_stops_the_run() -> None:
    from mempa_tui.llm.errors import LLMError
    from mempa_tui.llm.types import LLMCallRecord, Role
    from mempa_tui.runner._shared import stop_on_model_failure

    def record(kind: str) -> LLMCallRecord:
        return LLMCallRecord(role=Role.PA, model="m", prompt_tokens=1, completion_tokens=0,
                             reused_prefix_tokens=0, latency_s=0.0, ok=False, error="x", error_kind=kind)

    stop_on_model_failure("A-S01", "floored", [record("ContextWindowError")])  # no stop: resume would repeat it
    with pytest.raises(LLMError, match="A-S01 was not kept"):
        stop_on_model_failure("A-S01", "failed", [record("LLMConnectionError")])


async def test_run_many_gives_reference_conditions_the_first_donor_of_the_batch(env: Env) -> None:
    # Both accumulation runs finish; No Memory takes the File memory run (paper Section 4), not the
    # first memory run of the list (here the preference-state run) nor whichever finished last.
    async with RunStore(env.root / "mempa.sqlite") as store:
        configs = [runner_config(memory="none"), runner_config(memory="prefstate", memory_options={}), runner_config()]
        results = await run_many(
            configs, store, env.client, default_registry(), memory_root=env.root / "lm",
            episodes=FakeEpisodes().functions(), scorer=fake_scorer, resamples=100,
        )
        assert all(isinstance(r, RunOutcome) and r.status is RunStatus.COMPLETED for r in results)
        none = await store.get_run("R-none-scripted-s0")
        assert none is not None and none.donor_run == "R-file-scripted-s0"
        assert {r.checkpoint_run for r in await store.probe_results(none.id)} == {"R-file-scripted-s0"}


async def test_a_donor_must_have_played_the_same_timeline(env: Env) -> None:
    # A slice's final probes expect only the slice's change events, so a whole-timeline run cannot
    # lend its checkpoints to a slice run (and the other way round), named or chosen.
    async with RunStore(env.root / "mempa.sqlite") as store:
        donor = await env.runner(store, FakeEpisodes()).run()
        assert donor.status is RunStatus.COMPLETED
        sliced = runner_config(memory="none").model_copy(update={"slice": True})
        with pytest.raises(DonorError, match=r"played the whole timeline, but this run probes the quick-start slice"):
            await env.runner(store, FakeEpisodes(), config=sliced.model_copy(update={"donor_run": donor.run_id})).run()
        assert await store.get_run(sliced.run_id) is None  # refused before anything was stored
        with pytest.raises(DonorError, match=r"that played the same timeline \(slice\).*--slice"):
            await env.runner(store, FakeEpisodes(), config=sliced).run()
        whole = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        assert {r.checkpoint_run for r in await store.probe_results(whole.run_id)} == {donor.run_id}


async def test_a_reference_run_stored_without_a_donor_is_refused_until_fresh(env: Env) -> None:
    # An older version let No Memory probe the fixture world; such a stored run is not resumed as
    # it was (that would mix fixture-world probes into a baseline): --fresh starts it over.
    from mempa_tui.store import RunRecord

    async with RunStore(env.root / "mempa.sqlite") as store:
        assert (await env.runner(store, FakeEpisodes()).run()).status is RunStatus.COMPLETED
        config = runner_config(memory="none")
        await store.create_run(RunRecord(
            id=config.run_id, user=config.user, profile=config.profile, memory=config.memory, seed=config.seed,
            repeats=config.repeats, config_json=config.model_dump_json(), config_hash=config.config_hash(),
        ))
        with pytest.raises(DonorError, match=r"started without a donor run.*--fresh"):
            await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        fresh = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}, fresh=True).run()
        assert any("donor run R-file-scripted-s0" in n for n in fresh.notes)
        assert {r.checkpoint_run for r in await store.probe_results(fresh.run_id)} == {"R-file-scripted-s0"}


async def test_a_donor_moved_aside_by_fresh_stays_the_donor_of_its_reference_runs(env: Env) -> None:
    # `--fresh` on the memory run alone: the No Memory run probed the old checkpoints, so it must
    # keep pointing at them (now under `~1`), and a rerun must neither refuse nor mix the two donors.
    async with RunStore(env.root / "mempa.sqlite") as store:
        donor = await env.runner(store, FakeEpisodes()).run()
        none = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        assert {r.checkpoint_run for r in await store.probe_results(none.run_id)} == {donor.run_id}
        again = await env.runner(store, FakeEpisodes(), fresh=True).run()
        assert again.run_id == donor.run_id and again.status is RunStatus.COMPLETED
        moved = f"{donor.run_id}~1"
        record = await store.get_run(none.run_id)
        assert record is not None and record.donor_run == moved
        assert {r.checkpoint_run for r in await store.probe_results(none.run_id)} == {moved}
        rerun = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        assert rerun.status is RunStatus.COMPLETED, rerun.notes
        assert any(f"moved aside as {moved}" in n for n in rerun.notes), rerun.notes
        assert any(f"donor run {moved} (chosen when this run started)" in n for n in rerun.notes)
        assert {r.checkpoint_run for r in await store.probe_results(none.run_id)} == {moved}
        record = await store.get_run(none.run_id)
        assert record is not None and RunConfig.model_validate_json(record.config_json).donor_run == moved
        again_rerun = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        assert not any("moved aside" in n for n in again_rerun.notes)  # rewritten once, then plain


async def test_run_many_does_not_start_a_reference_run_whose_donor_failed(env: Env) -> None:
    # The File memory run cannot start (another process holds it); a new No Memory run must not
    # fall back to the fixture world and be stored as a baseline no run of the batch shares.
    from filelock import FileLock

    from mempa_tui.runner import RunBusyError, lease_path

    async with RunStore(env.root / "mempa.sqlite") as store:
        configs = [runner_config(memory="none"), runner_config()]
        held = FileLock(lease_path(store.path, configs[1].run_id), timeout=0, thread_local=False)
        with held:
            results = await run_many(
                configs, store, env.client, default_registry(), memory_root=env.root / "lm",
                episodes=FakeEpisodes().functions(), scorer=fake_scorer, resamples=100,
            )
        assert isinstance(results[1], RunBusyError)
        assert isinstance(results[0], DonorError)
        assert str(results[0]).startswith("not started: R-file-scripted-s0 did not complete")
        assert await store.get_run("R-none-scripted-s0") is None


async def test_a_batch_without_file_memory_is_refused_before_it_plays(env: Env) -> None:
    from mempa_tui.runner import batch_donor_problems

    async with RunStore(env.root / "mempa.sqlite") as store:
        configs = [runner_config(memory="none"), runner_config(memory="prefstate", memory_options={})]
        problems = await batch_donor_problems(configs, store)
        assert len(problems) == 1 and problems[0].startswith("R-none-scripted-s0: no completed File memory run")
        assert "add file to --memory" in problems[0]
        assert await batch_donor_problems([*configs, runner_config()], store) == []  # the batch plays it
        results = await run_many(
            configs, store, env.client, default_registry(), memory_root=env.root / "lm",
            episodes=FakeEpisodes().functions(), scorer=fake_scorer, resamples=100,
        )
        assert isinstance(results[0], DonorError) and isinstance(results[1], RunOutcome)
        assert await store.get_run("R-none-scripted-s0") is None
        assert await batch_donor_problems(configs, store) != []  # a prefstate run never lends
        assert (await env.runner(store, FakeEpisodes()).run()).status is RunStatus.COMPLETED
        assert await batch_donor_problems(configs, store) == []  # a stored File memory run does


async def test_reference_runs_of_one_command_share_the_stored_donor(env: Env) -> None:
    # No Memory probed from the File run; a newer preference-state run completed since. An Oracle
    # run started beside it (no memory run listed) takes No Memory's donor, not the newest run.
    async with RunStore(env.root / "mempa.sqlite") as store:
        file = await env.runner(store, FakeEpisodes()).run()
        none = await env.runner(store, FakeEpisodes(), cfg={"memory": "none"}).run()
        newer = await env.runner(store, FakeEpisodes(), cfg={"memory": "prefstate", "memory_options": {}}).run()
        assert newer.status is RunStatus.COMPLETED
        results = await run_many(
            [runner_config(memory="none"), runner_config(memory="oracle")], store, env.client, default_registry(),
            memory_root=env.root / "lm", episodes=FakeEpisodes().functions(), scorer=fake_scorer, resamples=100,
        )
        assert all(isinstance(r, RunOutcome) and r.status is RunStatus.COMPLETED for r in results)
        oracle = await store.get_run("R-oracle-scripted-s0")
        assert oracle is not None and oracle.donor_run == file.run_id
        assert (await store.get_run(none.run_id)).donor_run == file.run_id  # type: ignore[union-attr]


async def test_a_run_prints_and_stores_its_donor_thresholds_and_decoding(tmp_path: Path) -> None:
    # Issue 11.4: the header names what produced the numbers; an 8,192-token window cannot hold
    # the paper's 20k next to the 83 tools, so the thresholds are scaled, printed and stored.
    # Issue 15.6: that window cannot hold the tool block at all, which is said before any step.
    from mempa_tui.runner.report import last_memory_stats

    events: list[RunEvent | StepEvent] = []
    async with ScriptedModelServer(ok_responder) as server, RunStore(tmp_path / "mempa.sqlite") as store:
        env = Env(server, LLMClient(server.profile(context_window=8192)), tmp_path)
        file = await env.runner(store, FakeEpisodes(), events.append, cfg={"memory_options": {}}).run()
        started = next(e for e in events if isinstance(e, RunEvent) and e.kind == "run_started")
        assert "File memory consolidates at 1,024 -> 512 tokens of PA prompt (scaled from the paper's" in started.message
        assert "decoding: pa t=" in started.message and "LLM message checker" in started.message
        warning = next(n for n in file.notes if "cannot hold the world tools" in n)
        assert warning.startswith("warning: profile scripted: the PA's context_window of 8,192 tokens")
        assert "Set context_window to at least" in warning
        record = await store.get_run(file.run_id)
        assert record is not None
        budget = RunConfig.model_validate_json(record.config_json).file_memory_budget
        assert budget["consolidate_at_tokens"] == 1024 and budget["scaled"] == 1 and budget["tool_tokens"] > 10_000
        stats = await last_memory_stats(store, file.run_id)
        assert stats["base_prompt_tokens"] > 300  # the PA's instructions are counted into its prompt
        assert stats["consolidate_at_tokens"] == 1024
        events.clear()
        none = await env.runner(store, FakeEpisodes(), events.append, cfg={"memory": "none"}).run()
        started = next(e for e in events if isinstance(e, RunEvent) and e.kind == "run_started")
        assert f"donor {file.run_id}; donor's File memory consolidates at 1,024 -> 512" in started.message
        assert none.status is RunStatus.COMPLETED


async def test_a_window_that_holds_the_tools_uses_the_papers_thresholds(env: Env) -> None:
    events: list[RunEvent | StepEvent] = []
    async with RunStore(env.root / "mempa.sqlite") as store:
        file = await env.runner(store, FakeEpisodes(), events.append, cfg={"memory_options": {}}).run()
    assert not any("cannot hold the world tools" in n for n in file.notes)
    started = next(e for e in events if isinstance(e, RunEvent) and e.kind == "run_started")
    assert "File memory consolidates at 20,000 -> 10,000 tokens of PA prompt (the paper's values)" in started.message


async def test_a_failed_file_memory_save_is_a_run_problem(env: Env) -> None:
    # Issue 15.2: the scripted memory model answers "ok from ..." (no JSON), so every consolidation
    # fails; the turns stay pending (in the PA's view) and each failure is warned about.
    from mempa_tui.runner.report import last_memory_stats

    events: list[RunEvent | StepEvent] = []
    async with RunStore(env.root / "mempa.sqlite") as store:
        cfg = {"memory_options": {"consolidate_at_tokens": 100, "consolidate_to_tokens": 50}}
        outcome = await env.runner(store, FakeEpisodes(), events.append, cfg=cfg).run()
        stats = await last_memory_stats(store, outcome.run_id)
    assert outcome.status is RunStatus.COMPLETED
    warnings = [e.message for e in events if isinstance(e, RunEvent) and e.kind == "warning"]
    assert any(w.startswith("R-s1: file memory counted 1 more consolidation failures") for w in warnings), warnings
    assert any("stay in the PA's view" in w for w in outcome.progress.errors)
    assert stats["consolidation_failures"] >= 3 and stats["pending_turns"] == 3


async def test_a_stored_reference_run_with_a_donor_of_another_condition_is_refused(env: Env) -> None:
    # An older version could give No Memory a preference-state donor; it is not resumed as it was.
    from mempa_tui.store import RunRecord

    async with RunStore(env.root / "mempa.sqlite") as store:
        other = await env.runner(store, FakeEpisodes(), cfg={"memory": "prefstate", "memory_options": {}}).run()
        config = runner_config(memory="none", donor_run=None)
        stored = config.model_copy(update={"donor_run": other.run_id})
        await store.create_run(RunRecord(
            id=config.run_id, user=config.user, profile=config.profile, memory=config.memory, seed=config.seed,
            repeats=config.repeats, config_json=stored.model_dump_json(), config_hash=stored.config_hash(),
            donor_run=other.run_id,
        ))
        with pytest.raises(DonorError, match=r"probes from R-prefstate-scripted-s0, a prefstate run.*--fresh"):
            await env.runner(store, FakeEpisodes(), config=config).run()


@pytest.mark.parametrize(("runtime", "slots", "most"), [("openai", 1, 3), ("embedded", 1, 1), ("embedded", 2, 2)])
async def test_probes_at_once_are_capped_at_the_embedded_servers_slots(
        env: Env, runtime: str, slots: int, most: int) -> None:
    """Issue 12: two probes taking turns on one llama.cpp slot evict each other's cached prompt
    (they share the PA's instructions and tools, so llama.cpp never saves the other's state to its
    host cache); on the embedded server probes run no more at once than it has slots."""
    from dataclasses import replace

    options = env.client.profile.options
    embedded = options.embedded.model_copy(update={"n_parallel": slots})
    profile = env.client.profile.model_copy(update={
        "runtime": runtime, "options": options.model_copy(update={"embedded": embedded})})
    client = LLMClient(profile)
    episodes = FakeEpisodes()
    functions = episodes.functions()
    units = 6  # 3 probes x 2 repeats of the fixture world
    active, peak, finished, gates = 0, 0, 0, []

    def release() -> None:  # every waiting probe goes once as many have started as may run together
        if len(gates) >= min(most, units - finished):
            for g in gates:
                g.set()

    async def probe(script: Any, ctx: Any) -> Any:
        nonlocal active, peak, finished
        active += 1
        peak = max(peak, active)
        gate = anyio.Event()
        gates.append(gate)
        release()
        await gate.wait()
        try:
            return await functions.run_probe(script, ctx)
        finally:
            active -= 1
            finished += 1
            gates.remove(gate)
            release()

    async with RunStore(env.root / "mempa.sqlite") as store:
        config = runner_config(probe_concurrency=3)
        runner = Runner(config, store, client, default_registry(), None, memory_root=env.root / "local_memory",
                        episodes=replace(functions, run_probe=probe), scorer=fake_scorer, resamples=200)
        outcome = await runner.run()
    assert outcome.status.value == "completed" and finished == units and peak == most
