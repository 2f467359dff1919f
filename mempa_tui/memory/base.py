"""The common memory adapter (paper Section 3.4 'PA and Memory Interface', Appendix F.1).

After each turn the adapter passes the turn as the PA saw it (:class:`TurnRecord`) to the
system's write mechanism; before each PA turn it asks the system for :class:`Evidence` to put in
the PA's prompt. The target setting and anything the IX wrapper withheld never reach a memory
system (Table 9): :class:`TurnRecord` has no field that could hold them.
"""

from __future__ import annotations

import abc
import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from mempa_tui.ix.types import ExecutedCall, IXCall
from mempa_tui.llm.types import ChatMessage
from mempa_tui.taxonomy import Context

__all__ = [
    "Evidence",
    "EvidenceItem",
    "MemoryInspection",
    "MemorySystem",
    "SessionInfo",
    "TurnRecord",
    "arguments_json",
]


class SessionInfo(BaseModel):
    """What a memory system may know about the current step.

    Attributes:
        step_id: id of the accumulation session, change event or probe.
        context: work or personal (the session's context is public: it shows in the task).
        at: story time of the step's start.
        is_probe: True inside a probe (the branch carries no raw conversation).
    """

    step_id: str
    context: Context
    at: datetime
    is_probe: bool = False


class TurnRecord(BaseModel):
    """One turn as the PA saw it: what every memory system writes (Appendix E.4, Table 11).

    Attributes:
        step_id / context / at / turn_index: where the turn happened.
        user_message: the user's delivered message (or the world-event notice of an outreach
            turn, prefixed as a notification).
        tool_calls: world-tool calls that ran, with their results; held and blocked calls are
            not here.
        ix_calls: the PA's interaction-tool calls this turn, public parts only.
        reply: the delivered public reply.
    """

    step_id: str
    context: Context
    at: datetime
    turn_index: int
    user_message: str
    tool_calls: list[ExecutedCall] = Field(default_factory=list)
    ix_calls: list[IXCall] = Field(default_factory=list)
    reply: str

    def as_text(self, *, with_step: bool = True) -> str:
        """A compact plain-text rendering used by text-based stores and prompts.

        Tool arguments are compact JSON (dates and times as ISO strings), as the PA wrote them:
        never Python reprs such as ``datetime.date(2026, 6, 4)`` (issue 12).

        Args:
            with_step: head the turn with ``[date time context step_id]`` (True) or with
                ``[date time, context]`` only (False: File memory's consolidation prompt, where
                the harness's step ids are nothing a person said; issue 12, the packaged 1.5B
                copied them into its notes).
        """
        head = f"{self.at:%Y-%m-%d %H:%M} {self.context.value} {self.step_id}" if with_step else (
            f"{self.at:%Y-%m-%d %H:%M}, {self.context.value}")
        lines = [f"[{head}]"]
        lines.append(f"User: {self.user_message}")
        for call in self.tool_calls:
            lines.append(f"Tool {call.tool}({arguments_json(call.arguments)}) -> {call.result[:300]}")
        for ix in self.ix_calls:
            lines.append(f"Interaction choice {ix.attribute} = {ix.setting}")
        if self.reply:  # a change event's last user turn has no reply: no empty "Assistant:" line
            lines.append(f"Assistant: {self.reply}")
        return "\n".join(lines)


def arguments_json(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as compact JSON: no spaces, non-ASCII kept, dates, times and other
    values pydantic knows as their JSON form (``{"date":"2026-06-04"}``); anything else as its
    string."""
    return json.dumps(to_jsonable_python(arguments, fallback=str), ensure_ascii=False, separators=(",", ":"))


class EvidenceItem(BaseModel):
    """One retrieved piece of memory with its score (higher is more similar), if the system has one."""

    text: str
    score: float | None = None
    source: str = Field(default="", description="Store-specific id of the item.")


class Evidence(BaseModel):
    """What a memory system hands the PA for one turn.

    Attributes:
        system_text: text placed in the PA's system prompt under a memory heading (may be empty).
        items: the retrieved items behind ``system_text``, with scores, for inspection.
        prior_messages: raw conversation carried into the PA's history before the current
            session's turns (File memory's unconsolidated turns in accumulation; empty in probes).
    """

    system_text: str = ""
    items: list[EvidenceItem] = Field(default_factory=list)
    prior_messages: list[ChatMessage] = Field(default_factory=list)


class MemoryInspection(BaseModel):
    """What the side panel shows: the store's contents and the last evidence handed to the PA."""

    system: str
    stored: list[str] = Field(default_factory=list, description="Human-readable stored entries.")
    last_evidence: Evidence | None = None
    stats: dict[str, float] = Field(default_factory=dict)


class MemorySystem(abc.ABC):
    """A memory condition behind the common adapter (SPEC section 4.7).

    Implementations keep all state in memory or under their own folder and must make
    :meth:`snapshot` / :meth:`restore` round-trip exactly, so checkpoints and probe branches work.
    """

    #: Condition name as used on the command line (``none``, ``oracle``, ``file``...).
    name: str = ""

    @abc.abstractmethod
    async def write(self, record: TurnRecord) -> None:
        """Store one turn (the write mechanism A of paper Eq. 1)."""

    @abc.abstractmethod
    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Return evidence for the PA's next turn (the access mechanism R of paper Eq. 2)."""

    async def end_session(self, session: SessionInfo) -> None:  # noqa: B027 - optional hook
        """Called after a session's last turn; default does nothing."""

    @abc.abstractmethod
    def snapshot(self) -> bytes:
        """Serialise the whole store (for a checkpoint)."""

    @abc.abstractmethod
    def restore(self, data: bytes) -> None:
        """Replace the store with a snapshot taken by :meth:`snapshot`."""

    @abc.abstractmethod
    def inspect(self) -> MemoryInspection:
        """Contents and the last evidence, for the side panel."""
