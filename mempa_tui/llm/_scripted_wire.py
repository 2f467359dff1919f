"""Request parsing and reply building for the scripted model server (both wire formats).

Pure functions: :mod:`mempa_tui.llm.scripted` owns the sockets and threads.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm.types import ChatMessage, ToolCall, ToolSpec

__all__ = [
    "BadRequest",
    "ScriptedReply",
    "ScriptedRequest",
    "ScriptedToolCall",
    "ollama_reply",
    "openai_reply",
    "parse_chat_request",
]

ScriptedWire = Literal["ollama", "openai"]


class ScriptedToolCall(BaseModel):
    """A tool call the scripted model makes, possibly malformed on purpose."""

    name: str | None
    """Tool name; None sends no name (an empty one is sent as ``""``)."""
    arguments: dict[str, Any] | str | None = Field(default_factory=dict)
    """A dict is sent in the wire's native form (object on Ollama, JSON string on OpenAI); a
    string is sent verbatim as a string (use it for invalid JSON); None sends no arguments."""
    id: str | None = "auto"
    """``"auto"``: the server assigns ``srv_<n>``; None: no id field; ``""``: an empty id."""
    send_as: Literal["native", "string", "object"] = "native"
    """Force a dict's encoding: ``string`` sends JSON text even on Ollama, ``object`` sends an
    object even on OpenAI."""


class ScriptedReply(BaseModel):
    """What the scripted model answers."""

    text: str = ""
    """Reply content (may hold think blocks or calls written as JSON, on purpose)."""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    """Structured tool calls."""
    thinking: str | None = None
    """Reasoning in the provider's separate field (Ollama ``thinking``, OpenAI
    ``reasoning_content``)."""
    finish_reason: str | None = None
    """Reported finish reason; default ``tool_calls`` with calls, else ``stop``."""
    status: int = 200
    """HTTP status; anything but 200 sends ``error`` in the wire's error shape instead."""
    error: str = "scripted failure"
    """Error message for a non-200 status."""
    prompt_tokens: int | None = None
    """Reported prompt tokens (default: serialised request length / 4)."""
    completion_tokens: int | None = None
    """Reported completion tokens (default: reply length / 4)."""


class ScriptedRequest(BaseModel):
    """One chat request as the scripted server received it, normalised for responders and tests."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    wire: ScriptedWire
    """Which endpoint was called."""
    model: str
    """Model name as sent (provider prefix removed by litellm: ``scripted-pa``)."""
    messages: list[ChatMessage]
    """The conversation; tool-call arguments parsed to objects whichever form they came in."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Offered tools."""
    tool_choice: str | None = None
    """``auto``/``required``/``none``, the forced tool's name, or None when not sent."""
    response_format: dict[str, Any] | None = None
    """OpenAI ``response_format`` as sent."""
    ollama_format: object = None
    """Ollama ``format`` as sent (``"json"`` or a schema)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Ollama ``options``, or the OpenAI sampling fields (temperature, max_tokens, seed...)."""
    body: dict[str, Any] = Field(default_factory=dict)
    """The raw JSON body, for assertions on the exact wire shape."""

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools."""
        return [t.name for t in self.tools]

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The requested reply schema in either wire's form, else None."""
        rf = self.response_format or {}
        inner = rf.get("json_schema")
        for candidate in (self.ollama_format, rf.get("schema"), inner.get("schema") if isinstance(inner, dict) else None):
            if isinstance(candidate, dict):
                return dict(candidate)
        return None


class BadRequest(ValueError):
    """The request breaks the wire format; the server answers ``status`` with this message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


def _history_call(raw: dict[str, Any], where: str, wire: ScriptedWire) -> ToolCall:
    function = raw.get("function") or {}
    arguments = function.get("arguments")
    if wire == "ollama" and isinstance(arguments, str):
        raise BadRequest(
            400,
            "json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments "
            f"of type api.ToolCallFunctionArguments ({where})",
        )
    if wire == "openai" and not isinstance(arguments, str):
        raise BadRequest(
            400,
            f"Invalid type for '{where}.function.arguments': expected a string, but got "
            f"{type(arguments).__name__} instead.",
        )
    parsed: dict[str, Any] = {}
    if isinstance(arguments, dict):
        parsed = arguments
    elif isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            value = None
        parsed = value if isinstance(value, dict) else {}
    return ToolCall(id=str(raw.get("id") or ""), name=str(function.get("name") or ""), arguments=parsed)


def parse_chat_request(body: dict[str, Any], wire: ScriptedWire, *, llama_cpp: bool = False) -> ScriptedRequest:
    """Validate and normalise a chat request body.

    Args:
        body: decoded JSON body.
        wire: the endpoint's format.
        llama_cpp: emulate llama.cpp's server (422 on ``response_format`` type ``json_schema``).

    Returns:
        The normalised request.

    Raises:
        BadRequest: what a real server would reject: Ollama history arguments as strings, OpenAI
            history arguments as objects, llama.cpp's 422, a missing model or messages.
    """
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
        raise BadRequest(400, "request needs a model string and a messages list")
    messages = []
    for i, raw in enumerate(body["messages"]):
        calls = [
            _history_call(c, f"messages[{i}].tool_calls[{j}]", wire) for j, c in enumerate(raw.get("tool_calls") or [])
        ]
        content = raw.get("content")
        messages.append(
            ChatMessage(
                role=raw.get("role", "user"),
                content=content if isinstance(content, str) else json.dumps(content) if content else "",
                tool_calls=calls,
                tool_call_id=raw.get("tool_call_id"),
                name=raw.get("name") or raw.get("tool_name"),
            )
        )
    tools = [
        ToolSpec(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools") or []
    ]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = (choice.get("function") or {}).get("name")
    response_format = body.get("response_format")
    if llama_cpp and isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        raise BadRequest(422, "response_format.type: Input should be 'text' or 'json_object'")
    options = body.get("options") if wire == "ollama" else {
        k: body[k] for k in ("temperature", "max_tokens", "max_completion_tokens", "seed", "top_p") if k in body
    }
    return ScriptedRequest(
        wire=wire,
        model=body["model"],
        messages=messages,
        tools=tools,
        tool_choice=choice,
        response_format=response_format,
        ollama_format=body.get("format"),
        options=options or {},
        body=body,
    )


_ids = itertools.count(1)


def _wire_call(call: ScriptedToolCall, wire: ScriptedWire) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if call.name is not None:
        function["name"] = call.name
    if call.arguments is not None:
        as_string = call.send_as == "string" or (call.send_as == "native" and wire == "openai")
        if isinstance(call.arguments, dict) and as_string:
            function["arguments"] = json.dumps(call.arguments)
        elif isinstance(call.arguments, str) and call.send_as == "object":
            function["arguments"] = json.loads(call.arguments)
        else:
            function["arguments"] = call.arguments
    out: dict[str, Any] = {"function": function}
    if wire == "openai":
        out["type"] = "function"
    if call.id == "auto":
        out["id"] = f"srv_{next(_ids)}"
    elif call.id is not None:
        out["id"] = call.id
    return out


def _counts(request: ScriptedRequest, reply: ScriptedReply) -> tuple[int, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = max(1, len(json.dumps(request.body.get("messages", []))) // 4)
    completion = reply.completion_tokens
    if completion is None:
        completion = max(1, (len(reply.text) + len(json.dumps([c.arguments for c in reply.tool_calls]))) // 4)
    return prompt, completion


def ollama_reply(request: ScriptedRequest, reply: ScriptedReply) -> dict[str, Any]:
    """The ``/api/chat`` response body for ``reply``."""
    prompt, completion = _counts(request, reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [_wire_call(c, "ollama") for c in reply.tool_calls]
    if reply.thinking is not None:
        message["thinking"] = reply.thinking
    return {
        "model": request.model,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "message": message,
        "done": True,
        "done_reason": reply.finish_reason or "stop",
        "total_duration": 1000,
        "prompt_eval_count": prompt,
        "eval_count": completion,
    }


def openai_reply(request: ScriptedRequest, reply: ScriptedReply) -> dict[str, Any]:
    """The ``/v1/chat/completions`` response body for ``reply``."""
    prompt, completion = _counts(request, reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text if reply.text or not reply.tool_calls else None}
    if reply.tool_calls:
        message["tool_calls"] = [_wire_call(c, "openai") for c in reply.tool_calls]
    if reply.thinking is not None:
        message["reasoning_content"] = reply.thinking
    return {
        "id": f"chatcmpl-scripted-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }
