"""The live session driver shared by accumulation sessions and probes (paper Sections 3.1, 3.4).

Each user turn: the user seat writes the turn (consent -> :meth:`IXWrapper.release` before the PA
runs; released facts open write locks), memory retrieves evidence (Eq. 2, R), the PA seat plays the
turn through the wrapper, the wrapper renders it, and the turn as the PA saw it goes to memory
(Eq. 1, A). A world-event beat moves the clock and hands the PA a notice instead of a message.

A user's consent or confirmation always gets the PA's turn before the session ends (issue 15.1;
Section 3.4, Appendix E.4: the user's consent releases the held item, and the PA is told what ran).
A user turn that carries a message is delivered even when the seat marks it ``done`` (the end
waits for the PA's reply); a turn whose consent decided held items but that has no message (a
person approving an item and ending the session) gives the PA a turn whose input is the harness's
account of what ran or was declined, so it can report it or carry on. Only then does the session
end.

A probe whose PA turn used up its model calls with no final reply (``no_final_reply``) leaves
the judge nothing of the PA's to read: it ends floored (``FloorKind.NO_FINAL_REPLY``, a
model-capability failure, Appendix F.2: PSA 0, BRS 1, in the denominator) and is never judged.

Interaction-tool text in a reply (an ``IX_`` tool's name, or a selected attribute with
its setting: :func:`~mempa_tui.agent.actions.ix_text_in_reply`, the rule of Appendix F.2 for a
task tool's arguments; the model PA looks for it in the reply as written, before its echo filter
cuts anything) would show the PA's selection to the blind judge and to the simulated user
(Table 9). In a probe the reply is not delivered and the probe ends floored
(``FloorKind.IX_TEXT_IN_REPLY``, scored as it happened). In an accumulation session, which is not
judged but whose replies the simulated user reads and memory stores, the sentences that carry it
are withheld (:func:`~mempa_tui.agent.actions.withhold_ix_sentences`) and the rest is delivered,
counted per turn (``ix_text_withheld``); a reply with nothing left without them ends the session
floored like a probe (the step is discarded and played again). Withholding rather than flooring
keeps a small model's sessions (the 0.5B model named ``IX_solution_breadth`` in two of A-S51's
three replies on the quick start) while the user still never reads the selection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from mempa_tui.agent import (
    AgentSeat,
    AgentSessionStart,
    AgentTurnInput,
    OracleHint,
    TurnActions,
)
from mempa_tui.agent.actions import ix_text_in_reply, withhold_ix_sentences
from mempa_tui.ix import (
    DeliveredTurn,
    ExecutedCall,
    IXWrapper,
    ReleaseOutcome,
    ScoringTrace,
    SelectResult,
)
from mempa_tui.ix.floors import FloorKind, floor_reason
from mempa_tui.ix.types import CallStatus
from mempa_tui.memory.base import MemorySystem, SessionInfo, TurnRecord
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    ConsentEvent,
    EpisodeEvent,
    EvidenceEvent,
    HeldItemsEvent,
    IXSelectionEvent,
    NoticeEvent,
    PAReplyEvent,
    StepStatusEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from mempa_tui.scripts.schema import AccumulationSession, Beat, Probe
from mempa_tui.simulator import UserSeat
from mempa_tui.tools import ToolRegistry
from mempa_tui.world import WorkingCopy

__all__ = ["Exchange", "SessionDriver", "SessionOutcome"]

Status = Literal["completed", "invalid", "failed", "floored"]


class Exchange(BaseModel):
    """One PA turn as the user met it: what prompted it and what was delivered.

    Attributes:
        user_message: the user's message, or None on a world-event turn and on a turn that
            carried only the user's consent (no words).
        notice: the world event's notice on an event turn.
        delivered: the rendered public turn.
    """

    user_message: str | None = None
    notice: str | None = None
    delivered: DeliveredTurn


class SessionOutcome(BaseModel):
    """How the live part of a step ended."""

    status: Status = "completed"
    reason: str | None = None


class SessionDriver:
    """Plays one live session or probe on a working copy.

    Args:
        script: the accumulation session or probe.
        wc: the step's working copy (write lock already added).
        registry: the world tools.
        memory: the memory system (written and read as the turns go).
        user: the user seat, not yet started.
        agent: the PA seat.
        targets: the user's current settings in the script's context (for the user seat only).
        emit: receives each event as it happens.
        oracle: under Oracle, the probed cell's target for the PA prompt.
        max_user_turns: backstop on user turns (default: the beats' max_turns summed, plus one
            per beat).
    """

    def __init__(
        self,
        script: AccumulationSession | Probe,
        wc: WorkingCopy,
        registry: ToolRegistry,
        memory: MemorySystem,
        user: UserSeat,
        agent: AgentSeat,
        targets: dict[str, str],
        emit: Callable[[EpisodeEvent], None],
        *,
        oracle: OracleHint | None = None,
        max_user_turns: int | None = None,
    ) -> None:
        self.script = script
        self.wc = wc
        self.registry = registry
        self.memory = memory
        self.user = user
        self.agent = agent
        self.targets = targets
        self.emit = emit
        self.oracle = oracle
        self.wrapper = IXWrapper(registry, wc)
        self.session = SessionInfo(
            step_id=script.id,
            context=script.context,
            at=script.starts_at,
            is_probe=isinstance(script, Probe),
        )
        self.cap = max_user_turns or sum(b.max_turns + 1 for b in script.beats)
        self.activated: list[str] = []
        self.turn_index = 0
        self.turn_records: list[TurnRecord] = []
        self.traces: list[ScoringTrace] = []
        self.exchanges: list[Exchange] = []
        self.repeated_calls: list[int] = []
        """Per PA turn played (floored and failed turns too), its repeated identical calls."""
        self.echoed_replies: list[int] = []
        """Per PA turn played, its replies that echoed the harness's own text (withheld)."""
        self.ix_text_withheld: list[int] = []
        """Per PA turn delivered in an accumulation session, its sentences withheld for carrying
        interaction-tool text (module docstring)."""
        self._beat: str | None = None
        self._notes: list[str] = []

    @property
    def pa_repeated_calls(self) -> int:
        """The step's PA tool calls identical to an earlier call of their turn."""
        return sum(self.repeated_calls)

    @property
    def pa_repeat_turns(self) -> int:
        """The step's PA turns with at least one repeated call."""
        return sum(1 for n in self.repeated_calls if n)

    @property
    def pa_echoed_replies(self) -> int:
        """The step's PA replies that echoed harness text (:mod:`mempa_tui.agent.echo`)."""
        return sum(self.echoed_replies)

    @property
    def pa_ix_text_withheld(self) -> int:
        """The step's reply sentences withheld for carrying interaction-tool text."""
        return sum(self.ix_text_withheld)

    @property
    def simulator_checks(self) -> dict[str, int]:
        """The user simulator's message-check counts for the step (``UserSimulator.check_counts``,
        keys ``CHECK_COUNT_KEYS``: messages sent back for a rewrite, repeated or stalled ones,
        invalid turns...; Appendix D.4); empty for a seat that keeps none (a person)."""
        counts = getattr(self.user, "check_counts", None) or {}
        return {str(k): int(v) for k, v in dict(counts).items()}

    def status_event(self, outcome: SessionOutcome) -> StepStatusEvent:
        """The step's ``step_status`` event for ``outcome``, carrying the step's counted problems:
        the PA's repeated calls, echoed replies and withheld IX sentences, and the simulator's
        message-check counts (what :mod:`mempa_tui.runner._health` reads back from the store)."""
        return StepStatusEvent(
            turn_index=self.turn_index, status=outcome.status, reason=outcome.reason,
            pa_repeated_calls=self.pa_repeated_calls, pa_repeat_turns=self.pa_repeat_turns,
            pa_echoed_replies=self.pa_echoed_replies, pa_ix_text_withheld=self.pa_ix_text_withheld,
            simulator_checks=self.simulator_checks,
        )

    # ---- helpers --------------------------------------------------------------------------------

    def _track_beat(self, beat: Beat | None) -> None:
        beat_id = beat.id if beat else None
        if beat_id == self._beat:
            return
        self._beat = beat_id
        index = next(
            (i for i, b in enumerate(self.script.beats) if b.id == beat_id), None
        )
        self.emit(
            BeatChangeEvent(turn_index=self.turn_index, beat_id=beat_id, index=index)
        )
        if beat is not None:
            for key in beat.active_attributes:
                if key not in self.activated:
                    self.activated.append(key)

    def _release(self, consent: dict[str, bool], *, answered: bool = False) -> bool:
        """Apply the user's consent (and an answer's release, E.3) to the held items.

        Returns:
            True when a held item was decided (run, failed or declined): the PA has something to
            act on and must get a turn before the session ends.
        """
        if not consent and not answered:
            return False
        out: ReleaseOutcome = self.wrapper.release(consent, answered=answered)
        if not consent and not out.by_answer:
            return False
        self.emit(
            ConsentEvent(
                turn_index=self.turn_index,
                decisions=dict(consent),
                executed=out.executed,
                denied=[i.id for i in out.denied],
                unknown=out.unknown,
            )
        )
        for call in out.executed:
            state = "it failed: " if call.error else "it has now run: "
            how = "answered, which released" if call.held_id in out.by_answer else "approved"
            self._notes.append(
                f"The user {how} {call.held_id}; {state}{call.result[:300]}"
            )
        for item in out.denied:
            self._notes.append(
                f"The user declined {item.id} ({item.text}); it did not run and will not run."
            )
        for item in out.approved:
            if item.kind == "topic":
                self._notes.append(
                    f"The user agreed to move on to '{item.label}' ({item.id}); it opens your next "
                    "reply. Handle that topic now."
                )
        return bool(out.executed or out.denied or out.approved)

    def _on_call(self, call: ExecutedCall) -> None:
        self.emit(ToolCallEvent(turn_index=self.turn_index, call=call))

    def _on_ix(self, result: SelectResult) -> None:
        self.emit(
            IXSelectionEvent(
                turn_index=self.turn_index,
                attribute=result.attribute,
                setting=result.setting,
                ok=result.ok,
                newly_selected=result.newly_selected,
                message=result.message,
            )
        )

    # ---- one PA turn ------------------------------------------------------------------------

    async def pa_turn(
        self,
        *,
        user_message: str | None,
        notice: str | None,
        consent_only: str | None = None,
    ) -> SessionOutcome | DeliveredTurn:
        """Play one PA turn; returns the delivered turn, or the floored outcome.

        Args:
            user_message: the user's delivered message (None on an event or consent-only turn).
            notice: the world event's notice on an event turn.
            consent_only: on a turn where the user decided held items without words, a short
                account of the decisions (``[Consent] approved held_0001``); it is the memory's
                query and the turn record's user side, and the PA reads the harness notes only.

        A turn that holds an Autonomy Level action while its reply asks the user nothing is
        delivered (the user and the PRS rater see it) and then ends the step floored (Appendix
        F.2, "held an action without asking").
        """
        query = user_message if user_message is not None else (notice or consent_only or "")
        evidence = await self.memory.retrieve(query, self.session)
        if (
            self.session.is_probe
        ):  # a probe branch carries no raw conversation (Section 3.5)
            evidence = evidence.model_copy(update={"prior_messages": []})
        self.emit(
            EvidenceEvent(
                turn_index=self.turn_index,
                system_text=evidence.system_text,
                items=evidence.items,
                prior_messages=len(evidence.prior_messages),
            )
        )
        self.wrapper.begin_turn(event=notice is not None)
        actions = TurnActions(
            self.registry,
            self.wrapper,
            self.activated,
            on_call=self._on_call,
            on_ix=self._on_ix,
        )
        required = (
            self.script.attribute if self.script.attribute in self.activated else None
        )
        turn = AgentTurnInput(
            user_message="" if consent_only is not None else user_message,
            notice=notice,
            now=self.wc.now,
            runtime_notes=self._notes,
            evidence=evidence,
            offered_ix=list(self.activated),
            required_ix=required,
        )
        self._notes = []
        result = await self.agent.respond(turn, actions)
        self.repeated_calls.append(result.repeated_calls)
        self.echoed_replies.append(result.echoed_replies)
        if result.status == "floored":
            return SessionOutcome(status="floored", reason=result.reason)
        if result.status == "failed":  # e.g. an empty reply twice: never stored as the answer
            return SessionOutcome(status="failed", reason=result.reason)
        if self.session.is_probe and result.no_final_reply:
            # nothing the PA wrote is a reply to judge: a model-capability failure (F.2)
            return SessionOutcome(
                status="floored",
                reason=floor_reason(
                    FloorKind.NO_FINAL_REPLY,
                    f"{result.reason or 'no final reply'} (model-capability failure, Appendix F.2)",
                ),
            )
        delivered, trace = self.wrapper.render(result.reply)
        # the model PA screened its raw reply already (before its echo filter); this check covers
        # what the wrapper composed and a seat that does not screen (a person)
        leak = ix_text_in_reply(delivered.reply, self.wrapper.selections)
        withheld = result.ix_text_withheld
        if leak is not None:
            kept = ""
            if not self.session.is_probe:
                kept, more = withhold_ix_sentences(delivered.reply, self.wrapper.selections)
                withheld += more
            if not kept.strip() or ix_text_in_reply(kept, self.wrapper.selections) is not None:
                why = ("" if self.session.is_probe
                       else "; nothing of it was left without that text" if not kept.strip()
                       else "; it stayed after its sentences naming it were withheld")
                return SessionOutcome(
                    status="floored",
                    reason=floor_reason(FloorKind.IX_TEXT_IN_REPLY, f"{leak}{why}"),
                )
            delivered = delivered.model_copy(update={"reply": kept})
        self.ix_text_withheld.append(withheld)
        self.traces.append(trace)
        record = TurnRecord(
            step_id=self.script.id,
            context=self.script.context,
            at=self.wc.now,
            turn_index=self.turn_index,
            user_message=user_message
            if user_message is not None
            else consent_only
            if consent_only is not None
            else f"[Notification] {notice}",
            tool_calls=[
                c for c in delivered.executed if c.status is CallStatus.EXECUTED
            ],
            ix_calls=list(self.wrapper.last_ix_calls),
            reply=delivered.reply,
        )
        await self.memory.write(record)
        self.turn_records.append(record)
        self.exchanges.append(
            Exchange(user_message=user_message, notice=notice, delivered=delivered)
        )
        self.emit(
            PAReplyEvent(
                turn_index=self.turn_index,
                text=delivered.reply,
                status=result.status if result.status in ("capped", "wrapped_up") else "ok",
                reason=result.reason if result.status in ("capped", "wrapped_up") else None,
                repeated_calls=result.repeated_calls,
                echoed_replies=result.echoed_replies,
                echoes_cut=result.echoes_cut,
                ix_text_withheld=withheld,
            )
        )
        if delivered.held:
            self.emit(HeldItemsEvent(turn_index=self.turn_index, items=delivered.held))
        self.turn_index += 1
        if trace.unasked_holds:  # Appendix F.2: the reply was delivered, then the step is floored
            return SessionOutcome(
                status="floored",
                reason=floor_reason(
                    FloorKind.HELD_WITHOUT_ASKING,
                    f"{', '.join(trace.unasked_holds)} held for approval and the reply asked "
                    "the user nothing",
                ),
            )
        return delivered

    # ---- the session ------------------------------------------------------------------------

    async def play(self, start: AgentSessionStart) -> SessionOutcome:
        """Run the session until the user seat is done, a turn is invalid or floored, or the cap.

        Raises:
            mempa_tui.llm.LLMError: a model call failed (the caller marks the step failed).
        """
        self.user.start(self.script, self.targets, self.script.context)
        self.agent.begin_session(start)
        delivered: DeliveredTurn | None = None
        user_turns = 0
        while True:
            turn = await self.user.next_turn(delivered)
            self._track_beat(self.user.current_beat)
            for (
                fact_id
            ) in turn.released_facts:  # facts first: they may open a held write's lock
                self.wc.release_fact(fact_id)
            # the user's answer also releases writes held while the PA asked for information (E.3)
            answered = bool(turn.message) and not turn.invalid
            decided = self._release(turn.consent, answered=answered)
            if turn.invalid:
                return SessionOutcome(
                    status="invalid", reason=turn.invalid_reason or "invalid user turn"
                )
            if turn.waiting_for_event:
                beat = self.user.current_beat
                if beat is None or beat.event is None:
                    return SessionOutcome(
                        status="failed",
                        reason="user seat waits for an event its beat lacks",
                    )
                self.wc.now = max(self.wc.now, beat.event.at)
                self.emit(
                    NoticeEvent(
                        turn_index=self.turn_index,
                        at=self.wc.now,
                        text=beat.event.notice,
                    )
                )
                outcome = await self.pa_turn(
                    user_message=None, notice=beat.event.notice
                )
                if isinstance(outcome, SessionOutcome):
                    return outcome
                delivered = outcome
                self.user.advance_beat()
                self._track_beat(self.user.current_beat)
                continue
            if not turn.message:
                if not decided:
                    return SessionOutcome()
                # consent without words (e.g. a person approves and ends): the PA still gets
                # the turn to act on it before the end
                outcome = await self.pa_turn(
                    user_message=None,
                    notice=None,
                    consent_only=_consent_account(turn.consent),
                )
            else:
                user_turns += 1
                self.emit(
                    UserMessageEvent(
                        turn_index=self.turn_index,
                        text=turn.message,
                        beat_id=turn.beat_id,
                    )
                )
                outcome = await self.pa_turn(user_message=turn.message, notice=None)
            if isinstance(outcome, SessionOutcome):
                return outcome
            delivered = outcome
            if turn.done:  # the seat's end signal waited for this PA turn
                return SessionOutcome()
            if user_turns >= self.cap:
                return SessionOutcome(
                    reason=f"turn cap of {self.cap} user turns reached"
                )

    def selection(self) -> str | None:
        """The session's selection for the tested attribute (fixed by its first IX call)."""
        return self.wrapper.selection(self.script.attribute)

    def floor_event(self, outcome: SessionOutcome) -> None:
        """Emit the status event of a step that did not complete (:meth:`status_event`)."""
        self.emit(self.status_event(outcome))


def _consent_account(consent: dict[str, bool]) -> str:
    """The user's decisions in a few words, for a consent-only turn's record and memory query.

    Args:
        consent: held item id -> approve (True) or deny (False).

    Returns:
        e.g. ``[Consent] approved held_0001; declined held_0002``.
    """
    parts = [f"{'approved' if ok else 'declined'} {item}" for item, ok in consent.items()]
    return "[Consent] " + "; ".join(parts)
