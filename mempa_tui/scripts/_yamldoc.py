"""YAML documents that remember where each key and item sits, and pydantic errors mapped to lines.

The loader composes the node tree (which carries start marks), constructs the plain data from it,
and keeps a map from each location (a tuple of mapping keys and list indices) to a 1-based line.
A pydantic error's ``loc`` is looked up by its longest known prefix: an unknown or bad key points
at that key, a missing field at the mapping that lacks it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

__all__ = ["Loc", "WorldFileError", "YamlDoc", "validate_doc"]

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loader for ``worlds/`` files that reads ``10:30`` as text, not YAML 1.1's base-60 630."""


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _INT,
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)

#: A location inside a document: mapping keys and list indices, e.g. ``("beats", 2, "records", 0)``.
Loc = tuple[str | int, ...]

M = TypeVar("M", bound=BaseModel)

_QUOTED = re.compile(r"'([^']+)'")
_FIELD_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): ")


class WorldFileError(Exception):
    """A problem in a ``worlds/`` file, with the 1-based line of the offending key or value.

    ``str(error)`` is ``path:line: message``.

    Attributes:
        path: the file.
        line: 1-based line (1 for a file-level problem).
        message: what is wrong.
    """

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")


def _key(part: str | int) -> str:
    return str(part)


class YamlDoc:
    """A parsed YAML file with a line for every key and list item.

    Args:
        path: the file (used in error messages).
        data: the constructed data.
        lines: location (parts as strings) -> 1-based line.
        scalars: (text, location, line) of every scalar key and value, in document order.
    """

    def __init__(
        self,
        path: Path,
        data: Any,
        lines: dict[tuple[str, ...], int],
        scalars: list[tuple[str, tuple[str, ...], int]],
    ) -> None:
        self.path = path
        self.data = data
        self._lines = lines
        self._scalars = scalars

    @classmethod
    def read(cls, path: Path) -> YamlDoc:
        """Read and parse ``path``.

        Raises:
            WorldFileError: unreadable, not UTF-8, or not valid YAML (with the parser's line).
        """
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WorldFileError(path, 1, f"cannot read file: {exc}") from exc
        return cls.parse(path, text)

    @classmethod
    def parse(cls, path: Path, text: str) -> YamlDoc:
        """Parse YAML text (see :meth:`read`)."""
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc)
            raise WorldFileError(path, line, f"invalid YAML: {problem}") from exc
        finally:
            loader.dispose()
        lines: dict[tuple[str, ...], int] = {}
        scalars: list[tuple[str, tuple[str, ...], int]] = []
        if node is not None:
            cls._walk(node, (), lines, scalars)
        return cls(path, data, lines, scalars)

    @classmethod
    def _walk(
        cls,
        node: yaml.Node,
        loc: tuple[str, ...],
        lines: dict[tuple[str, ...], int],
        scalars: list[tuple[str, tuple[str, ...], int]],
    ) -> None:
        lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                sub = (*loc, str(key_node.value))
                lines[sub] = key_node.start_mark.line + 1
                scalars.append((str(key_node.value), sub, key_node.start_mark.line + 1))
                cls._walk(value_node, sub, lines, scalars)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*loc, str(i))
                lines[sub] = item.start_mark.line + 1
                cls._walk(item, sub, lines, scalars)
        elif isinstance(node, yaml.ScalarNode):
            scalars.append((str(node.value), loc, node.start_mark.line + 1))

    def has(self, loc: Loc) -> bool:
        """Whether the location exists in the file."""
        return tuple(_key(p) for p in loc) in self._lines

    def line(self, loc: Loc = ()) -> int:
        """Line of the longest prefix of ``loc`` that exists (1 when nothing matches)."""
        parts = tuple(_key(p) for p in loc)
        for n in range(len(parts), -1, -1):
            found = self._lines.get(parts[:n])
            if found is not None:
                return found
        return 1

    def known_prefix(self, loc: Loc) -> Loc:
        """The longest prefix of ``loc`` that exists in the file."""
        parts = tuple(_key(p) for p in loc)
        for n in range(len(parts), -1, -1):
            if parts[:n] in self._lines:
                return loc[:n]
        return ()

    def find_scalar(self, text: str, within: Loc = ()) -> int | None:
        """Line of the first scalar (key or value) equal to ``text`` inside ``within``, else None."""
        prefix = tuple(_key(p) for p in within)
        for value, loc, line in self._scalars:
            if value == text and loc[: len(prefix)] == prefix:
                return line
        return None

    def error(self, loc: Loc, message: str) -> WorldFileError:
        """A :class:`WorldFileError` at the line of ``loc``."""
        return WorldFileError(self.path, self.line(loc), message)

    def refine(self, loc: Loc, message: str) -> int:
        """Best line for a message about the mapping at ``loc``.

        A leading ``field: `` narrows to that field; then the last quoted name in the message
        that occurs as a key or value inside it gives the line.
        """
        loc = self.known_prefix(loc)
        m = _FIELD_PREFIX.match(message)
        if m and self.has((*loc, m.group(1))):
            loc = (*loc, m.group(1))
        for token in reversed(_QUOTED.findall(message)):
            line = self.find_scalar(token, loc)
            if line is not None:
                return line
        return self.line(loc)


def _dotted(loc: Loc) -> str:
    return ".".join(str(p) for p in loc)


def _problem_text(err: Any) -> tuple[Loc, str]:
    loc: Loc = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
    kind = err["type"]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "missing":
        parent, name = loc[:-1], loc[-1] if loc else "?"
        where = f"{_dotted(parent)}: " if parent else ""
        return parent, f"{where}missing required field {name!r}"
    if kind == "extra_forbidden":
        return loc, f"{_dotted(loc)}: unknown field {str(loc[-1])!r} (not allowed here)"
    value = err.get("input")
    shown = (
        f" (got {value!r})" if isinstance(value, (str, int, float, bool)) and kind != "value_error" else ""
    )
    where = f"{_dotted(loc)}: " if loc else ""
    return loc, f"{where}{msg}{shown}"


def validate_doc(doc: YamlDoc, model: type[M], what: str) -> tuple[M | None, list[WorldFileError]]:
    """Validate a document against ``model``; every problem becomes a line-numbered error.

    Args:
        doc: the parsed file.
        model: the pydantic model the whole file must satisfy.
        what: a short name of the file's kind for messages, e.g. ``"session"``.

    Returns:
        The instance (None if invalid) and the errors (empty if valid).
    """
    if not isinstance(doc.data, dict):
        found = "nothing" if doc.data is None else type(doc.data).__name__
        return None, [WorldFileError(doc.path, 1, f"a {what} file must hold a mapping, found {found}")]
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        errors: list[WorldFileError] = []
        for err in exc.errors():
            loc, text = _problem_text(err)
            if err["type"] in ("value_error", "assertion_error"):
                line = doc.refine(loc, str(err["msg"]).removeprefix("Value error, "))
            else:
                line = doc.line(loc)
            errors.append(WorldFileError(doc.path, line, text))
        return None, errors
    except KeyError as exc:
        # schema validators report an unknown attribute or setting name with KeyError
        message = str(exc.args[0]) if exc.args else str(exc)
        return None, [WorldFileError(doc.path, doc.refine((), message), message)]
