"""The run store's connection layer: lifecycle, schema, transactions and content-addressed blobs.

WAL mode with a busy timeout lets the TUI and a ``mempa run`` in another terminal read while a run
writes. A database in a folder that cannot be written (a read-only mount, a colleague's copied
saves) opens read-only: listing and scoring work, a write raises :class:`StoreError`. Writes are
prepared statements run in one transaction shielded from cancellation; a killed process leaves
the transaction unapplied (SQLite rolls it back when the database is next opened).
``synchronous=NORMAL`` keeps commits fast and, in WAL mode, survives a killed process (only a power
loss can drop the last commits).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiosqlite
import anyio

from mempa_tui.store import _codec
from mempa_tui.store._schema import MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION
from mempa_tui.store._sql import Statement, prompt_refs

__all__ = ["StepAlreadyStoredError", "StoreBase", "StoreError"]

_BUSY_TIMEOUT_MS = 15_000


class StoreError(Exception):
    """The database cannot be used: unreadable, made by a newer version, or a missing row."""


class StepAlreadyStoredError(StoreError):
    """A step (or probe repeat) that is already stored was written again; nothing was written."""


class StoreBase:
    """The connection, transactions and blobs of :class:`~mempa_tui.store.RunStore`.

    Args:
        path: the SQLite file; its folder is created on open.
        read_only: True opens the database for reading only; False needs it writable (a clear
            error otherwise); None (the default) opens it read-only when its folder or the file
            cannot be written, and read-write otherwise.
    """

    def __init__(self, path: str | Path, *, read_only: bool | None = None) -> None:
        self.path = Path(path)
        self._want_read_only = read_only
        self.read_only = False
        """Whether the open connection is read-only (decided on :meth:`open`)."""
        self._db: aiosqlite.Connection | None = None
        self._lock: anyio.Lock | None = None
        self._known_blobs: set[str] = set()

    # ---- lifecycle ------------------------------------------------------------------------

    async def open(self) -> Self:
        """Open (and create or migrate) the database.

        Raises:
            StoreError: the saves folder cannot be created (names it and why), the file is not
                a usable database or was written by a newer schema, or (read-only) it does not
                exist, needs an upgrade, or cannot be read consistently.
        """
        read_only = self._want_read_only
        if read_only is None:
            read_only = self.path.parent.is_dir() and not _writable(self.path)
        elif not read_only and self.path.parent.is_dir() and not _writable(self.path):
            raise StoreError(f"{self.path}: the run database cannot be written here (read-only folder or "
                             "file); pass --saves with a folder you can write to")
        if read_only:
            return await self._open_read_only()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise StoreError(f"{self.path.parent}: the saves folder is a file, not a folder") from None
        except OSError as exc:
            raise StoreError(f"{self.path.parent}: cannot create the saves folder ({exc.strerror or exc})") from None
        self._lock = anyio.Lock()
        try:
            db = await aiosqlite.connect(self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the run database ({exc})") from exc
        self._db = db
        db.row_factory = sqlite3.Row
        try:
            await db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA foreign_keys = ON")
            await self._ensure_schema(db)
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(f"{self.path}: not a usable run database ({exc})") from exc
        except StoreError:
            await self.close()
            raise
        return self

    async def _open_read_only(self) -> Self:
        """Open for reading only: ``mode=ro``, or ``immutable=1`` when SQLite cannot share the WAL
        index in an unwritable folder (only when no write-ahead log is left unmerged, whose
        newest writes an immutable open would not see)."""
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no run database here, and the folder cannot be written")
        self._lock = anyio.Lock()
        wal = self.path.with_name(self.path.name + "-wal")
        db: aiosqlite.Connection | None = None
        last: sqlite3.Error | None = None
        for query in ("mode=ro", "immutable=1"):
            if query == "immutable=1" and wal.exists() and wal.stat().st_size > 0:
                raise StoreError(
                    f"{self.path}: read-only folder with an unmerged write-ahead log ({wal.name}), which "
                    "SQLite cannot read here; copy the saves folder somewhere writable and pass --saves"
                )
            try:
                db = await aiosqlite.connect(f"{self.path.resolve().as_uri()}?{query}", uri=True,
                                             isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
                await db.execute("SELECT COUNT(*) FROM sqlite_master")
                break
            except sqlite3.Error as exc:
                if db is not None:
                    await db.close()
                    db = None
                last = exc
        if db is None:
            raise StoreError(f"{self.path}: cannot open the run database read-only ({last})")
        self._db, self.read_only = db, True
        db.row_factory = sqlite3.Row
        try:
            await db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            await db.execute("PRAGMA query_only = ON")
            version = await self._schema_version(db)
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(f"{self.path}: not a usable run database ({exc})") from exc
        if version != SCHEMA_VERSION:
            await self.close()
            newer = version > SCHEMA_VERSION
            raise StoreError(
                f"{self.path}: read-only and written by " + (
                    f"a newer mempa (schema {version}, this one reads up to {SCHEMA_VERSION}); upgrade mempa"
                    if newer else
                    f"an older mempa (schema {version}, now {SCHEMA_VERSION}); open it once where it "
                    "can be written, so that it is upgraded")
            )
        return self

    @staticmethod
    async def _schema_version(db: aiosqlite.Connection) -> int:
        """The stored schema version; 0 when the database has no schema table yet."""
        async with db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_version'"
        ) as cur:
            if await cur.fetchone() is None:
                return 0
        async with db.execute("SELECT MAX(version) FROM schema_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.close()

    async def _ensure_schema(self, db: aiosqlite.Connection) -> None:
        version = await self._schema_version(db)
        if version:
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: written by a newer mempa (schema {version}, this one reads "
                    f"up to {SCHEMA_VERSION}); upgrade mempa or use another --saves folder"
                )
            if version == SCHEMA_VERSION:
                return
            if version >= 1:
                await self._migrate(db, version)
        else:
            # a database with no mempa schema but tables of its own is somebody else's: never
            # write mempa's tables into it (fresh user, 4 December: `mempa runs --saves DIR` did)
            async with db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ) as cursor:
                foreign = [row[0] for row in await cursor.fetchall()]
            if foreign and "schema_version" not in foreign:  # mempa's own, stopped before its version row
                shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                raise StoreError(f"{self.path}: not a mempa run database (it holds other tables: {shown}); "
                                 "use another --saves folder")
        await db.executescript("BEGIN IMMEDIATE;\n" + SCHEMA_SQL + "\nCOMMIT;")
        await db.execute("DELETE FROM schema_version")
        await db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    async def _migrate(self, db: aiosqlite.Connection, version: int) -> None:
        """Bring a database of ``version`` up to :data:`SCHEMA_VERSION`, one step per transaction.

        Foreign keys are off during the steps (a rebuilt parent table must not cascade deletes
        into its children) and checked afterwards.

        Raises:
            StoreError: the migrated database breaks a foreign key (names the table).
        """
        await db.execute("PRAGMA foreign_keys = OFF")
        try:
            for step in range(version, SCHEMA_VERSION):
                sql = MIGRATIONS.get(step)
                if sql is not None:
                    await db.executescript("BEGIN IMMEDIATE;\n" + sql + f"\nUPDATE schema_version SET version = {step + 1};\nCOMMIT;")
            async with db.execute("PRAGMA foreign_key_check") as cur:
                broken = await cur.fetchone()
            if broken is not None:
                raise StoreError(f"{self.path}: migrating to schema {SCHEMA_VERSION} broke a reference in table {broken[0]}")
        finally:
            await db.execute("PRAGMA foreign_keys = ON")

    @property
    def db(self) -> aiosqlite.Connection:
        """The open connection.

        Raises:
            StoreError: the store is not open.
        """
        if self._db is None:
            raise StoreError(f"{self.path}: the run store is not open (use 'async with RunStore(...)')")
        return self._db

    async def pragma(self, name: str) -> str:
        """The value of a PRAGMA (e.g. ``journal_mode``), as text."""
        if not name.isidentifier():
            raise ValueError(f"not a pragma name: {name!r}")
        async with self.db.execute(f"PRAGMA {name}") as cur:
            row = await cur.fetchone()
        return str(row[0]) if row else ""

    # ---- transactions -----------------------------------------------------------------------

    async def _apply(self, statements: Iterable[Statement]) -> None:
        """Run prepared statements in one transaction, shielded from cancellation.

        Raises:
            StoreError: the store was opened read-only (nothing is written).
        """
        db = self.db
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only (its folder or file cannot be written); "
                             "nothing was written")
        assert self._lock is not None
        async with self._lock:
            with anyio.CancelScope(shield=True):
                await db.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params, many in statements:
                        if many:
                            await db.executemany(sql, params)
                        else:
                            await db.execute(sql, params)
                    await db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        await db.execute("ROLLBACK")
                    raise

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        db = self.db
        assert self._lock is not None
        async with self._lock, db.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return list(rows)

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    # ---- blobs ----------------------------------------------------------------------------

    async def _missing_blobs(self, digests: Iterable[str]) -> set[str]:
        unknown = sorted(set(digests) - self._known_blobs)
        present: set[str] = set()
        for start in range(0, len(unknown), 500):
            chunk = unknown[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._fetchall(f"SELECT sha256 FROM blobs WHERE sha256 IN ({marks})", chunk)
            present.update(str(r["sha256"]) for r in rows)
        self._known_blobs.update(present)
        return set(unknown) - present

    async def load_blob(self, digest: str) -> bytes:
        """The bytes of one blob.

        Raises:
            StoreError: no blob with that digest.
        """
        row = await self._fetchone("SELECT codec, data FROM blobs WHERE sha256 = ?", (digest,))
        if row is None:
            raise StoreError(f"{self.path}: blob {digest} is missing")
        return _codec.decode_blob(str(row["codec"]), bytes(row["data"]), key=digest)

    async def load_blobs(self, digests: Iterable[str]) -> dict[str, bytes]:
        """The bytes of the stored blobs among ``digests`` (digest -> bytes; a missing one is
        left out, for the caller to name)."""
        wanted = sorted(set(digests))
        found: dict[str, bytes] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT sha256, codec, data FROM blobs WHERE sha256 IN ({marks})", chunk
            )
            for r in rows:
                key = str(r["sha256"])
                found[key] = _codec.decode_blob(str(r["codec"]), bytes(r["data"]), key=key)
        return found

    async def load_world(self, manifest: Mapping[str, str]) -> dict[str, bytes]:
        """The files of a world manifest (path -> sha256) as path -> bytes.

        Raises:
            StoreError: a blob of the manifest is missing.
        """
        found = await self.load_blobs(manifest.values())
        files: dict[str, bytes] = {}
        for path, digest in manifest.items():
            if digest not in found:
                raise StoreError(f"{self.path}: world file {path!r} (blob {digest}) is missing")
            files[path] = found[digest]
        return files

    async def blob_stats(self) -> tuple[int, int]:
        """(number of blobs, stored bytes) in the database."""
        row = await self._fetchone("SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(data)), 0) AS b FROM blobs")
        assert row is not None
        return int(row["n"]), int(row["b"])

    async def delete_unreferenced_blobs(self) -> int:
        """Delete blobs no checkpoint and no stored model-call prompt refers to (after runs were
        deleted). Reads every stored prompt's message list (a maintenance step, not a listing).

        Returns:
            How many blobs were deleted.
        """
        referenced: set[str] = set()
        for row in await self._fetchall(
            "SELECT world_manifest, memory_blob, simulator_blob FROM checkpoints"
        ):
            referenced.update(json.loads(row["world_manifest"]).values())
            for key in ("memory_blob", "simulator_blob"):
                if row[key]:
                    referenced.add(str(row[key]))
        for row in await self._fetchall("SELECT id, prompt FROM llm_calls WHERE prompt IS NOT NULL"):
            try:
                referenced.update(prompt_refs(bytes(row["prompt"])).messages)
            except ValueError as exc:
                raise StoreError(f"{self.path}: model call {row['id']}: {exc}; no blob was deleted") from exc
        all_blobs = {str(r["sha256"]) for r in await self._fetchall("SELECT sha256 FROM blobs")}
        dead = sorted(all_blobs - referenced)
        await self._apply([("DELETE FROM blobs WHERE sha256 = ?", [(d,) for d in dead], True)])
        self._known_blobs -= set(dead)
        return len(dead)


def _writable(database: Path) -> bool:
    """Whether ``database`` (or, before it exists, its folder) can be written, with the SQLite
    side files (journal, WAL, shared memory) its folder must take."""
    folder_ok = os.access(database.parent, os.W_OK | os.X_OK)
    return folder_ok and (not database.exists() or os.access(database, os.W_OK))
