"""Request shapes per server dialect (Ollama native, llama.cpp server, OpenAI-compatible).

What litellm 1.110.2 does with what we hand it (read from its source and checked on the wire by
the scripted-server tests):

* ``ollama_chat/``: ``OllamaChatConfig.transform_request`` runs ``json.loads`` on every history
  tool call's ``function.arguments``, so we hand it JSON strings and Ollama receives objects (a
  dict would crash that ``json.loads``; an empty string too, so empty arguments go as ``"{}"``).
  ``tool_choice`` is dropped by litellm (Ollama has none), so a forced call is sent as a request
  offering only the forced tool. ``response_format`` of type ``json_schema`` becomes Ollama's
  ``format: <schema>``. Extra keyword arguments such as ``num_ctx`` land in ``options``.
* ``openai/``: messages pass through unchanged, so arguments must already be JSON strings.
* llama.cpp's server (llama-cpp-python) answers 422 to ``response_format`` type ``json_schema``
  but accepts ``{"type": "json_object", "schema": ...}``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from mempa_tui.llm.types import ChatMessage, ToolSpec

__all__ = [
    "WireName",
    "response_format_for",
    "tool_choice_for",
    "tools_for",
    "wire_messages",
]

WireName = Literal["ollama", "llama_cpp", "openai"]


def wire_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Convert messages to litellm's OpenAI-style message dicts.

    Tool-call arguments become JSON strings (``"{}"`` when empty); see the module docstring for
    why that is right for every dialect under litellm 1.110.2.

    Args:
        messages: the conversation.

    Returns:
        One dict per message, with ``tool_calls`` only on assistant messages that have them and
        ``tool_call_id`` / ``name`` only on tool results.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
        if message.role == "tool":
            if message.tool_call_id is not None:
                item["tool_call_id"] = message.tool_call_id
            if message.name is not None:
                item["name"] = message.name
        out.append(item)
    return out


def tools_for(tools: list[ToolSpec] | None, tool_choice: str | None, wire: WireName) -> list[dict[str, Any]] | None:
    """The ``tools`` list to send.

    Args:
        tools: offered tools, or None.
        tool_choice: None, ``auto``, ``required``, ``none`` or a tool name.
        wire: the dialect.

    Returns:
        OpenAI function-tool dicts; for Ollama (which has no ``tool_choice``) only the forced tool
        when one is named, and no tools for ``none``. None when no tools are offered.

    Raises:
        ValueError: ``tool_choice`` names a tool that is not offered, or is given without tools.
    """
    if not tools:
        if tool_choice not in (None, "auto", "none"):
            raise ValueError(f"tool_choice {tool_choice!r} given but no tools offered")
        return None
    names = [t.name for t in tools]
    if tool_choice not in (None, "auto", "required", "none") and tool_choice not in names:
        raise ValueError(f"tool_choice {tool_choice!r} names no offered tool (offered: {', '.join(names)})")
    chosen = tools
    if wire == "ollama" and tool_choice == "none":
        return None
    if wire == "ollama" and tool_choice not in (None, "auto", "required", "none"):
        chosen = [t for t in tools if t.name == tool_choice]
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in chosen
    ]


def tool_choice_for(tool_choice: str | None, wire: WireName, tool_names: list[str]) -> str | dict[str, Any] | None:
    """The ``tool_choice`` value to send (None: send nothing).

    OpenAI-compatible servers get ``"auto"``/``"required"``/``"none"`` as strings and a forced tool
    as ``{"type": "function", "function": {"name": ...}}``. Ollama gets nothing (litellm drops it;
    :func:`tools_for` narrows the tools instead). llama-cpp-python's ``chatml-function-calling``
    format hides the tools when no choice is sent and fails an assertion on ``"required"``, so the
    llama.cpp dialect sends ``"auto"`` for None and for ``"required"`` (a forced call when exactly
    one tool is offered).

    Args:
        tool_choice: None, ``auto``, ``required``, ``none`` or a tool name.
        wire: the dialect.
        tool_names: names of the tools being offered.
    """
    if wire == "ollama":
        return None
    if wire == "llama_cpp":
        if tool_choice == "required" and len(tool_names) == 1:
            tool_choice = tool_names[0]
        elif tool_choice in (None, "required"):
            tool_choice = "auto"
    if tool_choice is None or tool_choice in ("auto", "required", "none"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


def response_format_for(json_schema: dict[str, Any] | None, wire: WireName) -> dict[str, Any] | None:
    """The ``response_format`` asking for JSON output matching ``json_schema``.

    Args:
        json_schema: a JSON schema of the reply object, or None for free text.
        wire: the dialect.

    Returns:
        ``{"type": "json_object", "schema": ...}`` for llama.cpp; OpenAI's ``json_schema`` form
        otherwise (litellm turns it into Ollama's ``format`` for ``ollama_chat/``); None for text.
    """
    if json_schema is None:
        return None
    if wire == "llama_cpp":
        return {"type": "json_object", "schema": json_schema}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema}}
