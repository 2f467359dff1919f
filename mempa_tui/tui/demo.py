"""A canned model for trying the app without any model: ``python -m mempa_tui.tui.demo``.

It serves every role (PA, simulator, message checker, memory model, judge, rater) from a fixed
responder on a loopback port (:class:`~mempa_tui.llm.ScriptedModelServer`, the server the tests
use) and writes the profile ``models/demo.yaml`` pointing at it, then serves until Ctrl-C. In
another terminal ``mempa tui`` (or ``mempa run --model demo``) then works end to end in seconds.

A client that goes away before its reply is written (a run stopped mid-call, the app quit) is
counted, not reported with a ``BrokenPipeError`` traceback; the count is printed on shutdown
(:class:`DemoModelServer`).

The answers are scripted, not intelligent (see :mod:`mempa_tui.llm.scripted_roles`): the PA
reads only the memory section of its prompt and, at each interaction tool, picks the setting that
memory names (by name or by its behaviour text), else the tool's first setting, then replies with
one fixed sentence; the simulated user says one fixed line and moves its beat on, and on the first
message after a decision point adds the behaviour it wants in plain words (the public behaviour
text of its target setting); the memory role writes those wishes down in the shape each memory
system asks for; other structured (JSON) requests get an object shaped by their schema; the judge
and the rater get middling scores. So a memory changes the demo PA's choices, but the scores of a
demo run say nothing about any model.

A change event's user speaks in their own words; the demo reads such a rule for the future with
:mod:`mempa_tui.llm.scripted_change` (after the assistant's interaction choice it asks for the other
setting; alone, for the one its cue words name), the memory role writes it down beside the user's
words, and the PA lets a remembered change of mind outrank the wishes before it (PET, paper
Section 3.5). The profile's PA window is small on purpose (:data:`DEMO_PROMPT_ROOM`), so File
memory's scaled thresholds are reached on the quick-start slice.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Self

import anyio
import yaml

from mempa_tui.llm import (
    LLMClient,
    ModelProfile,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedRequest,
    ScriptedToolCall,
)
from mempa_tui.llm.scripted_roles import (
    demo_memory_answer,
    demo_setting,
    demo_task,
    demo_wish,
    fill_schema,
    not_said_before,
)
from mempa_tui.runner._budget import prompt_budget
from mempa_tui.tools import default_registry

__all__ = [
    "DEMO_PA_REPLY",
    "DEMO_PROMPT_ROOM",
    "DEMO_USER_LINE",
    "DemoModelServer",
    "demo_profile",
    "demo_responder",
    "main",
    "write_demo_profile",
]

DEMO_PA_REPLY = "Done - I looked into it and took care of what you asked (demo model)."
"""The demo PA's only reply text."""

DEMO_USER_LINE = "Could you help me with this, please?"
"""The demo simulated user's only line."""

_DEMO_DIARY = "I talked with my assistant about a task today. It handled it without fuss."


def _shaped(schema: dict[str, Any]) -> object:
    """A value of JSON schema ``schema``: first enum value, empty-ish strings, middling numbers."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {key: (_DEMO_DIARY if key == "entry" else _shaped(sub)) for key, sub in props.items()}
    if kind == "array":
        return ["The assistant keeps things short."]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 5))
        return (low + high) // 2 if high >= low else low
    return "fine"


def demo_responder(request: ScriptedRequest) -> ScriptedReply | str:
    """The canned answer to one chat request (see the module docstring).

    Args:
        request: the request as the scripted server parsed it (model name ends in ``-<role>``).

    Returns:
        A reply with text or tool calls, or plain text.
    """
    if request.model.endswith("-memory"):
        answer = demo_memory_answer(request)
        if answer is not None:
            return answer
    if request.json_schema is not None:
        return json.dumps(_shaped(request.json_schema))
    if request.model.endswith("-pa"):
        last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=0)
        called = {call.name for m in request.messages[last_user:] if m.role == "assistant"
                  for call in (m.tool_calls or [])}
        for tool in request.tools:
            if tool.name.startswith("IX_") and tool.name not in called:
                offered = tool.parameters.get("properties", {}).get("setting", {}).get("enum", [])
                if offered:
                    setting = demo_setting(tool.name.removeprefix("IX_"), list(offered), request)
                    arguments = fill_schema(tool.parameters, {"setting": setting})  # payload too
                    return ScriptedReply(tool_calls=[ScriptedToolCall(name=tool.name, arguments=arguments)])
        return ScriptedReply(text=DEMO_PA_REPLY, prompt_tokens=60, completion_tokens=12)
    if request.model.endswith("-simulator"):
        line = " ".join(filter(None, (demo_task(request), DEMO_USER_LINE, demo_wish(request))))
        line = not_said_before(line, request)  # a word-for-word repeat would be sent back
        return ("<factual_check>none</factual_check><turn_assessment>advance</turn_assessment>"
                f"<message>{line}</message>")
    return "ok"


class DemoModelServer(ScriptedModelServer):
    """The scripted server with quiet client departures: a connection the client closed before
    its reply was written (``BrokenPipeError``, ``ConnectionResetError``...) is counted in
    :attr:`clients_gone` instead of printing a traceback; any other handler error is reported as
    the standard library does."""

    clients_gone: int = 0
    """Replies not delivered because their client had gone (shown when the demo stops)."""

    def start(self) -> Self:
        """Serve as :class:`ScriptedModelServer` does, with the quiet departure handling."""
        started = super().start()
        http = self._server
        assert http is not None
        report = http.handle_error

        def handle_error(request: Any, client_address: Any) -> None:
            if isinstance(sys.exc_info()[1], ConnectionError):
                self.clients_gone += 1
                return
            report(request, client_address)

        http.handle_error = handle_error  # type: ignore[method-assign]
        return started


DEMO_PROMPT_ROOM = 2800
"""Tokens the demo profile's window leaves the PA prompt (system prompt, memory, conversation)
beside the world tools and the reply.

The demo's turns are short (about 3k tokens over User A's quick-start slice), so at the paper's
20,000 -> 10,000 File memory would never consolidate and would hand the PA nothing in a probe
(it hands only MEMORY.md there, paper Section 3.5). A small window makes the runner scale the
thresholds to half and a quarter of this room (:func:`mempa_tui.memory.default_thresholds`,
:func:`mempa_tui.runner._budget.file_memory_budget`): 1,400 -> 700, reached several times on the
slice. It is above what one PA call needs (:attr:`PromptBudget.needed_window
<mempa_tui.runner._budget.PromptBudget.needed_window>`: instructions plus 2,048)."""


def demo_profile(server: ScriptedModelServer) -> ModelProfile:
    """The demo profile: every role on ``server``, with a PA window of the world tools, the reply
    and :data:`DEMO_PROMPT_ROOM` (at least what one PA call needs).

    Args:
        server: a started scripted server (its URL goes into every role).

    Returns:
        The profile named ``demo``.
    """
    measured = prompt_budget(LLMClient(server.profile()), default_registry())
    window = max(measured.needed_window, measured.tool_tokens + measured.reply_tokens + DEMO_PROMPT_ROOM)
    profile = server.profile(context_window=window)
    return profile.model_copy(update={
        "name": "demo",
        "description": ("Scripted demo model from `python -m mempa_tui.tui.demo`: not a language model; its PA picks "
                        "what its memory names, else the first setting (try the app; scores say nothing about models)"),
    })


def write_demo_profile(server: ScriptedModelServer, models_dir: Path) -> Path:
    """Write ``<models_dir>/demo.yaml``: :func:`demo_profile` (its port changes per start)."""
    profile = demo_profile(server)
    data = profile.model_dump(mode="json", exclude_none=True)
    window = profile.default.context_window
    models_dir.mkdir(parents=True, exist_ok=True)
    path = models_dir / "demo.yaml"
    path.write_text(
        "# Written by `python -m mempa_tui.tui.demo`; valid while it runs.\n"
        f"# context_window {window:,} is small on purpose: the world tools, a reply and {DEMO_PROMPT_ROOM:,} tokens\n"
        "# for the PA prompt. The demo's turns are short, and File memory's thresholds scale with the window\n"
        f"# (half / a quarter of that room: {DEMO_PROMPT_ROOM // 2:,} -> {DEMO_PROMPT_ROOM // 4:,} tokens), "
        "so it consolidates on the quick-start slice.\n"
        + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


async def _serve(models_dir: Path, server: DemoModelServer) -> None:
    async with server:
        path = write_demo_profile(server, models_dir)
        print(f"demo model serving on {server.url}; profile written to {path}", flush=True)
        print("leave this running; in another terminal: mempa tui  (choose the profile 'demo'); Ctrl-C stops",
              flush=True)
        await anyio.sleep_forever()


def main(argv: list[str] | None = None) -> int:
    """Serve the demo model until interrupted.

    Args:
        argv: ``[--models DIR]`` (default ``models``).

    Returns:
        0 after Ctrl-C.
    """
    parser = argparse.ArgumentParser(prog="python -m mempa_tui.tui.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=Path("models"), help="where to write demo.yaml")
    args = parser.parse_args(argv)
    if args.models.exists() and not args.models.is_dir():
        parser.error(f"--models {args.models}: a file, not a folder")
    try:
        args.models.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, no permission: say so before serving anything
        parser.error(f"--models {args.models}: cannot use it as the profiles folder ({exc.strerror or exc})")
    server = DemoModelServer(demo_responder)
    try:
        anyio.run(_serve, args.models, server)
    except KeyboardInterrupt:
        gone = f" ({server.clients_gone} reply(ies) not delivered: the client had gone)" if server.clients_gone else ""
        print(f"demo model stopped{gone}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
