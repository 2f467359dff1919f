"""The user simulator: plays the user of one session or probe (paper Section 3.4, Appendix D).

Turn execution (Appendix D.1): each turn the simulator writes its visible message and private
blocks; only the message reaches the PA, after the rule checks (and the optional LLM checker)
pass. A failing message goes back with a note naming the problem; after three rewrites the turn
is invalid and is never delivered.

Beat progression (Appendix D.1-D.2): the private ``<turn_assessment>`` says whether the PA's
latest reply met the current beat's goal. When it did, the simulator moves to the next beat and
writes the turn there (the draft written for the finished beat is discarded, so no filler message
reaches the PA), except its consent decisions, which are kept.

A draft that answers the PA is never discarded (issue 15.1). The PA waits for the user's word when
the draft decides held items, items are still waiting, or the PA's latest reply asked a question;
a draft written with ``advance`` or ``done`` at such a moment is checked like any message and
reaches the PA, with its consent, before the PA's next turn, whatever the move:

- into an ordinary beat (no world event, no decision point): the words open the next beat's message (the next beat's draft is written
  knowing they were said, and both go as one message, the confirmation first). The next beat's
  facts are released and the consent applied with that message, so a held write that waits for a
  fact the next beat gives (a write lock) runs with it, and the PA acts on both in one turn. This
  is what a person does in a chat ("Yes, send it. It's at 15:00 now.").
- into a world-event beat, or past the last beat (the end signal): no user message would follow
  before the PA's next turn, so the words are delivered now as this turn's message, and the move
  (the event, or the end) waits for the PA's reply to them. A world event moves the story clock:
  a confirmation given before it must be acted on before it, not folded into the message that
  reacts to the event, when the approved text would go out after the event's time. The same holds
  for a beat that opens a decision point: its opening message stays the next beat's own, checked
  for manner requests like every decision-point opening (Table 8 condition 3).

Either way the ``<consent_decisions>`` reach the PA with the words written beside them, as one
simulator turn is one message with its private blocks (Appendix D.1); and the beat still moves
on the simulator's assessment. Off the last beat, a moving draft with no words answers nothing and
moves on at once (its consent still goes with the next turn). A beat whose ``max_turns`` runs out
moves the session ahead to the next beat that declares skills, releasing the facts of any beat it
passes. A beat that declares skills is never skipped, nor the beat after it, nor a world-event
beat. The session is done after the last beat.
Beats that open with a world event are not spoken by the user: the simulator reports
``waiting_for_event`` and the episode loop delivers the event to the PA, then calls
:meth:`UserSimulator.advance_beat`.

Withheld facts (Appendix C.3): a fact is absent from the prompt until the beat that releases it.

Manner requests (Table 8 condition 3, D.2): in probes every message, and in accumulation sessions
the message that opens a decision point, is checked for a request about the manner of the reply
(:mod:`mempa_tui.simulator._manner`); one is sent back for a rewrite like any leak. A message written from the
assistant's side ("How can I assist you today?") and a reply cut at its completion token cap are
sent back too (issue 12: both came from the packaged 1.5B model). The per-step
counts of these checks are :attr:`UserSimulator.check_counts`, which the episode loop copies into
``StepResult.simulator_checks`` (and so into the run store).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from mempa_tui.ix.types import DeliveredTurn, HeldItem
from mempa_tui.llm.sampling import current_scope, sampling_scope
from mempa_tui.llm.types import Role
from mempa_tui.scripts.schema import Beat, Fact, Persona, Probe
from mempa_tui.simulator._blocks import TURN_SCHEMA, ParsedTurn, parse_turn, parse_turn_json
from mempa_tui.simulator._checker import ModelClient, check_message
from mempa_tui.simulator._dialogue import DialogueEntry, entry_from_delivered
from mempa_tui.simulator._leaks import (
    REPEATED_PROBLEM,
    STALL_PROBLEM,
    LeakRules,
    Trimmed,
    assistant_voice_check,
    conversation_check,
    copy_check,
    cut_check,
    rule_check,
    trim_copied,
)
from mempa_tui.simulator._manner import MANNER_PROBLEM
from mempa_tui.simulator._memory import SessionEntryResult, SimulatorMemory, write_session_entry
from mempa_tui.simulator._prompt import (
    ActiveSkill,
    SkillSide,
    TurnPromptInput,
    build_turn_messages,
    render_persona,
)
from mempa_tui.simulator._seat import RejectedAttempt, Script, SimulatorStateError, UserTurn
from mempa_tui.simulator._skills import SkillBook, default_skills
from mempa_tui.taxonomy import Context, attribute

__all__ = ["CHECK_COUNT_KEYS", "UserSimulator"]

_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "sir", "aunt", "uncle"})
"""Words that open a contact's name without being a first name (never taken as one)."""

#: The keys of :attr:`UserSimulator.check_counts`, always present (0 when nothing happened):
#: ``rejected_attempts`` every attempt sent back (format, rule or checker problems);
#: ``manner_requests`` attempts the rule check flagged for asking a manner of reply;
#: ``manner_requests_checker`` attempts the LLM checker flagged on its manner question;
#: ``repeated_messages`` attempts sent back for repeating an earlier user message word for word;
#: ``stalled_messages`` attempts sent back for putting off a detail nobody asked for
#: (:func:`~mempa_tui.simulator._leaks.conversation_check`, issue 12);
#: ``cut_replies`` attempts sent back because the model call stopped at its completion cap
#: (:func:`~mempa_tui.simulator._leaks.cut_check`, issue 12);
#: ``assistant_voice`` attempts sent back for speaking as the assistant ("How can I assist you
#: today?"; :func:`~mempa_tui.simulator._leaks.assistant_voice_check`, issue 12);
#: ``trimmed_messages`` messages sent with a leading speaker label, a leading greeting naming one
#: of the user's contacts, or sentences copied from the user's earlier messages removed
#: (:func:`~mempa_tui.simulator._leaks.trim_copied`, issue 12);
#: ``invalid_turns`` turns that failed every attempt; ``checker_warnings`` checks skipped
#: because the checker's output stayed unreadable.
CHECK_COUNT_KEYS: tuple[str, ...] = (
    "rejected_attempts",
    "manner_requests",
    "manner_requests_checker",
    "repeated_messages",
    "stalled_messages",
    "cut_replies",
    "assistant_voice",
    "trimmed_messages",
    "invalid_turns",
    "checker_warnings",
)

log = logging.getLogger(__name__)

class _Outcome(BaseModel):
    parsed: ParsedTurn | None = None
    move: bool = False
    rejected: list[RejectedAttempt] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class UserSimulator:
    """Plays one user from the persona, the current settings, its own memory and the script.

    Args:
        client: the model client (role ``simulator``; role ``checker`` for the message checker).
        persona: the user.
        mode: ``accumulation`` (memory, full skills, reactions) or ``probe`` (never met the PA, no
            memory, production side only, no feedback on manner).
        memory: the simulator memory (accumulation only; a fresh one when None).
        llm_checker: run the LLM message checker after the rule checks.
        skills: the skill book (default: the packaged skills).
        max_rewrites: rewrites allowed after a failed attempt before the turn is invalid (3).
        output_format: ``tags`` (paper-style blocks) or ``json`` (the same blocks as one JSON
            object, decoded under the client's JSON schema; sturdier with small local models).
        rewrite_temperature: sampling temperature of the rewrites after a failed check (the
            profile's ``options.simulator_rewrite_temperature``); None: the simulator's own. The
            first attempt of a turn always samples at the simulator's own temperature.

    Raises:
        ValueError: a memory was given in probe mode (Table 9: probes see no simulator memory).
    """

    def __init__(
        self,
        client: ModelClient,
        persona: Persona,
        *,
        mode: Literal["accumulation", "probe"] = "accumulation",
        memory: SimulatorMemory | None = None,
        llm_checker: bool = True,
        skills: SkillBook | None = None,
        max_rewrites: int = 3,
        output_format: Literal["tags", "json"] = "tags",
        rewrite_temperature: float | None = None,
    ) -> None:
        if mode == "probe" and memory is not None:
            raise ValueError("UserSimulator: probe mode takes no simulator memory (Table 9)")
        if mode not in ("accumulation", "probe"):
            raise ValueError(f"UserSimulator: mode must be 'accumulation' or 'probe', not {mode!r}")
        self._client = client
        self.persona = persona
        self.mode: Literal["accumulation", "probe"] = mode
        self.memory = memory if mode == "probe" else (memory or SimulatorMemory())
        self._llm_checker = llm_checker
        self._skills = skills or default_skills()
        self._max_rewrites = max_rewrites
        self._rewrite_temperature = rewrite_temperature
        if output_format not in ("tags", "json"):
            raise ValueError(f"UserSimulator: output_format must be 'tags' or 'json', not {output_format!r}")
        self.output_format: Literal["tags", "json"] = output_format
        self._script: Script | None = None
        self._targets: dict[str, str] = {}
        self._index = 0
        self._turns = 0
        self._released: list[str] = []
        self._reported: set[str] = set()
        self._dialogue: list[DialogueEntry] = []
        self._pending: dict[str, HeldItem] = {}
        self._finished = False
        self._after_event = False
        self._move_after_reply: bool | None = None
        self._rules = LeakRules()
        self._checks: Counter[str] = Counter()

    # -- setup -----------------------------------------------------------------------------------
    def start(self, script: Script, targets: Mapping[str, str], context: Context | None = None) -> None:
        """Begin ``script`` with ``targets`` (attribute key -> the user's current setting in the
        script's context); resets all per-session state.

        Raises:
            ValueError: the script kind does not match the mode, ``context`` differs from the
                script's, or ``targets`` lacks or misnames the setting of an attribute the script
                activates (the message names the attribute and beat).
        """
        if self.mode == "probe" and not isinstance(script, Probe):
            raise ValueError(f"start: {script.id} is not a probe, but the simulator is in probe mode")
        if self.mode == "accumulation" and isinstance(script, Probe):
            raise ValueError(f"start: {script.id} is a probe; use mode='probe'")
        if context is not None and context != script.context:
            raise ValueError(f"start: context {context.value} differs from {script.id}'s {script.context.value}")
        needed = {script.attribute: "the decision point"}
        for beat in script.beats:
            for key in beat.active_attributes:
                needed.setdefault(key, f"beat {beat.id}")
        for key, where in needed.items():
            if key not in targets:
                raise ValueError(f"start: targets has no setting for {key!r}, active at {where} of {script.id}")
            attribute(key).setting(targets[key])  # KeyError names the valid settings
        self._move_after_reply = None
        self._script = script
        self._targets = dict(targets)
        self._released, self._reported, self._dialogue, self._pending = [], set(), [], {}
        self._finished = self._after_event = False
        self._checks = Counter()
        material = [render_persona(self.persona), script.task]
        material += [f"{b.goal} {b.conveys}" for b in script.beats]
        material += [f.text for f in script.facts]
        self._rules = LeakRules(
            probe=self.mode == "probe",
            beat_ids=tuple(b.id for b in script.beats),
            script_id=script.id,
            attributes=tuple(needed),
            task_material="\n".join(material),
        )
        self._enter(0, skipped=())

    # -- state -----------------------------------------------------------------------------------
    @property
    def script(self) -> Script:
        """The script in play (raises :class:`SimulatorStateError` before ``start``)."""
        if self._script is None:
            raise SimulatorStateError("the simulator has not been started (call start(script, targets))")
        return self._script

    @property
    def current_beat(self) -> Beat | None:
        """The beat in play, or None when the session is over."""
        return None if self._finished else self.script.beats[self._index]

    @property
    def beat_index(self) -> int:
        """Index of the current beat."""
        return self._index

    @property
    def done(self) -> bool:
        """True once the session is over (last beat finished, or an invalid turn)."""
        return self._finished

    @property
    def released_facts(self) -> tuple[str, ...]:
        """Ids of all facts released so far, in release order."""
        return tuple(self._released)

    @property
    def dialogue(self) -> list[DialogueEntry]:
        """The dialogue so far as the user saw it (a copy)."""
        return list(self._dialogue)

    @property
    def check_counts(self) -> dict[str, int]:
        """Counts of the message checks since ``start`` (keys: :data:`CHECK_COUNT_KEYS`)."""
        return {key: self._checks[key] for key in CHECK_COUNT_KEYS}

    def _at_decision(self) -> str | None:
        """The tested attribute when the next message opens a decision point (accumulation
        only: in probes every message is checked), else None."""
        beat = self.script.beats[self._index]
        if self.mode == "accumulation" and beat.decision_point is not None and self._turns == 0:
            return beat.decision_point.attribute
        return None

    def active_skills(self) -> list[ActiveSkill]:
        """Skills of the current beat: full on a declaring beat, reception only on the next beat,
        dropped after; in probes the production side only, and nothing on the next beat."""
        beats = self.script.beats
        here = beats[self._index].active_attributes
        before = beats[self._index - 1].active_attributes if self._index > 0 else []
        active: list[ActiveSkill] = []
        for key in here:
            side: SkillSide = "production" if self.mode == "probe" else "full"
            active.append(ActiveSkill(skill=self._skills.get(key, self._targets[key]), side=side))
        if self.mode == "accumulation":
            for key in before:
                if key not in here:
                    active.append(ActiveSkill(skill=self._skills.get(key, self._targets[key]), side="reception"))
        return active

    def prompt_input(self) -> TurnPromptInput:
        """The inputs of the current turn's prompt (also what a human user seat's panel shows)."""
        script = self.script
        beats = script.beats
        facts = {f.id: f for f in script.facts}
        show = beats[self._index].decision_point is not None or (
            self._index > 0 and beats[self._index - 1].decision_point is not None
        )
        return TurnPromptInput(
            persona=self.persona,
            mode=self.mode,
            memory=self.memory,
            script=script,
            beat_index=self._index,
            turns_in_beat=self._turns,
            released=[facts[fid] for fid in self._released],
            skills=self.active_skills(),
            show_decision=show,
            target=self._targets.get(script.attribute),
            dialogue=list(self._dialogue),
            pending=list(self._pending.values()),
            output_format=self.output_format,
        )

    # -- progression -----------------------------------------------------------------------------
    def _protected(self, i: int) -> bool:
        beats = self.script.beats
        return bool(
            beats[i].active_attributes
            or beats[i].event is not None
            or (i > 0 and beats[i - 1].active_attributes)
        )

    def _enter(self, index: int, skipped: Sequence[int]) -> None:
        beats = self.script.beats
        for i in (*skipped, index):
            for fid in beats[i].releases:
                if fid not in self._released:
                    self._released.append(fid)
        self._index, self._turns = index, 0

    def _move_target(self, *, timeout: bool, done_requested: bool = False) -> int | None:
        """The beat index a move would enter, or None when it ends the session."""
        beats = self.script.beats
        i = self._index
        later_protected = [j for j in range(i + 1, len(beats)) if self._protected(j)]
        if done_requested and not later_protected:
            return None
        target = i + 1
        if timeout and later_protected:
            target = later_protected[0]
        return None if target >= len(beats) else target

    def _move_on(self, *, timeout: bool, done_requested: bool = False) -> None:
        target = self._move_target(timeout=timeout, done_requested=done_requested)
        if target is None:
            self._finished = True
            return
        self._enter(target, skipped=range(self._index + 1, target))

    def _answers_pa(self, parsed: ParsedTurn) -> bool:
        """Whether the moving draft ``parsed`` (``advance`` or ``done``) is the user's word the PA
        waits for, so it is checked and delivered before the move (see the module docstring).

        The PA waits when the draft decides held items, items are still waiting, or the PA's
        latest reply asked a question. Past the last beat no later turn could carry the answer, so
        such a draft must have words (an empty one is rewritten); off the last beat an empty draft
        answers nothing and moves on at once, its consent kept for the next turn. Such a draft is
        delivered now or opens the next beat's message (:meth:`next_turn`); any other moving
        draft is discarded like every draft for a finished beat.
        """
        last = next((e for e in reversed(self._dialogue) if e.speaker != "user"), None)
        asked = last is not None and last.speaker == "assistant" and "?" in last.text
        waits = bool(parsed.consent or self._pending or asked)
        ends = self._move_target(timeout=False, done_requested=parsed.assessment == "done") is None
        return waits and (ends or bool((parsed.message or "").strip()))

    def advance_beat(self) -> Beat | None:
        """Move one beat on (after the episode loop delivered a world event); the new beat or None."""
        if self._finished:
            return None
        if self.script.beats[self._index].event is not None:
            self._after_event = True
        self._move_on(timeout=False)
        return self.current_beat

    # -- turns -----------------------------------------------------------------------------------
    def _record(self, delivered: DeliveredTurn | None) -> None:
        """Add what the PA delivered to the user's view of the dialogue."""
        after_event, self._after_event = self._after_event, False
        if delivered is not None:
            # The wrapper lists every item still awaiting consent after each turn.
            self._pending = {i.id: i for i in delivered.held if i.status == "pending"}
            if delivered.reply.strip() or delivered.executed or delivered.held:
                self._dialogue.append(entry_from_delivered(delivered))
                return
        if after_event:
            silence = "time passed; the assistant did not get in touch"
            self._dialogue.append(DialogueEntry(speaker="notice", text=silence))
        elif delivered is not None:
            self._dialogue.append(DialogueEntry(speaker="notice", text="the assistant sent no reply"))

    def _new_facts(self) -> list[str]:
        new = [f for f in self._released if f not in self._reported]
        self._reported.update(new)
        return new

    def _consent(self, parsed: ParsedTurn | None) -> dict[str, bool]:
        if parsed is None:
            return {}
        by_lower = {k.lower(): k for k in self._pending}
        decided: dict[str, bool] = {}
        for raw_id, approve in parsed.consent.items():
            real = by_lower.get(raw_id.lower())
            if real is None:
                log.warning("simulator decided on unknown held item %r; ignored", raw_id)
                continue
            decided[real] = approve
            del self._pending[real]
        return decided

    def _closing_turn(
        self,
        outcome: _Outcome | None = None,
        *,
        done: bool = False,
        invalid: bool = False,
        waiting_for_event: bool = False,
    ) -> UserTurn:
        parsed = outcome.parsed if outcome else None
        beat = self.current_beat
        return UserTurn(
            consent=self._consent(parsed),
            beat_id=beat.id if beat else None,
            done=done,
            invalid=invalid,
            waiting_for_event=waiting_for_event,
            released_facts=self._new_facts(),
            factual_check=parsed.factual_check if parsed else "",
            assessment=parsed.assessment if parsed else None,
            rejected=outcome.rejected if outcome else [],
            checker_warnings=outcome.warnings if outcome else [],
        )

    async def next_turn(self, delivered: DeliveredTurn | None) -> UserTurn:
        """Read what the PA delivered and write the next user turn.

        Args:
            delivered: the PA's delivered turn (public reply, executed calls, held items), or
                None before the first turn. It is the only view of the PA the simulator has.

        Returns:
            A :class:`UserTurn`. Deliver ``message`` only when it is non-empty; see the flags.

        Raises:
            SimulatorStateError: called before ``start``.
            LLMError: a model call itself failed.
        """
        script = self.script
        self._record(delivered)
        if self._move_after_reply is not None:
            done_requested, self._move_after_reply = self._move_after_reply, None
            self._move_on(timeout=False, done_requested=done_requested)
        if self._finished:
            return self._closing_turn(done=True)
        if script.beats[self._index].event is not None:
            return self._closing_turn(waiting_for_event=True)
        if self._turns >= script.beats[self._index].max_turns:
            self._move_on(timeout=True)
            if self._finished:
                return self._closing_turn(done=True)
            if script.beats[self._index].event is not None:
                return self._closing_turn(waiting_for_event=True)

        outcome = await self._produce(allow_move=self._turns > 0)
        early_consent: dict[str, bool] = {}
        carried: str | None = None
        if outcome.move and outcome.parsed is not None:
            done_requested = outcome.parsed.assessment == "done"
            answer = outcome.parsed.message if self._answers_pa(outcome.parsed) else None
            target = self._move_target(timeout=False, done_requested=done_requested)
            if answer and (
                target is None
                or script.beats[target].event is not None
                or script.beats[target].decision_point is not None
            ):
                # the user's answer before a world event, a decision point or the end: deliver it
                # now; the move (the event, the end signal) waits for the next call, after the PA
                self._move_after_reply = done_requested
                return self._deliver(outcome, beat_id=script.beats[self._index].id)
            self._move_on(timeout=False, done_requested=done_requested)
            closing = self._finished or script.beats[self._index].event is not None
            if self._finished:
                return self._closing_turn(outcome, done=True)
            if closing:
                return self._closing_turn(outcome, waiting_for_event=True)
            # a draft for the finished beat is discarded, but not its consent decisions, and
            # not its words when they answer the PA: they open the next beat's message
            early_consent = self._consent(outcome.parsed)
            carried = answer
            if carried:
                self._dialogue.append(DialogueEntry(speaker="user", text=carried))
            earlier = outcome
            try:
                outcome = await self._produce(allow_move=False)
            finally:
                if carried:  # the joined message is recorded once, as delivered
                    self._dialogue.pop()
            outcome.rejected = earlier.rejected + outcome.rejected
            outcome.warnings = earlier.warnings + outcome.warnings
            if carried and outcome.parsed is not None and outcome.parsed.message:
                joined = f"{carried}\n\n{outcome.parsed.message}"
                outcome.parsed = outcome.parsed.model_copy(update={"message": joined})

        if (outcome.parsed is None or not outcome.parsed.message) and self._only_repeats(outcome):
            # every attempt only said again what the user already said: it has nothing new for
            # this step, so the step ends as at its turn cap instead of the session being
            # discarded (a deviation from Appendix D.4; replayed and fresh quick starts of
            # 3 December: the 1.5B's A-S14 repeated its last message through every rewrite)
            self._checks["trimmed_messages"] += 1
            log.info("simulator had nothing new for beat %s; it ends there", script.beats[self._index].id)
            self._turns = script.beats[self._index].max_turns
            turn = await self.next_turn(None)
            turn.rejected = outcome.rejected + turn.rejected
            turn.checker_warnings = outcome.warnings + turn.checker_warnings
            return turn
        if outcome.parsed is None or not outcome.parsed.message:
            self._finished = True
            reason = "; ".join(outcome.rejected[-1].problems) if outcome.rejected else "no attempt"
            self._checks["invalid_turns"] += 1
            turn = self._closing_turn(outcome, invalid=True)
            turn.invalid_reason = f"{len(outcome.rejected)} attempts failed the checks; last: {reason}"
            return turn
        turn = self._deliver(outcome, beat_id=self.script.beats[self._index].id)
        turn.consent = {**early_consent, **turn.consent}
        self._turns += 1
        return turn

    def _deliver(self, outcome: _Outcome, *, beat_id: str) -> UserTurn:
        """The turn that delivers ``outcome``'s checked message (with its consent)."""
        assert outcome.parsed is not None and outcome.parsed.message
        turn = self._closing_turn(outcome)
        turn.message = outcome.parsed.message
        turn.beat_id = beat_id
        self._dialogue.append(DialogueEntry(speaker="user", text=turn.message))
        return turn

    @staticmethod
    def _attempt_scope(attempt: int) -> AbstractContextManager[object]:
        """The sampling scope of a turn's ``attempt`` (0: the first, kept as the caller set it).

        A rewrite's prompt is the same from the third attempt on when its notes repeat (each
        distinct note is shown once), and the client derives the seed from the scope and the
        prompt (:mod:`mempa_tui.llm.sampling`): so attempts 3 and 4 drew the same sample as
        attempt 2, even at the rewrite temperature (issue 12, ``benchmarks/simulator_replay.py``:
        the 1.5B's last two attempts were the same message, character for character). Each
        rewrite adds its number to the scope, so every attempt samples anew and a replay of the
        run still draws the same.
        """
        if attempt == 0:
            return nullcontext()
        return sampling_scope(f"{current_scope()} simulator-rewrite={attempt}".strip())

    async def _produce(self, *, allow_move: bool) -> _Outcome:
        """Write the turn, with up to ``max_rewrites`` rewrites after failed checks.

        Checks, in order: a reply cut at its completion cap is sent back before anything else
        (:func:`cut_check`; not even its move is taken); then the format, the rule checks with
        :func:`assistant_voice_check`, the removal of a speaker label and of sentences copied from
        the user's earlier messages (:func:`trim_copied`; a deviation from Appendix D.4, counted in
        ``trimmed_messages``), the conversation checks and the optional LLM checker. A draft that
        moves on (advance, done) with nothing but copied words while nothing waits for the user's
        decision moves on without them.
        """
        outcome = _Outcome()
        rewrites: list[tuple[str, str]] = []
        for attempt in range(self._max_rewrites + 1):
            messages = build_turn_messages(self.prompt_input(), rewrites=rewrites)
            rewrite = bool(rewrites) and self._rewrite_temperature is not None
            sampling = {"temperature": self._rewrite_temperature} if rewrite else {}
            with self._attempt_scope(attempt):
                if self.output_format == "json":
                    completion = await self._client.complete(
                        Role.SIMULATOR, messages, json_schema=TURN_SCHEMA, **sampling)
                    parsed = parse_turn_json(completion.text)
                else:
                    completion = await self._client.complete(Role.SIMULATOR, messages, **sampling)
                    parsed = parse_turn(completion.text)
            # a reply cut at its cap is not a turn, whatever it parsed to (its move included)
            problems = cut_check(completion.text, completion.finish_reason)
            if problems:
                outcome.move = False
                self._checks["cut_replies"] += 1
                self._checks["rejected_attempts"] += 1
                outcome.rejected.append(RejectedAttempt(reply=completion.text, problems=problems))
                rewrites.append((completion.text, "; ".join(problems)))
                continue
            outcome.move = allow_move and parsed.assessment in ("advance", "done")
            if outcome.move and parsed.message and not parsed.consent and not self._pending:
                copy = self._trimmed(parsed.message)
                if copy.only_copies or (copy.changed and not copy.text):
                    # the user moves on and has nothing new to say (nothing waits for its
                    # decision): its copied words are dropped and it moves on, even when the PA's
                    # last reply ended on a question such as "Anything else?" (replayed A-S14 on
                    # the 1.5B: "advance" with its previous message, 4 times, then invalid)
                    self._checks["trimmed_messages"] += 1
                    log.info("simulator moves on; its copied message dropped: %r", parsed.message)
                    outcome.parsed = parsed.model_copy(update={"message": None})
                    return outcome
            if outcome.move and not self._answers_pa(parsed):
                outcome.parsed = parsed  # moves on: the next beat's turn carries the words
                return outcome
            decision = self._at_decision()
            problems = self._check_format(parsed)
            if not problems:
                voice = assistant_voice_check(parsed.message or "", self._rules.task_material)
                self._checks["assistant_voice"] += bool(voice)
                problems = rule_check(
                    parsed.message or "", self._rules, parsed.private_texts,
                    manner=(decision,) if decision else (),
                ) + voice
            if not problems:
                parsed, problems = self._trim(parsed)
            if not problems:
                problems = self._conversation_problems(parsed.message or "")
            if any(p.startswith(MANNER_PROBLEM) for p in problems):
                self._checks["manner_requests"] += 1
            if not problems and self._llm_checker:
                problems = await self._llm_check(parsed.message or "", outcome, at_decision=decision is not None)
            if not problems:
                outcome.parsed = parsed
                return outcome
            self._checks["rejected_attempts"] += 1
            outcome.rejected.append(RejectedAttempt(reply=completion.text, problems=problems))
            rewrites.append((completion.text, "; ".join(problems)))
        return outcome

    @staticmethod
    def _only_repeats(outcome: _Outcome) -> bool:
        """Whether a failed turn's every attempt was sent back only for repeating the user."""
        return bool(outcome.rejected) and all(
            r.problems and all(p.startswith(REPEATED_PROBLEM) for p in r.problems) for r in outcome.rejected)

    def _instructions(self) -> list[str]:
        """The current beat's instruction texts for :func:`copy_check`: its goal, what it conveys,
        when it starts, and its decision point's reactions and fall-short line."""
        beat = self.script.beats[self._index]
        texts = [beat.goal, beat.conveys, beat.starts_when or ""]
        if beat.decision_point is not None:
            texts += [*beat.decision_point.reactions.values(), beat.decision_point.falls_short]
        return [t for t in texts if t]

    def _assistant_texts(self) -> list[str]:
        """The assistant's delivered replies and the string arguments of its calls (ran or held)."""
        texts: list[str] = []
        for entry in self._dialogue:
            if entry.speaker != "assistant":
                continue
            texts.append(entry.text)
            for args in [c.arguments for c in entry.executed] + [h.arguments or {} for h in entry.held]:
                texts += [v for v in args.values() if isinstance(v, str)]
        return [t for t in texts if t.strip()]

    def _trimmed(self, message: str) -> Trimmed:
        """:func:`trim_copied` of ``message`` against the user's delivered messages and names."""
        earlier = [e.text for e in self._dialogue if e.speaker == "user"]
        first = self.persona.name.split()[0] if self.persona.name.split() else ""
        contacts = [r.name for r in self.persona.relationships] + [
            r.name.split()[0] for r in self.persona.relationships
            if r.name.split() and r.name.split()[0].lower().rstrip(".") not in _TITLES]
        return trim_copied(message, earlier, (self.persona.name, first), contacts)

    def _trim(self, parsed: ParsedTurn) -> tuple[ParsedTurn, list[str]]:
        """``parsed`` with its message trimmed by :func:`trim_copied`, and the problems left.

        A message with nothing of its own after its copied sentences are removed is a repeat
        (sent back with the repeat note, counted in ``repeated_messages``); a trimmed message
        that is left is counted in ``trimmed_messages`` and checked as what it now is.
        """
        message = parsed.message or ""
        trimmed = self._trimmed(message)
        if trimmed.only_copies or (trimmed.changed and not trimmed.text):
            self._checks["repeated_messages"] += 1
            step = " ".join(self.script.beats[self._index].conveys.split()).rstrip(".")
            return parsed, [f"{REPEATED_PROBLEM}; for where you are now, your message does this: {step}"]
        if not trimmed.changed:
            return parsed, []
        self._checks["trimmed_messages"] += 1
        log.info("simulator message trimmed (%d copied sentences, label %s, greeting %s): %r -> %r",
                 trimmed.dropped, trimmed.label, trimmed.greeting, message, trimmed.text)
        return parsed.model_copy(update={"message": trimmed.text}), []

    def _conversation_problems(self, message: str) -> list[str]:
        """:func:`conversation_check` against this conversation's delivered turns, counted."""
        earlier = [e.text for e in self._dialogue if e.speaker == "user"]
        last = next((e.text for e in reversed(self._dialogue) if e.speaker == "assistant"), None)
        problems = conversation_check(message, earlier, last, self.script.beats[self._index].conveys)
        if not problems:
            problems = copy_check(message, self._instructions(), self._assistant_texts())
        self._checks["repeated_messages"] += any(p.startswith(REPEATED_PROBLEM) for p in problems)
        self._checks["stalled_messages"] += any(p.startswith(STALL_PROBLEM) for p in problems)
        return problems

    @staticmethod
    def _check_format(parsed: ParsedTurn) -> list[str]:
        if parsed.ok:
            return []
        found = "; ".join(parsed.problems) or "no message"
        return [f"{found}: put what you say inside <message>...</message>, and never leave it empty"]

    async def _llm_check(self, message: str, outcome: _Outcome, *, at_decision: bool = False) -> list[str]:
        previous = next((e.text for e in reversed(self._dialogue) if e.speaker == "assistant"), None)
        unreleased: list[Fact] = [f for f in self.script.facts if f.id not in self._released]
        result = await check_message(
            self._client,
            message=message,
            previous_reply=previous,
            beat=self.script.beats[self._index],
            unreleased=unreleased,
            probe=self.mode == "probe",
            at_decision=at_decision,
        )
        if result.warning:
            outcome.warnings.append(result.warning)
            self._checks["checker_warnings"] += 1
        if result.manner:
            self._checks["manner_requests_checker"] += 1
        return result.problems

    # -- memory ----------------------------------------------------------------------------------
    async def write_session_entry(
        self, session_date: date, transcript: Sequence[DialogueEntry] | str | None = None
    ) -> SessionEntryResult:
        """Write the session's dated entry into this simulator's memory (Appendix D.3).

        Args:
            session_date: story date of the session.
            transcript: the session as the user saw it; default: this simulator's own dialogue.

        Raises:
            SimulatorStateError: in probe mode (probes write nothing back, Table 9).
            LLMError: the model call itself failed.
        """
        if self.mode == "probe" or self.memory is None:
            raise SimulatorStateError("probes write nothing to the simulator memory (Table 9)")
        return await write_session_entry(
            self._client,
            self.memory,
            self.persona,
            session_date,
            self._dialogue if transcript is None else transcript,
        )
