"""Reading and writing one collection file (``<collection>.yaml``, a YAML list of records).

Parsing uses libyaml (``yaml.CSafeLoader``) when it is available. Writing keeps the fixture style:
times as ``YYYY-MM-DDTHH:MM``, multi-line text as literal blocks, keys in model field order.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from mempa_tui.world.records import COLLECTIONS, Record
from mempa_tui.world.state import WorldError

__all__ = [
    "FixtureError",
    "collection_issues",
    "collection_path",
    "dump_collection",
    "parse_collection",
    "to_plain",
]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class FixtureError(WorldError):
    """A collection file that does not hold valid records.

    Attributes:
        path: the file, relative to the world root, e.g. ``email/inbox.yaml``.
        index: 0-based position of the bad record in the file's list, or None for a file-level
            problem (bad YAML, not a list, ...).
        record_id: the bad record's ``id`` when it has one.
        field: dotted field path inside the record (e.g. ``sections.1.heading``), or None.
        problem: what is wrong.
        line: 1-based line when known (YAML syntax errors), else None.
    """

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        index: int | None = None,
        record_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.index = index
        self.record_id = record_id
        self.field = field
        self.line = line
        where = path
        if index is not None:
            where += f" record {index}" + (f" (id {record_id!r})" if record_id else "")
        if field:
            where += f" field {field!r}"
        super().__init__(f"{where}: {problem}")


def collection_path(collection: str) -> str:
    """The file that holds ``collection``: ``<collection>.yaml``."""
    return f"{collection}.yaml"


def _load_items(collection: str, data: bytes) -> list[Any]:
    path = collection_path(collection)
    try:
        loaded = yaml.load(data, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise FixtureError(path, f"not valid YAML: {exc}", line=line) from exc
    if loaded is None:
        return []
    if not isinstance(loaded, list):
        raise FixtureError(path, f"must hold a YAML list of records, found {type(loaded).__name__}")
    return loaded


def _record_issue(
    collection: str, model: type[Record], index: int, item: Any
) -> tuple[Record | None, FixtureError | None]:
    path = collection_path(collection)
    if not isinstance(item, dict):
        return None, FixtureError(path, f"must be a mapping, found {type(item).__name__}", index=index)
    rid = item.get("id")
    rid_text = str(rid) if rid is not None else None
    try:
        return model.model_validate(item), None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        problem = f"{err['msg']}{more}"
        return None, FixtureError(path, problem, index=index, record_id=rid_text, field=field)


def parse_collection(collection: str, data: bytes) -> list[Record]:
    """Parse and validate one collection file.

    Args:
        collection: a key of :data:`~mempa_tui.world.records.COLLECTIONS`.
        data: the file's bytes.

    Returns:
        The records in file order.

    Raises:
        FixtureError: the first problem: bad YAML, not a list, a record that fails its model
            (naming file, record id and field), or a duplicate id.
    """
    issues, records = _scan(collection, data, stop_at_first=True)
    if issues:
        raise issues[0]
    return records


def collection_issues(collection: str, data: bytes) -> list[FixtureError]:
    """Every problem of one collection file (used by ``worlds check``); empty when valid."""
    return _scan(collection, data, stop_at_first=False)[0]


def _scan(collection: str, data: bytes, *, stop_at_first: bool) -> tuple[list[FixtureError], list[Record]]:
    model = COLLECTIONS[collection]
    try:
        items = _load_items(collection, data)
    except FixtureError as exc:
        return [exc], []
    issues: list[FixtureError] = []
    records: list[Record] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        record, issue = _record_issue(collection, model, index, item)
        if issue is None and record is not None and record.id in seen:
            issue = FixtureError(
                collection_path(collection),
                f"duplicate id {record.id!r} in {collection}",
                index=index,
                record_id=record.id,
                field="id",
            )
        if issue is not None:
            issues.append(issue)
            if stop_at_first:
                break
            continue
        assert record is not None
        seen.add(record.id)
        records.append(record)
    return issues, records


# ---- writing ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.second or value.microsecond:
            return value.isoformat()
        return value.strftime("%Y-%m-%dT%H:%M")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.strftime("%H:%M") if not value.second else value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_plain(model: BaseModel) -> dict[str, Any]:
    """A record as plain JSON/YAML data: times as ``YYYY-MM-DDTHH:MM``, dates ``YYYY-MM-DD``."""
    return _plain(model.model_dump(mode="python"))  # type: ignore[no-any-return]


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Safe dumper that writes multi-line strings as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_collection(records: list[Record]) -> bytes:
    """Serialise records as a collection file (YAML list, UTF-8)."""
    text = yaml.dump(
        [to_plain(r) for r in records],
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return text.encode("utf-8")
