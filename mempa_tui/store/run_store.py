"""The run store: runs, steps, checkpoints, transcripts, probe results and model calls in SQLite.

One database (``saves/mempa.sqlite`` by default) holds every run, so world files shared by runs and
checkpoints are stored once (SPEC sections 4.8 and 7). Atomicity: a settled step (its row,
transcript, model calls and checkpoint) is written in ONE transaction that cannot be cancelled
half way, so a kill leaves either the whole step or none of it (see :mod:`._base`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from mempa_tui.llm.types import CallPrompt, ChatMessage
from mempa_tui.store import _codec, _sql
from mempa_tui.store._base import StepAlreadyStoredError, StoreBase, StoreError
from mempa_tui.store._sql import Statement
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


class RunStore(StoreBase):
    """Async access to the run database (aiosqlite, WAL).

    Use as ``async with RunStore(path) as store: ...`` or call :meth:`open` / :meth:`close`. One
    instance may be shared by concurrent runs: writes are serialised by a lock.

    Args:
        path: the SQLite file; its folder is created on open.
    """

    # ---- runs -----------------------------------------------------------------------------

    async def create_run(self, run: RunRecord) -> None:
        """Register a new run.

        Raises:
            StoreError: a run with that id exists.
        """
        try:
            await self._apply([_sql.run_insert(run)])
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"run {run.id} already exists") from exc

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run with that id, or None."""
        row = await self._fetchone("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _sql.run_from_row(row) if row else None

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        rows = await self._fetchall("SELECT * FROM runs ORDER BY created_at DESC, id")
        return [_sql.run_from_row(r) for r in rows]

    async def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus | None = None,
        error: str | None = None,
        total_steps: int | None = None,
        total_probes: int | None = None,
        clear_error: bool = False,
        config: tuple[str, str] | None = None,
        updated_at: datetime | None = None,
    ) -> None:
        """Change a run's status, error, totals or stored configuration (``updated_at`` is set to
        now, or to ``updated_at`` when given).

        Args:
            run_id: the run.
            status: new status, if changing.
            error: new error text, if setting one.
            total_steps / total_probes: new totals, if changing.
            clear_error: remove the stored error.
            config: new ``(config_json, config_hash)``, if changing (a reference run whose donor
                was moved aside by ``--fresh`` keeps its donor under the new id).
            updated_at: the time to store instead of now: a rerun of a completed run that changed
                nothing puts its earlier time back (issue 12.4).

        Raises:
            StoreError: no such run.
        """
        sets = ["updated_at = ?"]
        params: list[Any] = [_codec.to_iso(updated_at or utc_now())]
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
        if config is not None:
            sets += ["config_json = ?", "config_hash = ?"]
            params += list(config)
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
        self, user: str, profile: str, *, exclude_memory: Sequence[str] = (),
        fits: Callable[[RunRecord], bool] | None = None,
    ) -> RunRecord | None:
        """The newest completed run of a user and profile that played its timeline.

        Used to pick a donor for No Memory and Oracle (paper Section 4, 'Reference Condition
        Runs'): runs whose memory condition is in ``exclude_memory`` (the probe-only conditions)
        are skipped, as are archived runs (ids with ``~``) and runs ``fits`` rejects (the runner
        passes a check that the run played the same timeline: slice or whole, same world files).
        """
        marks = ",".join("?" * len(exclude_memory)) or "''"
        rows = await self._fetchall(
            "SELECT * FROM runs WHERE user = ? AND profile = ? AND status = 'completed'"
            f" AND memory NOT IN ({marks}) AND total_steps > 0 AND instr(id, '~') = 0"
            " ORDER BY updated_at DESC",
            (user, profile, *exclude_memory),
        )
        for row in rows:
            run = _sql.run_from_row(row)
            if fits is None or fits(run):
                return run
        return None

    # ---- steps and checkpoints ---------------------------------------------------------------

    async def _checkpoint_statements(self, run_id: str, ckpt: CheckpointData) -> list[Statement]:
        blobs, memory_key, sim_key = _sql.checkpoint_keys(ckpt)
        missing = await self._missing_blobs(blobs)
        return [
            _sql.blob_insert({k: blobs[k] for k in missing}),
            _sql.checkpoint_insert(run_id, ckpt, memory_key, sim_key),
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
        self._known_blobs.update(_sql.checkpoint_keys(ckpt)[0])

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
        call_blobs, call_statements = await self._call_statements(run_id, calls)
        statements: list[Statement] = [
            _sql.step_insert(run_id, step),
            _sql.events_insert(run_id, step.step_id, 0, events),
            *call_statements,
        ]
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
        self._known_blobs.update(_sql.checkpoint_keys(checkpoint)[0])
        self._known_blobs.update(call_blobs)

    async def _call_statements(self, run_id: str, calls: Sequence[LLMCallRow]) -> tuple[set[str], list[Statement]]:
        """The statements storing ``calls``: their message blobs not stored yet, then their rows.

        Returns:
            ``(every message blob key the calls use, statements)``; the caller marks the keys
            known once the transaction committed.
        """
        blobs, prompts = _sql.prompt_blobs(calls)
        missing = await self._missing_blobs(blobs)
        return set(blobs), [
            _sql.blob_insert({k: blobs[k] for k in missing}),
            _sql.calls_insert(run_id, calls, prompts),
        ]

    async def record_attempt(
        self, run_id: str, attempt: StepAttemptRecord, calls: Sequence[LLMCallRow] = ()
    ) -> None:
        """Store a discarded attempt of a step that will be played again."""
        call_blobs, call_statements = await self._call_statements(run_id, calls)
        await self._apply([_sql.attempt_insert(run_id, attempt), *call_statements])
        self._known_blobs.update(call_blobs)

    async def attempts(self, run_id: str, step_id: str) -> list[StepAttemptRecord]:
        """Discarded attempts of a step, in order."""
        rows = await self._fetchall(
            "SELECT * FROM step_attempts WHERE run_id = ? AND step_id = ? ORDER BY attempt",
            (run_id, step_id),
        )
        return [_sql.attempt_from_row(r) for r in rows]

    async def steps(self, run_id: str, *, with_results: bool = False) -> list[StepRecord]:
        """The run's stored steps in timeline order (``result_json`` filled only on request)."""
        cols = "*" if with_results else (
            "idx, step_id, kind, status, reason, attempts, selection, started_at, finished_at, tokens_json"
        )
        rows = await self._fetchall(f"SELECT {cols} FROM steps WHERE run_id = ? ORDER BY idx", (run_id,))
        return [_sql.step_from_row(r, with_result=with_results) for r in rows]

    async def last_step(self, run_id: str) -> StepRecord | None:
        """The run's last stored timeline step with its ``result_json`` (None: no step yet); one
        row read, for readers that need only the latest counters (``mempa runs``)."""
        row = await self._fetchone("SELECT * FROM steps WHERE run_id = ? ORDER BY idx DESC LIMIT 1", (run_id,))
        return None if row is None else _sql.step_from_row(row, with_result=True)

    async def latest_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The run's last checkpoint, or None when it has none."""
        row = await self._fetchone(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step_idx DESC LIMIT 1", (run_id,)
        )
        return _sql.checkpoint_from_row(row) if row else None

    async def checkpoint(self, run_id: str, step_index: int) -> CheckpointRecord | None:
        """The checkpoint after ``step_index`` (-1: the start), or None."""
        row = await self._fetchone(
            "SELECT * FROM checkpoints WHERE run_id = ? AND step_idx = ?", (run_id, step_index)
        )
        return _sql.checkpoint_from_row(row) if row else None

    async def checkpoints(self, run_id: str) -> list[CheckpointRecord]:
        """Every checkpoint of the run, in timeline order."""
        rows = await self._fetchall(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step_idx", (run_id,)
        )
        return [_sql.checkpoint_from_row(r) for r in rows]

    # ---- transcripts and model calls -----------------------------------------------------

    async def transcript(self, run_id: str, step_id: str, repeat: int = 0) -> list[TranscriptEventRecord]:
        """The stored events of a step (repeat 0) or of a probe repeat, in order."""
        rows = await self._fetchall(
            "SELECT seq, kind, event_json FROM transcript_events"
            " WHERE run_id = ? AND step_id = ? AND repeat = ? ORDER BY seq",
            (run_id, step_id, repeat),
        )
        return [TranscriptEventRecord(seq=r["seq"], kind=r["kind"], event_json=r["event_json"]) for r in rows]

    async def events_of_kind(self, run_id: str, kind: str) -> list[tuple[str, int, TranscriptEventRecord]]:
        """Every stored event of one kind in a run (all steps and probe repeats), e.g. each
        step's ``step_status``, without reading the rest of the transcripts.

        Returns:
            ``(step id, repeat, event)`` in step, repeat and event order (repeat 0: a timeline step).
        """
        rows = await self._fetchall(
            "SELECT step_id, repeat, seq, kind, event_json FROM transcript_events"
            " WHERE run_id = ? AND kind = ? ORDER BY step_id, repeat, seq",
            (run_id, kind),
        )
        return [
            (r["step_id"], r["repeat"], TranscriptEventRecord(seq=r["seq"], kind=r["kind"], event_json=r["event_json"]))
            for r in rows
        ]

    async def llm_calls(self, run_id: str, step_id: str | None = None) -> list[LLMCallRow]:
        """Logged model calls of a run (or of one step), in order of logging.

        Light: each row's ``call_id`` and ``prompt_stored`` are set, but no prompt or reply is read
        (:meth:`llm_call` reads one).
        """
        sql = f"SELECT {_sql.CALL_LIST_COLUMNS} FROM llm_calls WHERE run_id = ?"
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        rows = await self._fetchall(sql + " ORDER BY id", params)
        return [_sql.call_from_row(r) for r in rows]

    async def llm_call(self, run_id: str, call_id: int) -> LLMCallRow:
        """One logged model call with its prompt and reply decompressed (issue 16: the run browser).

        ``call.prompt`` / ``call.reply`` are None when the store holds none (``prompt_stored``
        False: the call was stored before schema 3; ``reply`` None alone: the call failed).

        Args:
            run_id: the run.
            call_id: the call's ``call_id`` as :meth:`llm_calls` lists it.

        Raises:
            StoreError: the run has no call with that id, or its stored prompt or reply is corrupt.
        """
        row = await self._fetchone(
            f"SELECT {_sql.CALL_LIST_COLUMNS}, prompt, reply FROM llm_calls WHERE run_id = ? AND id = ?",
            (run_id, call_id),
        )
        if row is None:
            raise StoreError(f"{self.path}: run {run_id!r} has no model call {call_id}")
        try:
            prompt = None
            if row["prompt"] is not None:
                refs = _sql.prompt_refs(row["prompt"])
                texts = await self.load_blobs(refs.messages)
                lost = [key for key in refs.messages if key not in texts]
                if lost:
                    raise StoreError(f"{len(lost)} message blob(s) of its prompt are missing ({lost[0]}, ...)")
                prompt = CallPrompt(messages=[ChatMessage.model_validate_json(texts[key]) for key in refs.messages],
                                    tools=refs.tools, seed=refs.seed)
            return _sql.call_from_row(row, prompt=prompt, with_reply=True)
        except (ValueError, StoreError) as exc:  # pydantic's ValidationError is a ValueError
            raise StoreError(f"{self.path}: run {run_id!r}, model call {call_id}: {exc}") from exc

    async def call_sizes(self, run_id: str) -> tuple[int, int, int]:
        """(calls, calls with a stored prompt, bytes of their ``prompt`` and ``reply`` columns) of
        a run; the message blobs the prompts refer to are shared and not counted here
        (:meth:`blob_stats` counts every blob)."""
        row = await self._fetchone(
            "SELECT COUNT(*) AS n, COALESCE(SUM(prompt IS NOT NULL), 0) AS kept,"
            " COALESCE(SUM(COALESCE(LENGTH(prompt), 0) + COALESCE(LENGTH(reply), 0)), 0) AS b"
            " FROM llm_calls WHERE run_id = ?",
            (run_id,),
        )
        assert row is not None
        return int(row["n"]), int(row["kept"]), int(row["b"])

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
        call_blobs, call_statements = await self._call_statements(run_id, calls)
        statements = [
            _sql.probe_insert(run_id, result),
            _sql.events_insert(run_id, result.probe_id, result.repeat, events),
            *call_statements,
        ]
        try:
            await self._apply(statements)
        except sqlite3.IntegrityError as exc:
            raise StepAlreadyStoredError(
                f"run {run_id}: probe {result.probe_id} repeat {result.repeat} is already stored"
            ) from exc
        self._known_blobs.update(call_blobs)

    async def probe_results(self, run_id: str, *, with_results: bool = False) -> list[ProbeResultRecord]:
        """The run's probe results ordered by probe id and repeat."""
        rows = await self._fetchall(
            "SELECT * FROM probe_results WHERE run_id = ? ORDER BY probe_id, repeat", (run_id,)
        )
        return [_sql.probe_from_row(r, with_result=with_results) for r in rows]

    async def done_probes(self, run_id: str) -> set[tuple[str, int]]:
        """(probe id, repeat) pairs already stored for the run."""
        rows = await self._fetchall("SELECT probe_id, repeat FROM probe_results WHERE run_id = ?", (run_id,))
        return {(str(r["probe_id"]), int(r["repeat"])) for r in rows}
