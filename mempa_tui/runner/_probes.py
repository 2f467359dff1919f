"""The probe layer: each probe x repeat on an isolated branch of a checkpoint (paper Section 3.5).

Paper sources: Section 3.5 'Probes' and 'Reference Conditions', Section 4 'Reference Condition
Runs', Appendix C.4 (a pre-event probe runs one hour before its event), Appendix D.3 (probes write
nothing back), Appendix F.2 (which floors are run again; PRS over the same final probes as BRS).

* A final probe starts from the checkpoint after the last timeline step; a pre-event probe from
  the last checkpoint strictly before its event (the one after the step that precedes the event).
* Accumulating conditions probe from their own checkpoints. No Memory and Oracle probe from a
  donor run's checkpoints with the memory cleared; without a donor, from the fixture world.
* Every probe x repeat gets the checkpoint's world (immutable; the episode works on a copy) and a
  FRESH memory instance restored from the checkpoint's snapshot, in its own folder that is deleted
  afterwards; the simulator gets no memory. Nothing of the branch is written back: the only
  output is the probe's result row, transcript and model calls.
* Under Oracle the probed cell's target is handed to the memory inside the probe only.
* A repeat that ends floored by a missing required IX call or by an action held without asking is
  run again up to ``probe_attempts`` runs (F.2); the two floors the paper scores as they happen
  (interaction text in a task tool's arguments, no send-or-suppress decision on an outreach
  event) are kept at once (:func:`mempa_tui.ix.floors.is_rerun_floor`). An invalid or failed
  repeat is run again too, except one whose PA prompt did not fit the model's window: that is no
  floor but a failed probe, stored with the reason ``context window: ...`` and kept out of the
  scores like any other incomplete probe. The last run's result is kept.
* BRS and PRS are computed for completed final probes; a floored final probe gets BRS 1 by rule
  (not judged) and is still rated for PRS, since the user rates what was delivered (F.2: PRS is
  aggregated over the same final probes as BRS).
* Results are stored one probe x repeat at a time, so a killed run resumes with the rest. A
  repeat that failed because a model call failed is not stored: the run stops and resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from mempa_tui.ix.floors import is_rerun_floor
from mempa_tui.llm.runtime import conversation_slots
from mempa_tui.llm.types import LLMCallRecord
from mempa_tui.memory import OracleMemory
from mempa_tui.runner._calls import probe_sampling_scope
from mempa_tui.runner._health import repeats_note
from mempa_tui.runner._scoring import ProbeScorer, RealizationScores, score_final_probe
from mempa_tui.runner._shared import (
    EventCollector,
    RunContext,
    call_rows,
    capture_calls,
    server_exited,
    stop_on_model_failure,
)
from mempa_tui.scripts.schema import Probe, ProbeKind
from mempa_tui.store import (
    CheckpointRecord,
    ProbeResultRecord,
    StoreError,
    TokenTotals,
    utc_now,
)
from mempa_tui.world import WorldState

__all__ = ["WINDOW_REASON", "ProbeSource", "ProbeUnit", "plan_probes", "run_again", "run_probes"]

WINDOW_REASON = "context window"
"""Opens the stored reason of a probe whose PA prompt did not fit the model's window (failed,
incomplete, never a floor; Appendix F.2)."""


def _window_overflow(calls: list[LLMCallRecord]) -> bool:
    return any(not c.ok and c.error_kind == "ContextWindowError" for c in calls)


def run_again(status: str, reason: str | None, calls: list[LLMCallRecord]) -> bool:
    """Whether a probe repeat that ended with ``status`` is played again (Appendix F.2).

    Completed: no. Floored: only for the kinds the paper reruns (missing required IX call, action
    held without asking). Invalid or failed: yes, unless the PA's prompt did not fit its window
    (playing it again would overflow again).
    """
    if status == "completed":
        return False
    if status == "floored":
        return is_rerun_floor(reason)
    return not _window_overflow(calls)


@dataclass(frozen=True)
class ProbeSource:
    """Where a probe branch starts."""

    run_id: str | None
    """Run whose checkpoint it is; None: the fixture world with an empty memory."""
    step_index: int | None
    """The checkpoint's last step (-1: the run's start); None with the fixture world."""
    with_memory: bool
    """Restore the checkpoint's memory snapshot (False for No Memory and Oracle)."""


@dataclass(frozen=True)
class ProbeUnit:
    """One probe x repeat to run."""

    probe: Probe
    repeat: int
    source: ProbeSource


def _checkpoint_index(run: RunContext, probe: Probe) -> int | str:
    """The timeline index a probe's branch starts after, or why there is none."""
    steps = run.bundle.timeline.steps
    if probe.probe_kind is ProbeKind.FINAL:
        return len(steps) - 1
    if probe.event not in steps:
        return f"its event {probe.event!r} is not on the timeline"
    return steps.index(probe.event) - 1


async def plan_probes(run: RunContext, donor: str | None) -> tuple[list[ProbeUnit], list[str]]:
    """The probe x repeat units still to run, and why any probe cannot run now.

    Args:
        run: the run context.
        donor: for No Memory and Oracle, the run whose checkpoints to use (None: fixture world).

    Returns:
        ``(units, problems)``; stored units are left out, each problem is one line (the probes
        that wait for the same missing checkpoint share one).
    """
    done = await run.store.done_probes(run.run_id)
    source_run = run.run_id if run.config.accumulates else donor
    available: dict[int, CheckpointRecord] = {}
    if source_run is not None:
        available = {c.step_index: c for c in await run.store.checkpoints(source_run)}
    units: list[ProbeUnit] = []
    problems: list[str] = []
    waiting: dict[int, list[str]] = {}  # checkpoint index -> probes waiting for it
    for probe_id in sorted(run.bundle.probes):
        probe = run.bundle.probes[probe_id]
        if all((probe_id, r) in done for r in range(1, run.config.repeats + 1)):
            continue  # every repeat is stored: nothing to plan, nothing to wait for
        index = _checkpoint_index(run, probe)
        if isinstance(index, str):
            problems.append(f"probe {probe_id} skipped: {index}")
            continue
        if source_run is None:
            source = ProbeSource(None, None, with_memory=False)
        elif index in available:
            story_time = available[index].story_time
            if story_time is not None and story_time >= probe.starts_at:
                problems.append(
                    f"probe {probe_id} skipped: its checkpoint (after step {index + 1}, "
                    f"{story_time:%Y-%m-%d %H:%M}) is not before the probe ({probe.starts_at:%Y-%m-%d %H:%M})"
                )
                continue
            source = ProbeSource(source_run, index, with_memory=run.config.accumulates)
        else:
            waiting.setdefault(index, []).append(probe_id)
            continue
        units.extend(
            ProbeUnit(probe, r, source)
            for r in range(1, run.config.repeats + 1)
            if (probe_id, r) not in done
        )
    for index, probe_ids in sorted(waiting.items()):  # one line per missing checkpoint, not per probe
        shown = ", ".join(probe_ids[:3]) + (f" and {len(probe_ids) - 3} more" if len(probe_ids) > 3 else "")
        problems.append(
            f"{len(probe_ids)} probe(s) wait: run {source_run} has no checkpoint after step {index + 1} yet "
            f"(play the timeline first): {shown}"
        )
    return units, problems


@dataclass
class _BranchCache:
    """Checkpoint states loaded once and shared by the probes that start from them."""

    run: RunContext
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _states: dict[tuple[str | None, int | None], tuple[WorldState, bytes | None]] = field(default_factory=dict)

    async def get(self, source: ProbeSource) -> tuple[WorldState, bytes | None]:
        key = (source.run_id, source.step_index)
        async with self._lock:
            if key not in self._states:
                self._states[key] = await self._load(source)
            return self._states[key]

    async def _load(self, source: ProbeSource) -> tuple[WorldState, bytes | None]:
        if source.run_id is None or source.step_index is None:
            return self.run.bundle.world_state(), None
        ckpt = await self.run.store.checkpoint(source.run_id, source.step_index)
        if ckpt is None:
            raise StoreError(f"run {source.run_id}: checkpoint after step {source.step_index + 1} is missing")
        world = WorldState(await self.run.store.load_world(ckpt.world_manifest))
        snapshot = None
        if source.with_memory and ckpt.memory_blob:
            snapshot = await self.run.store.load_blob(ckpt.memory_blob)
        return world, snapshot


async def _run_unit(run: RunContext, unit: ProbeUnit, cache: _BranchCache, scorer: ProbeScorer) -> None:
    probe, repeat = unit.probe, unit.repeat
    world, snapshot = await cache.get(unit.source)
    targets = run.bundle.targets_at(probe.context, probe.starts_at)
    target = targets[probe.attribute]
    oracle = run.config.memory == "oracle"
    run.emit("probe_started", f"probe {probe.id} repeat {repeat}", step_id=probe.id, repeat=repeat)
    all_calls = []
    started = utc_now()
    for attempt in range(1, run.config.probe_attempts + 1):
        folder = run.memory_folder("probes", f"{probe.id}-r{repeat}")
        run.drop_folder(folder)
        memory = run.new_memory(folder)
        collector = EventCollector(run, probe.id, repeat)
        started = utc_now()
        try:
            if snapshot is not None:
                memory.restore(snapshot)
            if oracle and isinstance(memory, OracleMemory):
                memory.set_probe_target(probe.attribute, target)
            ctx = run.episodes.make_context(
                persona=run.bundle.persona, targets=targets, world=world, registry=run.registry,
                memory=memory, client=run.client, simulator_memory=None, observer=collector,
                oracle=oracle,
            )
            with capture_calls() as calls, probe_sampling_scope(run.config.seed, probe.id, repeat, attempt):
                result = await run.episodes.run_probe(probe, ctx)
            all_calls.extend(calls)
        finally:
            run.drop_folder(folder)
        if server_exited(calls) or not run_again(result.status, result.reason, calls):
            break
    stop_on_model_failure(f"probe {probe.id} repeat {repeat}", result.status, calls)
    reason = result.reason
    if result.status == "failed" and _window_overflow(calls):
        reason = f"{WINDOW_REASON}: the PA's prompt did not fit the model's window ({result.reason})"
    scores = RealizationScores()
    if probe.probe_kind is ProbeKind.FINAL:  # floored ones too: PRS rates what was delivered
        with capture_calls() as calls, probe_sampling_scope(run.config.seed, probe.id, repeat, attempt):
            scores = await score_final_probe(scorer, run, probe, target, result, world)
        all_calls.extend(calls)
    run.add_tokens(all_calls)
    record = ProbeResultRecord(
        probe_id=probe.id, repeat=repeat, kind=probe.probe_kind.value, context=probe.context.value,
        attribute=probe.attribute, target=target, selection=result.selection, status=result.status,
        reason=reason, attempts=attempt, checkpoint_run=unit.source.run_id,
        checkpoint_index=unit.source.step_index, brs=scores.brs, brs_reason=scores.brs_reason,
        prs=scores.prs, prs_reason=scores.prs_reason, started_at=started, finished_at=utc_now(),
        tokens=TokenTotals.from_calls(all_calls), result_json=result.model_dump_json(exclude={"world"}),
    )
    await run.store.save_probe_result(run.run_id, record, collector.records(), call_rows(probe.id, all_calls, repeat))
    run.progress.probes_done += 1
    if result.status != "completed":
        run.progress.errors.append(f"{probe.id} r{repeat}: {result.status}: {reason}")
    run.emit(
        "probe_finished",
        f"probe {run.progress.probes_done}/{run.progress.probes_total} {probe.id} r{repeat} "
        f"{result.status} selection={result.selection} target={target}"
        + (f" BRS={scores.brs} PRS={scores.prs}" if scores.brs or scores.prs else "") + repeats_note(result),
        step_id=probe.id, repeat=repeat, status=result.status,
    )


def probes_at_once(run: RunContext) -> int:
    """Probe units played at the same time: the run's ``probe_concurrency``, capped at the
    conversations the model server keeps cached at once (the embedded server's slots:
    :func:`~mempa_tui.llm.runtime.conversation_slots`), so that probes never take turns on one
    slot and evict each other's cached prompt (issue 12). Not part of the config hash: how many
    probes run together changes no result beyond the model's own sampling."""
    slots = conversation_slots(run.client.profile)
    limit = run.config.probe_concurrency
    return limit if slots is None else max(1, min(limit, slots))


async def run_probes(run: RunContext, units: list[ProbeUnit], scorer: ProbeScorer) -> None:
    """Run probe units concurrently (at most :func:`probes_at_once` at once).

    Raises:
        Exception: the first error of any unit (the others are cancelled; stored units stay).
    """
    cache = _BranchCache(run)
    limiter = anyio.CapacityLimiter(probes_at_once(run))

    async def one(unit: ProbeUnit) -> None:
        async with limiter:
            run.progress.current = f"{unit.probe.id} r{unit.repeat}"
            await _run_unit(run, unit, cache, scorer)

    async with anyio.create_task_group() as tg:
        for unit in units:
            tg.start_soon(one, unit)
    run.progress.current = None
