"""The IX wrapper: carries out the PA's selected settings (paper Section 3.4, Appendix E).

One :class:`IXWrapper` lives for one step (session, probe or change event). It never sees the
target setting; it only applies what the PA selected, by four mechanisms (Appendix E.3):

* pass-through - Tone & Formality, Verbosity, Emotional Engagement, Guidance Level, Solution
  Breadth, Task Expansion: the PA's wording is delivered unchanged.
* selective rendering - Reasoning Visibility (Show: rationale before the reply; Hide: withheld),
  Uncertainty Expression (Express: each claim with its level after the reply; Hide: withheld),
  Process Visibility (Silent: no notes; Bookend: opening + reply + closing; Full narration: one
  note per executed task call in call order + reply + closing).
* delivery control - Topic Management (Organize: every topic under its label; One-at-a-time: the
  first topic, the others held as ``topic`` items until the user agrees to move on), Information
  Elicitation (Structured: every question in one numbered block; Iterative: the
  first question, the rest held as ``question`` items released one per turn; Infer: questions
  withheld), Proactive Outreach (on an event turn, High delivers the outreach message, Low
  delivers nothing).
* execution control - Autonomy Level by write tag (Reactive holds drafts, record changes and
  outward actions; Self-directed holds key record changes and every outward action; Autonomous
  holds nothing; reads always run), Information Elicitation (Structured / Iterative: writes in a
  turn that asks are held, and the user's answer releases them as consent would), Capability
  Boundary (Find and hand off: writes after the selection are blocked, reads still run).

The wrapper writes no words of its own into the public reply (Section 3.4, E.1, E.5): it holds,
releases, filters and defers the PA's material. Asking the user to approve a held action is the
PA's job; a turn that holds an Autonomy Level action and whose reply asks nothing is reported in
:attr:`ScoringTrace.unasked_holds` (the F.2 floor "held an action without asking", see
:mod:`mempa_tui.ix.floors`).

Before a selection every output passes through. A turn runs from the end of one :meth:`render`
to the next: :meth:`release` (consent, before the PA runs), :meth:`begin_turn`, :meth:`select` and
:meth:`propose` as the PA acts, then :meth:`render`.
"""

from __future__ import annotations

from typing import Any

from mempa_tui.ix import _render as rd
from mempa_tui.ix._backend import ToolBackend
from mempa_tui.ix._compose import compose_turn
from mempa_tui.ix.floors import asks_for_confirmation
from mempa_tui.ix.spec import IXArgumentsError, parse_ix_arguments, required_payload
from mempa_tui.ix.types import (
    CallStatus,
    DeliveredTurn,
    ExecutedCall,
    GateDecision,
    GateResult,
    HeldItem,
    IXCall,
    ReleaseOutcome,
    ScoringTrace,
    SelectResult,
)
from mempa_tui.taxonomy import attribute
from mempa_tui.world import WorkingCopy, strip_tool_prefix

__all__ = ["IXWrapper"]

_REACTIVE_HOLDS = frozenset({"draft", "routine", "key", "outward"})
_SELF_DIRECTED_HOLDS = frozenset({"key", "outward"})


class _TurnState:
    """What the wrapper gathers between two renders."""

    def __init__(self) -> None:
        self.event = False
        self.payload: dict[str, dict[str, Any]] = {}
        self.payload_source: dict[
            tuple[str, str], int
        ] = {}  # (attr, field) -> ix call index
        self.ix_calls: list[
            tuple[str, str, dict[str, Any]]
        ] = []  # (attr, setting, payload)
        self.selected: set[str] = set()
        self.executed: list[ExecutedCall] = []
        self.blocked: list[ExecutedCall] = []
        self.released_topics: list[HeldItem] = []
        self.held_ids: list[str] = []  # action items held in this turn
        self.notes: list[str] = []


class IXWrapper:
    """Applies the PA's IX selections to its replies and tool calls for one step.

    Args:
        backend: the tool registry (``get`` for write flag and tag, ``call`` to run).
        working_copy: the step's working copy; approved and executed calls run on it.

    Attributes:
        last_ix_calls: the public parts of the IX calls of the last rendered turn (what memory
            may see, Table 9 note b).
    """

    def __init__(self, backend: ToolBackend, working_copy: WorkingCopy) -> None:
        self._backend = backend
        self._wc = working_copy
        self._selections: dict[str, str] = {}
        self._items: list[HeldItem] = []
        self._turn = _TurnState()
        self.last_ix_calls: list[IXCall] = []

    # ---- selection ------------------------------------------------------------------------

    @property
    def selections(self) -> dict[str, str]:
        """Attribute key -> the setting selected for the session so far (a copy)."""
        return dict(self._selections)

    def selection(self, attribute_key: str) -> str | None:
        """The session's setting for ``attribute_key``, or None before the first selection."""
        return self._selections.get(attribute_key)

    def begin_turn(self, *, event: bool = False) -> None:
        """Mark the PA turn about to run; ``event`` for a world-event (outreach) turn."""
        self._turn.event = event

    @property
    def event_turn(self) -> bool:
        """Whether the current turn answers a world event rather than a user message."""
        return self._turn.event

    def select(self, attribute_key: str, arguments: dict[str, Any]) -> SelectResult:
        """Handle one ``IX_<attribute>`` call (Appendix E.2).

        The first call with a setting selects it for the rest of the session. A later call naming
        a different setting is refused; a call repeating the setting or naming none (payload
        only) is accepted and its payload joins this turn's material. A payload-only call before
        any selection is refused.

        Args:
            attribute_key: key of the attribute whose tool was called.
            arguments: the call's arguments.

        Returns:
            :class:`SelectResult`; ``message`` is the tool result for the PA.
        """
        attr = attribute(attribute_key)
        try:
            parsed = parse_ix_arguments(attr, arguments)
        except IXArgumentsError as exc:
            return SelectResult(
                ok=False,
                attribute=attr.key,
                setting=self.selection(attr.key),
                message=str(exc),
            )
        current = self._selections.get(attr.key)
        newly = False
        if parsed.setting is None:
            if current is None:
                return SelectResult(
                    ok=False,
                    attribute=attr.key,
                    message=(
                        f"{attr.ix_tool}: no setting chosen yet for {attr.name}; the first call "
                        f"must name one of: {', '.join(attr.setting_names)}"
                    ),
                )
        elif current is None:
            self._selections[attr.key] = parsed.setting
            self._turn.selected.add(attr.key)
            current, newly = parsed.setting, True
        elif parsed.setting != current:
            return SelectResult(
                ok=False,
                attribute=attr.key,
                setting=current,
                message=(
                    f"{attr.ix_tool}: refused. {attr.name} is already set to '{current}' for this "
                    f"session and cannot change; repeat '{current}' or leave 'setting' out and "
                    "send only the payload."
                ),
            )
        index = len(self._turn.ix_calls)
        self._turn.ix_calls.append((attr.key, current, dict(parsed.payload)))
        bucket = self._turn.payload.setdefault(attr.key, {})
        for name, value in parsed.payload.items():
            bucket[name] = value
            self._turn.payload_source[(attr.key, name)] = index
        # The answer names neither the attribute nor the setting: the 0.5B PA handed the earlier
        # "Selected 'High' for Solution Breadth. Payload received: none." back to the user as its
        # reply, or thanked the user "for choosing High for Solution Breadth", which floors a
        # probe (issue 12, fresh quick start of 3 December: 5 of 6 probes). The PA knows what it
        # chose; what it needs back is that the call went through and stays private.
        got = f"; payload fields recorded: {', '.join(parsed.payload)}" if parsed.payload else ""
        message = f"ok, recorded{'' if newly else ' again'} (private: the user never sees this call){got}."
        topics = parsed.payload.get("topics") or []
        if attr.key == "topic_management" and current == "One-at-a-time" and len(topics) > 1:
            rest = ", ".join(f"'{t['label']}'" for t in topics[1:])
            message += (
                f" Only '{topics[0]['label']}' reaches the user this turn; {rest} wait until the "
                "user agrees to move on. The harness adds no words to your reply."
            )
        return SelectResult(
            ok=True,
            attribute=attr.key,
            setting=current,
            newly_selected=newly,
            message=message,
        )

    def missing_payload(self, attribute_key: str) -> tuple[str, ...]:
        """Required payload fields not given in the current turn (Appendix C.3 (4), F.2).

        A requirement applies in the turn the setting was selected, and for Proactive Outreach
        on every event turn after selection.

        Returns:
            The missing field names (empty when nothing is required or all were given).
        """
        setting = self._selections.get(attribute_key)
        if setting is None:
            return ()
        due = attribute_key in self._turn.selected or (
            attribute_key == "proactive_outreach" and self._turn.event
        )
        if not due:
            return ()
        given = self._turn.payload.get(attribute_key, {})
        return tuple(
            f for f in required_payload(attribute_key, setting) if not given.get(f)
        )

    # ---- execution control ------------------------------------------------------------------

    def _turn_asks(self) -> bool:
        questions = self._turn.payload.get("information_elicitation", {}).get(
            "questions"
        )
        if questions:
            return True
        return self._selections.get("information_elicitation") == "Iterative" and any(
            i.kind == "question" and i.status == "pending" for i in self._items
        )

    def gate(self, tool: str, arguments: dict[str, Any]) -> GateResult:
        """Decide whether a proposed world call runs, is held or is blocked (Appendix E.3 (4)).

        Reads always run. Writes are blocked under Capability Boundary 'Find and hand off', held
        by Autonomy Level according to their tag, and held under Information Elicitation
        'Structured' / 'Iterative' in a turn that asks. An unknown tool is let through (the
        registry answers it with an error).
        """
        tool_def = self._backend.get(tool)
        if tool_def is None or not tool_def.write:
            return GateResult(decision=GateDecision.EXECUTE)
        if self._selections.get("capability_boundary") == "Find and hand off":
            return GateResult(
                decision=GateDecision.BLOCK,
                attribute="capability_boundary",
                reason="no write calls run after handing the task back to the user",
            )
        tag = tool_def.tag if tool_def.tag in _REACTIVE_HOLDS else "key"
        autonomy = self._selections.get("autonomy_level")
        if (autonomy == "Reactive" and tag in _REACTIVE_HOLDS) or (
            autonomy == "Self-directed" and tag in _SELF_DIRECTED_HOLDS
        ):
            return GateResult(
                decision=GateDecision.HOLD,
                attribute="autonomy_level",
                reason=f"a {tag} write waits for the user's approval",
            )
        if self._selections.get("information_elicitation") in (
            "Structured",
            "Iterative",
        ) and (self._turn_asks()):
            return GateResult(
                decision=GateDecision.HOLD,
                attribute="information_elicitation",
                reason="writes wait until the user has answered this turn's questions",
            )
        return GateResult(decision=GateDecision.EXECUTE)

    def _new_id(self) -> str:
        return f"held_{len(self._items) + 1:04d}"

    def _run(
        self, call_id: str, tool: str, arguments: dict[str, Any], held_id: str | None
    ) -> ExecutedCall:
        tool_def = self._backend.get(tool)
        result = self._backend.call(self._wc, tool, arguments)
        return ExecutedCall(
            call_id=call_id,
            tool=strip_tool_prefix(tool),
            arguments=arguments,
            status=CallStatus.EXECUTED,
            result=result.content if result.ok else (result.error or result.content),
            error=not result.ok,
            write=bool(tool_def and tool_def.write),
            tag=tool_def.tag if tool_def else None,
            held_id=held_id,
        )

    def propose(
        self, call_id: str, tool: str, arguments: dict[str, Any]
    ) -> ExecutedCall:
        """Gate one proposed world call and carry out the decision.

        Executed calls run through the registry on the working copy (a write-lock refusal or a bad
        argument comes back as an error result). Held calls become ``action`` items with an id;
        blocked calls go to the scoring trace.

        Returns:
            The call with its status and the result text the PA receives.
        """
        name = strip_tool_prefix(tool)
        decision = self.gate(tool, arguments)
        tool_def = self._backend.get(tool)
        write = bool(tool_def and tool_def.write)
        tag = tool_def.tag if tool_def else None
        if decision.decision is GateDecision.EXECUTE:
            call = self._run(call_id, tool, arguments, None)
            self._turn.executed.append(call)
            return call
        if decision.decision is GateDecision.BLOCK:
            call = ExecutedCall(
                call_id=call_id,
                tool=name,
                arguments=arguments,
                status=CallStatus.BLOCKED,
                result=f"Not run: {decision.reason}. Nothing was changed.",
                error=True,
                write=write,
                tag=tag,
            )
            self._turn.blocked.append(call)
            self._turn.notes.append(
                f"blocked {name} ({decision.attribute}: {decision.reason})"
            )
            return call
        item = HeldItem(
            id=self._new_id(),
            kind="action",
            attribute=decision.attribute or "",
            tool=name,
            arguments=arguments,
            text=rd.describe_call(name, arguments),
        )
        self._items.append(item)
        self._turn.held_ids.append(item.id)
        self._turn.notes.append(
            f"held {item.id} {name} ({decision.attribute}: {decision.reason})"
        )
        if decision.attribute == "information_elicitation":
            after = (
                "It has not run; it runs when the user answers your questions (or approves "
                f"{item.id})."
            )
        else:
            after = (
                "It has not run and runs only if the user approves it. The harness adds nothing "
                "to your reply: asking the user is up to you."
            )
        return ExecutedCall(
            call_id=call_id,
            tool=name,
            arguments=arguments,
            status=CallStatus.HELD,
            result=f"Held as {item.id}: {decision.reason}. {after}",
            write=write,
            tag=tag,
            held_id=item.id,
        )

    def record_executed(self, call: ExecutedCall) -> None:
        """Count a call that ran outside :meth:`propose` (change-event replay) in this turn."""
        self._turn.executed.append(call)

    # ---- held items ---------------------------------------------------------------------------

    def pending(self) -> list[HeldItem]:
        """Items still awaiting a decision (copies), in id order."""
        return [i.model_copy() for i in self._items if i.status == "pending"]

    def items(self) -> list[HeldItem]:
        """Every item held in this step with its current status (copies)."""
        return [i.model_copy() for i in self._items]

    def release(
        self, consent: dict[str, bool], *, answered: bool = False
    ) -> ReleaseOutcome:
        """Apply the user's consent decisions, and their answer, to the held items (E.3, E.5).

        Exactly the approved pending items are released: an approved action runs now through the
        registry on the working copy (and counts as executed in the coming turn), an approved
        topic is delivered at the top of the next reply. Denied items are marked and never run.
        Ids that name no pending item are reported in ``unknown``.

        Information Elicitation (E.3: a held item is let go by the user's later consent or by
        the information it waited for): when ``answered`` (the user wrote a message the PA will
        answer) and no question is still waiting to be put to the user, every write held
        because its turn asked is released as if approved (unless this consent denies it), and
        listed in ``by_answer``.

        Args:
            consent: held item id -> approve (True) or deny (False).
            answered: the user sent a message in this turn.
        """
        out = ReleaseOutcome()
        by_id = {i.id: i for i in self._items}
        if answered and not any(
            i.kind == "question" and i.status == "pending" for i in self._items
        ):
            consent = dict(consent)
            for item in self._items:
                if (
                    item.kind == "action"
                    and item.status == "pending"
                    and item.attribute == "information_elicitation"
                    and item.id not in consent
                ):
                    consent[item.id] = True
                    out.by_answer.append(item.id)
                    self._turn.notes.append(f"{item.id} released by the user's answer")
        for held_id in sorted(consent):
            item = by_id.get(held_id)
            if item is None or item.status != "pending":
                out.unknown.append(held_id)
                continue
            if not consent[held_id]:
                item.status = "denied"
                out.denied.append(item.model_copy())
                self._turn.notes.append(f"{held_id} denied by the user")
                continue
            item.status = "approved"
            out.approved.append(item.model_copy())
            if item.kind == "action" and item.tool:
                call = self._run(
                    f"release_{held_id}", item.tool, dict(item.arguments), held_id
                )
                self._turn.executed.append(call)
                out.executed.append(call)
            elif item.kind == "topic":
                self._turn.released_topics.append(item.model_copy())
        return out

    # ---- rendering ------------------------------------------------------------------------------

    def render(self, reply_text: str) -> tuple[DeliveredTurn, ScoringTrace]:
        """Turn the PA's reply text and this turn's payloads into the public reply.

        The public reply is the PA's text and payloads as the settings deliver them, with no
        words of the wrapper's own. When this turn held an Autonomy Level action and the reply
        does not ask the user to confirm anything (:func:`~mempa_tui.ix.floors.asks_for_confirmation`),
        the held ids are listed in ``ScoringTrace.unasked_holds``; an event turn that Proactive
        Outreach 'Low' keeps silent asks nothing and is not listed.

        Returns:
            The :class:`DeliveredTurn` (public reply, calls that ran this turn, items awaiting
            consent) and the :class:`ScoringTrace` (withheld content, blocked calls, notes,
            unasked holds). The public IX calls of the turn are left in :attr:`last_ix_calls`.
        """
        turn = self._turn
        composed = compose_turn(
            reply_text=reply_text,
            selections=self._selections,
            payload=turn.payload,
            event=turn.event,
            executed=turn.executed,
            released_topics=turn.released_topics,
            items=self._items,
            new_id=self._new_id,
        )
        public: list[IXCall] = []
        for index, (attr_key, setting, given) in enumerate(turn.ix_calls):
            shown = composed.rendered.get(attr_key, {})
            kept = {
                name: shown[name]
                for name in given
                if name in shown and turn.payload_source.get((attr_key, name)) == index
            }
            public.append(IXCall(attribute=attr_key, setting=setting, payload=kept))
        held_now = [
            i.model_copy()
            for i in self._items
            if i.status == "pending" and i.kind != "question"
        ]
        by_id = {i.id: i for i in self._items}
        unasked: list[str] = []
        if not composed.suppressed and not asks_for_confirmation(composed.reply):
            unasked = [
                hid
                for hid in turn.held_ids
                if by_id[hid].attribute == "autonomy_level" and by_id[hid].status == "pending"
            ]
        delivered = DeliveredTurn(
            reply=composed.reply, executed=list(turn.executed), held=held_now
        )
        trace = ScoringTrace(
            selections=dict(self._selections),
            withheld=composed.withheld,
            blocked=list(turn.blocked),
            rendering_notes=[*turn.notes, *composed.notes],
            raw_reply=reply_text,
            unasked_holds=unasked,
        )
        self.last_ix_calls = public
        self._turn = _TurnState()
        return delivered, trace
