"""The one module that talks to litellm (SPEC section 4.10; prompt reuse: section 7).

:class:`LLMClient` turns provider-neutral messages into a litellm call for the role's model spec,
keeps the prompt inside the context window, retries transient failures, limits concurrency per
endpoint, and normalises whatever the model wrote into a :class:`Completion`.

Retries are done here, not by litellm's ``num_retries``: measured on litellm 1.110.2, its retry
wrapper needs ``tenacity`` (not a litellm dependency; without it ``ollama_chat/`` calls are tried
once while the error claims "Retried: 2 times"), retries non-transient errors such as HTTP 400 as
well, and waits between tries only for rate limits. So litellm gets ``num_retries=0`` and
``max_retries=0`` and this module retries timeouts, connection errors and HTTP 408/429/5xx with
exponential backoff (``retry_backoff_s`` doubling, capped at 30 s).
"""

from __future__ import annotations

import logging

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import anyio
import httpx

from mempa_tui.llm._context import digit_allowance, estimate, reused_prefix, trim_to_fit
from mempa_tui.llm._parse import (
    CallIds,
    RawToolCall,
    normalise_tool_calls,
    recover_call_fragment,
    recover_tool_calls,
    split_thinking,
)
from mempa_tui.llm._wire import (
    WireName,
    response_format_for,
    tool_choice_for,
    tools_for,
    wire_messages,
)
from mempa_tui.llm.errors import (
    ContextWindowError,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMProviderError,
    LLMRequestError,
    LLMTimeoutError,
    ModelServerExitedError,
)
from mempa_tui.llm._watch import WATCH_INTERVAL_S, CallWait, check_server, is_watched
from mempa_tui.llm.profile import ModelProfile, ModelSpec
from mempa_tui.llm.sampling import call_seed, prompt_texts
from mempa_tui.llm.types import (
    CallPrompt,
    CallReply,
    ChatMessage,
    Completion,
    LLMCallRecord,
    Role,
    ToolSpec,
    Usage,
)

log = logging.getLogger(__name__)

__all__ = ["REPLY_TOOL", "LLMClient", "constrained_call_schema"]

REPLY_TOOL = "reply_to_user"
"""The reply tool of ``tool_calling: constrained``: its ``text`` becomes the reply."""
_REPLY_TOOL_DICT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": REPLY_TOOL,
        "description": "Answer the person in plain text and end your turn (use it when no other tool is needed now).",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1, "description": "What the person reads."}},
            "required": ["text"],
        },
    },
}


def constrained_call_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema under which a reply is exactly one call of one of ``tools``.

    Args:
        tools: OpenAI function-tool dicts (as sent).

    Returns:
        ``{"anyOf": [...]}``, one ``{"name": <const>, "arguments": <the tool's parameters>}``
        object per tool; llama.cpp turns it into a grammar, so only such calls can be generated.
    """
    options = []
    for tool in tools:
        function = tool["function"]
        parameters = function.get("parameters") or {"type": "object"}
        options.append({
            "type": "object",
            "properties": {"name": {"const": function["name"]}, "arguments": parameters},
            "required": ["name", "arguments"],
        })
    return {"anyOf": options}

_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_MAX_BACKOFF_S = 30.0
_LOCAL_KEY = "sk-local-no-key"


def _litellm() -> Any:
    """Import litellm on first use (its import takes seconds) with offline settings."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def _cause(exc: BaseException) -> str:
    """One line describing ``exc`` without a stack trace."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    for prefix in ("litellm.", "LiteLLM "):
        text = text.removeprefix(prefix)
    return text[:400]


def _field(item: Any, name: str, default: Any) -> Any:
    """``item[name]`` or ``item.name`` (litellm returns dicts or objects depending on provider)."""
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)


def _reply_tool_as_text(completion: Completion) -> Completion:
    """Under ``tool_calling: constrained``: a call of :data:`REPLY_TOOL` becomes the reply text."""
    replies = [c for c in completion.tool_calls if c.name == REPLY_TOOL]
    if not replies:
        return completion
    others = [c for c in completion.tool_calls if c.name != REPLY_TOOL]
    text = "\n\n".join(str(c.arguments.get("text", "")).strip() for c in replies if not c.arguments_error)
    return completion.model_copy(update={"tool_calls": others, "text": "\n\n".join(t for t in (completion.text, text) if t)})


def _tool_names(tools: Sequence[dict[str, Any]] | None) -> list[str]:
    """Names of the offered tools (OpenAI function-tool dicts), in order."""
    return [str(t.get("function", {}).get("name", "")) for t in tools or ()]


def _prompt(messages: Sequence[ChatMessage], keep: Iterable[int], tools: Sequence[dict[str, Any]] | None,
            seed: int | None = None) -> CallPrompt:
    """The prompt of a call as logged: the kept messages (after trimming), the offered tool names
    and the sampling seed sent (None: none sent)."""
    return CallPrompt(messages=[messages[i] for i in keep], tools=_tool_names(tools), seed=seed)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes/contexts, outermost first (litellm wraps transport errors)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 12:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


class LLMClient:
    """Calls the models of a profile.

    Attributes:
        profile: the profile in use.
        calls: one :class:`LLMCallRecord` per call, successful or not, in completion order.
        wait_listeners: called with a :class:`~mempa_tui.llm._watch.CallWait` every
            ``watch_interval_s`` seconds a call waits for its reply (the runner's
            ``model_waiting`` progress line); they must not block, and one that raises is dropped.
        watch_interval_s: seconds between two looks at a call in flight (the wait report and,
            for a server mempa started, whether its process still runs).
    """

    def __init__(self, profile: ModelProfile) -> None:
        """Prepare limiters and counters; nothing is contacted and litellm is not imported yet.

        Args:
            profile: the model profile (its ``api_base`` values must be final, e.g. filled in by
                :class:`~mempa_tui.llm.embedded.EmbeddedServer`).
        """
        self.profile = profile
        self.calls: list[LLMCallRecord] = []
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._last_prompt: dict[Role, tuple[list[str], str | None]] = {}
        self._token_cache: dict[str, int] = {}
        self._ids = CallIds()
        self.wait_listeners: list[Callable[[CallWait], None]] = []
        self.watch_interval_s = WATCH_INTERVAL_S
        self._started_calls = 0
        sizes: dict[str, int] = {}
        for spec in profile.all_specs():
            key = self._endpoint(spec)
            sizes[key] = min(sizes.get(key, spec.max_concurrency), spec.max_concurrency)
        self._limiter_sizes = sizes

    # -- public ------------------------------------------------------------------------------
    async def complete(
        self,
        role: Role,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """Run one model call for ``role``.

        Args:
            role: which spec of the profile serves the call.
            messages: the conversation, system prompt first.
            tools: tools offered to the model.
            tool_choice: None or ``auto`` (model decides), ``required`` (some call), ``none``,
                or a tool name (that call is forced; on Ollama only that tool is offered), or
                :data:`REPLY_TOOL`: the call must be the reply (under ``tool_calling: constrained``
                a grammar over the reply tool alone; otherwise ``none``).
            json_schema: ask for a JSON object matching this schema (read it with
                :func:`~mempa_tui.llm.parse_json_reply`); tool calls are not recovered from the
                text of such replies.
            temperature: sample this call at this temperature instead of the role's (the
                simulator's rewrites, ``options.simulator_rewrite_temperature``); None: the role's.

        Returns:
            The normalised completion: think blocks stripped into ``thinking``, tool-call
            arguments parsed, missing ids filled, calls written as JSON text recovered (only when
            tools were offered and the reply holds no structured call, so an echoed call is never
            run twice), ``trimmed_messages`` set when old messages were dropped.

        Raises:
            ValueError: ``tool_choice`` names no offered tool.
            ContextWindowError: the prompt does not fit even after trimming.
            LLMConfigError: missing ``api_base`` or API-key variable.
            LLMTimeoutError, LLMConnectionError, LLMProviderError, LLMRequestError: the call failed
                (transient ones after ``num_retries`` retries).
            ModelServerExitedError: the server process mempa started for the role (embedded
                llama.cpp) exited before or during the call (at once, never retried).
        """
        role = Role(role)
        spec = self.profile.spec_for(role)
        if temperature is not None and temperature != spec.temperature:
            spec = spec.model_copy(update={"temperature": temperature})
        wire: WireName = spec.resolved_wire(self.profile.runtime)
        # REPLY_TOOL as the choice: this call must be the reply. Under constrained calling the
        # grammar allows only the reply tool (the offered tools stay in the prompt, so the cached
        # prefix is the same as the turn's other calls); otherwise the call offers no tool choice.
        reply_only = tool_choice == REPLY_TOOL
        if reply_only:
            tool_choice = None if spec.tool_calling == "constrained" and tools and json_schema is None else "none"
        sent_tools = tools_for(list(tools) if tools else None, tool_choice, wire)
        grammar_schema = json_schema
        constrained = spec.tool_calling == "constrained" and bool(sent_tools) and json_schema is None \
            and tool_choice != "none"
        if constrained and sent_tools is not None:
            # The reply tool is offered on every constrained call, forced ones too, so that all
            # calls of a turn show the same tool block and a prompt cache keeps the conversation
            # after it (a forced call that dropped the reply tool made llama.cpp re-read the whole
            # conversation twice: on the forced call and on the call after it; issue 12). What may
            # be written is the grammar's business: only the forced tool, or only real tools for
            # ``required``.
            sent_tools = [*sent_tools, _REPLY_TOOL_DICT]
            if reply_only:
                allowed = [t for t in sent_tools if t["function"]["name"] == REPLY_TOOL]
            elif tool_choice in (None, "auto"):
                allowed = sent_tools
            elif tool_choice == "required":
                allowed = [t for t in sent_tools if t["function"]["name"] != REPLY_TOOL]
            else:
                allowed = [t for t in sent_tools if t["function"]["name"] == tool_choice]
            grammar_schema = constrained_call_schema(allowed)
        history = wire_messages(list(messages))
        serialised = [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in history]
        tools_text = json.dumps(sent_tools, sort_keys=True) if sent_tools else None
        counts = [self._count(text) for text in serialised]
        tools_tokens = self._count(tools_text) if tools_text else 0
        trim = trim_to_fit(history, counts, tools_tokens, spec.max_tokens, spec.context_window)
        if not trim.fits:
            error = ContextWindowError(role.value, spec.model, estimate(trim.counted), spec.max_tokens, spec.context_window)
            self._record(role, spec, trim.counted, 0, 0, 0.0, error, trim.dropped,
                         prompt=_prompt(messages, range(len(messages)), sent_tools))
            raise error
        kept = [history[i] for i in trim.keep]
        kept_serialised = [serialised[i] for i in trim.keep]
        # per call, from the base seed, the runner's sampling scope and this prompt (llm.sampling)
        seed = call_seed(spec.seed, prompt_texts([messages[i] for i in trim.keep]), _tool_names(sent_tools))
        prompt = _prompt(messages, trim.keep, sent_tools, seed)
        kept_counts = [counts[i] for i in trim.keep]
        previous = self._last_prompt.get(role)
        reused = reused_prefix(
            previous[0] if previous else None,
            previous[1] if previous else None,
            kept_serialised,
            tools_text,
            kept_counts,
            tools_tokens,
        )
        started = time.perf_counter()
        try:
            kwargs = self._request(role, spec, wire, kept, sent_tools, tool_choice, grammar_schema, seed)
            async with self._limiter(spec):
                started = time.perf_counter()  # latency excludes waiting for a free slot
                response = await self._call(role, spec, kwargs)
            completion = self._completion(role, spec, response, messages, recover=bool(sent_tools) and json_schema is None)
            if constrained:
                completion = _reply_tool_as_text(completion)
        except LLMError as error:
            self._record(role, spec, trim.counted, 0, 0, time.perf_counter() - started, error, trim.dropped,
                         prompt=prompt)
            raise
        self._last_prompt[role] = (kept_serialised, tools_text)
        completion.trimmed_messages = trim.dropped
        if completion.usage.prompt_tokens == 0:
            completion.usage.prompt_tokens = trim.counted
        if not completion.usage.reused_by_server:
            completion.usage.reused_prefix_tokens = min(reused, completion.usage.prompt_tokens)
        self._record(
            role,
            spec,
            completion.usage.prompt_tokens,
            completion.usage.completion_tokens,
            completion.usage.reused_prefix_tokens,
            time.perf_counter() - started,
            None,
            trim.dropped,
            reused_by_server=completion.usage.reused_by_server,
            prompt=prompt,
            reply=CallReply(text=completion.text, tool_calls=list(completion.tool_calls),
                            finish_reason=completion.finish_reason),
        )
        return completion

    async def embed(self, role: Role, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` with the role's model (normally ``Role.EMBEDDER``) in one call.

        Used by the retrieval memories when a profile names an ``embedder`` role. Retries and
        error classes are those of :meth:`complete`; the call is recorded in :attr:`calls`.

        Args:
            role: which spec serves the call.
            texts: the texts; an empty list makes no call.

        Returns:
            One vector per text, in order.

        Raises:
            LLMConfigError: missing ``api_base`` or API-key variable.
            LLMTimeoutError, LLMConnectionError, LLMProviderError, LLMRequestError: the call failed,
                or the reply did not hold one vector per text.
        """
        role = Role(role)
        spec = self.profile.spec_for(role)
        if not texts:
            return []
        kwargs: dict[str, Any] = {"model": spec.model, "input": list(texts), "timeout": spec.timeout_s, "num_retries": 0}
        if spec.api_base:
            kwargs["api_base"] = spec.api_base
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise LLMConfigError(role.value, spec.model, f"environment variable {spec.api_key_env} (api_key_env) is not set")
            kwargs["api_key"] = key
        elif spec.api_base:
            kwargs["api_key"] = _LOCAL_KEY
        prompt = sum(self._count(t) for t in texts)
        sent = CallPrompt(messages=[ChatMessage(role="user", content=t) for t in texts])
        started = time.perf_counter()
        try:
            async with self._limiter(spec):
                started = time.perf_counter()
                response = await self._call(role, spec, kwargs, method="aembedding")
            data = sorted(getattr(response, "data", None) or [], key=lambda d: int(_field(d, "index", 0)))
            vectors = [[float(x) for x in _field(d, "embedding", [])] for d in data]
            if len(vectors) != len(texts) or any(not v for v in vectors):
                raise LLMProviderError(role.value, spec.model, f"embedding reply held {len(vectors)} vectors for {len(texts)} texts")
        except LLMError as error:
            self._record(role, spec, prompt, 0, 0, time.perf_counter() - started, error, 0, prompt=sent)
            raise
        self._record(role, spec, prompt, 0, 0, time.perf_counter() - started, None, 0, prompt=sent,
                     reply=CallReply(text=f"{len(vectors)} vector(s) of {len(vectors[0])} numbers"))
        return vectors

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text``: litellm's offline counter plus the digit allowance (cached).

        The budget check inflates this further (see :mod:`mempa_tui.llm._context`).
        """
        return self._count(text)

    # -- request -----------------------------------------------------------------------------
    @staticmethod
    def _endpoint(spec: ModelSpec) -> str:
        return spec.concurrency_group or spec.api_base or spec.model.split("/", 1)[0]

    def _limiter(self, spec: ModelSpec) -> anyio.CapacityLimiter:
        key = self._endpoint(spec)
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = anyio.CapacityLimiter(self._limiter_sizes.get(key, spec.max_concurrency))
            self._limiters[key] = limiter
        return limiter

    def _count(self, text: str) -> int:
        cached = self._token_cache.get(text)
        if cached is None:
            cached = int(_litellm().token_counter(model="", text=text)) + digit_allowance(text)
            if len(self._token_cache) > 20_000:
                self._token_cache.clear()
            self._token_cache[text] = cached
        return cached

    def _request(
        self,
        role: Role,
        spec: ModelSpec,
        wire: WireName,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        json_schema: dict[str, Any] | None,
        seed: int | None,
    ) -> dict[str, Any]:
        role_free: dict[str, Any] = {
            "model": spec.model,
            "messages": messages,
            "temperature": spec.temperature,
            "max_tokens": spec.max_tokens,
            "timeout": spec.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if spec.api_base:
            role_free["api_base"] = spec.api_base
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise LLMConfigError(
                    role.value, spec.model, f"environment variable {spec.api_key_env} (api_key_env) is not set"
                )
            role_free["api_key"] = key
        elif wire != "ollama" and spec.api_base:
            role_free["api_key"] = _LOCAL_KEY
        if wire == "ollama":
            role_free["num_ctx"] = spec.context_window
        if seed is not None:  # per call (mempa_tui.llm.sampling); None when the spec sets no seed
            role_free["seed"] = seed
        if tools:
            role_free["tools"] = tools
        choice = tool_choice_for(tool_choice, wire, [t["function"]["name"] for t in tools]) if tools else None
        if choice is not None:
            role_free["tool_choice"] = choice
        response_format = response_format_for(json_schema, wire)
        if response_format is not None:
            role_free["response_format"] = response_format
        return role_free

    # -- call with retries ---------------------------------------------------------------------
    async def _call(self, role: Role, spec: ModelSpec, kwargs: dict[str, Any], *, method: str = "acompletion") -> Any:
        if self.profile.runtime == "embedded" and not spec.api_base:
            raise LLMConfigError(
                role.value, spec.model, "embedded profile has no api_base yet; run it inside `async with EmbeddedServer(profile)`"
            )
        litellm = _litellm()
        attempt = 0
        self._started_calls += 1
        number = self._started_calls
        while True:
            self._raise_if_server_exited(role, spec)
            try:
                with anyio.fail_after(spec.timeout_s + 5.0):
                    return await self._watched(role, spec, number, getattr(litellm, method), kwargs)
            except ModelServerExitedError:
                raise
            except Exception as exc:  # noqa: BLE001 - every provider failure is classified and re-raised below
                error, transient = self._classify(role, spec, exc, attempt + 1)
            # a dropped connection because the server process died: say so, do not retry
            if is_watched(spec.api_base) and not isinstance(error, LLMRequestError | ContextWindowError):
                await self._await_server_exit(role, spec)
            if not transient or attempt >= spec.num_retries:
                raise error from None
            delay = min(spec.retry_backoff_s * (2**attempt), _MAX_BACKOFF_S)
            attempt += 1
            if delay > 0:
                await anyio.sleep(delay)

    def _raise_if_server_exited(self, role: Role, spec: ModelSpec) -> None:
        """Raise :class:`ModelServerExitedError` when mempa's own server for ``spec`` has exited."""
        gone = check_server(spec.api_base)
        if gone is not None:
            server, code, log_path = gone
            raise ModelServerExitedError(role.value, spec.model, server, code, log_path)

    async def _await_server_exit(self, role: Role, spec: ModelSpec, grace_s: float = 2.0) -> None:
        """After a failed call to a server mempa started: raise :class:`ModelServerExitedError` if
        its process exits within ``grace_s`` (a process that dies drops its connections a moment
        before the operating system reports its exit), else return."""
        deadline = time.monotonic() + grace_s
        while True:
            self._raise_if_server_exited(role, spec)
            if time.monotonic() >= deadline:
                return
            await anyio.sleep(0.05)

    async def _watched(self, role: Role, spec: ModelSpec, number: int, method: Callable[..., Any],
                       kwargs: dict[str, Any]) -> Any:
        """Await ``method(**kwargs)`` while, every :attr:`watch_interval_s` seconds, telling the
        :attr:`wait_listeners` how long it has waited and checking that the server process mempa
        started for ``spec`` (if any) still runs.

        Raises:
            ModelServerExitedError: that process exited while the call was in flight (the call is
                cancelled at once).
        """
        started = time.monotonic()
        gone: ModelServerExitedError | None = None
        result: Any = None
        failed: Exception | None = None

        async def watch(scope: anyio.CancelScope) -> None:
            nonlocal gone
            while True:
                await anyio.sleep(self.watch_interval_s)
                try:
                    self._raise_if_server_exited(role, spec)
                except ModelServerExitedError as error:
                    gone = error
                    scope.cancel()
                    return
                wait = CallWait(role=role.value, model=spec.model, call=number,
                                waited_s=time.monotonic() - started, api_base=spec.api_base)
                for listener in list(self.wait_listeners):
                    try:
                        listener(wait)
                    except Exception:  # noqa: BLE001 - a broken display must not fail a model call
                        log.warning("wait listener %r raised; dropped", listener, exc_info=True)
                        self.wait_listeners.remove(listener)

        async with anyio.create_task_group() as group:
            group.start_soon(watch, group.cancel_scope)
            try:
                result = await method(**kwargs)
            except Exception as exc:  # noqa: BLE001 - re-raised below, outside the task group (no group wrapping)
                failed = exc
            finally:
                group.cancel_scope.cancel()
        if gone is not None:
            raise gone
        if failed is not None:
            raise failed
        return result

    @staticmethod
    def _classify(role: Role, spec: ModelSpec, exc: BaseException, attempts: int) -> tuple[LLMError, bool]:
        """Map a litellm (or transport) exception to an :class:`LLMError` and transience."""
        litellm = _litellm()
        if isinstance(exc, LLMError):
            return exc, False
        suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
        name, model, cause = role.value, spec.model, _cause(exc) + suffix
        where = spec.api_base or "the provider's endpoint"
        chain = _chain(exc)
        if any(isinstance(e, TimeoutError | litellm.exceptions.Timeout | httpx.TimeoutException) for e in chain):
            return LLMTimeoutError(name, model, f"no reply within {spec.timeout_s:g} s from {where}{suffix}"), True
        refused = [e for e in chain if isinstance(e, ConnectionError | httpx.ConnectError)]
        if refused:
            return LLMConnectionError(name, model, f"cannot reach {where}: {_cause(refused[-1])}{suffix}"), True
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and status in _TRANSIENT_STATUS:
            return LLMProviderError(name, model, f"HTTP {status}: {cause}", status), True
        if isinstance(status, int) and 400 <= status < 500:
            return LLMRequestError(name, model, f"HTTP {status}: {cause}", status), False
        return LLMProviderError(name, model, f"{type(exc).__name__}: {cause}", status if isinstance(status, int) else None), False

    # -- reply -----------------------------------------------------------------------------------
    def _completion(
        self, role: Role, spec: ModelSpec, response: Any, history: Sequence[ChatMessage], *, recover: bool
    ) -> Completion:
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError):
            raise LLMProviderError(role.value, spec.model, "the reply had no choices") from None
        ids = CallIds(seen={c.id for m in history for c in m.tool_calls}, counter=self._ids.counter)
        raw_text = message.content if isinstance(message.content, str) else ""
        text, thinking = split_thinking(raw_text)
        provider_thinking = getattr(message, "reasoning_content", None)
        if isinstance(provider_thinking, str) and provider_thinking.strip():
            thinking = "\n\n".join(t for t in (provider_thinking.strip(), thinking) if t)
        raw_calls = [
            RawToolCall(
                id=getattr(call, "id", None),
                name=getattr(getattr(call, "function", None), "name", None),
                arguments=getattr(getattr(call, "function", None), "arguments", None),
            )
            for call in (getattr(message, "tool_calls", None) or [])
        ]
        calls = normalise_tool_calls(raw_calls, ids)
        if recover and not calls:
            text, recovered = recover_tool_calls(text, ids)
            calls.extend(recovered)
        if recover and not calls:  # a cut-off or broken call is a failed call, never a reply
            text, recovered = recover_call_fragment(text, ids)
            calls.extend(recovered)
        self._ids.counter = ids.counter
        usage = getattr(response, "usage", None)
        cached = _field(_field(usage, "prompt_tokens_details", None), "cached_tokens", None)
        return Completion(
            text=text,
            thinking=thinking,
            tool_calls=calls,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=Usage(
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                # the server's own count of prompt tokens taken from its cache (llama.cpp, OpenAI)
                reused_prefix_tokens=int(cached) if isinstance(cached, int) and cached >= 0 else 0,
                reused_by_server=isinstance(cached, int) and cached >= 0,
            ),
        )

    def _record(
        self,
        role: Role,
        spec: ModelSpec,
        prompt_tokens: int,
        completion_tokens: int,
        reused: int,
        latency_s: float,
        error: LLMError | None,
        trimmed: int,
        *,
        reused_by_server: bool = False,
        prompt: CallPrompt | None = None,
        reply: CallReply | None = None,
    ) -> None:
        log.info(
            "%s %s: %d prompt tokens (%d reused), %d completion tokens, %.1f s%s",
            role.value, spec.model, prompt_tokens, reused, completion_tokens, latency_s,
            "" if error is None else f", failed: {error.cause}",
        )
        self.calls.append(
            LLMCallRecord(
                role=role,
                model=spec.model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                reused_prefix_tokens=reused,
                latency_s=round(latency_s, 6),
                ok=error is None,
                error=None if error is None else error.cause,
                error_kind=None if error is None else type(error).__name__,
                trimmed_messages=trimmed,
                reused_by_server=reused_by_server,
                prompt=prompt,
                reply=reply,
            )
        )
