"""The run store: runs, steps, checkpoints, transcripts, probe results and model calls in SQLite.

One database (``saves/mempa.sqlite`` by default) holds every run, so world files shared by runs and
checkpoints are stored once. The connection runs in WAL mode with a busy timeout, so the TUI and a
``mempa run`` in another terminal can read while a run writes (SPEC section 4.8).

Atomicity: a settled step (its row, transcript, model calls and checkpoint) is written in ONE
transaction that cannot be cancelled half way; a killed process leaves either the whole step or
none of it, because SQLite rolls back an unfinished transaction when the database is next opened.
``synchronous=NORMAL`` keeps commits fast; in WAL mode it survives a killed process (only a power
loss can drop the last commits).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite
import anyio

from mempa_tui.store import _codec
from mempa_tui.store._schema import SCHEMA_SQL, SCHEMA_VERSION
from mempa_tui.store.rows import (
    CheckpointData,
    CheckpointRecord,
    LLMCallRow,
    ProbeResultRecord,
    RunRecord,
    RunStatus,
    RunSummary,
    StepAttemptRecord,
    StepRecord,
    TokenTotals,
    TranscriptEventRecord,
    utc_now,
)

__all__ = ["RunStore", "StepAlreadyStoredError", "StoreError"]

_Statement = tuple[str, Sequence[Any] | list[Sequence[Any]], bool]
"""(sql, parameters, many): one statement of a write transaction."""

_BUSY_TIMEOUT_MS = 15_000


class StoreError(Exception):
    """The database cannot be used: unreadable, made by a newer version, or a missing row."""


class StepAlreadyStoredError(StoreError):
    """A step (or probe repeat) that is already stored was written again; nothing was written."""


class RunStore:
    """Async access to the run database (aiosqlite, WAL).

    Use as ``async with RunStore(path) as store: ...`` or call :meth:`open` / :meth:`close`. One
    instance may be shared by concurrent runs: writes are serialised by a lock.

    Args:
        path: the SQLite file; its folder is created on open.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None
        self._lock: anyio.Lock | None = None
        self._known_blobs: set[str] = set()

    # ---- lifecycle ------------------------------------------------------------------------

    async def open(self) -> RunStore:
        """Open (and create or migrate) the database.

        Raises:
            StoreError: the file is not a usable database or was written by a newer schema.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
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

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def __aenter__(self) -> RunStore:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.close()

    async def _ensure_schema(self, db: aiosqlite.Connection) -> None:
        async with db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_version'"
        ) as cur:
            exists = await cur.fetchone() is not None
        if exists:
            async with db.execute("SELECT MAX(version) FROM schema_version") as cur:
                row = await cur.fetchone()
            version = int(row[0]) if row and row[0] is not None else 0
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: written by a newer mempa (schema {version}, this one reads "
                    f"up to {SCHEMA_VERSION}); upgrade mempa or use another --saves folder"
                )
            if version == SCHEMA_VERSION:
                return
        await db.executescript("BEGIN IMMEDIATE;\n" + SCHEMA_SQL + "\nCOMMIT;")
        await db.execute("DELETE FROM schema_version")
        await db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

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

    async def _apply(self, statements: Iterable[_Statement]) -> None:
        """Run prepared statements in one transaction, shielded from cancellation."""
        db = self.db
        assert self._lock is not None
        async with self._lock:
            with anyio.CancelScope(shield=True):
                await db.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params, many in statements:
                        if many:
                            await db.executemany(sql, params)  # type: ignore[arg-type]
                        else:
                            await db.execute(sql, params)
                except BaseException:
                    await db.execute("ROLLBACK")
                    raise
                await db.execute("COMMIT")

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        db = self.db
        assert self._lock is not None
        async with self._lock:
            async with db.execute(sql, params) as cur:
                rows = await cur.fetchall()
        return list(rows)  # type: ignore[arg-type]

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

    @staticmethod
    def _blob_rows(items: Mapping[str, bytes]) -> list[tuple[str, int, str, bytes]]:
        rows = []
        for digest, data in items.items():
            codec, stored = _codec.encode_blob(data)
            rows.append((digest, len(data), codec, stored))
        return rows

    async def load_blob(self, digest: str) -> bytes:
        """The bytes of one blob.

        Raises:
            StoreError: no blob with that digest.
        """
        row = await self._fetchone("SELECT codec, data FROM blobs WHERE sha256 = ?", (digest,))
        if row is None:
            raise StoreError(f"{self.path}: blob {digest} is missing")
        return _codec.decode_blob(str(row["codec"]), bytes(row["data"]), key=digest)

    async def load_world(self, manifest: Mapping[str, str]) -> dict[str, bytes]:
        """The files of a world manifest (path -> sha256) as path -> bytes.

        Raises:
            StoreError: a blob of the manifest is missing.
        """
        digests = sorted(set(manifest.values()))
        found: dict[str, bytes] = {}
        for start in range(0, len(digests), 500):
            chunk = digests[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT sha256, codec, data FROM blobs WHERE sha256 IN ({marks})", chunk
            )
            for r in rows:
                key = str(r["sha256"])
                found[key] = _codec.decode_blob(str(r["codec"]), bytes(r["data"]), key=key)
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
        """Delete blobs no checkpoint refers to (after runs were deleted).

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
        all_blobs = {str(r["sha256"]) for r in await self._fetchall("SELECT sha256 FROM blobs")}
        dead = sorted(all_blobs - referenced)
        await self._apply([("DELETE FROM blobs WHERE sha256 = ?", [(d,) for d in dead], True)])
        self._known_blobs -= set(dead)
        return len(dead)

    # ---- runs -----------------------------------------------------------------------------

    async def create_run(self, run: RunRecord) -> None:
        """Register a new run.

        Raises:
            StoreError: a run with that id exists.
        """
        try:
            await self._apply([(
                "INSERT INTO runs (id, user, profile, memory, seed, repeats, config_json, config_hash,"
                " donor_run, status, error, total_steps, total_probes, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id, run.user, run.profile, run.memory, run.seed, run.repeats,
                    run.config_json, run.config_hash, run.donor_run, run.status.value, run.error,
                    run.total_steps, run.total_probes, _codec.to_iso(run.created_at),
                    _codec.to_iso(run.updated_at),
                ),
                False,
            )])
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"run {run.id} already exists") from exc

    @staticmethod
    def _run_from_row(row: sqlite3.Row) -> RunRecord:
        return RunRecord(
            id=row["id"], user=row["user"], profile=row["profile"], memory=row["memory"],
            seed=row["seed"], repeats=row["repeats"], config_json=row["config_json"],
            config_hash=row["config_hash"], donor_run=row["donor_run"],
            status=RunStatus(row["status"]), error=row["error"], total_steps=row["total_steps"],
            total_probes=row["total_probes"], created_at=_codec.from_iso(row["created_at"]),
            updated_at=_codec.from_iso(row["updated_at"]),
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run with that id, or None."""
        row = await self._fetchone("SELECT * FROM runs WHERE id = ?", (run_id,))
        return self._run_from_row(row) if row else None

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        rows = await self._fetchall("SELECT * FROM runs ORDER BY created_at DESC, id")
        return [self._run_from_row(r) for r in rows]

    async def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus | None = None,
        error: str | None = None,
        total_steps: int | None = None,
        total_probes: int | None = None,
        clear_error: bool = False,
    ) -> None:
        """Change a run's status, error or totals (``updated_at`` is set to now).

        Args:
            run_id: the run.
            status: new status, if changing.
            error: new error text, if setting one.
            total_steps / total_probes: new totals, if changing.
            clear_error: remove the stored error.

        Raises:
            StoreError: no such run.
        """
        sets = ["updated_at = ?"]
        params: list[Any] = [_codec.to_iso(utc_now())]
        if status is not None:
            sets.append("status = ?")
            params.append(status.value)
        if error is not None or clear_error:
            sets.append("error = ?")
            params.append(error)
        if total_steps is not None:
            sets.append("total_steps = ?")
            params.append(total_steps)
        if total_probes is not None:
            sets.append("total_probes = ?")
            params.append(total_probes)
        if await self.get_run(run_id) is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        await self._apply([(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", [*params, run_id], False)])

    async def archive_run(self, run_id: str) -> str:
        """Move a run aside under ``<id>~<n>`` (used by ``--fresh``); its rows follow it.

        Returns:
            The archived id.

        Raises:
            StoreError: no such run.
        """
        if await self.get_run(run_id) is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        n = 1
        while await self.get_run(f"{run_id}~{n}") is not None:
            n += 1
        new_id = f"{run_id}~{n}"
        await self._apply([
            ("UPDATE runs SET id = ? WHERE id = ?", (new_id, run_id), False),
            ("UPDATE runs SET donor_run = ? WHERE donor_run = ?", (new_id, run_id), False),
            ("UPDATE probe_results SET checkpoint_run = ? WHERE checkpoint_run = ?", (new_id, run_id), False),
        ])
        return new_id

    async def delete_run(self, run_id: str) -> None:
        """Delete a run and everything stored under it (blobs stay until
        :meth:`delete_unreferenced_blobs`)."""
        await self._apply([("DELETE FROM runs WHERE id = ?", (run_id,), False)])

    async def summaries(self) -> list[RunSummary]:
        """Every run with its progress counts and token use, newest first."""
        out = []
        for run in await self.list_runs():
            out.append(await self.summary(run.id))
        return out

    async def summary(self, run_id: str) -> RunSummary:
        """One run with its progress counts and token use.

        Raises:
            StoreError: no such run.
        """
        run = await self.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        steps = await self._fetchone(
            "SELECT COUNT(*) AS n, COALESCE(SUM(status = 'completed'), 0) AS ok"
            " FROM steps WHERE run_id = ?",
            (run_id,),
        )
        probes = await self._fetchone("SELECT COUNT(*) AS n FROM probe_results WHERE run_id = ?", (run_id,))
        assert steps is not None and probes is not None
        return RunSummary(
            run=run, steps_done=int(steps["n"]), steps_completed=int(steps["ok"]),
            probes_done=int(probes["n"]), tokens=await self.token_totals(run_id),
        )

    async def latest_completed_run(
        self, user: str, profile: str, *, exclude_memory: Sequence[str] = ()
    ) -> RunRecord | None:
        """The newest completed run of a user and profile that played its timeline.

        Used to pick a donor for No Memory and Oracle (paper Section 4, 'Reference Condition
        Runs'): runs whose memory condition is in ``exclude_memory`` (the probe-only conditions)
        are skipped, as are archived runs (ids with ``~``).
        """
        marks = ",".join("?" * len(exclude_memory)) or "''"
        rows = await self._fetchall(
            "SELECT * FROM runs WHERE user = ? AND profile = ? AND status = 'completed'"
            f" AND memory NOT IN ({marks}) AND total_steps > 0 AND instr(id, '~') = 0"
            " ORDER BY updated_at DESC",
            (user, profile, *exclude_memory),
        )
        return self._run_from_row(rows[0]) if rows else None

    # ---- steps and checkpoints ---------------------------------------------------------------

    async def _checkpoint_statements(self, run_id: str, ckpt: CheckpointData) -> list[_Statement]:
        blobs: dict[str, bytes] = {}
        for path, digest in ckpt.world_manifest.items():
            blobs.setdefault(digest, ckpt.world_files[path])
        memory_key = sim_key = None
        if ckpt.memory_snapshot is not None:
            memory_key = _codec.sha256_hex(ckpt.memory_snapshot)
            blobs.setdefault(memory_key, ckpt.memory_snapshot)
        if ckpt.simulator_memory_json:
            sim_bytes = ckpt.simulator_memory_json.encode("utf-8")
            sim_key = _codec.sha256_hex(sim_bytes)
            blobs.setdefault(sim_key, sim_bytes)
        missing = await self._missing_blobs(blobs)
        return [
            (
                "INSERT OR IGNORE INTO blobs (sha256, size, codec, data) VALUES (?, ?, ?, ?)",
                self._blob_rows({k: blobs[k] for k in sorted(missing)}),
                True,
            ),
            (
                "INSERT INTO checkpoints (run_id, step_idx, step_id, story_time, world_manifest,"
                " memory_blob, simulator_blob, tokens_json, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, ckpt.step_index, ckpt.step_id, _codec.to_iso(ckpt.story_time),
                    json.dumps(ckpt.world_manifest, sort_keys=True, separators=(",", ":")),
                    memory_key, sim_key, ckpt.tokens.model_dump_json(), _codec.to_iso(utc_now()),
                ),
                False,
            ),
        ]

    async def write_initial_checkpoint(self, run_id: str, ckpt: CheckpointData) -> None:
        """Store the run's starting checkpoint (``step_index`` -1: the fixture world).

        Raises:
            StepAlreadyStoredError: the run already has it.
        """
        if ckpt.step_index != -1:
            raise ValueError(f"the initial checkpoint has step_index -1, not {ckpt.step_index}")
        statements = await self._checkpoint_statements(run_id, ckpt)
        try:
            await self._apply(statements)
        except sqlite3.IntegrityError as exc:
            raise StepAlreadyStoredError(f"run {run_id}: the initial checkpoint is already stored") from exc
        self._known_blobs.update(self._digests_of(ckpt))

    @staticmethod
    def _digests_of(ckpt: CheckpointData) -> set[str]:
        keys = set(ckpt.world_manifest.values())
        if ckpt.memory_snapshot is not None:
            keys.add(_codec.sha256_hex(ckpt.memory_snapshot))
        if ckpt.simulator_memory_json:
            keys.add(_codec.sha256_hex(ckpt.simulator_memory_json.encode("utf-8")))
        return keys

    @staticmethod
    def _event_statement(
        run_id: str, step_id: str, repeat: int, events: Sequence[TranscriptEventRecord]
    ) -> _Statement:
        return (
            "INSERT INTO transcript_events (run_id, step_id, repeat, seq, kind, event_json)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, step_id, repeat, e.seq, e.kind, e.event_json) for e in events],
            True,
        )

    @staticmethod
    def _calls_statement(run_id: str, calls: Sequence[LLMCallRow]) -> _Statement:
        return (
            "INSERT INTO llm_calls (run_id, step_id, repeat, seq, role, model, prompt_tokens,"
            " completion_tokens, reused_prefix_tokens, latency_s, ok, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id, c.step_id, c.repeat, c.seq, c.call.role.value, c.call.model,
                    c.call.prompt_tokens, c.call.completion_tokens, c.call.reused_prefix_tokens,
                    c.call.latency_s, int(c.call.ok), c.call.error,
                )
                for c in calls
            ],
            True,
        )

    async def commit_step(
        self,
        run_id: str,
        step: StepRecord,
        events: Sequence[TranscriptEventRecord],
        checkpoint: CheckpointData,
        calls: Sequence[LLMCallRow] = (),
    ) -> None:
        """Store a settled step with its transcript, model calls and checkpoint, atomically.

        Args:
            run_id: the run.
            step: the step's row.
            events: its transcript events in order.
            checkpoint: the state after the step (``step_index`` must equal ``step.index``).
            calls: its model calls.

        Raises:
            StepAlreadyStoredError: the step (by index or id) is already stored; nothing written.
            ValueError: the checkpoint is not the step's.
        """
        if checkpoint.step_index != step.index:
            raise ValueError(
                f"checkpoint after step {checkpoint.step_index} given for step {step.index}"
            )
        statements: list[_Statement] = [(
            "INSERT INTO steps (run_id, idx, step_id, kind, status, reason, attempts, selection,"
            " started_at, finished_at, tokens_json, result)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, step.index, step.step_id, step.kind, step.status, step.reason,
                step.attempts, step.selection, _codec.to_iso(step.started_at),
                _codec.to_iso(step.finished_at), step.tokens.model_dump_json(),
                _codec.pack_text(step.result_json) if step.result_json else None,
            ),
            False,
        )]
        statements.append(self._event_statement(run_id, step.step_id, 0, events))
        statements.append(self._calls_statement(run_id, calls))
        statements.extend(await self._checkpoint_statements(run_id, checkpoint))
        statements.append((
            "UPDATE runs SET updated_at = ? WHERE id = ?", (_codec.to_iso(utc_now()), run_id), False
        ))
        try:
            await self._apply(statements)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc):
                raise StepAlreadyStoredError(
                    f"run {run_id}: step {step.index} ({step.step_id}) is already stored"
                ) from exc
            raise
        self._known_blobs.update(self._digests_of(checkpoint))

    async def record_attempt(
        self, run_id: str, attempt: StepAttemptRecord, calls: Sequence[LLMCallRow] = ()
    ) -> None:
        """Store a discarded attempt of a step that will be played again."""
        await self._apply([
            (
                "INSERT OR REPLACE INTO step_attempts (run_id, step_id, attempt, status, reason,"
                " started_at, finished_at, tokens_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, attempt.step_id, attempt.attempt, attempt.status, attempt.reason,
                    _codec.to_iso(attempt.started_at), _codec.to_iso(attempt.finished_at),
                    attempt.tokens.model_dump_json(),
                ),
                False,
            ),
            self._calls_statement(run_id, calls),
        ])

    async def attempts(self, run_id: str, step_id: str) -> list[StepAttemptRecord]:
        """Discarded attempts of a step, in order."""
        rows = await self._fetchall(
            "SELECT * FROM step_attempts WHERE run_id = ? AND step_id = ? ORDER BY attempt",
            (run_id, step_id),
        )
        return [
            StepAttemptRecord(
                step_id=r["step_id"], attempt=r["attempt"], status=r["status"], reason=r["reason"],
                started_at=_codec.from_iso(r["started_at"]), finished_at=_codec.from_iso(r["finished_at"]),
                tokens=TokenTotals.model_validate_json(r["tokens_json"]),
            )
            for r in rows
        ]

    async def steps(self, run_id: str, *, with_results: bool = False) -> list[StepRecord]:
        """The run's stored steps in timeline order (``result_json`` filled only on request)."""
        cols = "*" if with_results else (
            "idx, step_id, kind, status, reason, attempts, selection, started_at, finished_at, tokens_json"
        )
        rows = await self._fetchall(f"SELECT {cols} FROM steps WHERE run_id = ? ORDER BY idx", (run_id,))
        return [
            StepRecord(
                index=r["idx"], step_id=r["step_id"], kind=r["kind"], status=r["status"],
                reason=r["reason"], attempts=r["attempts"], selection=r["selection"],
                started_at=_codec.from_iso(r["started_at"]), finished_at=_codec.from_iso(r["finished_at"]),
                tokens=TokenTotals.model_validate_json(r["tokens_json"]),
                result_json=_codec.unpack_text(r["result"]) if with_results else "",
            )
            for r in rows
        ]

    @staticmethod
    def _checkpoint_from_row(row: sqlite3.Row) -> CheckpointRecord:
        return CheckpointRecord(
            run_id=row["run_id"], step_index=row["step_idx"], step_id=row["step_id"],
            story_time=_codec.from_iso(row["story_time"]),
            world_manifest=json.loads(row["world_manifest"]), memory_blob=row["memory_blob"],
            simulator_blob=row["simulator_blob"],
            tokens=TokenTotals.model_validate_json(row["tokens_json"]),
            created_at=_codec.from_iso(row["created_at"]),
        )

    async def latest_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The run's last checkpoint, or None when it has none."""
        row = await self._fetchone(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step_idx DESC LIMIT 1", (run_id,)
        )
        return self._checkpoint_from_row(row) if row else None

    async def checkpoint(self, run_id: str, step_index: int) -> CheckpointRecord | None:
        """The checkpoint after ``step_index`` (-1: the start), or None."""
        row = await self._fetchone(
            "SELECT * FROM checkpoints WHERE run_id = ? AND step_idx = ?", (run_id, step_index)
        )
        return self._checkpoint_from_row(row) if row else None

    async def checkpoints(self, run_id: str) -> list[CheckpointRecord]:
        """Every checkpoint of the run, in timeline order."""
        rows = await self._fetchall(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step_idx", (run_id,)
        )
        return [self._checkpoint_from_row(r) for r in rows]

    # ---- transcripts and model calls -----------------------------------------------------

    async def transcript(self, run_id: str, step_id: str, repeat: int = 0) -> list[TranscriptEventRecord]:
        """The stored events of a step (repeat 0) or of a probe repeat, in order."""
        rows = await self._fetchall(
            "SELECT seq, kind, event_json FROM transcript_events"
            " WHERE run_id = ? AND step_id = ? AND repeat = ? ORDER BY seq",
            (run_id, step_id, repeat),
        )
        return [TranscriptEventRecord(seq=r["seq"], kind=r["kind"], event_json=r["event_json"]) for r in rows]

    async def llm_calls(self, run_id: str, step_id: str | None = None) -> list[LLMCallRow]:
        """Logged model calls of a run (or of one step), in order of logging."""
        sql = "SELECT * FROM llm_calls WHERE run_id = ?"
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        rows = await self._fetchall(sql + " ORDER BY id", params)
        out = []
        for r in rows:
            call = {
                "role": r["role"], "model": r["model"], "prompt_tokens": r["prompt_tokens"],
                "completion_tokens": r["completion_tokens"],
                "reused_prefix_tokens": r["reused_prefix_tokens"], "latency_s": r["latency_s"],
                "ok": bool(r["ok"]), "error": r["error"],
            }
            out.append(LLMCallRow.model_validate(
                {"step_id": r["step_id"], "repeat": r["repeat"], "seq": r["seq"], "call": call}
            ))
        return out

    async def token_totals(self, run_id: str) -> TokenTotals:
        """Token use by role over every logged call of the run."""
        rows = await self._fetchall(
            "SELECT role, COUNT(*) AS calls, SUM(prompt_tokens) AS p, SUM(completion_tokens) AS c,"
            " SUM(reused_prefix_tokens) AS r FROM llm_calls WHERE run_id = ? GROUP BY role",
            (run_id,),
        )
        return TokenTotals.model_validate({
            "by_role": {
                r["role"]: {
                    "calls": r["calls"], "prompt_tokens": r["p"] or 0,
                    "completion_tokens": r["c"] or 0, "reused_prefix_tokens": r["r"] or 0,
                }
                for r in rows
            }
        })

    # ---- probes ---------------------------------------------------------------------------

    async def save_probe_result(
        self,
        run_id: str,
        result: ProbeResultRecord,
        events: Sequence[TranscriptEventRecord] = (),
        calls: Sequence[LLMCallRow] = (),
    ) -> None:
        """Store one probe x repeat result with its transcript and model calls, atomically.

        Raises:
            StepAlreadyStoredError: that probe x repeat is already stored; nothing written.
        """
        statements: list[_Statement] = [(
            "INSERT INTO probe_results (run_id, probe_id, repeat, kind, context, attribute, target,"
            " selection, status, reason, attempts, checkpoint_run, checkpoint_index, brs,"
            " brs_reason, prs, prs_reason, started_at, finished_at, tokens_json, result)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, result.probe_id, result.repeat, result.kind, result.context,
                result.attribute, result.target, result.selection, result.status, result.reason,
                result.attempts, result.checkpoint_run, result.checkpoint_index, result.brs,
                result.brs_reason, result.prs, result.prs_reason,
                _codec.to_iso(result.started_at), _codec.to_iso(result.finished_at),
                result.tokens.model_dump_json(),
                _codec.pack_text(result.result_json) if result.result_json else None,
            ),
            False,
        )]
        statements.append(self._event_statement(run_id, result.probe_id, result.repeat, events))
        statements.append(self._calls_statement(run_id, calls))
        try:
            await self._apply(statements)
        except sqlite3.IntegrityError as exc:
            raise StepAlreadyStoredError(
                f"run {run_id}: probe {result.probe_id} repeat {result.repeat} is already stored"
            ) from exc

    async def probe_results(self, run_id: str, *, with_results: bool = False) -> list[ProbeResultRecord]:
        """The run's probe results ordered by probe id and repeat."""
        rows = await self._fetchall(
            "SELECT * FROM probe_results WHERE run_id = ? ORDER BY probe_id, repeat", (run_id,)
        )
        return [
            ProbeResultRecord(
                probe_id=r["probe_id"], repeat=r["repeat"], kind=r["kind"], context=r["context"],
                attribute=r["attribute"], target=r["target"], selection=r["selection"],
                status=r["status"], reason=r["reason"], attempts=r["attempts"],
                checkpoint_run=r["checkpoint_run"], checkpoint_index=r["checkpoint_index"],
                brs=r["brs"], brs_reason=r["brs_reason"], prs=r["prs"], prs_reason=r["prs_reason"],
                started_at=_codec.from_iso(r["started_at"]), finished_at=_codec.from_iso(r["finished_at"]),
                tokens=TokenTotals.model_validate_json(r["tokens_json"]),
                result_json=_codec.unpack_text(r["result"]) if with_results else "",
            )
            for r in rows
        ]

    async def done_probes(self, run_id: str) -> set[tuple[str, int]]:
        """(probe id, repeat) pairs already stored for the run."""
        rows = await self._fetchall("SELECT probe_id, repeat FROM probe_results WHERE run_id = ?", (run_id,))
        return {(str(r["probe_id"]), int(r["repeat"])) for r in rows}
