"""A person in the user's seat, with the simulator as a silent shadow (SPEC §4.11 'Play as the
user', §6 'Human-in-the-loop agreement'; paper Section 3.4 and Appendix D.1).

:class:`HumanUserSeat` fills the episode loop's :class:`~mempa_tui.simulator.UserSeat`. The
person's actions arrive through an in-memory queue (:meth:`HumanUserSeat.submit`); the seat keeps
the beat, the released facts and the held items exactly as the simulator would, so the loop,
wrapper and memory cannot tell the difference. The person moves the beat on themselves (the
simulator does it from its private turn assessment).

Ending never drops the person's word (issue 15.1; Section 3.4, Appendix E.4). When the person ends
the session, or moves past the last beat, with a message or with consent decisions, the seat hands
that turn to the loop first: the message (with its consent) is delivered, or, with consent alone,
the loop gives the PA a turn to act on the decisions. The end signal comes at the next call, after
the PA's reply, which the person also sees. This is what the simulator does with its own closing
words (:mod:`mempa_tui.simulator._simulator`).

At each of the person's turns the seat also asks the simulator, from the same state and the same
dialogue, what it would have written. Both go into :attr:`HumanUserSeat.fidelity` as a
:class:`FidelityPair`; the shadow's answer is never delivered. A failed shadow call is recorded in
the pair and never stops the session.

Like the simulator, the seat only ever receives :class:`~mempa_tui.ix.types.DeliveredTurn`, so the
person never sees the PA's selection or withheld content (Table 9). The person does see their own
preference: the acting sheet of every active setting (this is the user's seat).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

import anyio
from pydantic import BaseModel, Field

from mempa_tui.ix.types import DeliveredTurn, HeldItem
from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.types import Role
from mempa_tui.scripts.schema import Beat, Fact, Persona, Probe
from mempa_tui.simulator._blocks import (
    TURN_SCHEMA,
    Assessment,
    parse_turn,
    parse_turn_json,
)
from mempa_tui.simulator._checker import ModelClient
from mempa_tui.simulator._dialogue import DialogueEntry, entry_from_delivered
from mempa_tui.simulator._leaks import LeakRules, rule_check
from mempa_tui.simulator._memory import SimulatorMemory
from mempa_tui.simulator._prompt import (
    ActiveSkill,
    SkillSide,
    TurnPromptInput,
    build_turn_messages,
    render_persona,
)
from mempa_tui.simulator._seat import Script, SimulatorStateError, UserTurn
from mempa_tui.simulator._skills import SkillBook, default_skills
from mempa_tui.taxonomy import Context

__all__ = ["FidelityPair", "HumanUserSeat", "ShadowTurn", "UserAction", "UserPanel"]


class UserAction(BaseModel):
    """One thing the person does at their turn."""

    kind: Literal["say", "advance", "end"]
    """``say`` a message; ``advance`` to the next beat (its goal was met); ``end`` the session."""
    text: str = ""
    """The message: required for ``say``; optional for ``end`` (the last word, delivered and
    answered by the PA before the session ends); not allowed for ``advance``."""
    consent: dict[str, bool] = Field(default_factory=dict)
    """Held item id -> approve (True) or deny (False); applied before the PA's next turn."""


class ShadowTurn(BaseModel):
    """What the simulator would have written at the person's turn (never delivered)."""

    message: str | None = None
    """The simulator's visible message, or None when it produced none."""
    assessment: Assessment | None = None
    """Its private turn assessment (stay / advance / done)."""
    consent: dict[str, bool] = Field(default_factory=dict)
    """Its consent decisions on the held items."""
    factual_check: str = ""
    """Its private factual check."""
    problems: list[str] = Field(default_factory=list)
    """Format or leak-rule problems of its message (the live simulator would have rewritten)."""
    error: str | None = None
    """Why no shadow turn could be had (a failed model call), else None."""


class FidelityPair(BaseModel):
    """The person's turn and the simulator's shadow turn, side by side (SPEC §6)."""

    turn: int = Field(ge=0)
    """The person's turn number in the session (0-based)."""
    beat_id: str
    """The beat the turn was written in."""
    human_message: str
    """What the person sent (delivered to the PA)."""
    human_consent: dict[str, bool] = Field(default_factory=dict)
    """The person's consent decisions at this turn."""
    human_warnings: list[str] = Field(default_factory=list)
    """Leak-rule problems found in the person's message (recorded, not blocking)."""
    simulator: ShadowTurn
    """The simulator's answer from the same state."""


class UserPanel(BaseModel):
    """What the play-as-user panel shows: the person's own side of the session."""

    step_id: str
    """The session or probe id."""
    mode: Literal["accumulation", "probe"]
    """Accumulation session or probe."""
    task: str
    """The script's task for the user."""
    beat_index: int
    """Index of the current beat (equals ``beat_count`` when the session is over)."""
    beat_count: int
    """Beats in the script."""
    beat: Beat | None = None
    """The current beat (goal, what to convey, turn cap), or None when over."""
    turns_in_beat: int = 0
    """Messages the person already sent in this beat."""
    acting_sheets: list[str] = Field(default_factory=list)
    """Acting sheets of the active settings (the person's own preferences)."""
    released: list[Fact] = Field(default_factory=list)
    """Facts released so far, in order."""
    pending: list[HeldItem] = Field(default_factory=list)
    """Held items waiting for the person's consent."""
    waiting: bool = False
    """True while the seat waits for the person's action."""
    finished: bool = False
    """True once the session is over for the seat."""
    warnings: list[str] = Field(default_factory=list)
    """Leak-rule problems of the person's last message."""


class HumanUserSeat:
    """The user's seat filled by a person (see the module docstring).

    Args:
        client: the model client for the shadow simulator (role ``simulator``); None: no shadow
            unless one is bound later (:func:`~mempa_tui.runner.play.play_step` binds the play's
            client when ``shadow`` is True).
        persona: the user.
        memory: the simulator memory the shadow reads in accumulation sessions (None in probes).
        skills: the skill book (default: the packaged skills).
        output_format: the shadow's turn format (``tags`` or ``json``).
        on_change: called with the panel whenever it changes (waiting starts, beat moves, a
            turn is recorded); it must not block.
        shadow: ask the simulator for its shadow turn at each of the person's turns.
    """

    def __init__(
        self,
        client: ModelClient | None,
        persona: Persona,
        *,
        memory: SimulatorMemory | None = None,
        skills: SkillBook | None = None,
        output_format: Literal["tags", "json"] = "tags",
        on_change: Callable[[UserPanel], None] | None = None,
        shadow: bool = True,
    ) -> None:
        self.client = client
        """The shadow simulator's model client (None: no shadow)."""
        self.shadow = shadow
        """Whether the shadow simulator is asked at each turn."""
        self.persona = persona
        self.memory = memory
        self._skills = skills or default_skills()
        self.output_format: Literal["tags", "json"] = output_format
        self.on_change = on_change
        self._send, self._receive = anyio.create_memory_object_stream[UserAction](max_buffer_size=16)
        self._script: Script | None = None
        self._targets: dict[str, str] = {}
        self._index = 0
        self._turns = 0
        self._user_turns = 0
        self._released: list[str] = []
        self._reported: set[str] = set()
        self._dialogue: list[DialogueEntry] = []
        self._pending: dict[str, HeldItem] = {}
        self._consent: dict[str, bool] = {}
        self._finished = False
        self._end_after_reply = False
        self._after_event = False
        self._waiting = False
        self._warnings: list[str] = []
        self._rules = LeakRules()
        self.fidelity: list[FidelityPair] = []
        """Every person turn with the simulator's shadow turn, in order."""

    # ---- the app's side -----------------------------------------------------------------------

    def submit(self, action: UserAction) -> None:
        """Hand the seat the person's next action (the app calls this; never blocks).

        Raises:
            ValueError: a ``say`` action with an empty message, an ``advance`` with a message (it
                would be lost: send it, or end with it), or consent for an item that is not
                waiting (the message names the item and the pending ones).
            SimulatorStateError: the session is over.
        """
        if self._finished:
            raise SimulatorStateError("the session is over; there is no turn to take")
        if action.kind == "say" and not action.text.strip():
            raise ValueError("a message to the assistant cannot be empty")
        if action.kind == "advance" and action.text.strip():
            raise ValueError("moving to the next beat carries no message: send it first, or end the session with it")
        unknown = [k for k in action.consent if k not in self._pending]
        if unknown:
            waiting = ", ".join(self._pending) or "none"
            raise ValueError(f"no held item {', '.join(unknown)} is waiting for consent (waiting: {waiting})")
        self._send.send_nowait(action)

    @property
    def dialogue(self) -> list[DialogueEntry]:
        """The session as the user saw it so far (the person's messages, the PA's delivered turns,
        notices), in the shape the simulator's diary entry is written from (Appendix D.3)."""
        return list(self._dialogue)

    @property
    def waiting(self) -> bool:
        """True while the seat waits for the person."""
        return self._waiting

    def panel(self) -> UserPanel:
        """The person's panel as it stands (see :class:`UserPanel`)."""
        script = self.script
        beat = self.current_beat
        facts = {f.id: f for f in script.facts}
        return UserPanel(
            step_id=script.id,
            mode=self.mode,
            task=script.task,
            beat_index=self._index if beat is not None else len(script.beats),
            beat_count=len(script.beats),
            beat=beat,
            turns_in_beat=self._turns,
            acting_sheets=[a.skill.acting_sheet(script.context) for a in self._active_skills()] if beat else [],
            released=[facts[f] for f in self._released if f in facts],
            pending=list(self._pending.values()),
            waiting=self._waiting,
            finished=self._finished,
            warnings=list(self._warnings),
        )

    # ---- the UserSeat protocol ----------------------------------------------------------------

    def start(self, script: Script, targets: Mapping[str, str], context: Context | None = None) -> None:
        """Begin ``script`` with the user's current settings (attribute key -> setting).

        Raises:
            ValueError: ``context`` differs from the script's, or ``targets`` lacks a setting the
                script activates.
        """
        if context is not None and context != script.context:
            raise ValueError(f"start: context {context.value} differs from {script.id}'s {script.context.value}")
        needed = [script.attribute, *(k for b in script.beats for k in b.active_attributes)]
        missing = sorted({k for k in needed if k not in targets})
        if missing:
            raise ValueError(f"start: targets has no setting for {', '.join(missing)} in {script.id}")
        self._script = script
        self._targets = dict(targets)
        self._released, self._reported, self._dialogue, self._pending = [], set(), [], {}
        self._consent = {}
        self._finished = self._after_event = self._waiting = self._end_after_reply = False
        self._user_turns = 0
        self.fidelity = []
        material = [render_persona(self.persona), script.task]
        material += [f"{b.goal} {b.conveys}" for b in script.beats]
        material += [f.text for f in script.facts]
        self._rules = LeakRules(
            probe=self.mode == "probe",
            beat_ids=tuple(b.id for b in script.beats),
            script_id=script.id,
            attributes=tuple(dict.fromkeys(needed)),
            task_material="\n".join(material),
        )
        self._enter(0)

    @property
    def script(self) -> Script:
        """The script in play (raises :class:`SimulatorStateError` before ``start``)."""
        if self._script is None:
            raise SimulatorStateError("the seat has not been started (call start(script, targets))")
        return self._script

    @property
    def mode(self) -> Literal["accumulation", "probe"]:
        """``probe`` for a probe, else ``accumulation``."""
        return "probe" if isinstance(self._script, Probe) else "accumulation"

    @property
    def current_beat(self) -> Beat | None:
        """The beat in play, or None when the session is over."""
        return None if self._finished else self.script.beats[self._index]

    @property
    def released_facts(self) -> tuple[str, ...]:
        """Ids of all facts released so far, in release order."""
        return tuple(self._released)

    def advance_beat(self) -> Beat | None:
        """Move one beat on (after a world-event beat, or the person's ``advance``)."""
        if self._finished:
            return None
        if self.script.beats[self._index].event is not None:
            self._after_event = True
        if self._index + 1 >= len(self.script.beats):
            self._finished = True
        else:
            self._enter(self._index + 1)
        self._changed()
        return self.current_beat

    async def next_turn(self, delivered: DeliveredTurn | None) -> UserTurn:
        """Show the person what the PA delivered and wait for their action.

        Returns:
            The person's turn: a message with its consent, ``waiting_for_event`` at a world-event
            beat, or ``done`` when they end the session or pass the last beat. An end that
            carries a message or consent first returns that turn (consent alone: an empty
            message with the consent) and returns ``done`` at the next call, after the PA's reply.
        """
        self._record(delivered)
        if self._end_after_reply:
            self._end_after_reply = False
            self._finished = True
            self._changed()
        while True:
            if self._finished:
                return self._turn(done=True)
            if self.script.beats[self._index].event is not None:
                return self._turn(waiting_for_event=True)
            action, shadow = await self._await_action()
            # Consent given with 'advance' goes with the next turn the loop receives (a message,
            # a world event's turn, or the end): the PA acts on it in that turn.
            self._consent.update(self._take_consent(action.consent))
            ends = action.kind == "end" or (
                action.kind == "advance" and self._index + 1 >= len(self.script.beats)
            )
            if ends and (action.text.strip() or self._consent):
                # the person's last word: the PA gets its turn on it before the end signal
                self._end_after_reply = True
                if action.text.strip():
                    return self._say(action, shadow)
                turn = self._turn()
                self._changed()
                return turn
            if action.kind == "end":
                self._finished = True
                self._changed()
                return self._turn(done=True)
            if action.kind == "advance":
                self.advance_beat()
                continue
            return self._say(action, shadow)

    # ---- internals ------------------------------------------------------------------------------

    def _changed(self) -> None:
        if self.on_change is not None and self._script is not None:
            self.on_change(self.panel())

    def _enter(self, index: int) -> None:
        for fid in self.script.beats[index].releases:
            if fid not in self._released:
                self._released.append(fid)
        self._index, self._turns = index, 0

    def _active_skills(self) -> list[ActiveSkill]:
        """The same rule as the simulator: full (probe: production) on a declaring beat, the
        reception side on the beat after it (accumulation only)."""
        beats = self.script.beats
        here = beats[self._index].active_attributes
        before = beats[self._index - 1].active_attributes if self._index > 0 else []
        side: SkillSide = "production" if self.mode == "probe" else "full"
        active = [ActiveSkill(skill=self._skills.get(k, self._targets[k]), side=side) for k in here]
        if self.mode == "accumulation":
            active += [
                ActiveSkill(skill=self._skills.get(k, self._targets[k]), side="reception")
                for k in before if k not in here
            ]
        return active

    def _record(self, delivered: DeliveredTurn | None) -> None:
        after_event, self._after_event = self._after_event, False
        if delivered is not None:
            self._pending = {i.id: i for i in delivered.held if i.status == "pending"}
            if delivered.reply.strip() or delivered.executed or delivered.held:
                self._dialogue.append(entry_from_delivered(delivered))
                return
        if after_event:
            self._dialogue.append(DialogueEntry(speaker="notice", text="time passed; the assistant did not get in touch"))
        elif delivered is not None:
            self._dialogue.append(DialogueEntry(speaker="notice", text="the assistant sent no reply"))

    def _take_consent(self, consent: dict[str, bool]) -> dict[str, bool]:
        decided = {k: v for k, v in consent.items() if k in self._pending}
        for key in decided:
            del self._pending[key]
        return decided

    def _new_facts(self) -> list[str]:
        new = [f for f in self._released if f not in self._reported]
        self._reported.update(new)
        return new

    def _turn(self, *, done: bool = False, waiting_for_event: bool = False) -> UserTurn:
        beat = self.current_beat
        consent, self._consent = self._consent, {}
        return UserTurn(
            consent=consent, beat_id=beat.id if beat else None, done=done,
            waiting_for_event=waiting_for_event, released_facts=self._new_facts(),
        )

    def _say(self, action: UserAction, shadow: ShadowTurn | None) -> UserTurn:
        beat = self.script.beats[self._index]
        message = action.text.strip()
        consent = dict(self._consent)
        self._warnings = rule_check(message, self._rules, [], manner=self._manner_scope())
        self.fidelity.append(FidelityPair(
            turn=self._user_turns, beat_id=beat.id, human_message=message, human_consent=consent,
            human_warnings=list(self._warnings),
            simulator=shadow or ShadowTurn(error="no shadow simulator in this play"),
        ))
        self._dialogue.append(DialogueEntry(speaker="user", text=message))
        self._turns += 1
        self._user_turns += 1
        turn = self._turn()
        turn.message = message
        turn.beat_id = beat.id
        turn.checker_warnings = list(self._warnings)
        self._changed()
        return turn

    async def _await_action(self) -> tuple[UserAction, ShadowTurn | None]:
        """Wait for the person while the shadow simulator writes its turn (both from the same
        state). A model call is never cancelled half-way: after ``advance`` or ``end`` the
        shadow's answer is awaited and dropped."""
        box_action: list[UserAction] = []
        box_shadow: list[ShadowTurn] = []
        self._waiting = True
        self._changed()
        try:
            async with anyio.create_task_group() as tg:

                async def shadow() -> None:
                    box_shadow.append(await self._shadow_turn())

                async def person() -> None:
                    box_action.append(await self._receive.receive())

                if self.client is not None and self.shadow:
                    tg.start_soon(shadow)
                tg.start_soon(person)
        finally:
            self._waiting = False
        action = box_action[0]
        spoken = action.kind == "say" or bool(action.text.strip())
        return action, (box_shadow[0] if box_shadow and spoken else None)

    def _manner_scope(self) -> tuple[str, ...]:
        """The attribute whose manner requests are flagged now: the tested one on the message
        that opens a decision point of an accumulation session (probes flag every kind through
        their rules); see :mod:`mempa_tui.simulator._manner`."""
        dp = self.script.beats[self._index].decision_point
        if self.mode == "accumulation" and dp is not None and self._turns == 0:
            return (dp.attribute,)
        return ()

    def _prompt_input(self) -> TurnPromptInput:
        script = self.script
        beats = script.beats
        facts = {f.id: f for f in script.facts}
        show = beats[self._index].decision_point is not None or (
            self._index > 0 and beats[self._index - 1].decision_point is not None
        )
        return TurnPromptInput(
            persona=self.persona, mode=self.mode,
            memory=self.memory if self.mode == "accumulation" else None,
            script=script, beat_index=self._index, turns_in_beat=self._turns,
            released=[facts[f] for f in self._released if f in facts], skills=self._active_skills(),
            show_decision=show, target=self._targets.get(script.attribute),
            dialogue=list(self._dialogue), pending=list(self._pending.values()),
            output_format=self.output_format,
        )

    async def _shadow_turn(self) -> ShadowTurn:
        """One simulator attempt from the current state (no rewrites; its problems recorded)."""
        client = self.client
        assert client is not None
        messages = build_turn_messages(self._prompt_input())
        try:
            if self.output_format == "json":
                completion = await client.complete(Role.SIMULATOR, messages, json_schema=TURN_SCHEMA)
                parsed = parse_turn_json(completion.text)
            else:
                completion = await client.complete(Role.SIMULATOR, messages)
                parsed = parse_turn(completion.text)
        except LLMError as exc:
            return ShadowTurn(error=f"the simulator's call failed: {exc}")
        problems = list(parsed.problems)
        if parsed.message:
            problems += rule_check(parsed.message, self._rules, parsed.private_texts, manner=self._manner_scope())
        return ShadowTurn(
            message=parsed.message, assessment=parsed.assessment, consent=dict(parsed.consent),
            factual_check=parsed.factual_check, problems=problems,
        )
