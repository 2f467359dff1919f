"""Generating a tool's argument model and JSON schema from its signature and docstring.

Source: STYLE.md (tau2-bench / inspect habit): a tool is a typed function; its schema is derived,
never written by hand. Each parameter's description comes from the Google-style ``Args:`` section.
Also turns pydantic validation errors into one message naming argument, value and reason
(paper Appendix C.2, 'Argument checks').
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

__all__ = ["DocSections", "build_args_model", "clean_schema", "format_validation_error", "parse_docstring"]

_SECTION_RE = re.compile(r"^(Args|Arguments|Returns|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class DocSections(BaseModel):
    """A Google-style docstring split into its parts.

    Attributes:
        summary: the text before the first section header.
        args: parameter name -> description (continuation lines joined with spaces).
        returns: the ``Returns:`` text, joined into one paragraph.
    """

    summary: str
    args: dict[str, str]
    returns: str


def parse_docstring(doc: str) -> DocSections:
    """Split a cleaned docstring (``inspect.getdoc``) into summary, Args and Returns."""
    lines = doc.splitlines()
    summary: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        header = _SECTION_RE.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if header:
            name = header.group(1)
            current = sections.setdefault("Args" if name == "Arguments" else name, [])
            continue
        (summary if current is None else current).append(line)
    args: dict[str, str] = {}
    arg_lines = sections.get("Args", [])
    indent = min((len(ln) - len(ln.lstrip()) for ln in arg_lines if ln.strip()), default=0)
    last: str | None = None
    for line in arg_lines:
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) == indent and (m := _ARG_RE.match(line.strip())):
            last = m.group(1).lstrip("*")
            args[last] = m.group(2).strip()
        elif last is not None:
            args[last] = f"{args[last]} {line.strip()}".strip()
    returns = " ".join(ln.strip() for ln in sections.get("Returns", []) if ln.strip())
    return DocSections(summary="\n".join(summary).strip(), args=args, returns=returns)


def build_args_model(func: Callable[..., Any], name: str, docs: DocSections) -> type[BaseModel]:
    """A pydantic model of ``func``'s parameters after the first (the working copy).

    Args:
        func: the tool function; its first parameter is the working copy.
        name: the tool name, used to name the model.
        docs: the parsed docstring; every parameter must have a description in ``Args:``.

    Returns:
        A model that forbids unknown keys; a parameter without a default is required.

    Raises:
        TypeError: a parameter lacks a type hint or a docstring description, is ``*args``, or the
            docstring describes a parameter the function does not have (programming errors).
    """
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    params = list(sig.parameters.values())
    if not params:
        raise TypeError(f"tool {name}: the first parameter must be the working copy")
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(f"tool {name}: parameter {param.name} must be a plain keyword parameter")
        if param.name not in hints:
            raise TypeError(f"tool {name}: parameter {param.name} has no type hint")
        description = docs.args.get(param.name)
        if not description:
            raise TypeError(f"tool {name}: parameter {param.name} has no description under Args:")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=description))
    extra = set(docs.args) - set(fields)
    if extra:
        raise TypeError(f"tool {name}: docstring describes unknown parameter(s) {sorted(extra)}")
    model_name = "".join(part.title() for part in name.split("_")) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def _strip_titles(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and not in_properties:
                continue
            out[key] = _strip_titles(value, in_properties=(key == "properties" and not in_properties))
        return out
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = dict(defs[ref.split("/")[-1]])
            target.update({k: v for k, v in node.items() if k != "$ref"})
            return _inline_refs(target, defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def _drop_null_options(node: Any) -> Any:
    """``anyOf: [X, {type: null}]`` with a null default -> ``X`` (the argument is just optional)."""
    if isinstance(node, dict):
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            other = next(o for o in options if o != {"type": "null"})
            merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **other}
            if merged.get("default", 0) is None:
                merged.pop("default")
            return _drop_null_options(merged)
        return {k: _drop_null_options(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_drop_null_options(v) for v in node]
    return node


def clean_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of an arguments model, made easy for small models to read.

    No titles, ``$ref`` inlined, ``X | None = None`` shown as an optional ``X``; unknown keys
    forbidden (``additionalProperties: false``).
    """
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})
    schema = _drop_null_options(_inline_refs(_strip_titles(raw), _strip_titles(defs)))
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema  # type: ignore[no-any-return]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def format_validation_error(exc: ValidationError, valid: list[str]) -> str:
    """One message for all problems of a call's arguments.

    Each problem names the argument, the value and the reason, e.g.
    ``start_time '9am' is not a 24-hour HH:MM time``.

    Args:
        exc: the error from validating the arguments model.
        valid: the tool's argument names, listed when an unknown one was given.
    """
    parts: list[str] = []
    for err in exc.errors():
        loc = err["loc"]
        path = str(loc[0]) if loc else "arguments"
        for part in loc[1:]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        kind = err["type"]
        msg = str(err["msg"])
        if kind == "missing":
            parts.append(f"missing required argument {path!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument {path!r} (valid arguments: {', '.join(valid) or 'none'})")
        elif kind in ("value_error", "assertion_error"):
            msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
            parts.append(f"{path} {_shown(err['input'])} {msg}")
        else:
            parts.append(f"{path} {_shown(err['input'])} is invalid: {msg}")
    return "; ".join(parts)
