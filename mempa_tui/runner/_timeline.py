"""The timeline layer: play a run's steps in order from its last checkpoint (SPEC section 4.8).

Paper sources: Section 3.3 'Timeline and Preference Change' (sessions and change events in order),
Appendix C.2 'Persistent world' and 'Commit or discard', Appendix D.3 (the three stores that carry
over: world, PA memory, simulator memory).

Rules this module implements:

* Before any step the run's starting checkpoint (index -1) holds the fixture world, the empty
  memory and the empty simulator memory.
* A step starts from the last checkpoint's state. ``completed``: its world is committed, the memory
  is snapshotted, the simulator memory takes its new entry. Any other status: the attempt is
  discarded (world, memory and simulator memory back to the step's start) and the step is played
  again, up to ``RunConfig.step_attempts`` plays in all; the last discarded attempt is stored with
  its reason and the run CONTINUES with the next step (the paper discards a failed step; the
  later sessions do not depend on it, and its cell simply gets one signal fewer).
* An exception (a bug, the store) stops the run without storing the step; so does a step whose
  last attempt failed because a model call itself failed (server down, timeout): that says
  nothing about the PA or the user, so it is not recorded as discarded. Rerunning plays the step
  again from the same checkpoint, so nothing is lost and nothing is done twice.
* The step row, its transcript, its model calls and its checkpoint go to the store in one
  transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from mempa_tui.memory import MemorySystem
from mempa_tui.runner._calls import step_sampling_scope
from mempa_tui.runner._health import repeats_note
from mempa_tui.runner._shared import (
    EventCollector,
    RunContext,
    call_rows,
    capture_calls,
    server_exited,
    stop_on_model_failure,
)
from mempa_tui.runner._simmem import (
    SimulatorMemoryState,
    apply_step_entry,
    copy_simulator_memory,
    dump_simulator_memory,
    load_simulator_memory,
    new_simulator_memory,
)
from mempa_tui.runner.episode import StepResult
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent
from mempa_tui.store import (
    CheckpointData,
    StepAttemptRecord,
    StepRecord,
    TokenTotals,
    utc_now,
)
from mempa_tui.world import WorldState

__all__ = ["RunState", "play_timeline"]


@dataclass
class RunState:
    """The persistent state of a run after its last settled step."""

    step_index: int
    """Last settled step (-1: the start)."""
    world: WorldState
    """The persistent world."""
    memory_snapshot: bytes
    """``MemorySystem.snapshot()`` of the run's memory."""
    simulator_memory: SimulatorMemoryState
    """The simulator's memory."""
    tokens: TokenTotals
    """Token use of the run up to here."""


async def _load_or_start(run: RunContext, memory: MemorySystem) -> RunState:
    store, run_id = run.store, run.run_id
    ckpt = await store.latest_checkpoint(run_id)
    if ckpt is None:
        world = run.bundle.world_state()
        sim = new_simulator_memory()
        state = RunState(-1, world, memory.snapshot(), sim, TokenTotals())
        await store.write_initial_checkpoint(run_id, CheckpointData(
            step_index=-1, world_files=dict(world.files), world_manifest=world.manifest(),
            memory_snapshot=state.memory_snapshot, simulator_memory_json=dump_simulator_memory(sim),
        ))
        return state
    world = WorldState(await store.load_world(ckpt.world_manifest))
    snapshot = await store.load_blob(ckpt.memory_blob) if ckpt.memory_blob else memory.snapshot()
    memory.restore(snapshot)
    sim_text = (await store.load_blob(ckpt.simulator_blob)).decode("utf-8") if ckpt.simulator_blob else ""
    sim = load_simulator_memory(sim_text) if sim_text else new_simulator_memory()
    return RunState(ckpt.step_index, world, snapshot, sim, ckpt.tokens)


def _context(run: RunContext, script: AccumulationSession | ChangeEvent, state: RunState,
             memory: MemorySystem, sim: SimulatorMemoryState, observer: EventCollector) -> object:
    return run.episodes.make_context(
        persona=run.bundle.persona,
        targets=run.bundle.targets_at(script.context, script.starts_at),
        world=state.world,
        registry=run.registry,
        memory=memory,
        client=run.client,
        simulator_memory=sim,
        observer=observer,
        oracle=False,
    )


async def _play_step(run: RunContext, index: int, state: RunState, memory: MemorySystem) -> RunState:
    step_id = run.bundle.timeline.steps[index]
    script = run.bundle.step(step_id)
    kind = "accumulation" if isinstance(script, AccumulationSession) else "change_event"
    play = run.episodes.run_accumulation if kind == "accumulation" else run.episodes.replay_change_event
    attempt = len(await run.store.attempts(run.run_id, step_id)) + 1
    failures_before = _failure_counts(memory)
    run.progress.current = step_id
    run.emit("step_started", f"step {index + 1}/{run.progress.steps_total} {step_id} ({kind})", step_id=step_id)
    while True:
        sim = copy_simulator_memory(state.simulator_memory)
        collector = EventCollector(run, step_id)
        started = utc_now()
        with capture_calls() as calls, step_sampling_scope(run.config.seed, step_id, attempt):
            result = await play(script, _context(run, script, state, memory, sim, collector))
        finished = utc_now()
        run.add_tokens(calls)
        status: str = result.status
        if status == "completed" or attempt >= run.config.step_attempts or server_exited(calls):
            if status != "completed":
                memory.restore(state.memory_snapshot)
                stop_on_model_failure(f"step {step_id}", status, calls)
            break
        memory.restore(state.memory_snapshot)
        await run.store.record_attempt(run.run_id, StepAttemptRecord(
            step_id=step_id, attempt=attempt, status=status, reason=result.reason,  # type: ignore[arg-type]
            started_at=started, finished_at=finished, tokens=TokenTotals.from_calls(calls),
        ), call_rows(f"{step_id}#attempt{attempt}", calls))
        run.emit("step_retry", f"{step_id} ended {status} ({result.reason}); playing it again",
                 step_id=step_id, status=status)
        attempt += 1

    if status == "completed":
        world = result.world if result.world is not None else state.world
        snapshot = memory.snapshot()
        sim = apply_step_entry(sim, result, script.starts_at)
    else:
        memory.restore(state.memory_snapshot)
        world, snapshot, sim = state.world, state.memory_snapshot, state.simulator_memory
    tokens = state.tokens.plus(TokenTotals.from_calls(calls))
    await run.store.commit_step(
        run.run_id,
        StepRecord(
            index=index, step_id=step_id, kind=kind, status=status, reason=result.reason,  # type: ignore[arg-type]
            attempts=attempt, selection=result.selection, started_at=started, finished_at=finished,
            tokens=TokenTotals.from_calls(calls), result_json=_result_json(result, memory),
        ),
        collector.records(),
        _checkpoint(index, step_id, script.starts_at, world, snapshot, sim, tokens),
        call_rows(step_id, calls),
    )
    run.progress.steps_done = index + 1
    if status == "completed":
        _warn_memory_failures(run, step_id, failures_before, _failure_counts(memory))
    if status != "completed":
        run.progress.steps_discarded += 1
        run.progress.errors.append(f"{step_id}: {status} after {attempt} attempt(s): {result.reason}")
    run.emit("step_finished", f"step {index + 1}/{run.progress.steps_total} {step_id} {status}"
             + (f" ({result.reason})" if result.reason and status != "completed" else "")
             + repeats_note(result), step_id=step_id, status=status)
    return RunState(index, world, snapshot, sim, tokens)


def _failure_counts(memory: MemorySystem) -> dict[str, float]:
    """The memory's failure counters (``inspect().stats`` keys ending in ``_failures``)."""
    return {k: v for k, v in memory.inspect().stats.items() if k.endswith("_failures")}


def _warn_memory_failures(run: RunContext, step_id: str, before: dict[str, float], after: dict[str, float]) -> None:
    """A memory failure in a kept step is a run problem (issue 15.2): warn, naming the counter."""
    for key, value in sorted(after.items()):
        grown = value - before.get(key, 0.0)
        if grown > 0:
            run.warn(f"{step_id}: {run.config.memory} memory counted {grown:g} more {key.replace('_', ' ')} "
                     f"in this step ({value:g} in all); turns it could not save stay in the PA's view")


def _result_json(result: StepResult, memory: MemorySystem) -> str:
    """The step's stored result (without the world), with the memory's counters after the step
    (``StepResult.memory_stats``), so each memory failure count is in the run record."""
    payload = result.model_dump(mode="json", exclude={"world"})
    payload["memory_stats"] = dict(memory.inspect().stats)
    return json.dumps(payload)


def _warn_if_broken(run: RunContext, memory: MemorySystem) -> bool:
    """Make a broken memory a run problem as soon as it shows (issue 16): a warning in the run's
    progress (the dashboard's problem count, ``mempa run``'s ``warning:`` line). True if warned."""
    from mempa_tui.runner._health import health_of_stats

    health = health_of_stats(run.run_id, run.config.memory, memory.inspect().stats)
    if health.broken:
        run.warn(f"warning: {health.text()}")
    return health.broken


def _checkpoint(index: int, step_id: str, when: datetime, world: WorldState, snapshot: bytes,
                sim: SimulatorMemoryState, tokens: TokenTotals) -> CheckpointData:
    return CheckpointData(
        step_index=index, step_id=step_id, story_time=when, world_files=dict(world.files),
        world_manifest=world.manifest(), memory_snapshot=snapshot,
        simulator_memory_json=dump_simulator_memory(sim), tokens=tokens,
    )


async def play_timeline(run: RunContext) -> None:
    """Play every unsettled step of the run's timeline, resuming from the last checkpoint.

    Args:
        run: the run context (its progress is updated as steps settle).

    Raises:
        Exception: whatever the episode loop or the store raises; the step in flight is not stored.
    """
    folder = run.memory_folder("run")
    if await run.store.latest_checkpoint(run.run_id) is None:
        run.drop_folder(folder)  # a fresh start: nothing of an earlier (archived) run's store stays
    memory = run.new_memory(folder)
    state = await _load_or_start(run, memory)
    steps = run.bundle.timeline.steps
    run.progress.steps_done = state.step_index + 1
    run.progress.steps_discarded = sum(
        1 for s in await run.store.steps(run.run_id) if s.status != "completed"
    )
    warned = False
    for index in range(state.step_index + 1, len(steps)):
        state = await _play_step(run, index, state, memory)
        warned = warned or _warn_if_broken(run, memory)
    if not warned:
        _warn_if_broken(run, memory)
    run.progress.current = None
