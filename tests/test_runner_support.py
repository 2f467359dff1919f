"""Shared helpers for the runner and CLI tests (no tests here).

``FakeEpisodes`` stands in for the episode loop so the runner's own bookkeeping (checkpoints,
resume, discard, probe branches, call attribution) is tested exactly; each fake step still makes a
real model call to the scripted server on loopback and a real memory write. The fixture user ``R``
lives in ``tests/fixtures_runner``: two sessions and a change event, two final probes and one
pre-event probe.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict

from mempa_tui.llm import LLMError, ScriptedReply, ScriptedRequest, ScriptedToolCall
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.memory import MemorySystem, SessionInfo, TurnRecord
from mempa_tui.runner import EpisodeFunctions, RunConfig
from mempa_tui.runner._scoring import RealizationScores
from mempa_tui.scripts.schema import Probe
from mempa_tui.taxonomy import attribute
from mempa_tui.world import WorldState

__all__ = [
    "LOG",
    "WORLDS",
    "FakeEpisodes",
    "FakeEvent",
    "FakeResult",
    "CONSOLIDATING_OPTIONS",
    "FlakyResponder",
    "ProbeStart",
    "consolidating",
    "fake_scorer",
    "ok_responder",
    "protocol_responder",
    "quick_worlds",
    "runner_config",
    "scripted_cli_run",
]

WORLDS = Path(__file__).parent / "fixtures_runner"
"""The runner tests' worlds folder (user R)."""


def quick_worlds(tmp_path: Path) -> Path:
    """A copy of the fixture worlds under ``tmp_path`` where user R's timeline has a quick start
    (``quick:``) of its two sessions and its change event (issue 12)."""
    worlds = tmp_path / "worlds"
    shutil.copytree(WORLDS, worlds)
    timeline = worlds / "users" / "R" / "timeline.yaml"
    timeline.write_text(timeline.read_text() + "quick:\n  - R-s1\n  - R-s2\n  - R-ev1\n")
    return worlds


LOG = "notes/log.txt"
"""World file the fake steps append their id to (probes too, on their discarded branch)."""


def ok_responder(request: ScriptedRequest) -> ScriptedReply:
    """Every role answers with a short fixed text naming the model."""
    return ScriptedReply(text=f"ok from {request.model}", prompt_tokens=20, completion_tokens=3)


@dataclass
class FlakyResponder:
    """:func:`ok_responder`, except HTTP 503 for requests mentioning ``down_for`` while it is set."""

    down_for: str | None = None

    def __call__(self, request: ScriptedRequest) -> ScriptedReply:
        text = " ".join(m.content for m in request.messages)
        if self.down_for is not None and self.down_for in text:
            return ScriptedReply(status=503, error="server overloaded")
        return ok_responder(request)


def runner_config(**overrides: Any) -> RunConfig:
    """User R, File memory, the scripted profile, two repeats, File memory thresholds high."""
    base: dict[str, Any] = {
        "user": "R", "profile": "scripted", "memory": "file", "repeats": 2, "worlds_dir": WORLDS,
        "memory_options": {"consolidate_at_tokens": 50_000, "consolidate_to_tokens": 20_000},
    }
    if overrides.get("memory") in ("none", "oracle"):
        base["memory_options"] = {}
    base.update(overrides)
    return RunConfig(**base)


class FakeEvent(BaseModel):
    """An episode event of the fakes."""

    kind: Literal["note"] = "note"
    text: str


class FakeResult(BaseModel):
    """The fields of the episode's StepResult the runner reads."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    step_id: str
    kind: str
    status: str = "completed"
    reason: str | None = None
    world: WorldState | None = None
    selection: str | None = None
    simulator_entry: str | None = None


class FakeContext(BaseModel):
    """The EpisodeContext fields the runner fills."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    persona: object
    targets: dict[str, str]
    world: WorldState
    registry: object
    memory: MemorySystem
    client: Any
    simulator_memory: object | None
    observer: Any
    oracle: bool = False


@dataclass
class ProbeStart:
    """What a fake probe saw when it started."""

    probe_id: str
    snapshot: bytes
    log: str
    oracle: bool
    evidence: str
    memory_id: int


@dataclass
class FakeEpisodes:
    """Deterministic stand-ins for run_accumulation / replay_change_event / run_probe.

    Args:
        fail: step id -> statuses of its successive attempts (missing or exhausted: completed).
        block_at: a step id whose play blocks forever after ``blocked`` is set (a kill point).
        announce: called once when blocking (e.g. to print a marker for a parent process).
        selections: probe attribute -> the selection the fake PA makes (default: the target).
    """

    fail: Mapping[str, list[str]] = field(default_factory=dict)
    block_at: str | None = None
    announce: Any = None
    selections: Mapping[str, str] = field(default_factory=dict)
    plays: list[str] = field(default_factory=list)
    probe_starts: list[ProbeStart] = field(default_factory=list)
    blocked: anyio.Event = field(default_factory=anyio.Event)
    _attempts: dict[str, int] = field(default_factory=dict)

    def functions(self) -> EpisodeFunctions:
        """The fakes as the runner's episode functions."""
        return EpisodeFunctions(
            run_accumulation=self._session, replay_change_event=self._event,
            run_probe=self._probe, make_context=FakeContext,
        )

    async def _session(self, script: Any, ctx: FakeContext) -> FakeResult:
        return await self._step(script, ctx, "accumulation")

    async def _event(self, script: Any, ctx: FakeContext) -> FakeResult:
        return await self._step(script, ctx, "change_event")

    async def _step(self, script: Any, ctx: FakeContext, kind: str) -> FakeResult:
        self.plays.append(script.id)
        if script.id == self.block_at:
            self.blocked.set()
            if self.announce is not None:
                self.announce()
            await anyio.sleep_forever()
        ctx.observer(FakeEvent(text=f"start {script.id}"))
        try:
            completion = await ctx.client.complete(Role.PA, [ChatMessage(role="user", content=f"play {script.id}")])
        except LLMError as exc:  # as the episode loop does: a failed call fails the step
            return FakeResult(step_id=script.id, kind=kind, status="failed", reason=f"model call failed: {exc}")
        await ctx.memory.write(TurnRecord(
            step_id=script.id, context=script.context, at=script.starts_at, turn_index=0,
            user_message=f"help with {script.task}", reply=completion.text,
        ))
        ctx.observer(FakeEvent(text=f"end {script.id}"))
        attempt = self._attempts.get(script.id, 0)
        self._attempts[script.id] = attempt + 1
        statuses = self.fail.get(script.id, [])
        status = statuses[attempt] if attempt < len(statuses) else "completed"
        if status != "completed":
            return FakeResult(step_id=script.id, kind=kind, status=status, reason=f"scripted {status}")
        log = ctx.world.get(LOG, b"") + f"{script.id}\n".encode()
        return FakeResult(
            step_id=script.id, kind=kind, world=ctx.world.with_files({LOG: log}),
            selection=ctx.targets.get(script.attribute),
            simulator_entry=f"I got help with {script.task.lower().rstrip('.')} and it went fine.",
        )

    async def _probe(self, probe: Probe, ctx: FakeContext) -> FakeResult:
        session = SessionInfo(step_id=probe.id, context=probe.context, at=probe.starts_at, is_probe=True)
        evidence = await ctx.memory.retrieve("hello", session)
        self.probe_starts.append(ProbeStart(
            probe_id=probe.id, snapshot=ctx.memory.snapshot(), log=ctx.world.get(LOG, b"").decode(),
            oracle=ctx.oracle, evidence=evidence.system_text, memory_id=id(ctx.memory),
        ))
        completion = await ctx.client.complete(Role.PA, [ChatMessage(role="user", content=f"probe {probe.id}")])
        # what a probe does must stay on its branch: a memory write and a world change
        await ctx.memory.write(TurnRecord(
            step_id=probe.id, context=probe.context, at=probe.starts_at, turn_index=0,
            user_message=f"probe {probe.id}", reply=completion.text,
        ))
        ctx.world.with_files({LOG: ctx.world.get(LOG, b"") + f"{probe.id}\n".encode()})
        ctx.observer(FakeEvent(text=f"probe {probe.id}"))
        target = ctx.targets[probe.attribute]
        return FakeResult(
            step_id=probe.id, kind="probe", selection=self.selections.get(probe.attribute, target),
        )


async def fake_scorer(run: Any, probe: Probe, target: str, result: Any, world: WorldState) -> RealizationScores:
    """BRS 4 and PRS 5 after one judge call, as a stand-in for the judge and the rater."""
    await run.client.complete(Role.JUDGE, [ChatMessage(role="user", content=f"judge {probe.id}")])
    return RealizationScores(brs=4, brs_reason="fine", prs=5, prs_reason="liked it")


SIM_ENTRY = json.dumps({
    "entry": "I asked for help with a task at work. The assistant handled it without fuss and I moved on.",
    "impressions": ["gets on with things"],
})


def protocol_responder(request: ScriptedRequest) -> ScriptedReply | str:
    """A scripted model that plays every role well enough for whole steps to complete.

    PA: calls each offered interaction tool once (its attribute's first setting), then replies.
    Simulator: turns that ask to move on with a plain message (a new one each turn); the diary
    entry; a PRS of 5.
    Checker: no rule violated. Judge: BRS 4.
    """
    schema = request.json_schema or {}
    if request.model == "scripted-judge":
        return json.dumps({"score": 4, "evidence": "The reply follows the setting."})
    if request.model == "scripted-checker":
        keys = ((schema.get("properties") or {}).get("verdicts") or {}).get("properties") or {}
        return json.dumps({"verdicts": {k: {"violated": False, "reason": "fine"} for k in keys}})
    if request.model == "scripted-simulator":
        system = request.messages[0].content if request.messages else ""
        if "diary" in system:
            return SIM_ENTRY
        if "Rate from 1 to 5" in system:
            return json.dumps({"score": 5, "reason": "It suited me."})
        # a new message each turn: one that repeats an earlier user message word for word is sent
        # back (simulator conversation check), and the step would end invalid
        said = request.messages[1].content.count("\nYou: ") if len(request.messages) > 1 else 0
        message = "Could you sort this out for me, please?" + (
            f" This is my message number {said + 1}." if said else "")
        return (
            "<factual_check>none</factual_check>\n<turn_assessment>advance</turn_assessment>\n"
            f"<message>{message}</message>"
        )
    if request.model == "scripted-pa":
        called = {c.name for m in request.messages for c in m.tool_calls}
        for name in request.tool_names:
            if name.startswith("IX_") and name not in called:
                key = name.removeprefix("IX_")
                return ScriptedReply(tool_calls=[ScriptedToolCall(
                    name=name, arguments={"setting": attribute(key).setting_names[0]})])
        return "I looked into it and here is the answer you need."
    return "ok"


CONSOLIDATING_OPTIONS = ["--memory-option", "consolidate_at_tokens=800", "--memory-option",
                         "consolidate_to_tokens=700"]
"""``mempa run`` options that make File memory consolidate on user R's short scripted timeline
(its PA prompt reaches about 1,100 tokens, 580 of them instructions; the paper's 20,000 -> 10,000
is never reached, and a File memory that never consolidated reads BROKEN, issue 12)."""


def consolidating(responder: Any) -> Any:
    """``responder`` with a usable consolidation reply for the memory role (File memory folds the
    turns into a one-line MEMORY.md), for tests whose File memory should read ``ok``."""

    def respond(request: ScriptedRequest) -> ScriptedReply | str:
        asked = json.dumps(request.json_schema or {}) + " ".join(m.content or "" for m in request.messages)
        if request.model == "scripted-memory" and "history_entry" in asked:
            return json.dumps({"history_entry": "The user asked for help with a task.",
                               "memory": "- The user asks for help with everyday tasks."})
        return responder(request)  # type: ignore[no-any-return]

    return respond


def scripted_cli_run(tmp: Path, responder: Any, *extra: str, profile_options: Mapping[str, Any] | None = None) -> str:
    """Play user R's whole timeline with ``mempa run --memory file --repeats 1`` on a scripted model
    server answered by ``responder``; saves in ``tmp/saves``, the memory in ``tmp/local_memory``.

    Args:
        tmp: the folder for the profile, the saves and the memory.
        responder: the scripted server's responder (:func:`protocol_responder` or one wrapping it).
        extra: further ``mempa run`` arguments (e.g. :data:`CONSOLIDATING_OPTIONS`).
        profile_options: entries set in the scripted profile's ``options``.

    Returns:
        What ``mempa run`` printed.

    Raises:
        AssertionError: ``mempa run`` did not exit 0 (the message is its output).
    """
    import io
    from contextlib import redirect_stdout

    import yaml

    from mempa_tui.cli.main import main
    from mempa_tui.llm import ScriptedModelServer

    with ScriptedModelServer(responder) as server:
        profile = server.profile(context_window=131072).model_dump(mode="json")
        profile["options"].update(profile_options or {})
        path = tmp / "scripted.yaml"
        path.write_text(yaml.safe_dump(profile))
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(["run", "--user", "R", "--memory", "file", "--model", str(path), "--repeats", "1",
                         "--worlds", str(WORLDS), "--saves", str(tmp / "saves"),
                         "--local-memory", str(tmp / "local_memory"), *extra])
    assert code == 0, out.getvalue()
    return out.getvalue()
