"""Forms generated from tool JSON schemas, for a person in the PA seat (SPEC §4.11 'Play as the PA').

A form is a list of :class:`FormField` read from a :class:`~mempa_tui.llm.types.ToolSpec`'s
``parameters``; :func:`arguments_from_form` turns the person's text entries back into the
arguments object the tool (or IX tool) receives. The schema is the only source: nothing is
described twice. Nothing here imports Textual.

Entry formats: text as typed; integers and numbers as digits; booleans ``true``/``false``
(also yes/no); enums one of the listed choices; a list of strings as comma-separated items (or a
JSON array); anything else (lists of objects, objects) as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from mempa_tui.llm.types import ToolSpec

__all__ = ["FieldKind", "FormError", "FormField", "arguments_from_form", "form_fields"]

FieldKind = Literal["text", "integer", "number", "boolean", "choice", "list", "json"]
"""How a field is entered (see the module docstring)."""


class FormError(ValueError):
    """A form entry cannot become the tool's argument; the message names the field and why."""


class FormField(BaseModel):
    """One argument of a tool as a form shows it."""

    name: str
    """The argument's name."""
    kind: FieldKind
    """How it is entered."""
    required: bool = False
    """The schema requires it."""
    description: str = ""
    """The schema's description of the argument."""
    choices: list[str] = Field(default_factory=list)
    """Allowed values of a ``choice`` field, in schema order."""
    default: str = ""
    """The schema's default as entry text ('' when none)."""
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    """The argument's own JSON schema (for ``json`` fields' hints)."""

    model_config = {"populate_by_name": True}


def _kind(schema: Mapping[str, Any]) -> FieldKind:
    if "enum" in schema:
        return "choice"
    kind = schema.get("type")
    if kind == "string":
        return "text"
    if kind in ("integer", "number", "boolean"):
        return kind  # type: ignore[return-value]
    if kind == "array" and isinstance(schema.get("items"), Mapping) and schema["items"].get("type") == "string":
        return "list"
    return "json"


def _default_text(schema: Mapping[str, Any]) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    if isinstance(value, str):
        return value
    if isinstance(value, list) and not value:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def form_fields(spec: ToolSpec) -> list[FormField]:
    """The form of one tool: its arguments in schema order, required ones first.

    Raises:
        FormError: the parameters are not an object schema.
    """
    params = spec.parameters
    if params.get("type") != "object" or not isinstance(params.get("properties", {}), Mapping):
        raise FormError(f"{spec.name}: parameters are not an object schema")
    required = set(params.get("required", []))
    fields = [
        FormField(
            name=name, kind=_kind(schema), required=name in required,
            description=str(schema.get("description", "")),
            choices=[str(c) for c in schema.get("enum", [])], default=_default_text(schema), schema=dict(schema),
        )
        for name, schema in params.get("properties", {}).items()
    ]
    return sorted(fields, key=lambda f: not f.required)


def _value(spec: ToolSpec, field: FormField, text: str) -> Any:
    where = f"{spec.name}: field '{field.name}'"
    if field.kind == "text":
        return text
    if field.kind == "choice":
        if text not in field.choices:
            raise FormError(f"{where}: {text!r} is not one of {', '.join(field.choices)}")
        return text
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise FormError(f"{where}: {text!r} is not a whole number") from None
    if field.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise FormError(f"{where}: {text!r} is not a number") from None
    if field.kind == "boolean":
        low = text.strip().lower()
        if low in ("true", "yes", "y", "1"):
            return True
        if low in ("false", "no", "n", "0"):
            return False
        raise FormError(f"{where}: {text!r} is not true or false")
    if field.kind == "list" and not text.lstrip().startswith("["):
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def arguments_from_form(spec: ToolSpec, values: Mapping[str, str]) -> dict[str, Any]:
    """The arguments object from the person's entries (field name -> text).

    Empty entries are left out (the tool applies its defaults); the tool itself still checks
    every value (dates, times, ids) and answers with an error naming it.

    Args:
        spec: the tool.
        values: entry text per field name.

    Returns:
        The arguments object.

    Raises:
        FormError: a required field is empty, a name is not a field of the tool, or an entry
            cannot be read as its field's kind (the message names the field).
    """
    fields = {f.name: f for f in form_fields(spec)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise FormError(f"{spec.name}: no field named {', '.join(unknown)}")
    arguments: dict[str, Any] = {}
    for name, field in fields.items():
        text = values.get(name, "")
        if not text.strip():
            if field.required:
                raise FormError(f"{spec.name}: field '{name}' is required")
            continue
        arguments[name] = _value(spec, field, text.strip() if field.kind != "text" else text)
    return arguments
