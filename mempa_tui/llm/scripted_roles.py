"""A deterministic responder that plays every role of a run through the real protocol formats.

It sits behind :class:`~mempa_tui.llm.scripted.ScriptedModelServer` (real HTTP on loopback), so a
whole timeline — simulator turns, PA tool loop with IX calls and payloads, message checker, memory
consolidation, judge and PRS rater — runs through litellm with no model. The test suite uses it to
check scores computed by hand from scripted selections, and ``benchmarks/bench_harness.py`` uses
it to measure the harness's own overhead (SPEC section 7).

Roles are told apart by the model name the profile gives each role (``scripted-<role>``, see
:meth:`ScriptedModelServer.profile`). The PA's selection is decided by a ``choose`` callback, so a
caller can script exactly which setting the PA picks for which request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mempa_tui.llm._scripted_wire import ScriptedReply, ScriptedRequest, ScriptedToolCall

__all__ = ["Chooser", "RolePlayer", "fill_schema"]

Chooser = Callable[[str, ScriptedRequest], str]
"""``(attribute_key, pa_request) -> setting name`` the scripted PA selects."""


def fill_schema(schema: dict[str, Any], overrides: dict[str, object] | None = None) -> object:
    """A value that satisfies a JSON schema (first enum value, false booleans, short strings).

    Args:
        schema: a JSON-schema object as the tools and JSON replies use.
        overrides: top-level property name -> value to use instead.

    Returns:
        A JSON-serialisable value of the schema's shape.
    """
    overrides = overrides or {}
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return fill_schema(options[0] if options else {}, None)
    kind = schema.get("type")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {k: overrides.get(k, fill_schema(v)) for k, v in props.items()}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        return [fill_schema(item)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 5))
        return max(low, min(4, high))
    return "A short note written by the scripted model."


def _first_setting(attribute_key: str, request: ScriptedRequest) -> str:
    for tool in request.tools:
        if tool.name == f"IX_{attribute_key}":
            return str(tool.parameters["properties"]["setting"]["enum"][0])
    raise KeyError(attribute_key)


class RolePlayer:
    """Responder playing simulator, PA, checker, memory LLM, judge and PRS rater.

    Args:
        choose: decides the PA's setting for each IX tool it is offered (default: the first
            setting in Table 4 order).
        user_line: builds the simulator's message from its request (default: a fixed request).
        brs: the judge's score. prs: the rater's score.
        pa_reply: the PA's reply text once its IX calls are made.
    """

    def __init__(
        self,
        *,
        choose: Chooser | None = None,
        user_line: Callable[[ScriptedRequest], str] | None = None,
        brs: int = 4,
        prs: int = 5,
        pa_reply: str = "Done - here is what I found and did.",
    ) -> None:
        self.choose = choose or _first_setting
        self.user_line = user_line or (lambda _r: "Could you sort this out for me, please?")
        self.brs = brs
        self.prs = prs
        self.pa_reply = pa_reply

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        """Answer one request as the role its model name names."""
        role = request.model.rsplit("-", 1)[-1]
        schema = request.json_schema
        if role == "pa":
            return self._pa(request)
        if schema is not None:
            props = schema.get("properties", {})
            if "score" in props:
                score = self.brs if role == "judge" else self.prs
                return json.dumps(fill_schema(schema, {"score": score}))
            if "entry" in props:
                return json.dumps(fill_schema(schema, {
                    "entry": "I asked the assistant for help today. It handled the request and we "
                    "wrapped up without fuss.",
                }))
            return json.dumps(fill_schema(schema))
        if role == "simulator":
            return (
                "<factual_check>none</factual_check><turn_assessment>advance</turn_assessment>"
                f"<message>{self.user_line(request)}</message>"
            )
        return "ok"

    def _pa(self, request: ScriptedRequest) -> ScriptedReply:
        last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=0)
        called = {
            call.name
            for message in request.messages[last_user:]
            if message.role == "assistant"
            for call in message.tool_calls
        }
        for tool in request.tools:
            if not tool.name.startswith("IX_") or tool.name in called:
                continue
            key = tool.name.removeprefix("IX_")
            arguments = fill_schema(tool.parameters)
            assert isinstance(arguments, dict)
            arguments["setting"] = self.choose(key, request)
            return ScriptedReply(tool_calls=[ScriptedToolCall(name=tool.name, arguments=arguments)])
        return ScriptedReply(text=self.pa_reply, prompt_tokens=40, completion_tokens=8)
