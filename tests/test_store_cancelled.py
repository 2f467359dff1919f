"""Run status ``cancelled`` (schema 2) and the migration of a schema-1 database that keeps every row."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

from mempa_tui.store import (
    SCHEMA_VERSION,
    CheckpointData,
    RunRecord,
    RunStatus,
    RunStore,
    StepRecord,
    TranscriptEventRecord,
    utc_now,
)
from mempa_tui.store._codec import sha256_hex

_V1_STATUS = "CHECK (status IN ('created', 'running', 'stopped', 'completed', 'failed'))"


def _run() -> RunRecord:
    return RunRecord(id="A-file-test-s0", user="A", profile="test", memory="file", seed=0, repeats=3,
                     config_json="{}", config_hash="h", total_steps=2)


def _step() -> tuple[StepRecord, CheckpointData]:
    now = utc_now()
    files = {"email/inbox.yaml": b"inbox"}
    step = StepRecord(index=0, step_id="A-s0", kind="accumulation", status="completed", started_at=now,
                      finished_at=now, result_json="{}")
    ckpt = CheckpointData(step_index=0, step_id="A-s0", story_time=datetime(2025, 3, 1, 9), world_files=files,
                          world_manifest={p: sha256_hex(b) for p, b in files.items()}, memory_snapshot=b"m",
                          simulator_memory_json="{}")
    return step, ckpt


def _downgrade_to_v1(path: Path) -> None:
    """Rewrite the database as schema 1 wrote it: the runs table without ``cancelled``."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()
        old = sql.replace("CREATE TABLE runs", "CREATE TABLE runs_v1").replace(
            "CHECK (status IN ('created', 'running', 'stopped', 'completed', 'failed', 'cancelled'))", _V1_STATUS)
        assert _V1_STATUS in old
        db.execute("PRAGMA foreign_keys = OFF")
        db.executescript(f"BEGIN; {old}; INSERT INTO runs_v1 SELECT * FROM runs; DROP TABLE runs; "
                         "ALTER TABLE runs_v1 RENAME TO runs; UPDATE schema_version SET version = 1; "
                         # schema 1 had no stored prompts either (schema 3 added them)
                         "ALTER TABLE llm_calls DROP COLUMN prompt; ALTER TABLE llm_calls DROP COLUMN reply; "
                         "COMMIT;")
        try:
            db.execute("UPDATE runs SET status = 'cancelled'")
        except sqlite3.IntegrityError:
            pass  # schema 1 refuses the new status: the downgrade is real
        else:
            raise AssertionError("the schema-1 table accepted 'cancelled'")
    finally:
        db.close()


async def test_a_run_can_be_marked_cancelled_and_reads_back(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "db.sqlite") as store:
        await store.create_run(_run())
        await store.update_run("A-file-test-s0", status=RunStatus.CANCELLED, error="cancelled from the dashboard")
        run = await store.get_run("A-file-test-s0")
        assert run is not None and run.status is RunStatus.CANCELLED and run.error == "cancelled from the dashboard"
        [summary] = await store.summaries()
        assert summary.run.status is RunStatus.CANCELLED


async def test_a_schema_1_database_is_migrated_with_its_steps_and_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with RunStore(path) as store:
        await store.create_run(_run())
        step, ckpt = _step()
        await store.commit_step("A-file-test-s0", step, [TranscriptEventRecord(seq=0, kind="x", event_json="{}")],
                                ckpt)
    _downgrade_to_v1(path)

    async with RunStore(path) as store:
        assert int((await (await store.db.execute("SELECT MAX(version) FROM schema_version")).fetchone())[0]) \
            == SCHEMA_VERSION
        await store.update_run("A-file-test-s0", status=RunStatus.CANCELLED)
        run = await store.get_run("A-file-test-s0")
        assert run is not None and run.status is RunStatus.CANCELLED
        assert [s.step_id for s in await store.steps("A-file-test-s0")] == ["A-s0"]
        assert len(await store.transcript("A-file-test-s0", "A-s0")) == 1
        assert (await store.latest_checkpoint("A-file-test-s0")) is not None
        assert (await store.pragma("foreign_keys")) == "1"
        # the children still cascade from the rebuilt runs table
        await store.delete_run("A-file-test-s0")
        assert await store.steps("A-file-test-s0") == []
