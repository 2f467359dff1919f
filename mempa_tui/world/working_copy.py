"""The working copy of one step: parsed, time-filtered, logged access to the world files.

Source: paper Appendix C.2 ('Working copy', 'Commit or discard', 'Tool behavior and logs',
'Visibility rules') and Appendix C.3 mechanism 3 (write locks).

A :class:`WorkingCopy` parses a collection the first time a tool touches it, validates every
record, and keeps the parsed records; :meth:`WorkingCopy.to_state` serialises only the changed
collections. Reads hide records (and document sections) that enter the world after :attr:`now`;
a hidden record is indistinguishable from a missing one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime, time
from typing import Any, TypeVar

from pydantic import BaseModel, Field, JsonValue

from mempa_tui.scripts.schema import WriteLock
from mempa_tui.world._fixture_io import collection_path, dump_collection, parse_collection, to_plain
from mempa_tui.world.records import COLLECTIONS, ID_PREFIXES, Document, Record
from mempa_tui.world.state import WorldError, WorldPathError, WorldState

__all__ = [
    "CallLogEntry",
    "Change",
    "UnknownCollectionError",
    "WorkingCopy",
    "strip_tool_prefix",
]

R = TypeVar("R", bound=Record)

TOOL_PREFIX = "mcp_state_"


def strip_tool_prefix(name: str) -> str:
    """``mcp_state_email_message_send`` -> ``email_message_send``; other names unchanged."""
    return name[len(TOOL_PREFIX) :] if name.startswith(TOOL_PREFIX) else name


class UnknownCollectionError(WorldError, KeyError):
    """A collection name that is not one of :data:`~mempa_tui.world.records.COLLECTIONS`."""

    def __str__(self) -> str:
        return str(self.args[0])


class Change(BaseModel):
    """One change a write made to the working copy (paper Appendix C.2, 'Tool behavior and logs').

    Attributes:
        tool: the tool that made it (without prefix), or ``"direct"`` for engine code.
        collection: e.g. ``email/sent``.
        op: insert, replace or delete.
        record_id: the record changed.
        before: the record before the change (plain data), None for an insert.
        after: the record after the change, None for a delete.
        at: the working copy's clock when the change was made.
    """

    tool: str
    collection: str
    op: str = Field(pattern=r"^(insert|replace|delete)$")
    record_id: str
    before: dict[str, JsonValue] | None
    after: dict[str, JsonValue] | None
    at: datetime


class CallLogEntry(BaseModel):
    """One tool call as logged (paper Appendix C.2): accepted or rejected.

    Attributes:
        tool: the tool name as called, without the ``mcp_state_`` prefix.
        arguments: the arguments as the caller gave them.
        ok: whether the call succeeded.
        error: the error message returned for a rejected call.
        at: the working copy's clock at the call.
    """

    tool: str
    arguments: JsonValue
    ok: bool
    error: str | None = None
    at: datetime


def _canon(value: Any) -> Any:
    """Normalise a value for write-lock matching (times as HH:MM, strings case-folded)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.strftime("%H:%M")
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canon(v)) for k, v in value.items()))
    return value


def _lock_value_matches(expected: Any, given: Any) -> bool:
    exp, got = _canon(expected), _canon(given)
    if isinstance(got, tuple) and not isinstance(expected, Mapping):
        wanted = exp if isinstance(exp, tuple) else (exp,)
        return all(w in got for w in wanted)
    return bool(exp == got)


class WorkingCopy:
    """The world as one step sees and changes it.

    Args:
        state: the persistent world at the step's start.
        now: the step's story time; records entering later are hidden.

    Attributes:
        change_log: every insert/replace/delete, in order.
        call_log: every tool call (the registry appends to it through :meth:`log_call`).
    """

    def __init__(self, state: WorldState, now: datetime) -> None:
        self._state = state
        self._now = now
        self._cache: dict[str, dict[str, Record]] = {}
        self._dirty: set[str] = set()
        self._locks: list[WriteLock] = []
        self._released: set[str] = set()
        self._txn: dict[str, tuple[dict[str, Record], bool]] | None = None
        self._current_tool: str | None = None
        self.change_log: list[Change] = []
        self.call_log: list[CallLogEntry] = []

    # ---- clock --------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        """The step's story time. Settable forward only (world events move the clock)."""
        return self._now

    @now.setter
    def now(self, value: datetime) -> None:
        if value < self._now:
            raise ValueError(f"the clock moves forward only: {value} is before {self._now}")
        self._now = value

    @property
    def state(self) -> WorldState:
        """The state this copy started from (or last :meth:`to_state` result)."""
        return self._state

    # ---- loading ------------------------------------------------------------------------

    @staticmethod
    def check_collection(collection: str) -> str:
        """Validate a collection name (the path rule of Appendix C.2).

        Raises:
            WorldPathError: the name is absolute or climbs out (``..``).
            UnknownCollectionError: not a known collection; the message lists them.
        """
        if collection in COLLECTIONS:
            return collection
        if collection.startswith("/") or ".." in collection.split("/") or "\\" in collection:
            raise WorldPathError(f"collection {collection!r} leaves the working copy")
        raise UnknownCollectionError(
            f"unknown collection {collection!r}; known collections: " + ", ".join(sorted(COLLECTIONS))
        )

    def _collection(self, collection: str) -> dict[str, Record]:
        self.check_collection(collection)
        found = self._cache.get(collection)
        if found is None:
            data = self._state.get(collection_path(collection))
            records = parse_collection(collection, data) if data is not None else []
            found = {r.id: r for r in records}
            self._cache[collection] = found
        return found

    def _visible(self, record: Record) -> Record | None:
        if record.entered_at > self._now:
            return None
        if isinstance(record, Document) and any(s.entered_at > self._now for s in record.sections):
            sections = [s for s in record.sections if s.entered_at <= self._now]
            return record.model_copy(update={"sections": sections})
        return record

    # ---- reads --------------------------------------------------------------------------

    def records(self, collection: str) -> list[Record]:
        """Visible records of a collection in file order (document sections filtered).

        Do not mutate the returned records; write through :meth:`replace`.

        Raises:
            WorldPathError, UnknownCollectionError: bad collection name.
            FixtureError: the collection file is invalid.
        """
        out: list[Record] = []
        for record in self._collection(collection).values():
            shown = self._visible(record)
            if shown is not None:
                out.append(shown)
        return out

    def get(self, collection: str, record_id: str) -> Record | None:
        """A visible record by id, or None when it is missing or not yet in the world."""
        record = self._collection(collection).get(record_id)
        return None if record is None else self._visible(record)

    def stored(self, collection: str, record_id: str) -> Record | None:
        """The full stored record (hidden document sections included) if the record is visible.

        For tools that rewrite a record and must keep its future sections; never hand the result
        to the PA.
        """
        record = self._collection(collection).get(record_id)
        if record is None or record.entered_at > self._now:
            return None
        return record

    def _all_records(self, collection: str) -> list[Record]:
        """Every record of a collection regardless of time (for ``worlds check`` only)."""
        return list(self._collection(collection).values())

    def exists_at_all(self, collection: str, record_id: str) -> bool:
        """Whether a record exists at any time (for ``worlds check`` only)."""
        return record_id in self._collection(collection)

    # ---- writes -------------------------------------------------------------------------

    def new_id(self, collection: str) -> str:
        """Next id of a collection: prefix + (highest number in use + 1), 4 digits (``em_0013``).

        Hidden (future) records count, so a new id never collides with a record still to come.
        """
        prefix = ID_PREFIXES[self.check_collection(collection)]
        highest = 0
        for rid in self._collection(collection):
            tail = rid[len(prefix) :]
            if rid.startswith(prefix) and tail.isdigit():
                highest = max(highest, int(tail))
        return f"{prefix}{highest + 1:04d}"

    def create(self, collection: str, fields: Mapping[str, Any], *, tool: str | None = None) -> Record:
        """Build a new record with a fresh id and ``entered_at = now``, validate it and insert it.

        Raises:
            pydantic.ValidationError: the fields do not make a valid record (nothing written).
        """
        model = COLLECTIONS[self.check_collection(collection)]
        record = model.model_validate({**fields, "id": self.new_id(collection), "entered_at": self._now})
        self.insert(collection, record, tool=tool)
        return record

    def _mutable(self, collection: str) -> dict[str, Record]:
        records = self._collection(collection)
        if self._txn is not None and collection not in self._txn:
            self._txn[collection] = (dict(records), collection in self._dirty)
        self._dirty.add(collection)
        return records

    def _log(
        self,
        tool: str | None,
        collection: str,
        op: str,
        rid: str,
        before: Record | None,
        after: Record | None,
    ) -> None:
        self.change_log.append(
            Change(
                tool=tool or self._current_tool or "direct",
                collection=collection,
                op=op,
                record_id=rid,
                before=to_plain(before) if before is not None else None,
                after=to_plain(after) if after is not None else None,
                at=self._now,
            )
        )

    def insert(self, collection: str, record: Record, *, tool: str | None = None) -> Record:
        """Add a record.

        Raises:
            TypeError: the record is not of the collection's model.
            ValueError: its id is already in use (at any time).
        """
        model = COLLECTIONS[self.check_collection(collection)]
        if not isinstance(record, model):
            raise TypeError(f"{collection} holds {model.__name__} records, not {type(record).__name__}")
        records = self._collection(collection)
        if record.id in records:
            raise ValueError(f"{collection} already has a record {record.id!r}")
        self._mutable(collection)[record.id] = record
        self._log(tool, collection, "insert", record.id, None, record)
        return record

    def replace(self, collection: str, record: Record, *, tool: str | None = None) -> Record:
        """Replace a visible record with a new version (same id).

        Raises:
            KeyError: no visible record with that id.
            TypeError: wrong model.
        """
        model = COLLECTIONS[self.check_collection(collection)]
        if not isinstance(record, model):
            raise TypeError(f"{collection} holds {model.__name__} records, not {type(record).__name__}")
        before = self.stored(collection, record.id)
        if before is None:
            raise KeyError(f"{collection} has no record {record.id!r}")
        self._mutable(collection)[record.id] = record
        self._log(tool, collection, "replace", record.id, before, record)
        return record

    def delete(self, collection: str, record_id: str, *, tool: str | None = None) -> Record:
        """Remove a visible record and return it.

        Raises:
            KeyError: no visible record with that id.
        """
        before = self.stored(collection, record_id)
        if before is None:
            raise KeyError(f"{collection} has no record {record_id!r}")
        del self._mutable(collection)[record_id]
        self._log(tool, collection, "delete", record_id, before, None)
        return before

    @contextmanager
    def transaction(self, tool: str | None = None) -> Iterator[None]:
        """Make the writes inside atomic: on any exception every change is undone, then re-raised.

        Args:
            tool: the tool name to record in :attr:`change_log` for writes inside.
        """
        if self._txn is not None:
            raise RuntimeError("transactions do not nest")
        self._txn = {}
        self._current_tool = tool
        log_len = len(self.change_log)
        try:
            yield
        except BaseException:
            for collection, (saved, was_dirty) in self._txn.items():
                self._cache[collection] = saved
                if not was_dirty:
                    self._dirty.discard(collection)
            del self.change_log[log_len:]
            raise
        finally:
            self._txn = None
            self._current_tool = None

    def log_call(self, tool: str, arguments: JsonValue, ok: bool, error: str | None = None) -> None:
        """Append one tool call to :attr:`call_log`."""
        self.call_log.append(
            CallLogEntry(tool=strip_tool_prefix(tool), arguments=arguments, ok=ok, error=error, at=self._now)
        )

    # ---- commit -------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """Whether any collection changed since the start (or the last :meth:`to_state`)."""
        return bool(self._dirty)

    def to_state(self) -> WorldState:
        """The world with every change written back (unchanged files shared with the start)."""
        if not self._dirty:
            return self._state
        changes: dict[str, bytes | None] = {}
        for collection in sorted(self._dirty):
            records = list(self._cache[collection].values())
            path = collection_path(collection)
            if not records and path not in self._state:
                continue
            changes[path] = dump_collection(records)
        self._state = self._state.with_files(changes)
        self._dirty.clear()
        return self._state

    # ---- write locks (Appendix C.3, mechanism 3) ----------------------------------------

    def add_write_lock(self, lock: WriteLock) -> None:
        """Refuse writes matching ``lock`` until its fact is released (unless already released)."""
        self._locks.append(lock)

    def release_fact(self, fact_id: str) -> None:
        """Mark a withheld fact as given by the user; locks it opens stop refusing."""
        self._released.add(fact_id)

    @property
    def released_facts(self) -> frozenset[str]:
        """Ids of the facts released so far."""
        return frozenset(self._released)

    def locked_by(self, tool: str, arguments: Mapping[str, Any]) -> WriteLock | None:
        """The first active lock that refuses this call, else None.

        A lock matches when the tool names agree (prefix ignored) and every key of its ``match``
        is among the arguments with an equal value (strings compared case-insensitively, times as
        ``HH:MM``; for a list argument, the expected value(s) must all be in the list).
        """
        name = strip_tool_prefix(tool)
        for lock in self._locks:
            if lock.unlocked_by in self._released or strip_tool_prefix(lock.tool) != name:
                continue
            if all(k in arguments and _lock_value_matches(v, arguments[k]) for k, v in lock.match.items()):
                return lock
        return None

    # ---- typed helpers ------------------------------------------------------------------

    def get_as(self, collection: str, record_id: str, model: type[R]) -> R | None:
        """:meth:`get` narrowed to ``model`` (a programming error if the collection differs)."""
        found = self.get(collection, record_id)
        if found is not None and not isinstance(found, model):
            raise TypeError(f"{collection} does not hold {model.__name__} records")
        return found

    def records_as(self, collection: str, model: type[R]) -> list[R]:
        """:meth:`records` narrowed to ``model``."""
        out = self.records(collection)
        if any(not isinstance(r, model) for r in out):
            raise TypeError(f"{collection} does not hold {model.__name__} records")
        return out  # type: ignore[return-value]
