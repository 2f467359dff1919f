"""A person in the PA seat (SPEC §4.11 'Play as the PA'; paper Section 3.4, Appendix E, F.2).

:class:`HumanAgentSeat` fills the episode loop's :class:`~mempa_tui.agent.AgentSeat`. At each PA
turn it publishes a :class:`PATurnView` (the user's message or the world event's notice, the
date, the memory's evidence, the harness notes, the tools on offer) and waits for the person's
:class:`PAAction`\\ s, fed by the app through :meth:`HumanAgentSeat.submit`:

* ``tool`` - one call, world tool or ``IX_<attribute>``, dispatched through the same
  :class:`~mempa_tui.agent.TurnActions` a model PA uses, so the wrapper gates, holds or blocks it
  exactly as it would a model's call; the result comes back in the view.
* ``reply`` - the reply text; the turn ends. While the tested attribute's IX call is required and
  missing (or lacks its payload), the reply is refused with a note, as the model PA is reminded.
* ``give_up`` - the turn ends floored (no scorable reply), as a model PA that never makes the
  required call.

Writing interaction-tool text into a task tool's arguments floors the turn as it would for a
model (Appendix F.2). At most :data:`~mempa_tui.agent.MAX_MODEL_CALLS` tool calls per turn.
The view never holds the user's target setting (except the Oracle hint in an Oracle probe).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from mempa_tui.agent.actions import TurnActions
from mempa_tui.agent.personal import MAX_MODEL_CALLS
from mempa_tui.agent.seat import (
    AgentSessionStart,
    AgentTurnInput,
    AgentTurnResult,
    OracleHint,
)
from mempa_tui.ix.types import CallStatus
from mempa_tui.llm.types import ToolCall, ToolSpec
from mempa_tui.taxonomy import attribute

__all__ = ["HumanAgentSeat", "PAAction", "PATurnView", "ToolOutcome"]


class PAAction(BaseModel):
    """One thing the person in the PA seat does."""

    kind: Literal["tool", "reply", "give_up"]
    """Call a tool, send the reply (ends the turn), or give the turn up (floored)."""
    tool: str = ""
    """The tool's name (``mcp_state_<name>`` or ``IX_<attribute>``), for ``tool``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments object, for ``tool``."""
    text: str = ""
    """The reply, for ``reply``."""


class ToolOutcome(BaseModel):
    """One tool call of this turn as the person sees it afterwards."""

    call_id: str
    """The call id used."""
    tool: str
    """The tool called."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """What it was called with."""
    status: str
    """``executed``, ``held``, ``blocked``, ``rejected`` or ``ix`` (an interaction-tool call)."""
    result: str
    """The tool result text (what a model PA would read)."""
    ok: bool = True
    """False when the call was refused or failed."""


class PATurnView(BaseModel):
    """What the person in the PA seat sees for the current turn."""

    step_id: str
    """The session or probe id."""
    is_probe: bool = False
    """True inside a probe."""
    turn_index: int = Field(ge=0)
    """The PA turn in the step (0-based)."""
    now: datetime
    """The story date and time of the turn."""
    user_message: str | None = None
    """The user's message, or None on a world-event turn and on a turn where the user only
    decided held items (the notes say what ran or was declined)."""
    notice: str | None = None
    """The world event's notice on an event turn."""
    runtime_notes: list[str] = Field(default_factory=list)
    """Harness notes (consent released or denied items)."""
    evidence: str = ""
    """The memory's evidence as the PA prompt shows it."""
    oracle: OracleHint | None = None
    """Under Oracle only: the probed cell's target."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Every tool on offer this turn: world tools, then the activated IX tools."""
    required_ix: str | None = None
    """Attribute key whose IX call must be made before replying this turn, else None."""
    selections: dict[str, str] = Field(default_factory=dict)
    """The person's own IX selections so far in this step (attribute key -> setting)."""
    outcomes: list[ToolOutcome] = Field(default_factory=list)
    """This turn's calls so far, in order."""
    note: str | None = None
    """Why the last action was refused (e.g. the IX call is still missing)."""
    waiting: bool = True
    """True while the seat waits for the person."""


class HumanAgentSeat:
    """The PA seat filled by a person (see the module docstring).

    Args:
        on_change: called with the view whenever it changes; must not block.
        max_calls: most tool calls per turn (default: the model PA's 40 calls).
    """

    def __init__(
        self, *, on_change: Callable[[PATurnView], None] | None = None, max_calls: int = MAX_MODEL_CALLS
    ) -> None:
        self.on_change = on_change
        self.max_calls = max_calls
        self._send, self._receive = anyio.create_memory_object_stream[PAAction](max_buffer_size=16)
        self._start: AgentSessionStart | None = None
        self._turns = 0
        self.view: PATurnView | None = None
        """The current turn's view (None between turns)."""

    def submit(self, action: PAAction) -> None:
        """Hand the seat the person's next action (the app calls this; never blocks).

        Raises:
            RuntimeError: no PA turn is waiting for the person.
            ValueError: a ``tool`` action without a tool name.
        """
        if self.view is None or not self.view.waiting:
            raise RuntimeError("no PA turn is waiting for you")
        if action.kind == "tool" and not action.tool.strip():
            raise ValueError("a tool call must name a tool")
        self._send.send_nowait(action)

    def begin_session(self, start: AgentSessionStart) -> None:
        """Start a new step (the turn counter restarts)."""
        self._start = start
        self._turns = 0
        self.view = None

    def _changed(self) -> None:
        if self.on_change is not None and self.view is not None:
            self.on_change(self.view)

    async def respond(self, turn: AgentTurnInput, actions: TurnActions) -> AgentTurnResult:
        """Play one PA turn with the person's actions.

        Returns:
            ``ok`` with the reply; ``floored`` when the person gave up or wrote interaction-tool
            text into a task tool's arguments.

        Raises:
            RuntimeError: :meth:`begin_session` was not called.
        """
        if self._start is None:
            raise RuntimeError("HumanAgentSeat.respond called before begin_session")
        view = PATurnView(
            step_id=self._start.step_id, is_probe=self._start.is_probe, turn_index=self._turns,
            now=turn.now, user_message=turn.user_message or None, notice=turn.notice,
            runtime_notes=list(turn.runtime_notes), evidence=turn.evidence.system_text,
            oracle=self._start.oracle, tools=actions.tool_specs(), required_ix=turn.required_ix,
            selections=actions.wrapper.selections,
        )
        self.view = view
        self._turns += 1
        result = AgentTurnResult()
        try:
            self._changed()
            while True:
                action = await self._receive.receive()
                view.note = None
                if action.kind == "give_up":
                    return self._end(actions, result, status="floored",
                                     reason="the person in the PA seat gave the turn up")
                if action.kind == "tool":
                    self._call(view, actions, action)
                    if actions.floor_reason is not None:
                        return self._end(actions, result, status="floored", reason=actions.floor_reason)
                    self._changed()
                    continue
                missing = self._unmet(turn, actions)
                if missing is not None:
                    result.reminded = True
                    view.note = missing
                    self._changed()
                    continue
                result.reply = action.text
                return self._end(actions, result)
        finally:
            view.waiting = False
            self._changed()
            self.view = None

    @staticmethod
    def _end(
        actions: TurnActions, result: AgentTurnResult, *, status: Literal["ok", "floored"] = "ok",
        reason: str | None = None,
    ) -> AgentTurnResult:
        result.status, result.reason = status, reason
        result.calls = list(actions.calls)
        return result

    def _call(self, view: PATurnView, actions: TurnActions, action: PAAction) -> None:
        if len(view.outcomes) >= self.max_calls:
            view.note = f"at most {self.max_calls} tool calls in one turn; write the reply now"
            return
        before = len(actions.calls)
        call_id, text = actions.dispatch(ToolCall(id="", name=action.tool, arguments=action.arguments))
        made = actions.calls[before:]
        if made:
            status = made[-1].status
            ok = status is CallStatus.EXECUTED and not made[-1].error
            shown = status.value
        else:  # an IX call (or a refusal that the dispatcher does not log as a world call)
            ok = not text.startswith("Error")
            shown = "ix" if action.tool.startswith("IX_") else "rejected"
        view.outcomes.append(ToolOutcome(
            call_id=call_id, tool=action.tool, arguments=dict(action.arguments), status=shown, result=text, ok=ok,
        ))
        view.selections = actions.wrapper.selections
        if not ok:
            view.note = text

    @staticmethod
    def _unmet(turn: AgentTurnInput, actions: TurnActions) -> str | None:
        """Why the reply cannot go yet (the required IX call is missing or incomplete), or None."""
        key = turn.required_ix
        if key is None or key not in actions.offered_ix:
            return None
        tool = attribute(key).ix_tool
        if actions.wrapper.selection(key) is None:
            return f"choose a setting with {tool} before replying (the decision point is active)"
        missing = actions.wrapper.missing_payload(key)
        if missing:
            return f"{tool} still needs {', '.join(missing)} this turn before replying"
        return None
