"""Provider-neutral chat types shared by every component that talks to a model.

Only :mod:`mempa_tui.llm.client` imports litellm; everything else speaks these types.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CallPrompt",
    "CallReply",
    "ChatMessage",
    "Completion",
    "LLMCallRecord",
    "Role",
    "ToolCall",
    "ToolSpec",
    "Usage",
]


class Role(str, Enum):
    """The model roles a profile fills (SPEC section 4.10)."""

    PA = "pa"
    SIMULATOR = "simulator"
    CHECKER = "checker"
    JUDGE = "judge"
    MEMORY = "memory"
    EMBEDDER = "embedder"


class ToolSpec(BaseModel):
    """A function tool offered to the model, in OpenAI function-schema shape.

    Attributes:
        name: the name the model calls, e.g. ``mcp_state_email_message_send`` or ``IX_verbosity``.
        description: what the tool does and the formats of its arguments.
        parameters: JSON schema of the arguments object (``{"type": "object", ...}``).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(BaseModel):
    """A tool call made by the model, normalised.

    Attributes:
        id: the call id; generated (``call_<n>``) when the model gave none or an empty one.
        name: the tool name as the model wrote it (may be unknown or empty; the agent checks).
        arguments: parsed arguments object; ``{}`` when none or unparsable.
        arguments_error: why the arguments could not be parsed (invalid JSON, not an object),
            else None. The agent returns this to the model as the tool result.
        recovered_from_text: True when the call was written as JSON in the reply text rather than
            as a structured tool call.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None
    recovered_from_text: bool = False


class ChatMessage(BaseModel):
    """One message of a conversation sent to a model.

    ``tool_calls`` is set only on assistant messages; ``tool_call_id`` and ``name`` only on tool
    results. Arguments stay parsed objects here; the client converts them to what each wire format
    wants (objects for Ollama's native API, JSON strings for OpenAI-compatible endpoints).
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class Usage(BaseModel):
    """Token counts of one call.

    Attributes:
        prompt_tokens: tokens in the prompt as the provider counted them (or our estimate).
        completion_tokens: tokens generated.
        reused_prefix_tokens: prompt tokens the server took from its cache instead of reading them
            (``usage.prompt_tokens_details.cached_tokens``, which llama.cpp's server and OpenAI
            report); where the server reports none, the client's estimate: leading prompt tokens
            identical to the previous call of the same role (what a KV cache can reuse).
        reused_by_server: True when ``reused_prefix_tokens`` is the server's own count.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_prefix_tokens: int = 0
    reused_by_server: bool = False


class Completion(BaseModel):
    """A normalised model reply.

    Attributes:
        text: reply text with every ``<think>...</think>`` block removed and whitespace trimmed;
            text from which tool calls were recovered has those calls removed.
        thinking: the removed reasoning, kept for the scoring record only; never shown to the user,
            the judge or the memory.
        tool_calls: structured calls plus calls recovered from text, in order.
        finish_reason: as the provider reported it.
        usage: token counts.
        trimmed_messages: old messages the client dropped to fit the context window (0: none).
    """

    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    trimmed_messages: int = 0


class CallPrompt(BaseModel):
    """What one model call sent: the messages after trimming to the context window, in order, and
    the names of the offered tools (their schemas are fixed by the registry and not kept per call).

    Attributes:
        messages: the conversation as sent, system prompt first (an embedding call: one ``user``
            message per embedded text).
        tools: names of the tools offered, in order (``[]``: none).
        seed: the sampling seed sent with the call (:mod:`mempa_tui.llm.sampling`: per call, from
            the spec's base seed, the runner's sampling scope and this prompt); None when none was
            sent (the spec sets no seed, an embedding call) or the call was stored before seeds were.
    """

    messages: list[ChatMessage] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    seed: int | None = None


class CallReply(BaseModel):
    """What one model call returned, as normalised by the client (think blocks removed).

    Attributes:
        text: reply text.
        tool_calls: the tool calls with their parsed arguments, in order.
        finish_reason: as the provider reported it (None: not reported).
    """

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


class LLMCallRecord(BaseModel):
    """One model call as logged for token accounting and deterministic replay (SPEC section 7).

    ``prompt`` and ``reply`` make a record heavy (a 20k-token prompt is about 80 KB of text), so
    the runner's call log keeps them only until the step or probe repeat that made the call is
    stored (:class:`~mempa_tui.runner._calls.RoutingCallLog` logs a :meth:`light` copy); the store
    keeps them zlib-compressed (issue 16: the run browser shows every call's prompt and reply).
    """

    role: Role
    model: str
    prompt_tokens: int
    completion_tokens: int
    reused_prefix_tokens: int
    latency_s: float
    ok: bool
    error: str | None = None
    error_kind: str | None = None
    """Class name of the failure (``ContextWindowError``, ``LLMTimeoutError``...), None when ok."""
    trimmed_messages: int = 0
    """Old messages dropped to fit the context window before this call (0: none)."""
    reused_by_server: bool = False
    """True when ``reused_prefix_tokens`` is the server's own cache count, not the client's estimate."""
    prompt: CallPrompt | None = None
    """The messages sent and the offered tool names; None when not kept (a light copy, or a call
    read from a store written before prompts were stored)."""
    reply: CallReply | None = None
    """The normalised reply; None for a failed call, a light copy, or an old store's call."""

    def light(self) -> LLMCallRecord:
        """This record without its prompt and reply (what a long-lived call log keeps)."""
        if self.prompt is None and self.reply is None:
            return self
        return self.model_copy(update={"prompt": None, "reply": None})
