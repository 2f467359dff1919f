"""Interaction tools ``IX_<attribute>``: payload models, tool specs and argument parsing.

Paper Section 3.4 ('IX Wrapper') and Appendix E.2: at a decision point the PA states its choice by
calling the attribute's interaction tool with one setting; the first call fixes the setting for
the session and later calls carry only turn-level payloads (rationale, confidence notes, process
notes, outreach message, topic batches, questions). The JSON schema of every tool is generated
from the pydantic models below, never written by hand.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mempa_tui.llm.types import ToolSpec
from mempa_tui.taxonomy import Attribute, Mechanism, attribute

__all__ = [
    "PAYLOAD_FIELDS",
    "ConfidenceNote",
    "IXArguments",
    "IXArgumentsError",
    "TopicBatch",
    "ix_tool_spec",
    "match_setting",
    "parse_ix_arguments",
    "required_payload",
]


class ConfidenceNote(BaseModel):
    """One key claim of the reply with how sure the PA is of it (Uncertainty Expression)."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(min_length=1, description="The claim, as one short sentence.")
    level: Literal["high", "medium", "low"] = Field(
        description="How strongly the evidence supports the claim."
    )


class TopicBatch(BaseModel):
    """One topic the user raised, with the PA's content for it (Topic Management)."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, description="A short heading naming the topic.")
    content: str = Field(
        min_length=1, description="What the PA has to say about this topic."
    )


class IXArguments(BaseModel):
    """Parsed arguments of one ``IX_<attribute>`` call.

    Attributes:
        attribute: key of the attribute whose tool was called.
        setting: the setting named in the call (canonical spelling), or None for a payload-only
            call.
        payload: the turn-level payload fields present in the call (field name -> parsed value,
            nested models dumped to plain JSON values).
    """

    attribute: str
    setting: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class IXArgumentsError(ValueError):
    """An ``IX_<attribute>`` call whose arguments do not fit the tool's schema.

    The message names the attribute, the offending field and the reason; the PA receives it as
    the tool result.
    """


# The payload fields of each attribute (see the table in mempa_tui.ix.types): name -> (type, text).
_PAYLOAD_SPECS: dict[str, dict[str, tuple[Any, str]]] = {
    "reasoning_visibility": {
        "rationale": (
            str,
            (
                "A paragraph naming the evidence you used and the factor that decided the matter. "
                "Whether the user sees it depends on the setting."
            ),
        ),
    },
    "uncertainty_expression": {
        "confidence_notes": (
            list[ConfidenceNote],
            (
                "The key claims of this turn's reply, each with how sure you are (high, medium or "
                "low). Whether the user sees them depends on the setting."
            ),
        ),
    },
    "process_visibility": {
        "opening": (str, "One sentence that frames the task before the result."),
        "call_notes": (
            list[str],
            "One short sentence per task tool call of this turn, in the order you made the calls.",
        ),
        "closing": (str, "One sentence saying the task is finished."),
    },
    "proactive_outreach": {
        "message": (
            str,
            (
                "What you would tell the user about the event: what changed or fell due. Delivered "
                "only when the setting says to reach out."
            ),
        ),
    },
    "topic_management": {
        "topics": (
            list[TopicBatch],
            (
                "Every topic the user raised this turn, in the order to handle them, each with a "
                "label and its content."
            ),
        ),
    },
    "information_elicitation": {
        "questions": (
            list[str],
            "The questions for the information the request leaves out, one per missing field.",
        ),
    },
}

#: attribute key -> names of its turn-level payload fields (empty for the other attributes).
PAYLOAD_FIELDS: dict[str, tuple[str, ...]] = {
    key: tuple(fields) for key, fields in _PAYLOAD_SPECS.items()
}

# Payload fields the PA must supply in a turn where the setting is selected (or, for proactive
# outreach, on an event turn), by attribute and setting. Settings not listed need none.
_REQUIRED: dict[str, dict[str, tuple[str, ...]]] = {
    "reasoning_visibility": {"Show": ("rationale",)},
    "uncertainty_expression": {"Express": ("confidence_notes",)},
    "process_visibility": {
        "Bookend": ("opening", "closing"),
        "Full narration": ("closing",),
    },
    "proactive_outreach": {"High": ("message",)},
    "topic_management": {"Organize": ("topics",), "One-at-a-time": ("topics",)},
    "information_elicitation": {
        "Structured": ("questions",),
        "Iterative": ("questions",),
    },
}

_MECHANISM_USE = {
    Mechanism.PASS_THROUGH: "your wording is delivered as you write it",
    Mechanism.SELECTIVE_RENDERING: (
        "the harness shows or withholds the payload you supply according to the setting"
    ),
    Mechanism.DELIVERY_CONTROL: (
        "the harness schedules the payload you supply (what reaches the user, and when)"
    ),
    Mechanism.EXECUTION_CONTROL: (
        "the harness runs, holds for the user's approval, or refuses your task tool calls "
        "according to the setting"
    ),
}


def required_payload(attribute_key: str, setting: str) -> tuple[str, ...]:
    """Payload fields the PA must give in the turn it selects ``setting`` (Appendix C.3 (4)).

    Only selective-rendering and delivery-control attributes have required payloads; for
    Proactive Outreach the requirement also holds on every later event turn of the session.

    Returns:
        The field names, possibly empty.
    """
    return _REQUIRED.get(attribute_key, {}).get(setting, ())


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.strip().lower())


def match_setting(attr: Attribute, value: str) -> str | None:
    """Canonical setting name for ``value``, ignoring case, spaces, hyphens and underscores.

    Returns:
        The setting name as Table 4 spells it, or None when nothing matches.
    """
    wanted = _norm(value)
    for name in attr.setting_names:
        if _norm(name) == wanted:
            return name
    return None


@cache
def _payload_model(attr: Attribute) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, (typ, text) in _PAYLOAD_SPECS.get(attr.key, {}).items():
        fields[name] = (typ | None, Field(default=None, description=text))
    return create_model(
        f"IXPayload_{attr.key}",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )


def _arguments_model(attr: Attribute) -> type[BaseModel]:
    setting_type: Any = Literal.__getitem__(attr.setting_names)
    settings_text = " ".join(f"'{s.name}': {s.behaviour}" for s in attr.settings)
    fields: dict[str, Any] = {
        "setting": (
            setting_type,
            Field(
                description=(
                    "The setting you choose for the rest of this session. "
                    f"The choices and what each looks like to the user: {settings_text} "
                    "Later calls in the same session must repeat the same setting."
                )
            ),
        )
    }
    for name, (typ, text) in _PAYLOAD_SPECS.get(attr.key, {}).items():
        fields[name] = (typ | None, Field(default=None, description=text))
    return create_model(
        f"IX_{attr.key}",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``$ref`` to ``$defs`` in place so small models see a flat schema."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **rest})
            return {k: walk(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)  # type: ignore[no-any-return]


def _simplify_optional(node: Any) -> Any:
    """Turn pydantic's ``anyOf: [X, null]`` for optional fields into plain ``X``."""
    if isinstance(node, dict):
        any_of = node.get("anyOf")
        if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
            inner = next(v for v in any_of if v != {"type": "null"})
            rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
            return _simplify_optional({**inner, **rest})
        return {k: _simplify_optional(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_simplify_optional(v) for v in node]
    return node


def ix_tool_spec(attr: Attribute | str) -> ToolSpec:
    """The tool spec of ``IX_<key>`` for one attribute (paper Section 3.4, Appendix E.2).

    Args:
        attr: the attribute or its key / display name.

    Returns:
        A :class:`ToolSpec` whose parameters require ``setting`` (an enum of the attribute's
        settings, each explained by its observable behaviour) and allow the attribute's
        turn-level payload fields.

    Raises:
        KeyError: unknown attribute.
    """
    key = attribute(attr).key if isinstance(attr, str) else attr.key
    return _tool_spec(key).model_copy(
        deep=True
    )  # callers may not mutate the cached schema


@cache
def _tool_spec(key: str) -> ToolSpec:
    a = attribute(key)
    schema = _simplify_optional(_inline_refs(_arguments_model(a).model_json_schema()))
    schema.pop("title", None)
    uses = "; ".join(_MECHANISM_USE[m] for m in a.mechanisms)
    payload_names = PAYLOAD_FIELDS.get(a.key, ())
    payload_text = (
        " Fill "
        + ", ".join(payload_names)
        + " in the turn you choose and in later turns that "
        "need them; a later call may repeat the setting with only new payload."
        if payload_names
        else ""
    )
    description = (
        f"Decide '{a.name}' for this session: {a.question} Call this before you act on that "
        f"decision. The first call fixes the setting for the rest of the session; {uses}."
        + payload_text
    )
    return ToolSpec(name=a.ix_tool, description=description, parameters=schema)


def parse_ix_arguments(attr: Attribute, arguments: dict[str, Any]) -> IXArguments:
    """Validate the arguments of an ``IX_<key>`` call.

    ``setting`` is matched leniently (case, spaces, hyphens); payload fields are validated by
    the generated pydantic model. ``setting`` may be missing for a payload-only call.

    Raises:
        IXArgumentsError: an unknown setting, an unknown field or a payload of the wrong shape;
            the message names the field and lists what is allowed.
    """
    args = dict(arguments)
    raw_setting = args.pop("setting", None)
    setting: str | None = None
    if raw_setting is not None and raw_setting != "":
        if not isinstance(raw_setting, str):
            raise IXArgumentsError(
                f"{attr.ix_tool}: 'setting' must be a string, got {raw_setting!r}; valid "
                f"settings: {', '.join(attr.setting_names)}"
            )
        setting = match_setting(attr, raw_setting)
        if setting is None:
            raise IXArgumentsError(
                f"{attr.ix_tool}: {raw_setting!r} is not a setting of {attr.name}; valid "
                f"settings: {', '.join(attr.setting_names)}"
            )
    try:
        parsed = _payload_model(attr).model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        allowed = ", ".join(("setting", *PAYLOAD_FIELDS.get(attr.key, ())))
        raise IXArgumentsError(
            f"{attr.ix_tool}: bad arguments ({problems}); allowed fields: {allowed}"
        ) from exc
    payload = parsed.model_dump(mode="json", exclude_none=True)
    return IXArguments(attribute=attr.key, setting=setting, payload=payload)
