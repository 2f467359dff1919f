"""The pure episode loop: one accumulation session, probe or change event (no SQLite, no files).

Paper Section 3.1 (Eq. 1-2), Section 3.5 (probes), Appendix C.2 ('Working copy', 'Commit or
discard'), C.3 (write lock, required IX call), C.4 (change-event replay), D.1, D.3 (Table 9),
E and F.2 (floors).

* :func:`run_accumulation` - a working copy at the session's start with its write lock; the
  simulator and the PA take turns through the IX wrapper; every turn goes to memory; at the end
  memory's ``end_session``, the simulator's session entry, and the committed world.
* :func:`run_probe` - the same with a probe-mode simulator and no simulator memory. World changes
  are discarded (no ``world`` in the result) and memory changes too: the probe takes a
  ``memory.snapshot()`` at its start and ``restore``\\ s it at its end, so the instance handed in
  is unchanged afterwards whatever the runner does with it.
* :func:`replay_change_event` - no model call at all: each fixed turn's tool calls run through the
  real registry on the working copy, the PA's IX call with the old setting and its reply go
  through the wrapper, the turns go to memory, and the world is committed.

A step that does not complete (``invalid``, ``failed``, ``floored``) returns no world, and the
memory is restored to its state at the step's start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from mempa_tui.agent import AgentSeat, AgentSessionStart, OracleHint, PersonalAgent
from mempa_tui.agent.personal import MAX_MODEL_CALLS
from mempa_tui.ix import IXWrapper, ScoringTrace
from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.llm import LLMClient, LLMError
from mempa_tui.llm.profile import RepeatedCallPolicy
from mempa_tui.memory.base import MemorySystem, SessionInfo, TurnRecord
from mempa_tui.runner._episode_events import (
    EpisodeEvent,
    PAReplyEvent,
    StepStatusEvent,
    ToolCallEvent,
    UserMessageEvent,
    public_transcript,
)
from mempa_tui.runner._episode_session import Exchange, SessionDriver, SessionOutcome
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Persona, Probe
from mempa_tui.simulator import SimulatorMemory, UserSeat, UserSimulator
from mempa_tui.tools import ToolRegistry
from mempa_tui.world import (
    CallLogEntry,
    Change,
    WorkingCopy,
    WorldState,
    strip_tool_prefix,
)

__all__ = [
    "EpisodeContext",
    "EpisodeEvent",
    "Exchange",
    "StepResult",
    "public_transcript",
    "replay_change_event",
    "run_accumulation",
    "run_probe",
]

StepStatus = Literal["completed", "invalid", "failed", "floored"]


class EpisodeContext(BaseModel):
    """Everything one step needs.

    Attributes:
        persona: the user (for the simulator only; the PA never sees it, Table 9).
        targets: attribute key -> current setting in the step's context (simulator and Oracle
            only).
        world: the run world at the step's start.
        registry: the world tools.
        memory: the memory system, already restored to the step's start state.
        client: the model client (PA and simulator roles).
        simulator_memory: the simulator's memory (accumulation); None in probes. The simulator
            writes its session entry into it in place.
        user_seat: None -> a :class:`UserSimulator` is built; a human seat plugs in here.
        agent_seat: None -> a :class:`PersonalAgent`; a human PA seat plugs in here.
        observer: receives every :data:`EpisodeEvent` as it happens.
        oracle: in probes, put the probed cell's target and its definition in the PA prompt in
            place of the memory's evidence (ignored outside probes).
        max_user_turns: backstop on user turns per session (default from the beats' caps).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    persona: Persona
    targets: dict[str, str]
    world: WorldState
    registry: ToolRegistry
    memory: MemorySystem
    client: LLMClient
    simulator_memory: SimulatorMemory | None = None
    # Seats are protocols; isinstance on them would read the seat's properties before it starts.
    user_seat: SkipValidation[UserSeat | None] = None
    agent_seat: SkipValidation[AgentSeat | None] = None
    observer: Callable[[EpisodeEvent], None] | None = None
    oracle: bool = False
    max_user_turns: int | None = Field(default=None, ge=1)


class StepResult(BaseModel):
    """The outcome of one step.

    Attributes:
        step_id / kind: which step.
        status: completed, invalid (the user seat failed its checks), failed (a model call or a
            script broke), floored (the PA broke the interaction-tool contract, Appendix F.2).
        reason: why it is not completed, or a note (turn cap reached).
        world: the state to commit (completed accumulation sessions and change events only).
        selection: the PA's setting for the tested attribute (its first IX selection), if any.
        transcript: every event in order (operator view; see :func:`public_transcript`).
        exchanges: each PA turn's prompt and delivered turn (the user-visible exchange).
        turn_records: what memory received.
        traces: per PA turn, what the wrapper withheld (scoring only).
        simulator_entry: the simulator's new entry (accumulation) or the event's note.
        call_log / change_log: from the working copy.
        memory_stats: the memory's counters (``inspect().stats``) once the step is settled, e.g.
            turns written, duplicate writes, Mem0-style extraction and decision failures; filled
            by the runner for timeline steps, so every failure is in the run record.
        pa_repeated_calls / pa_repeat_turns: the PA's tool calls identical to an earlier call
            of their turn, and the turns with any (every turn of the step; issue 12: a small model
            repeats one call until the cap); a run problem, shown by ``mempa show`` and beside
            the memory health.
        pa_echoed_replies: the PA's replies that echoed the harness's own text (never
            delivered: re-asked once, else the turn failed; issue 12), shown beside them.
        pa_ix_text_withheld: reply sentences of an accumulation session withheld for carrying
            interaction-tool text (a probe with such a reply is floored instead), shown beside
            them.
        simulator_checks: the user simulator's message-check counts for the step
            (``UserSimulator.check_counts``: rejected attempts, manner requests flagged by the
            rule and by the LLM checker, messages sent back for repeating an earlier one or
            stalling, invalid turns, checker warnings; Table 8 condition 3, D.4); empty when a
            person held the user seat. Also on the step's stored ``step_status`` event, and shown
            as a warning on the progress line and among the run's problems
            (:mod:`mempa_tui.runner._health`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    step_id: str
    kind: Literal["accumulation", "probe", "change_event"]
    status: StepStatus
    reason: str | None = None
    world: WorldState | None = None
    selection: str | None = None
    transcript: list[EpisodeEvent] = Field(default_factory=list)
    exchanges: list[Exchange] = Field(default_factory=list)
    turn_records: list[TurnRecord] = Field(default_factory=list)
    traces: list[ScoringTrace] = Field(default_factory=list)
    simulator_entry: str | None = None
    call_log: list[CallLogEntry] = Field(default_factory=list)
    change_log: list[Change] = Field(default_factory=list)
    memory_stats: dict[str, float] = Field(default_factory=dict)
    simulator_checks: dict[str, int] = Field(default_factory=dict)
    pa_repeated_calls: int = 0
    pa_repeat_turns: int = 0
    pa_echoed_replies: int = 0
    pa_ix_text_withheld: int = 0


class _Recorder:
    def __init__(self, observer: Callable[[EpisodeEvent], None] | None) -> None:
        self.events: list[EpisodeEvent] = []
        self._observer = observer

    def __call__(self, event: EpisodeEvent) -> None:
        self.events.append(event)
        if self._observer is not None:
            self._observer(event)


def _working_copy(
    script: AccumulationSession | Probe, world: WorldState
) -> WorkingCopy:
    wc = WorkingCopy(world, script.starts_at)
    if script.write_lock is not None:
        wc.add_write_lock(script.write_lock)
    return wc


def _llm_checker(ctx: EpisodeContext) -> bool:
    """Whether the profile asks for the LLM message checker (rule checks always run; App. D.4)."""
    profile = getattr(ctx.client, "profile", None)
    options = getattr(profile, "options", None)
    return bool(getattr(options, "llm_message_checker", True))


def _pa_max_model_calls(ctx: EpisodeContext) -> int:
    """The profile's cap on the PA's model calls per user turn (paper Section 4: 40)."""
    options = getattr(getattr(ctx.client, "profile", None), "options", None)
    return int(getattr(options, "pa_max_model_calls", MAX_MODEL_CALLS))


def _pa_repeated_call(ctx: EpisodeContext) -> RepeatedCallPolicy:
    """The profile's policy for a PA tool call that repeats an earlier one of the turn exactly
    (``run`` unless the profile says ``wrap_up``; paper Section 4 runs every call)."""
    options = getattr(getattr(ctx.client, "profile", None), "options", None)
    return "wrap_up" if getattr(options, "pa_repeated_call", "run") == "wrap_up" else "run"


def _simulator_output(ctx: EpisodeContext) -> Literal["tags", "json"]:
    """The profile's simulator turn format (``tags`` unless it asks for ``json``)."""
    options = getattr(getattr(ctx.client, "profile", None), "options", None)
    return "json" if getattr(options, "simulator_output", "tags") == "json" else "tags"


def _simulator_rewrite_temperature(ctx: EpisodeContext) -> float | None:
    """The profile's ``options.simulator_rewrite_temperature`` (None: rewrites keep the
    simulator's own temperature)."""
    options = getattr(getattr(ctx.client, "profile", None), "options", None)
    value = getattr(options, "simulator_rewrite_temperature", None)
    return float(value) if value is not None else None


async def _play(
    script: AccumulationSession | Probe,
    ctx: EpisodeContext,
    kind: Literal["accumulation", "probe"],
) -> tuple[SessionDriver, SessionOutcome, _Recorder, WorkingCopy]:
    rec = _Recorder(ctx.observer)
    wc = _working_copy(script, ctx.world)
    probe = kind == "probe"
    user = ctx.user_seat or UserSimulator(
        ctx.client,
        ctx.persona,
        mode=kind,
        memory=None if probe else ctx.simulator_memory,
        llm_checker=_llm_checker(ctx),
        output_format=_simulator_output(ctx),
        rewrite_temperature=_simulator_rewrite_temperature(ctx),
    )
    oracle = None
    if probe and ctx.oracle:
        oracle = OracleHint(
            attribute=script.attribute, setting=ctx.targets[script.attribute]
        )
    agent = ctx.agent_seat or PersonalAgent(
        ctx.client, max_model_calls=_pa_max_model_calls(ctx), repeated_call=_pa_repeated_call(ctx)
    )
    driver = SessionDriver(
        script,
        wc,
        ctx.registry,
        ctx.memory,
        user,
        agent,
        dict(ctx.targets),
        rec,
        oracle=oracle,
        max_user_turns=ctx.max_user_turns,
    )
    start = AgentSessionStart(
        step_id=script.id,
        context=script.context,
        starts_at=script.starts_at,
        is_probe=probe,
        oracle=oracle,
    )
    try:
        outcome = await driver.play(start)
    except LLMError as exc:
        outcome = SessionOutcome(status="failed", reason=f"model call failed: {exc}")
    return driver, outcome, rec, wc


def _result(
    kind: Literal["accumulation", "probe", "change_event"],
    step_id: str,
    outcome: SessionOutcome,
    rec: _Recorder,
    wc: WorkingCopy,
    driver: SessionDriver | None = None,
    **extra: object,
) -> StepResult:
    repeats = driver.pa_repeated_calls if driver else 0
    repeat_turns = driver.pa_repeat_turns if driver else 0
    echoes = driver.pa_echoed_replies if driver else 0
    withheld = driver.pa_ix_text_withheld if driver else 0
    checks = driver.simulator_checks if driver else {}
    # the stored status event carries every counted problem of the step (runner._health reads it)
    rec(driver.status_event(outcome).model_copy(update={"turn_index": 0}) if driver
        else StepStatusEvent(status=outcome.status, reason=outcome.reason))
    return StepResult(
        step_id=step_id,
        kind=kind,
        status=outcome.status,
        reason=outcome.reason,
        selection=driver.selection() if driver else None,
        transcript=rec.events,
        exchanges=driver.exchanges if driver else [],
        turn_records=driver.turn_records if driver else [],
        traces=driver.traces if driver else [],
        call_log=list(wc.call_log),
        change_log=list(wc.change_log),
        simulator_checks=dict(checks),
        pa_repeated_calls=repeats,
        pa_repeat_turns=repeat_turns,
        pa_echoed_replies=echoes,
        pa_ix_text_withheld=withheld,
        **extra,  # type: ignore[arg-type]
    )


async def run_accumulation(
    script: AccumulationSession, ctx: EpisodeContext
) -> StepResult:
    """Play one accumulation session and return what to commit (paper Section 3.3, App. C.3, D.1).

    Returns:
        A :class:`StepResult`; ``world`` is the committed state only when ``status`` is
        ``completed``. On any other status the memory is restored to the step's start.
    """
    snapshot = ctx.memory.snapshot()
    driver, outcome, rec, wc = await _play(script, ctx, "accumulation")
    if outcome.status != "completed":
        ctx.memory.restore(snapshot)
        return _result("accumulation", script.id, outcome, rec, wc, driver)
    entry: str | None = None
    try:
        await ctx.memory.end_session(driver.session)
        if isinstance(driver.user, UserSimulator):
            written = await driver.user.write_session_entry(script.starts_at.date())
            entry = written.entry.text if written.entry else None
    except LLMError as exc:
        ctx.memory.restore(snapshot)
        failed = SessionOutcome(
            status="failed", reason=f"model call failed after the session: {exc}"
        )
        return _result("accumulation", script.id, failed, rec, wc, driver)
    return _result(
        "accumulation",
        script.id,
        outcome,
        rec,
        wc,
        driver,
        world=wc.to_state(),
        simulator_entry=entry,
    )


async def run_probe(probe: Probe, ctx: EpisodeContext) -> StepResult:
    """Play one probe on an isolated branch (paper Section 3.5, Appendix F.2).

    The simulator runs in probe mode without memory; world changes are discarded and memory is
    restored from a snapshot taken at the start (so probes cannot affect one another).
    ``selection`` is the PA's first selection of the probed attribute. Under ``ctx.oracle`` the PA
    prompt holds the target of the probed cell and its definition.
    """
    snapshot = ctx.memory.snapshot()
    try:
        driver, outcome, rec, wc = await _play(probe, ctx, "probe")
        return _result("probe", probe.id, outcome, rec, wc, driver)
    finally:
        ctx.memory.restore(snapshot)


async def replay_change_event(event: ChangeEvent, ctx: EpisodeContext) -> StepResult:
    """Replay a change event's fixed transcript (paper Appendix C.4); calls no model.

    Each turn: the user's message; the PA's canned tool calls through the real registry on the
    working copy (they are the calls that ran, so the wrapper does not gate them); the IX call
    with the old setting (and payload); the reply rendered through the wrapper. Every turn goes to
    memory as a :class:`TurnRecord` (the last, the user's new rule, with an empty reply).

    Returns:
        ``completed`` with the committed world and ``simulator_entry`` = the event's note, or
        ``failed`` when a canned call or the IX call is rejected (a script error; nothing kept).
    """
    snapshot = ctx.memory.snapshot()
    rec = _Recorder(ctx.observer)
    wc = WorkingCopy(ctx.world, event.starts_at)
    wrapper = IXWrapper(ctx.registry, wc)
    session = SessionInfo(step_id=event.id, context=event.context, at=event.starts_at)
    records: list[TurnRecord] = []
    traces: list[ScoringTrace] = []
    exchanges: list[Exchange] = []
    try:
        problem = await _replay_turns(
            event, ctx, wc, wrapper, rec, records, traces, exchanges
        )
        if problem is None:
            await ctx.memory.end_session(session)
    except (
        LLMError
    ) as exc:  # a memory system's own model call (e.g. consolidation) failed
        problem = f"model call failed during the replay: {exc}"
    if problem is not None:
        ctx.memory.restore(snapshot)
        return _result(
            "change_event",
            event.id,
            SessionOutcome(status="failed", reason=problem),
            rec,
            wc,
        )
    result = _result(
        "change_event",
        event.id,
        SessionOutcome(),
        rec,
        wc,
        world=wc.to_state(),
        simulator_entry=event.simulator_note,
    )
    return result.model_copy(
        update={
            "selection": wrapper.selection(event.attribute),
            "turn_records": records,
            "traces": traces,
            "exchanges": exchanges,
        }
    )


async def _replay_turns(
    event: ChangeEvent,
    ctx: EpisodeContext,
    wc: WorkingCopy,
    wrapper: IXWrapper,
    rec: _Recorder,
    records: list[TurnRecord],
    traces: list[ScoringTrace],
    exchanges: list[Exchange],
) -> str | None:
    """Replay every turn of ``event``; returns a problem description, or None when all ran."""
    for index, turn in enumerate(event.transcript):
        rec(UserMessageEvent(turn_index=index, text=turn.user))
        if turn.pa is None:
            record = TurnRecord(
                step_id=event.id,
                context=event.context,
                at=wc.now,
                turn_index=index,
                user_message=turn.user,
                reply="",
            )
            await ctx.memory.write(record)
            records.append(record)
            continue
        wrapper.begin_turn()
        if turn.pa.ix_setting or turn.pa.ix_payload:
            args = dict(turn.pa.ix_payload)
            if turn.pa.ix_setting:
                args["setting"] = turn.pa.ix_setting
            chosen = wrapper.select(event.attribute, args)
            if not chosen.ok:
                return f"turn {index + 1}: IX call refused: {chosen.message}"
        for scripted in turn.pa.tool_calls:
            result = ctx.registry.call(wc, scripted.tool, scripted.args)
            tool_def = ctx.registry.get(scripted.tool)
            call = ExecutedCall(
                call_id=f"replay_{index}_{len(wc.call_log)}",
                tool=strip_tool_prefix(scripted.tool),
                arguments=scripted.args,
                status=CallStatus.EXECUTED,
                result=result.content,
                error=not result.ok,
                write=bool(tool_def and tool_def.write),
                tag=tool_def.tag if tool_def else None,
            )
            wrapper.record_executed(call)
            rec(ToolCallEvent(turn_index=index, call=call))
            if not result.ok:
                return f"turn {index + 1}: canned call {scripted.tool} was rejected: {result.error}"
        delivered, trace = wrapper.render(turn.pa.reply)
        rec(PAReplyEvent(turn_index=index, text=delivered.reply))
        record = TurnRecord(
            step_id=event.id,
            context=event.context,
            at=wc.now,
            turn_index=index,
            user_message=turn.user,
            tool_calls=list(delivered.executed),
            ix_calls=list(wrapper.last_ix_calls),
            reply=delivered.reply,
        )
        await ctx.memory.write(record)
        records.append(record)
        traces.append(trace)
        exchanges.append(Exchange(user_message=turn.user, delivered=delivered))
    return None
