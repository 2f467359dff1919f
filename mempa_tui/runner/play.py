"""Playing one session or probe with a person in a seat, stored like any run (SPEC §4.11, §6).

:func:`play_step` plays one accumulation session or probe of a user through the real episode
loop (:mod:`mempa_tui.runner.episode`) with a :class:`~mempa_tui.simulator.human.HumanUserSeat`
or a :class:`~mempa_tui.agent.human.HumanAgentSeat` in place of the simulator or the model PA.
The wrapper, memory, simulator and scoring treat the person exactly as they treat a model: the
step starts from a run's checkpoint (the last one before the step's start) or from the fixture
world with an empty memory, and a final probe played as the PA is scored with BRS and PRS the
same way the runner scores it (paper Section 3.5, Appendix F).

Each play is stored in the run store as its own run ``play-<seat>-<step>-<time>``, its profile
labelled ``<profile> (person as PA|user)`` so that a person's results are never taken for the
model's (donor choice, results by model): the step (or
probe result) with its transcript, model calls and checkpoint, and in its ``result_json`` a
:class:`PlayedStep` - the :class:`~mempa_tui.runner.episode.StepResult` plus the side-by-side
:class:`~mempa_tui.simulator.human.FidelityPair` list when a person played the user. An error
is stored on the run record (status ``failed``) before it is raised; leaving mid-way stores it
as ``stopped``.

The PA is offered the tools a run that plays the step would offer (:func:`play_offer`, issue
12 item 4): a step of a quick start played from that quick start's checkpoint gets its domains'
tools; every other play gets all 83, as the slice and the whole timeline do. The outcome says
which (``tools_offered``, worded as a run's header).

The memory is built with the options the source run's memory was built with
(:func:`play_memory`: its stored ``memory_options`` and, for File memory, the thresholds it used),
when the play uses the same condition; so a play from a quick start consolidates at its session's
end as the quick start does. The outcome says which options apply (``memory_settings``).

A completed session played as the user ends like a simulated one: the simulator writes its dated
first-person diary entry (paper Appendix D.3) from the dialogue the person had, into the simulator
memory the step's checkpoint keeps, so a run continued from that checkpoint finds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from pydantic import BaseModel, Field

from mempa_tui.agent.human import HumanAgentSeat
from mempa_tui.llm import LLMError
from mempa_tui.memory import MemorySystem
from mempa_tui.memory._reference import OracleMemory
from mempa_tui.runner._budget import stored_memory_options
from mempa_tui.runner._calls import capture_calls, install_call_routing
from mempa_tui.runner._episode_events import EpisodeEvent
from mempa_tui.runner._scoring import ProbeScorer, RealizationScores, default_scorer, score_final_probe
from mempa_tui.runner._shared import EpisodeFunctions, RunContext, call_rows
from mempa_tui.runner._simmem import (
    dump_simulator_memory,
    load_simulator_memory,
    new_simulator_memory,
)
from mempa_tui.runner._settings import thresholds_text
from mempa_tui.runner.config import OptionValue, RunConfig, offered_tools_text
from mempa_tui.runner.episode import (
    EpisodeContext,
    StepResult,
    run_accumulation,
    run_probe,
)
from mempa_tui.scripts.loader import UserBundle, load_user
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Probe, ProbeKind
from mempa_tui.simulator import SessionEntryResult, SimulatorMemory, write_session_entry
from mempa_tui.simulator.human import FidelityPair, HumanUserSeat
from mempa_tui.store import (
    CheckpointData,
    ProbeResultRecord,
    RunRecord,
    RunStatus,
    RunStore,
    StepRecord,
    StoreError,
    TokenTotals,
    TranscriptEventRecord,
)
from mempa_tui.store.rows import utc_now
from mempa_tui.world import WorldState

if TYPE_CHECKING:
    from mempa_tui.llm import LLMClient
    from mempa_tui.llm.types import LLMCallRecord
    from mempa_tui.tools import ToolRegistry

__all__ = [
    "PlayMemory",
    "PlayOutcome",
    "PlayRequest",
    "PlayableStep",
    "PlayedStep",
    "play_id_for",
    "play_memory",
    "play_offer",
    "play_profile_label",
    "play_step",
    "playable_steps",
]

Seat = Literal["user", "agent"]


class PlayRequest(BaseModel):
    """What to play, and from where."""

    user: str = Field(pattern=r"^[A-Z]$")
    """The user label (``A``)."""
    step_id: str = Field(min_length=1)
    """An accumulation session id or a probe id of that user."""
    seat: Seat
    """The seat the person takes: ``user`` or ``agent`` (the PA)."""
    profile: str = Field(min_length=1)
    """The model profile (for the other seat, the memory's own calls, judge and rater)."""
    memory: str = "none"
    """The memory condition."""
    source_run: str | None = None
    """Start from this run's last checkpoint before the step; None: the fixture world, empty
    memory."""
    worlds_dir: Path = Path("worlds")
    """The worlds folder."""


class PlayableStep(BaseModel):
    """A session or probe a person can play."""

    id: str
    """The script id."""
    kind: Literal["accumulation", "probe"]
    """Its kind."""
    label: str
    """A one-line description (kind, context, attribute, date)."""


class PlayedStep(StepResult):
    """A step played with a person in a seat: the step result plus the fidelity record."""

    seat: Seat = "user"
    """The seat the person took."""
    fidelity: list[FidelityPair] = Field(default_factory=list)
    """Person turn vs. the simulator's shadow turn (user seat only)."""


class PlayOutcome(BaseModel):
    """How a play ended (also stored; see the module docstring)."""

    play_id: str
    """The stored run's id."""
    step_id: str
    """The session or probe."""
    kind: Literal["accumulation", "probe"]
    """Its kind."""
    status: str
    """completed, invalid, failed or floored."""
    reason: str | None = None
    """Why not completed."""
    selection: str | None = None
    """The PA's selection for the tested attribute."""
    target: str | None = None
    """The user's setting of the tested attribute (shown only after the play)."""
    scores: RealizationScores = Field(default_factory=RealizationScores)
    """BRS and PRS of a completed final probe (else empty)."""
    simulator_entry: str | None = None
    """The simulator's first-person diary entry written after a completed session the person
    played as the user (from the person's dialogue, as after a simulated session; paper App. D.3)."""
    entry_problem: str | None = None
    """Why no diary entry was written, when one was due."""
    fidelity: list[FidelityPair] = Field(default_factory=list)
    """The side-by-side record (user seat)."""
    source: str
    """Where the step started (a checkpoint or the fixture world)."""
    tools_offered: str = ""
    """What the PA was offered, worded as a run's header (``tools offered: all 83`` or a quick
    start's domains; :func:`play_offer`)."""
    memory_settings: str = ""
    """Which memory options the play's memory was built with and where they came from
    (:func:`play_memory`); empty for No Memory and Oracle."""

    model_config = {"arbitrary_types_allowed": True}


def playable_steps(bundle: UserBundle) -> list[PlayableStep]:
    """The user's accumulation sessions (timeline order) then probes (id order)."""
    out: list[PlayableStep] = []
    for step in bundle.steps():
        if isinstance(step, AccumulationSession):
            out.append(PlayableStep(id=step.id, kind="accumulation", label=(
                f"session · {step.context.value} · {step.attribute} · {step.starts_at:%Y-%m-%d}")))
    for probe_id in sorted(bundle.probes):
        probe = bundle.probes[probe_id]
        out.append(PlayableStep(id=probe.id, kind="probe", label=(
            f"{probe.probe_kind.value} probe · {probe.context.value} · {probe.attribute} · {probe.starts_at:%Y-%m-%d}")))
    return out


class _Start(BaseModel):
    model_config = {"arbitrary_types_allowed": True}
    world: WorldState
    memory_blob: bytes | None = None
    simulator: SimulatorMemory
    source: str


async def _start_state(store: RunStore, request: PlayRequest, bundle: UserBundle, when: datetime) -> _Start:
    if request.source_run is None:
        return _Start(world=bundle.world_state(), simulator=new_simulator_memory(), source="the fixture world")
    if await store.get_run(request.source_run) is None:
        raise ValueError(f"source run {request.source_run!r} is not in {store.path}")
    usable = [c for c in await store.checkpoints(request.source_run)
              if c.story_time is None or c.story_time < when]
    if not usable:
        raise ValueError(f"run {request.source_run} has no checkpoint before {when:%Y-%m-%d %H:%M}")
    ckpt = max(usable, key=lambda c: c.step_index)
    world = WorldState(await store.load_world(ckpt.world_manifest))
    blob = await store.load_blob(ckpt.memory_blob) if ckpt.memory_blob else None
    sim_text = (await store.load_blob(ckpt.simulator_blob)).decode("utf-8") if ckpt.simulator_blob else ""
    where = "its start" if ckpt.step_index < 0 else f"step {ckpt.step_index + 1} ({ckpt.step_id})"
    return _Start(world=world, memory_blob=blob,
                  simulator=load_simulator_memory(sim_text) if sim_text else new_simulator_memory(),
                  source=f"run {request.source_run}, checkpoint after {where}")


def _records(events: list[EpisodeEvent]) -> list[TranscriptEventRecord]:
    return [TranscriptEventRecord(seq=i, kind=e.type, event_json=e.model_dump_json()) for i, e in enumerate(events)]


def play_profile_label(request: PlayRequest) -> str:
    """The profile column of a play's run record: ``<profile> (person as <seat>)``.

    A person's results must never be read as the model's: the label keeps a play out of donor
    choice (which matches the profile exactly) and gives it its own row in results by model.
    """
    return f"{request.profile} (person as {'PA' if request.seat == 'agent' else 'user'})"


def play_id_for(request: PlayRequest, now: datetime, n: int = 1) -> str:
    """``play-<seat>-<step>-<UTC time>``, and ``-<n>`` after it for the n-th play of that step
    and seat started in the same second (n >= 2; :func:`play_step` takes the first free one,
    issue 12.7).

    Raises:
        ValueError: ``n`` below 1.
    """
    if n < 1:
        raise ValueError(f"play id number {n}: counts from 1")
    base = f"play-{request.seat}-{request.step_id}-{now:%Y%m%dT%H%M%S}"
    return base if n == 1 else f"{base}-{n}"


async def play_offer(request: PlayRequest, store: RunStore, bundle: UserBundle | None = None) -> tuple[str, ...] | None:
    """The tool domains a play offers the PA (None: every tool), issue 12 item 4.

    :class:`PlayRequest` has no quick flag, and the app lists every session and probe of the
    user's whole timeline, so the step alone does not say which run it belongs to (a quick start's
    steps are also the slice's and the timeline's). What does is where the play starts: a play
    from a stored run's checkpoint continues that run, so it offers what that run offered its PA,
    when the run is a quick start (``offered_tool_domains`` as stored, or, for a quick run stored
    before it was filled, :func:`~mempa_tui.runner.setup.quick_tool_domains`) and the step is one
    that quick start plays (its ``quick`` list and the probes of its cells,
    :meth:`~mempa_tui.scripts.loader.UserBundle.quick_start`). Everything else gets all 83 tools,
    like the slice and the whole timeline: a play from the fixture world, from a slice or
    whole-timeline run, and a step the quick start does not play (its scripts may need tools of
    other domains).

    Args:
        request: the play.
        store: the run store holding ``request.source_run``.
        bundle: the user's whole bundle (loaded from ``request.worlds_dir`` when not given).

    Returns:
        Domain keys in Table 7 order, or None for every tool.

    Raises:
        WorldFileError: the user's world files are invalid.
        ValueError: the quick start's scripts name a record or tool of no domain.
    """
    if request.source_run is None:
        return None
    record = await store.get_run(request.source_run)
    if record is None:
        return None  # reported by the play itself, with the store's path
    try:
        source = RunConfig.model_validate_json(record.config_json)
    except ValueError:  # a play or an unreadable record: not a quick start
        return None
    if not source.quick:
        return None
    bundle = bundle or load_user(request.worlds_dir, request.user)
    try:
        quick = bundle.quick_start()
    except ValueError:  # the timeline lost its quick list since the run was stored
        return None
    if request.step_id not in quick.sessions and request.step_id not in quick.probes:
        return None
    if source.offered_tool_domains is not None:
        return source.offered_tool_domains
    from mempa_tui.runner.setup import quick_tool_domains

    return quick_tool_domains(bundle)


class PlayMemory(BaseModel):
    """The memory options of a play (:func:`play_memory`)."""

    options: dict[str, OptionValue] = Field(default_factory=dict)
    """Options for :func:`~mempa_tui.memory.make_memory`."""
    text: str = ""
    """One line for the play's header: the options and where they came from (empty for No
    Memory and Oracle, which take none)."""


async def play_memory(request: PlayRequest, store: RunStore) -> PlayMemory:
    """The memory options a play is built with, and the line that says so (issue 12 follow-up).

    A play from a stored run's checkpoint continues that run's memory, so when it uses the run's
    memory condition it gets the options that memory was built with
    (:func:`~mempa_tui.runner._budget.stored_memory_options`: ``memory_options`` as stored and File
    memory's thresholds, paper Section 4), ``consolidate_at_session_end`` of a quick start
    included. A play from the fixture world, or with another condition than its source run's, gets
    the condition's defaults.

    Args:
        request: the play.
        store: the run store holding ``request.source_run``.

    Returns:
        The options and a line such as ``memory options of run A-file-embedded-s0-quick: File
        memory consolidates at 13,401 -> 6,700 tokens ...``.
    """
    if request.memory in ("none", "oracle"):
        return PlayMemory()
    label = "File memory" if request.memory == "file" else f"{request.memory} memory"
    if request.source_run is None:
        return PlayMemory(text=f"{label}: the condition's default options (played from the fixture world)")
    record = await store.get_run(request.source_run)
    try:
        source = RunConfig.model_validate_json(record.config_json) if record is not None else None
    except ValueError:  # a play or an unreadable record: it has no memory options to carry
        source = None
    if source is None or source.memory != request.memory:
        used = f"it used {source.memory}" if source is not None else "its options are not readable"
        return PlayMemory(text=f"{label}: the condition's default options (run {request.source_run}: {used})")
    options = stored_memory_options(source)
    if source.memory == "file" and source.file_memory_budget:
        what = thresholds_text(source.file_memory_budget, kind=source.timeline_kind)
    elif options:
        what = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
    else:
        what = "none set (the condition's defaults)"
    return PlayMemory(options=options, text=f"memory options of run {request.source_run}: {what}")


async def play_step(
    request: PlayRequest,
    store: RunStore,
    client: LLMClient,
    registry: ToolRegistry,
    *,
    user_seat: HumanUserSeat | None = None,
    agent_seat: HumanAgentSeat | None = None,
    observer: Callable[[EpisodeEvent], None] | None = None,
    memory_root: Path = Path("local_memory"),
    scorer: ProbeScorer | None = None,
) -> PlayOutcome:
    """Play one step with a person in ``request.seat`` and store it (see the module docstring).

    Args:
        request: what to play.
        store: the open run store.
        client: the model client of ``request.profile``.
        registry: the world tools (narrowed to :func:`play_offer`'s domains for the play).
        user_seat / agent_seat: the person's seat (the one ``request.seat`` names is required).
        observer: receives every episode event as it happens.
        memory_root: parent of the play's memory folder.
        scorer: BRS and PRS of a final probe (default: the runner's judge and rater).

    Returns:
        The outcome, with the target revealed.

    Raises:
        ValueError: the seat is missing, the step is a change event, or the source run does not fit.
        KeyError / WorldFileError: unknown step id or invalid world files.
        Exception: what the episode loop raises (stored on the play's run record first).
    """
    if (request.seat == "user") != (user_seat is not None) or (request.seat == "agent") != (agent_seat is not None):
        raise ValueError(f"play_step: seat {request.seat!r} needs exactly the matching human seat")
    bundle = load_user(request.worlds_dir, request.user)
    script = bundle.script(request.step_id)
    if isinstance(script, ChangeEvent):
        raise ValueError(f"{request.step_id} is a change event: it is replayed, not played")  # noqa: TRY004 - a bad request, not a bad type
    start = await _start_state(store, request, bundle, script.starts_at)
    offer = await play_offer(request, store, bundle)
    registry = registry.restricted(offer)
    memory_setup = await play_memory(request, store)
    config = RunConfig(user=request.user, profile=request.profile, memory=request.memory,
                       worlds_dir=request.worlds_dir, repeats=1, offered_tool_domains=offer,
                       memory_options=memory_setup.options)
    run = RunContext(config=config, store=store, client=client, registry=registry, bundle=bundle,
                     episodes=EpisodeFunctions.default(), memory_root=memory_root)
    started = utc_now()
    is_probe = isinstance(script, Probe)
    config_json = request.model_dump_json()
    for n in range(1, 1000):  # two plays of one step in the same second get -2, -3... (issue 12.7)
        play_id = play_id_for(request, started, n)
        try:
            await store.create_run(RunRecord(
                id=play_id, user=request.user, profile=play_profile_label(request), memory=request.memory,
                seed=0, repeats=1,
                config_json=config_json, config_hash=hashlib.sha256(config_json.encode()).hexdigest(),
                donor_run=request.source_run, status=RunStatus.RUNNING,
                total_steps=0 if is_probe else 1, total_probes=1 if is_probe else 0,
            ))
        except StoreError:
            if await store.get_run(play_id) is None:
                raise  # not a taken id: the store's own failure
            continue
        break
    else:
        raise StoreError(f"a thousand plays of {request.step_id} started at {started:%Y-%m-%d %H:%M:%S}: no free id")
    install_call_routing(client)
    folder = memory_root / play_id
    try:
        memory = run.new_memory(folder)
        if start.memory_blob is not None:
            memory.restore(start.memory_blob)
        targets = bundle.targets_at(script.context, script.starts_at)
        if is_probe and request.memory == "oracle" and isinstance(memory, OracleMemory):
            memory.set_probe_target(script.attribute, targets[script.attribute])
        if user_seat is not None:
            user_seat.memory = None if is_probe else start.simulator
            if user_seat.client is None and user_seat.shadow:
                user_seat.client = client
        events: list[EpisodeEvent] = []

        def collect(event: EpisodeEvent) -> None:
            events.append(event)
            if observer is not None:
                observer(event)

        ctx = EpisodeContext(
            persona=bundle.persona, targets=targets, world=start.world, registry=registry, memory=memory,
            client=client, simulator_memory=None if is_probe else start.simulator, user_seat=user_seat,
            agent_seat=agent_seat, observer=collect, oracle=is_probe and request.memory == "oracle",
        )
        with capture_calls() as calls:
            if isinstance(script, Probe):
                result: StepResult = await run_probe(script, ctx)
            else:
                result = await run_accumulation(script, ctx)
            entry_problem: str | None = None
            if user_seat is not None and isinstance(script, AccumulationSession) and result.status == "completed":
                written = await _diary_entry(client, start.simulator, bundle, script, user_seat)
                entry_problem = written.problem if written.entry is None else None
                result = result.model_copy(update={"simulator_entry": written.entry.text if written.entry else None})
        played = PlayedStep(**dict(result), seat=request.seat,
                            fidelity=list(user_seat.fidelity) if user_seat is not None else [])
        outcome = PlayOutcome(
            play_id=play_id, step_id=script.id, kind="probe" if is_probe else "accumulation",
            status=result.status, reason=result.reason, selection=result.selection,
            target=targets[script.attribute], fidelity=played.fidelity, source=start.source,
            simulator_entry=result.simulator_entry, entry_problem=entry_problem,
            tools_offered=offered_tools_text(offer), memory_settings=memory_setup.text,
        )
        if isinstance(script, Probe):
            outcome.scores = await _store_probe(run, play_id, script, targets[script.attribute], played,
                                                start.world, _records(events), calls, scorer, started)
        else:
            await _store_session(store, play_id, script, played, start, memory, _records(events), calls, started)
        await store.update_run(play_id, status=RunStatus.COMPLETED, clear_error=True)
        return outcome
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await store.update_run(play_id, status=RunStatus.STOPPED, error="left before the end of the step")
        raise
    except Exception as exc:
        await store.update_run(play_id, status=RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        run.drop_folder(folder)


async def _diary_entry(
    client: LLMClient, memory: SimulatorMemory, bundle: UserBundle, script: AccumulationSession,
    seat: HumanUserSeat,
) -> SessionEntryResult:
    """The simulator's diary entry of a session a person played as the user (paper App. D.3).

    A simulated session ends with the simulator writing its dated first-person entry from the
    dialogue it saw; here the same call is made from the dialogue the person saw and wrote, so the
    next session (played by a person or the simulator) starts from the same kind of memory.
    ``memory`` is updated in place and goes into the step's checkpoint. A failed model call is
    recorded as the result's ``problem``: the person's session is still stored.
    """
    try:
        return await write_session_entry(client, memory, bundle.persona, script.starts_at.date(), seat.dialogue)
    except LLMError as exc:
        return SessionEntryResult(problem=f"the simulator's diary call failed: {exc}")


async def _store_session(
    store: RunStore, play_id: str, script: AccumulationSession, played: PlayedStep, start: _Start,
    memory: MemorySystem, events: list[TranscriptEventRecord], calls: list[LLMCallRecord], started: datetime,
) -> None:
    world = played.world if played.world is not None else start.world
    tokens = TokenTotals.from_calls(calls)
    await store.commit_step(
        play_id,
        StepRecord(index=0, step_id=script.id, kind="accumulation", status=played.status, reason=played.reason,
                   selection=played.selection, started_at=started, finished_at=utc_now(), tokens=tokens,
                   result_json=played.model_dump_json(exclude={"world"})),
        events,
        CheckpointData(step_index=0, step_id=script.id, story_time=script.starts_at, world_files=dict(world.files),
                       world_manifest=world.manifest(), memory_snapshot=memory.snapshot(),
                       simulator_memory_json=dump_simulator_memory(start.simulator), tokens=tokens),
        call_rows(script.id, calls),
    )


async def _store_probe(
    run: RunContext, play_id: str, probe: Probe, target: str, played: PlayedStep, world: WorldState,
    events: list[TranscriptEventRecord], calls: list[LLMCallRecord], scorer: ProbeScorer | None, started: datetime,
) -> RealizationScores:
    scores = RealizationScores()
    all_calls = list(calls)
    if probe.probe_kind is ProbeKind.FINAL:  # a floored one is rated for PRS too (F.2)
        with capture_calls() as score_calls:
            scores = await score_final_probe(scorer or default_scorer, run, probe, target, played, world)
        all_calls.extend(score_calls)
    await run.store.save_probe_result(play_id, ProbeResultRecord(
        probe_id=probe.id, repeat=1, kind=probe.probe_kind.value, context=probe.context.value,
        attribute=probe.attribute, target=target, selection=played.selection, status=played.status,
        reason=played.reason, attempts=1, checkpoint_run=None, checkpoint_index=None,
        brs=scores.brs, brs_reason=scores.brs_reason, prs=scores.prs, prs_reason=scores.prs_reason,
        started_at=started, finished_at=utc_now(), tokens=TokenTotals.from_calls(all_calls),
        result_json=played.model_dump_json(exclude={"world"}),
    ), events, call_rows(probe.id, all_calls, 1))
    return scores
