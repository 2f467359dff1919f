"""Probe stepper: replay one probe from a stored checkpoint one model call at a time.

Paper sources: Section 3.5 'Probes' (the probe is a short scored session on an isolated branch
of a checkpoint; its first selection of the probed attribute is compared with the target), and
Appendix F.2 (BRS and PRS for completed final probes; a floored one gets PRS, BRS 1 by rule).

How it works: the probe episode (:func:`mempa_tui.runner.episode.run_probe`, unchanged) runs in a
task of its own with a :class:`SteppingClient` in place of the model client. That client stops
before every model call until :meth:`ProbeStepper.step` lets one call through; ``step`` returns
once the episode has reached the next call (or its end), with the call that ran and the episode
events it led to. After the episode: one step reveals the target, one more computes BRS and PRS
with the runner's scorer (the judge's and the user's reasons included).

Isolation: the branch is built exactly as the runner builds a probe branch (the checkpoint's
world, a fresh memory restored from the checkpoint's snapshot in a scratch folder, no simulator
memory), and nothing is written anywhere: the store is only read, the run's memory folder is not
touched, the scratch folder is deleted on close.

Usage::

    stepper = await ProbeStepper.open(store, "R-file-scripted-s0", "probe_x", client=client)
    async with stepper:
        print(stepper.opening.next_role)       # the first call waiting
        while not stepper.finished:
            update = await stepper.step()
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm import LLMClient, LLMError
from mempa_tui.llm.types import (
    ChatMessage,
    Completion,
    LLMCallRecord,
    Role,
    ToolCall,
    ToolSpec,
)
from mempa_tui.memory import OracleMemory
from mempa_tui.runner._budget import stored_memory_options
from mempa_tui.runner._calls import capture_calls, install_call_routing, probe_sampling_scope
from mempa_tui.runner._episode_events import EpisodeEvent
from mempa_tui.runner._scoring import ProbeScorer, RealizationScores, default_scorer, score_final_probe
from mempa_tui.runner._shared import EpisodeFunctions, RunContext
from mempa_tui.runner.config import RunConfig
from mempa_tui.scripts.loader import UserBundle, load_user
from mempa_tui.scripts.schema import Probe, ProbeKind
from mempa_tui.store import CheckpointRecord, RunStore
from mempa_tui.tools import ToolRegistry, default_registry
from mempa_tui.world import WorldState

__all__ = [
    "CheckpointChoice",
    "ModelCallView",
    "ProbeChoice",
    "ProbeStepper",
    "StepperChoices",
    "StepperError",
    "StepperUpdate",
    "SteppingClient",
    "stepper_choices",
]

UpdateKind = Literal["opened", "model_call", "episode_end", "target", "scores", "finished"]
"""What a :class:`StepperUpdate` reports (in this order over a probe's life)."""


class StepperError(Exception):
    """The stepper cannot start or go on; the message names the run, probe or checkpoint."""


class CheckpointChoice(BaseModel):
    """A stored checkpoint a probe branch can start from."""

    run_id: str
    """Run that owns the checkpoint (the run itself, or the donor of No Memory / Oracle)."""
    step_index: int
    """Last timeline step included (-1: the run's start)."""
    step_id: str | None = None
    """That step's id."""
    story_time: str = ""
    """Story time of that step's start, ``YYYY-MM-DD HH:MM`` (empty for the start)."""

    @property
    def label(self) -> str:
        """``after step 3 (s03, 2026-03-09 10:00)`` or ``the start``."""
        if self.step_index < 0:
            return f"{self.run_id}: the start"
        when = f", {self.story_time}" if self.story_time else ""
        return f"{self.run_id}: after step {self.step_index + 1} ({self.step_id}{when})"


class ProbeChoice(BaseModel):
    """A probe of the run's user as the stepper offers it."""

    probe_id: str
    """The probe's id."""
    kind: str
    """``final`` or ``pre_event``."""
    context: str
    """The probe's context (``work``, ``personal``...)."""
    attribute: str
    """The probed attribute key."""
    default_checkpoint: int | None = None
    """The checkpoint the runner would use (step index), None when it has none (fixture world)."""


class StepperChoices(BaseModel):
    """What can be stepped for one stored run."""

    run_id: str
    """The run."""
    memory: str
    """Its memory condition."""
    probes: list[ProbeChoice] = Field(default_factory=list)
    """The user's probes, sorted by id."""
    checkpoints: list[CheckpointChoice] = Field(default_factory=list)
    """Checkpoints of the source run (empty: the fixture world with an empty memory)."""


class ModelCallView(BaseModel):
    """One model call of the stepped probe, as the operator sees it."""

    model_config = ConfigDict(frozen=True)

    index: int
    """1-based position among the stepper's calls."""
    role: Role
    """Which seat called (``pa``, ``simulator``, ``judge``...)."""
    messages: list[ChatMessage]
    """The prompt as sent, system messages first (for the PA: instructions, then date and
    evidence)."""
    tools: list[str] = Field(default_factory=list)
    """Names of the tools offered."""
    tool_choice: str | None = None
    """The forced tool choice, if any."""
    text: str = ""
    """The reply text (think blocks removed)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The tool calls the model made."""
    prompt_tokens: int = 0
    """Prompt tokens of the call."""
    completion_tokens: int = 0
    """Completion tokens of the call."""
    error: str | None = None
    """Why the call failed (the episode then ends ``failed``)."""


class StepperUpdate(BaseModel):
    """What one :meth:`ProbeStepper.step` (or the opening) produced."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: UpdateKind
    """Which stage this update reports."""
    calls: list[ModelCallView] = Field(default_factory=list)
    """Model calls that ran in this step (one while the episode plays; the scorer may add two)."""
    events: list[EpisodeEvent] = Field(default_factory=list)
    """Episode events since the previous update (tool calls, IX selection, replies...)."""
    next_role: Role | None = None
    """The role of the call now waiting (None: no call waits)."""
    status: str | None = None
    """The episode's status (``episode_end`` and later)."""
    reason: str | None = None
    """Why the episode did not complete, or the scorer's note."""
    selection: str | None = None
    """The PA's first selection of the probed attribute (``episode_end`` and later)."""
    pa_repeated_calls: int = 0
    """The episode's PA tool calls identical to an earlier call of their turn (``episode_end``)."""
    pa_repeat_turns: int = 0
    """The episode's PA turns with at least one repeated call (``episode_end``)."""
    pa_echoed_replies: int = 0
    """The episode's PA replies that echoed the harness's own text, withheld from the user and the judge (``episode_end``)."""
    target: str | None = None
    """The target setting (``target`` and later; hidden before)."""
    brs: int | None = None
    """Behavioral realization score 1-5 (``scores``), None when missing or not rated."""
    brs_reason: str | None = None
    """The judge's evidence, or why BRS is missing."""
    prs: int | None = None
    """Perceived realization score 1-5 (``scores``), None when missing or not rated."""
    prs_reason: str | None = None
    """The simulated user's reason, or why PRS is missing."""


@dataclass
class _Stop:
    """Where the episode task stopped: before a call (``next_role``) or at its end."""

    next_role: Role | None = None
    result: Any = None
    error: BaseException | None = None


class _Gate:
    """Holds the episode before each model call until the stepper lets one through."""

    def __init__(self) -> None:
        self.gated = True
        self.go_send, self.go_recv = anyio.create_memory_object_stream[None](1)
        self.stop_send, self.stop_recv = anyio.create_memory_object_stream[_Stop](1)
        self.calls: list[ModelCallView] = []
        self.count = 0

    async def before_call(self, role: Role) -> None:
        if not self.gated:
            return
        await self.stop_send.send(_Stop(next_role=role))
        await self.go_recv.receive()

    def take_calls(self) -> list[ModelCallView]:
        taken, self.calls = self.calls, []
        return taken


class SteppingClient(LLMClient):
    """A model client that waits for the stepper before each call and records what ran.

    It delegates every call to ``inner`` (so the concurrency limits and caches of the app's
    client are shared) and keeps its own :attr:`calls` log.

    Args:
        inner: the client that really calls the models.
    """

    def __init__(self, inner: LLMClient, gate: _Gate | None = None) -> None:
        super().__init__(inner.profile)
        self.inner = inner
        self.gate = gate or _Gate()

    async def complete(
        self,
        role: Role,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Wait for the stepper's go, make the call through the inner client, record it.

        Raises:
            LLMError and friends: as :meth:`LLMClient.complete` (the failure is recorded first).
        """
        role = Role(role)
        await self.gate.before_call(role)
        install_call_routing(self.inner)
        self.gate.count += 1
        base = ModelCallView(
            index=self.gate.count, role=role, messages=list(messages),
            tools=[t.name for t in tools or ()], tool_choice=tool_choice,
        )
        with capture_calls() as sink:
            try:
                completion = await self.inner.complete(
                    role, messages, tools=tools, tool_choice=tool_choice, json_schema=json_schema
                )
            except (LLMError, ValueError) as exc:
                self._log(sink)
                self.gate.calls.append(base.model_copy(update={"error": f"{type(exc).__name__}: {exc}"}))
                raise
        self._log(sink)
        self.gate.calls.append(base.model_copy(update={
            "text": completion.text, "tool_calls": list(completion.tool_calls),
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
        }))
        return completion

    def _log(self, sink: list[LLMCallRecord]) -> None:
        self.calls.extend(sink)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` as the inner client counts them."""
        return self.inner.count_tokens(text)


def _default_index(bundle: UserBundle, probe: Probe) -> int | str:
    """The checkpoint index the runner starts ``probe`` from, or why there is none."""
    steps = bundle.timeline.steps
    if probe.probe_kind is ProbeKind.FINAL:
        return len(steps) - 1
    if probe.event not in steps:
        return f"its event {probe.event!r} is not on the timeline"
    return steps.index(probe.event) - 1


async def _config_of(store: RunStore, run_id: str) -> RunConfig:
    record = await store.get_run(run_id)
    if record is None:
        raise StepperError(f"no run {run_id!r} in {store.path}")
    try:
        return RunConfig.model_validate_json(record.config_json)
    except ValueError as exc:
        raise StepperError(f"run {run_id}: stored configuration is not readable: {exc}") from None


def _source_run(config: RunConfig) -> str | None:
    """The run whose checkpoints the probes start from (None: the fixture world)."""
    return config.run_id if config.accumulates else config.donor_run


def _bundle(config: RunConfig, worlds_dir: Path | None) -> UserBundle:
    bundle = load_user(worlds_dir or config.worlds_dir, config.user)
    return bundle.quick_start() if config.quick else bundle.sliced() if config.slice else bundle


def _checkpoint_choice(c: CheckpointRecord) -> CheckpointChoice:
    when = f"{c.story_time:%Y-%m-%d %H:%M}" if c.story_time else ""
    return CheckpointChoice(run_id=c.run_id, step_index=c.step_index, step_id=c.step_id, story_time=when)


async def stepper_choices(store: RunStore, run_id: str, *, worlds_dir: Path | None = None) -> StepperChoices:
    """The probes and checkpoints a stored run offers the stepper (store reads only).

    Args:
        store: the open run store.
        run_id: the run.
        worlds_dir: the worlds folder (default: the one stored in the run's configuration).

    Raises:
        StepperError: no such run, or its configuration is unreadable.
        WorldFileError: the user's world files do not load.
    """
    config = await _config_of(store, run_id)
    bundle = await anyio.to_thread.run_sync(_bundle, config, worlds_dir)
    source = _source_run(config)
    checkpoints = [_checkpoint_choice(c) for c in await store.checkpoints(source)] if source else []
    probes = []
    for probe_id in sorted(bundle.probes):
        probe = bundle.probes[probe_id]
        index = _default_index(bundle, probe)
        probes.append(ProbeChoice(
            probe_id=probe_id, kind=probe.probe_kind.value, context=probe.context.value,
            attribute=probe.attribute,
            default_checkpoint=index if isinstance(index, int) and source else None,
        ))
    return StepperChoices(run_id=run_id, memory=config.memory, probes=probes, checkpoints=checkpoints)


class ProbeStepper:
    """One probe x repeat of a stored run, played on a private branch one model call at a time.

    Build it with :meth:`open`, then use it as an async context manager: entering starts the
    episode task and waits until the first model call is due (:attr:`opening`); each
    :meth:`step` lets one call through. Leaving cancels whatever is still running and deletes
    the scratch folder. Only one :meth:`step` may run at a time.
    """

    def __init__(
        self, *, config: RunConfig, store: RunStore, bundle: UserBundle, probe: Probe,
        checkpoint: CheckpointRecord | None, world: WorldState, snapshot: bytes | None,
        client: LLMClient, registry: ToolRegistry, scorer: ProbeScorer | None,
    ) -> None:
        self.config = config
        self.probe = probe
        self.checkpoint = checkpoint
        self.world = world
        self.target = bundle.targets_at(probe.context, probe.starts_at)[probe.attribute]
        self.client = SteppingClient(client)
        self._snapshot = snapshot
        self._store = store
        self._bundle = bundle
        self._registry = registry
        self._scorer: ProbeScorer = scorer or default_scorer
        self._events: list[EpisodeEvent] = []
        self._tg: TaskGroup | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._stage: UpdateKind = "opened"
        self._result: Any = None
        self._busy = anyio.Lock()
        self.updates: list[StepperUpdate] = []
        """Every update so far, the opening first."""

    # ---- building -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, store: RunStore, run_id: str, probe_id: str, *, client: LLMClient,
        checkpoint_index: int | None = None, registry: ToolRegistry | None = None,
        worlds_dir: Path | None = None, scorer: ProbeScorer | None = None,
    ) -> ProbeStepper:
        """Load the branch a probe of a stored run starts from.

        Args:
            store: the open run store (read only).
            run_id: the stored run.
            probe_id: one of its user's probes.
            client: the model client of the run's profile.
            checkpoint_index: step index of the checkpoint to start from (None: the one the
                runner uses for this probe).
            registry: the world tools (default registry).
            worlds_dir: the worlds folder (default: the run's).
            scorer: BRS/PRS scorer (default: the runner's judge and rater).

        Raises:
            StepperError: unknown run, probe or checkpoint, or a checkpoint not before the probe.
            WorldFileError: the user's world files do not load.
        """
        config = await _config_of(store, run_id)
        bundle = await anyio.to_thread.run_sync(_bundle, config, worlds_dir)
        probe = bundle.probes.get(probe_id)
        if probe is None:
            raise StepperError(
                f"run {run_id}: user {config.user} has no probe {probe_id!r} (known: {', '.join(sorted(bundle.probes))})"
            )
        source = _source_run(config)
        checkpoint: CheckpointRecord | None = None
        snapshot: bytes | None = None
        if source is None:
            world = bundle.world_state()
        else:
            if checkpoint_index is None:
                default = _default_index(bundle, probe)
                if isinstance(default, str):
                    raise StepperError(f"probe {probe_id}: no checkpoint to start from: {default}")
                checkpoint_index = default
            checkpoint = await store.checkpoint(source, checkpoint_index)
            if checkpoint is None:
                raise StepperError(
                    f"run {source} has no checkpoint after step {checkpoint_index + 1} (play the timeline further first)"
                )
            if checkpoint.story_time is not None and checkpoint.story_time >= probe.starts_at:
                raise StepperError(
                    f"probe {probe_id} starts {probe.starts_at:%Y-%m-%d %H:%M}, not after checkpoint "
                    f"{checkpoint_index + 1} ({checkpoint.story_time:%Y-%m-%d %H:%M}): choose an earlier one"
                )
            world = WorldState(await store.load_world(checkpoint.world_manifest))
            if config.accumulates and checkpoint.memory_blob:
                snapshot = await store.load_blob(checkpoint.memory_blob)
        return cls(
            config=config, store=store, bundle=bundle, probe=probe, checkpoint=checkpoint, world=world,
            snapshot=snapshot, client=client,
            registry=(registry or default_registry()).restricted(config.offered_tool_domains),  # issue 12
            scorer=scorer,
        )

    def _run_context(self, memory_root: Path) -> RunContext:
        # the memory is built as the run built it: its options and File memory's thresholds
        config = self.config.model_copy(update={"memory_options": stored_memory_options(self.config)})
        return RunContext(
            config=config, store=self._store, client=self.client, registry=self._registry,
            bundle=self._bundle, episodes=EpisodeFunctions.default(), memory_root=memory_root,
        )

    # ---- lifecycle ------------------------------------------------------------------------

    @property
    def opening(self) -> StepperUpdate:
        """The first update: events before the first call and the role of that call.

        Raises:
            StepperError: the stepper has not been entered.
        """
        if not self.updates:
            raise StepperError("the stepper has not started: use 'async with stepper'")
        return self.updates[0]

    repeat: int = 1
    """The probe repeat the stepper replays (paper Section 3.5 counts repeats from 1): it samples
    with that repeat's seeds (:func:`~mempa_tui.llm.sampling.probe_sampling_scope`), so stepping
    replays what the run's repeat 1 did; screens name it ``r1``."""

    @property
    def finished(self) -> bool:
        """True once the last update has been produced."""
        return self._stage == "finished"

    @property
    def stage(self) -> UpdateKind:
        """The kind of the latest update."""
        return self._stage

    async def __aenter__(self) -> Self:
        """Start the episode on its branch and wait until its first model call is due."""
        self._scratch = tempfile.TemporaryDirectory(prefix="mempa-stepper-")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            self._tg.start_soon(self._play, Path(self._scratch.name))
            stop = await self.client.gate.stop_recv.receive()
            self._record(self._update_from(stop, "opened"))
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Cancel the episode if it is still running and delete the scratch folder."""
        await self._close()

    async def _close(self) -> None:
        tg, self._tg = self._tg, None
        try:
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
        finally:
            if self._scratch is not None:
                self._scratch.cleanup()
                self._scratch = None

    async def _play(self, memory_root: Path) -> None:
        """The episode task: the runner's probe branch with the stepping client."""
        run = self._run_context(memory_root)
        gate = self.client.gate
        stop = _Stop()
        try:
            memory = run.new_memory(memory_root / "memory")
            if self._snapshot is not None:
                memory.restore(self._snapshot)
            oracle = self.config.memory == "oracle"
            if oracle and isinstance(memory, OracleMemory):
                memory.set_probe_target(self.probe.attribute, self.target)
            ctx = run.episodes.make_context(
                persona=self._bundle.persona,
                targets=self._bundle.targets_at(self.probe.context, self.probe.starts_at),
                world=self.world, registry=self._registry, memory=memory, client=self.client,
                simulator_memory=None, observer=self._events.append, oracle=oracle,
            )
            # the seeds of the runner's first run of repeat 1 (mempa_tui.llm.sampling): the same
            # prompts sample the same way, so stepping a probe replays what the run did
            with probe_sampling_scope(self.config.seed, self.probe.id, self.repeat):
                stop.result = await run.episodes.run_probe(self.probe, ctx)
        except Exception as exc:  # noqa: BLE001 - handed to the stepper's caller, never dropped
            stop.error = exc
        gate.gated = False
        await gate.stop_send.send(stop)

    # ---- stepping -------------------------------------------------------------------------

    def _take_events(self) -> list[EpisodeEvent]:
        taken = list(self._events)
        self._events.clear()
        return taken

    def _update_from(self, stop: _Stop, kind: UpdateKind) -> StepperUpdate:
        calls = self.client.gate.take_calls()
        events = self._take_events()
        if stop.error is not None:
            self._stage = "finished"
            raise StepperError(f"probe {self.probe.id}: the episode broke: {type(stop.error).__name__}: {stop.error}")
        if stop.next_role is not None:
            return StepperUpdate(kind=kind, calls=calls, events=events, next_role=stop.next_role)
        self._result = stop.result
        return StepperUpdate(
            kind="episode_end", calls=calls, events=events, status=stop.result.status,
            reason=stop.result.reason, selection=stop.result.selection,
            pa_repeated_calls=getattr(stop.result, "pa_repeated_calls", 0),
            pa_repeat_turns=getattr(stop.result, "pa_repeat_turns", 0),
            pa_echoed_replies=getattr(stop.result, "pa_echoed_replies", 0),
        )

    def _record(self, update: StepperUpdate) -> StepperUpdate:
        self._stage = update.kind
        self.updates.append(update)
        return update

    async def step(self) -> StepperUpdate:
        """Advance by one stage: one model call while the episode plays, then the episode's
        end, the target, the scores (BRS and PRS), and finally ``finished``.

        Returns:
            The new update (also appended to :attr:`updates`).

        Raises:
            StepperError: not started, already finished, another step is running, or the episode
                raised (the message names the error).
            LLMError: a failed model call of the rater (the judge reports its failures as a
                missing BRS).
        """
        if self._tg is None:
            raise StepperError("the stepper has not started: use 'async with stepper'")
        if self._busy.locked():
            raise StepperError("a step is already running")
        async with self._busy:
            stage = self._stage
            if stage in ("opened", "model_call"):
                gate = self.client.gate
                await gate.go_send.send(None)
                stop = await gate.stop_recv.receive()
                return self._record(self._update_from(stop, "model_call"))
            last = self.updates[-1]
            if stage == "episode_end":
                return self._record(last.model_copy(
                    update={"kind": "target", "target": self.target, "calls": [], "events": []}
                ))
            if stage == "target":
                return self._record(await self._scores(last))
            if stage == "scores":
                return self._record(last.model_copy(update={"kind": "finished", "calls": [], "events": []}))
            raise StepperError(f"probe {self.probe.id}: the stepper has finished")

    async def _scores(self, last: StepperUpdate) -> StepperUpdate:
        """BRS and PRS, as the runner computes them (completed final probes; a floored one is
        rated for PRS, its BRS is 1 by rule)."""
        result = self._result
        base = last.model_copy(update={"kind": "scores", "calls": [], "events": []})
        if self.probe.probe_kind is not ProbeKind.FINAL:
            note = "pre-event probes are scored by PSA and PET only (no BRS or PRS)"
            return base.model_copy(update={"brs_reason": note, "prs_reason": note})
        if result is None or result.status not in ("completed", "floored"):
            note = f"not rated: the probe ended {last.status}"
            return base.model_copy(update={"brs_reason": note, "prs_reason": note})
        assert self._scratch is not None
        run = self._run_context(Path(self._scratch.name))
        with probe_sampling_scope(self.config.seed, self.probe.id, 1):
            scores: RealizationScores = await score_final_probe(
                self._scorer, run, self.probe, self.target, result, self.world
            )
        return base.model_copy(update={
            "calls": self.client.gate.take_calls(), "brs": scores.brs, "brs_reason": scores.brs_reason,
            "prs": scores.prs, "prs_reason": scores.prs_reason,
        })

    async def run_to(self, kind: UpdateKind) -> StepperUpdate:
        """Step until an update of ``kind`` (or the end) has been produced; returns the last one.

        Raises:
            StepperError: as :meth:`step`.
        """
        order: list[UpdateKind] = ["opened", "model_call", "episode_end", "target", "scores", "finished"]
        want = order.index(kind)
        while order.index(self._stage) < want or (kind == "model_call" and self._stage == "opened"):
            await self.step()
            if self._stage == "finished":
                break
        return self.updates[-1]

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens of the stepper's calls so far."""
        return sum(c.prompt_tokens + c.completion_tokens for c in self.client.calls)
