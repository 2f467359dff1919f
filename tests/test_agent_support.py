"""Shared helpers for the PA, IX and episode tests (no tests here).

A tiny fixture world, a queue-driven scripted PA model on loopback HTTP, the PA tests' shared
rig (:func:`pa_world`: that model, the world tools on a working copy of the tiny world, and its IX
wrapper), and a recording memory.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from mempa_tui.agent import AgentSessionStart, PersonalAgent, TurnActions
from mempa_tui.ix import IXWrapper
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest, ScriptedToolCall
from mempa_tui.llm.profile import RepeatedCallPolicy
from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)
from mempa_tui.taxonomy import Context
from mempa_tui.tools import ToolRegistry, default_registry
from mempa_tui.world import WorkingCopy, WorldState

__all__ = ["PAQueue", "PAWorld", "RecordingMemory", "call", "pa_world", "tiny_world"]

START = datetime(2026, 3, 2, 9, 0)

_CONTACTS = """\
- id: ct_0001
  entered_at: 2026-01-05T09:00
  name: Colm Averill
  email: colm.averill@wendlink.example
  phone: "+44 1632 960200"
  organization: Wendlink Transit
  relation: manager
- id: ct_0002
  entered_at: 2026-01-05T09:00
  name: Priya Nandakumar
  email: priya.nandakumar@wendlink.example
  organization: Wendlink Transit
  relation: colleague
"""


def tiny_world() -> WorldState:
    """Two contacts; every other collection empty."""
    return WorldState({"contacts/contacts.yaml": _CONTACTS.encode()})


def call(
    name: str | None, arguments: dict[str, object] | str | None = None, **kw: object
) -> ScriptedToolCall:
    """A scripted tool call (``arguments`` may be a raw string for invalid JSON)."""
    return ScriptedToolCall(
        name=name, arguments={} if arguments is None else arguments, **kw
    )  # type: ignore[arg-type]


@dataclass
class PAQueue:
    """Answers PA requests from a queue; other roles get ``other`` (text or a function).

    When the queue is empty, ``fallback`` answers (default: a plain 'Done.' reply).
    """

    replies: deque[ScriptedReply | str] = field(default_factory=deque)
    fallback: Callable[[ScriptedRequest], ScriptedReply | str] = lambda _r: "Done."
    other: Callable[[ScriptedRequest], ScriptedReply | str] = lambda _r: "ok"
    pa_requests: list[ScriptedRequest] = field(default_factory=list)

    def push(self, *replies: ScriptedReply | str) -> PAQueue:
        self.replies.extend(replies)
        return self

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if request.model != "scripted-pa":
            return self.other(request)
        self.pa_requests.append(request)
        if self.replies:
            return self.replies.popleft()
        return self.fallback(request)

    def request_text(self, index: int) -> str:
        """Everything a PA request carried (messages, tools), as one string."""
        req = self.pa_requests[index]
        return json.dumps(req.body, ensure_ascii=False)

    def all_request_text(self) -> str:
        return "\n".join(self.request_text(i) for i in range(len(self.pa_requests)))


@dataclass
class PAWorld:
    """What a PA-loop test drives: the scripted PA model behind its loopback server, the world
    tools, a working copy of :func:`tiny_world` at :data:`START` and the step's IX wrapper."""

    queue: PAQueue
    server: ScriptedModelServer
    client: LLMClient
    registry: ToolRegistry
    wc: WorkingCopy
    wrapper: IXWrapper

    def new_agent(self, policy: RepeatedCallPolicy = "run", *, max_model_calls: int = 40) -> PersonalAgent:
        """A PA on the scripted model, its session begun (work context, at :data:`START`)."""
        agent = PersonalAgent(self.client, max_model_calls=max_model_calls, repeated_call=policy)
        agent.begin_session(AgentSessionStart(step_id="A-w-01", context=Context.WORK, starts_at=START))
        return agent

    def actions(self, offered: list[str] | None = None) -> TurnActions:
        """A turn's dispatcher over the world tools, offering the IX tools of ``offered``."""
        return TurnActions(self.registry, self.wrapper, offered or [])

    def tool_results(self, index: int) -> list[str]:
        """Tool-result messages in the PA request ``index``."""
        return [m.content for m in self.queue.pa_requests[index].messages if m.role == "tool"]


@asynccontextmanager
async def pa_world() -> AsyncIterator[PAWorld]:
    """A :class:`PAWorld` whose server runs for the ``async with`` block."""
    queue = PAQueue()
    async with ScriptedModelServer(queue) as server:
        registry = default_registry()
        wc = WorkingCopy(tiny_world(), START)
        yield PAWorld(queue, server, LLMClient(server.profile(context_window=131072)), registry, wc,
                      IXWrapper(registry, wc))


class RecordingMemory(MemorySystem):
    """Stores every TurnRecord; hands back a fixed evidence text with one scored item."""

    name = "recording"

    def __init__(
        self, evidence_text: str = "The user once asked for short answers."
    ) -> None:
        self.records: list[TurnRecord] = []
        self.sessions_ended: list[str] = []
        self.evidence_text = evidence_text
        self.queries: list[str] = []

    async def write(self, record: TurnRecord) -> None:
        self.records.append(record)

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        self.queries.append(user_message)
        return Evidence(
            system_text=self.evidence_text,
            items=[EvidenceItem(text=self.evidence_text, score=0.75, source="rec:1")],
        )

    async def end_session(self, session: SessionInfo) -> None:
        self.sessions_ended.append(session.step_id)

    def snapshot(self) -> bytes:
        return json.dumps([r.model_dump(mode="json") for r in self.records]).encode()

    def restore(self, data: bytes) -> None:
        self.records = [TurnRecord.model_validate(r) for r in json.loads(data)]

    def inspect(self) -> MemoryInspection:
        return MemoryInspection(
            system=self.name, stored=[r.as_text() for r in self.records]
        )
