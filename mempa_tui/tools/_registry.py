"""The tool registry: typed world tools, their generated schemas, and safe calls.

Source: paper Appendix C.2 (tools, 'Argument checks', 'Tool behavior and logs'), Table 7 (names,
domains, which tools write and which act outward), Appendix A.1 Table 4 / Appendix E (the draft,
routine and key tags the Autonomy Level wrapper holds by), Appendix C.3 mechanism 3 (write lock).

A tool is a function ``f(wc: WorkingCopy, **arguments) -> JSON value`` decorated with :func:`tool`.
It raises :class:`ToolError` for a bad value it detects itself; :meth:`ToolRegistry.call` turns
that, and every argument-validation failure, into ``ToolResult(ok=False, ...)``, undoing any write.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, JsonValue, ValidationError

from mempa_tui.llm.types import ToolSpec
from mempa_tui.tools._common import DOMAINS, ToolError
from mempa_tui.tools._schema import build_args_model, clean_schema, format_validation_error, parse_docstring
from mempa_tui.world import WorkingCopy
from mempa_tui.world.working_copy import TOOL_PREFIX, strip_tool_prefix

__all__ = ["CatalogEntry", "ToolDef", "ToolRegistry", "ToolResult", "ToolTag", "tool"]

#: Write tags: ``draft``/``routine``/``key`` for writes to the user's own records, ``outward`` for
#: writes that act toward other people or services (Table 7's dagger).
ToolTag = Literal["draft", "routine", "key", "outward"]

_DOMAIN_KEYS = {key for key, _ in DOMAINS}


@dataclass(frozen=True)
class ToolDef:
    """One world tool.

    Attributes:
        name: the name without prefix, as in Table 7, e.g. ``email_message_send``.
        domain: the domain key (see :data:`~mempa_tui.tools._common.DOMAINS`).
        write: whether it changes the world.
        tag: draft, routine, key or outward for writes; None for reads.
        description: what the model is told (docstring summary and Returns text).
        func: the implementation.
        args_model: pydantic model of its arguments, generated from the signature.
        parameters: the JSON schema of the arguments (generated from ``args_model``).
    """

    name: str
    domain: str
    write: bool
    tag: ToolTag | None
    description: str
    func: Callable[..., JsonValue]
    args_model: type[BaseModel]
    parameters: dict[str, Any]

    @property
    def outward(self) -> bool:
        """Whether it acts toward other people or services (sends, books, pays, submits)."""
        return self.tag == "outward"

    @property
    def full_name(self) -> str:
        """The name the PA sees: ``mcp_state_<name>``."""
        return TOOL_PREFIX + self.name

    def spec(self) -> ToolSpec:
        """The function spec offered to a model."""
        return ToolSpec(name=self.full_name, description=self.description, parameters=self.parameters)


def tool(
    *, domain: str, write: bool = False, tag: ToolTag | None = None
) -> Callable[[Callable[..., JsonValue]], ToolDef]:
    """Turn a function into a :class:`ToolDef`, generating its schema.

    Args:
        domain: a domain key of Table 7 (see ``DOMAINS``).
        write: True for a tool that changes the world.
        tag: required for writes (draft, routine, key, outward), forbidden for reads.

    Raises:
        TypeError: bad domain/tag combination, or a parameter without a type hint or docstring
            description (raised when the module defining the tool is imported).
    """
    if domain not in _DOMAIN_KEYS:
        raise TypeError(f"unknown tool domain {domain!r}")
    if write != (tag is not None):
        raise TypeError("a write tool needs a tag and a read tool must not have one")

    def wrap(func: Callable[..., JsonValue]) -> ToolDef:
        name = func.__name__
        docs = parse_docstring(inspect.getdoc(func) or "")
        if not docs.summary:
            raise TypeError(f"tool {name}: missing docstring summary")
        model = build_args_model(func, name, docs)
        description = docs.summary.replace("\n", " ")
        if docs.returns:
            description += f" Returns {docs.returns[0].lower()}{docs.returns[1:]}"
        return ToolDef(
            name=name,
            domain=domain,
            write=write,
            tag=tag,
            description=description,
            func=func,
            args_model=model,
            parameters=clean_schema(model),
        )

    return wrap


class ToolResult(BaseModel):
    """What a tool call returns to the caller.

    Attributes:
        ok: False when the call was rejected (nothing was written).
        content: the text the PA gets back: the JSON result, or the error message.
        error: the error message of a rejected call, else None.
        data: the JSON result of a successful call, else None.
    """

    ok: bool
    content: str
    error: str | None = None
    data: JsonValue = None

    @classmethod
    def failure(cls, message: str) -> ToolResult:
        """A rejected call."""
        return cls(ok=False, content=message, error=message)


class CatalogEntry(BaseModel):
    """One row of the tool catalog (``mempa tools list``).

    Attributes:
        name: tool name without prefix.
        domain: domain key; domain_title its Table 7 title.
        write: read or write; tag: the write tag; outward: acts toward others.
        summary: first sentence of the description.
    """

    name: str
    domain: str
    domain_title: str
    write: bool
    tag: ToolTag | None
    outward: bool
    summary: str


class ToolRegistry:
    """A set of world tools by name.

    Args:
        tools: the tools to hold.

    Raises:
        ValueError: two tools share a name.
    """

    def __init__(self, tools: Iterable[ToolDef] = ()) -> None:
        self._tools: dict[str, ToolDef] = {}
        for t in tools:
            self.register(t)

    def register(self, tdef: ToolDef) -> None:
        """Add a tool.

        Raises:
            ValueError: the name is taken.
        """
        if tdef.name in self._tools:
            raise ValueError(f"tool {tdef.name!r} is registered twice")
        self._tools[tdef.name] = tdef

    def get(self, name: str) -> ToolDef | None:
        """The tool called ``name`` (with or without the ``mcp_state_`` prefix), else None."""
        return self._tools.get(strip_tool_prefix(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[ToolDef]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self._tools)

    def tools(self) -> list[ToolDef]:
        """All tools sorted by domain, then name."""
        return sorted(self._tools.values(), key=lambda t: (t.domain, t.name))

    def specs(self) -> list[ToolSpec]:
        """Specs named ``mcp_state_<tool>``, sorted by domain then name (a stable prompt prefix)."""
        return [t.spec() for t in self.tools()]

    def domains(self) -> tuple[str, ...]:
        """The domain keys of the held tools, in Table 7 order."""
        held = {t.domain for t in self._tools.values()}
        return tuple(key for key, _ in DOMAINS if key in held)

    def restricted(self, domains: Iterable[str] | None) -> ToolRegistry:
        """A registry holding only the tools of ``domains`` (the quick start's offer, issue 12).

        Args:
            domains: domain keys of Table 7; None keeps every tool (returns this registry).

        Returns:
            A new registry (or ``self`` for None); a tool outside the domains is then unknown to
            it, so it is neither offered to the PA nor run.

        Raises:
            ValueError: a key is not a domain of Table 7, or none of the held tools is in them.
        """
        if domains is None:
            return self
        wanted = set(domains)
        unknown = sorted(wanted - _DOMAIN_KEYS)
        if unknown:
            raise ValueError(f"unknown tool domain(s) {', '.join(unknown)}; valid: {', '.join(sorted(_DOMAIN_KEYS))}")
        kept = [t for t in self._tools.values() if t.domain in wanted]
        if not kept:
            raise ValueError(f"no tool of this registry is in the domains {', '.join(sorted(wanted))}")
        return ToolRegistry(kept)

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Names of up to ``n`` tools spelt most like ``name``."""
        return difflib.get_close_matches(strip_tool_prefix(name), list(self._tools), n=n, cutoff=0.5)

    def unknown_tool_message(self, name: str) -> str:
        """The error for a name no tool has, with the closest names."""
        close = self.closest(name)
        hint = f"closest: {', '.join(close)}" if close else "no tool has a similar name"
        return f"unknown tool {name!r}; {hint}"

    def catalog(self) -> list[CatalogEntry]:
        """One row per tool, in Table 7 domain order, then by name."""
        order = {key: i for i, (key, _) in enumerate(DOMAINS)}
        titles = dict(DOMAINS)
        rows = sorted(self._tools.values(), key=lambda t: (order[t.domain], t.name))
        return [
            CatalogEntry(
                name=t.name,
                domain=t.domain,
                domain_title=titles[t.domain],
                write=t.write,
                tag=t.tag,
                outward=t.outward,
                summary=t.description.split(". ")[0].rstrip(".") + ".",
            )
            for t in rows
        ]

    def call(self, wc: WorkingCopy, name: str, arguments: object) -> ToolResult:
        """Validate and run one tool call on ``wc``; log it; never raise for bad input.

        Order: name, argument validation, write lock, then the tool inside a transaction, so a
        rejected call writes nothing.

        Args:
            wc: the step's working copy.
            name: tool name, with or without ``mcp_state_``.
            arguments: the arguments object as the caller gave it.

        Returns:
            ``ok=True`` with the JSON result, or ``ok=False`` with a message naming the argument,
            the value and the reason.

        Raises:
            FixtureError: a collection file of the world is invalid (a broken fixture, not bad
                input); nothing is written.
            Exception: only a bug in a tool (not bad input) propagates, after its writes are undone.
        """
        logged: JsonValue = _loggable(arguments)
        tdef = self.get(name)
        if tdef is None:
            return self._reject(wc, name, logged, self.unknown_tool_message(name))
        if not isinstance(arguments, Mapping):
            msg = f"arguments must be a JSON object, got {type(arguments).__name__}"
            return self._reject(wc, tdef.name, logged, msg)
        try:
            parsed = tdef.args_model.model_validate(dict(arguments))
        except ValidationError as exc:
            msg = f"{tdef.name}: " + format_validation_error(exc, list(tdef.args_model.model_fields))
            return self._reject(wc, tdef.name, logged, msg)
        values = {key: getattr(parsed, key) for key in tdef.args_model.model_fields}
        if tdef.write:
            lock = wc.locked_by(tdef.name, values)
            if lock is not None:
                msg = (
                    f"{tdef.name}: this change needs content the user has not provided yet; "
                    "ask the user for it before trying again. Nothing was written."
                )
                return self._reject(wc, tdef.name, logged, msg)
        try:
            with wc.transaction(tool=tdef.name):
                result = tdef.func(wc, **values)
                content = json.dumps(result, ensure_ascii=False)
        except ToolError as exc:
            return self._reject(wc, tdef.name, logged, f"{tdef.name}: {exc}")
        except ValidationError as exc:
            msg = f"{tdef.name}: " + format_validation_error(exc, list(tdef.args_model.model_fields))
            return self._reject(wc, tdef.name, logged, msg)
        wc.log_call(tdef.name, logged, True)
        return ToolResult(ok=True, content=content, data=result)

    @staticmethod
    def _reject(wc: WorkingCopy, name: str, arguments: JsonValue, message: str) -> ToolResult:
        wc.log_call(name, arguments, False, message)
        return ToolResult.failure(message)


def _loggable(arguments: object) -> JsonValue:
    """The arguments as JSON data for the call log (anything odd is logged as its repr)."""
    try:
        return json.loads(json.dumps(arguments))  # type: ignore[no-any-return]
    except (TypeError, ValueError):
        return repr(arguments)
