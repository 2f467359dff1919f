"""The run store: WAL, a step stored once, blob dedup across checkpoints, atomic step commits."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from mempa_tui.llm.types import LLMCallRecord, Role
from mempa_tui.store import (
    CheckpointData,
    LLMCallRow,
    ProbeResultRecord,
    RunRecord,
    RunStatus,
    RunStore,
    StepAlreadyStoredError,
    StepRecord,
    StoreError,
    TranscriptEventRecord,
    utc_now,
)
from mempa_tui.store._codec import sha256_hex


def _run(run_id: str = "A-file-test-s0", **kw: object) -> RunRecord:
    base: dict[str, object] = {
        "id": run_id, "user": "A", "profile": "test", "memory": "file", "seed": 0, "repeats": 3,
        "config_json": "{}", "config_hash": "h1", "total_steps": 3,
    }
    base.update(kw)
    return RunRecord.model_validate(base)


def _ckpt(index: int, files: dict[str, bytes], memory: bytes | None = b"mem", sim: str = "{}") -> CheckpointData:
    return CheckpointData(
        step_index=index,
        step_id=None if index < 0 else f"A-s{index}",
        story_time=None if index < 0 else datetime(2025, 3, 1 + index, 9, 0),
        world_files=files,
        world_manifest={p: sha256_hex(b) for p, b in files.items()},
        memory_snapshot=memory,
        simulator_memory_json=sim,
    )


def _step(index: int, status: str = "completed") -> StepRecord:
    now = utc_now()
    return StepRecord.model_validate({
        "index": index, "step_id": f"A-s{index}", "kind": "accumulation", "status": status,
        "started_at": now, "finished_at": now, "result_json": '{"x": 1}',
    })


def _events(n: int) -> list[TranscriptEventRecord]:
    return [TranscriptEventRecord(seq=i, kind="user_message", event_json=f'{{"i": {i}}}') for i in range(n)]


def _call(step_id: str, seq: int, role: Role = Role.PA) -> LLMCallRow:
    return LLMCallRow(step_id=step_id, seq=seq, call=LLMCallRecord(
        role=role, model="m", prompt_tokens=100, completion_tokens=10,
        reused_prefix_tokens=50, latency_s=0.01, ok=True,
    ))


WORLD = {"email/inbox.yaml": b"inbox " * 200, "calendar/events.yaml": b"cal " * 300, "contacts.yaml": b"c"}


@pytest.fixture
async def store(tmp_path: Path) -> RunStore:
    async with RunStore(tmp_path / "saves" / "mempa.sqlite") as s:
        await s.create_run(_run())
        yield s  # type: ignore[misc]


async def test_wal_mode_and_busy_timeout(store: RunStore) -> None:
    assert (await store.pragma("journal_mode")).lower() == "wal"
    assert int(await store.pragma("busy_timeout")) > 0
    assert int(await store.pragma("foreign_keys")) == 1


async def test_run_round_trip_and_duplicate_refused(store: RunStore) -> None:
    run = await store.get_run("A-file-test-s0")
    assert run is not None and run.status is RunStatus.CREATED and run.total_steps == 3
    with pytest.raises(StoreError, match="already exists"):
        await store.create_run(_run())
    await store.update_run(run.id, status=RunStatus.STOPPED, error="boom")
    again = await store.get_run(run.id)
    assert again is not None and again.status is RunStatus.STOPPED and again.error == "boom"


async def test_step_is_stored_exactly_once(store: RunStore) -> None:
    rid = "A-file-test-s0"
    await store.write_initial_checkpoint(rid, _ckpt(-1, WORLD))
    await store.commit_step(rid, _step(0), _events(3), _ckpt(0, WORLD), [_call("A-s0", 0)])
    with pytest.raises(StepAlreadyStoredError, match="already stored"):
        await store.commit_step(rid, _step(0), _events(2), _ckpt(0, WORLD), [_call("A-s0", 1)])
    steps = await store.steps(rid, with_results=True)
    assert [s.step_id for s in steps] == ["A-s0"]
    assert steps[0].result_json == '{"x": 1}'
    # the refused second write left nothing behind
    assert len(await store.transcript(rid, "A-s0")) == 3
    assert len(await store.llm_calls(rid)) == 1
    assert [c.step_index for c in await store.checkpoints(rid)] == [-1, 0]


async def test_checkpoints_share_unchanged_world_files(store: RunStore) -> None:
    rid = "A-file-test-s0"
    await store.write_initial_checkpoint(rid, _ckpt(-1, WORLD))
    n0, _ = await store.blob_stats()
    changed = dict(WORLD, **{"email/inbox.yaml": b"inbox " * 200 + b"new mail"})
    await store.commit_step(rid, _step(0), [], _ckpt(0, changed))
    await store.commit_step(rid, _step(1), [], _ckpt(1, changed))
    n2, _ = await store.blob_stats()
    # 3 world files + memory + simulator at the start; then one new inbox only, nothing for step 1
    assert n0 == 5
    assert n2 == n0 + 1
    c0, c1 = await store.checkpoint(rid, 0), await store.checkpoint(rid, 1)
    assert c0 is not None and c1 is not None
    assert c0.world_manifest == c1.world_manifest
    assert c0.world_manifest["calendar/events.yaml"] == sha256_hex(WORLD["calendar/events.yaml"])
    assert await store.load_world(c1.world_manifest) == changed
    assert c1.memory_blob is not None and await store.load_blob(c1.memory_blob) == b"mem"


async def test_blobs_are_shared_across_runs(store: RunStore) -> None:
    await store.write_initial_checkpoint("A-file-test-s0", _ckpt(-1, WORLD))
    n0, _ = await store.blob_stats()
    await store.create_run(_run("A-file-test-s1", seed=1))
    await store.write_initial_checkpoint("A-file-test-s1", _ckpt(-1, WORLD))
    assert (await store.blob_stats())[0] == n0


async def test_interrupted_step_transaction_leaves_no_partial_step(store: RunStore) -> None:
    rid = "A-file-test-s0"
    await store.write_initial_checkpoint(rid, _ckpt(-1, WORLD))
    # a failure inside the transaction, after the step row and transcript were inserted
    await store.db.execute(
        "CREATE TEMP TRIGGER fail_checkpoint BEFORE INSERT ON checkpoints "
        "BEGIN SELECT RAISE(ABORT, 'disk gone'); END"
    )
    changed = dict(WORLD, extra=b"only in step 0")
    with pytest.raises(sqlite3.DatabaseError, match="disk gone"):
        await store.commit_step(rid, _step(0), _events(4), _ckpt(0, changed), [_call("A-s0", 0)])
    assert await store.steps(rid) == []
    assert await store.transcript(rid, "A-s0") == []
    assert await store.llm_calls(rid) == []
    latest = await store.latest_checkpoint(rid)
    assert latest is not None and latest.step_index == -1
    await store.db.execute("DROP TRIGGER fail_checkpoint")
    # the same step can now be written whole; the blob of the rolled-back write is not assumed
    await store.commit_step(rid, _step(0), _events(4), _ckpt(0, changed), [_call("A-s0", 0)])
    ckpt = await store.latest_checkpoint(rid)
    assert ckpt is not None and await store.load_world(ckpt.world_manifest) == changed


async def test_probe_result_once_per_probe_and_repeat(store: RunStore) -> None:
    rid = "A-file-test-s0"
    now = utc_now()
    result = ProbeResultRecord(
        probe_id="A-p1", repeat=1, kind="final", context="work", attribute="verbosity",
        target="Terse", selection="Terse", status="completed", brs=4, prs=5,
        started_at=now, finished_at=now, result_json="{}",
    )
    await store.save_probe_result(rid, result, _events(2), [_call("A-p1", 0, Role.JUDGE)])
    with pytest.raises(StepAlreadyStoredError):
        await store.save_probe_result(rid, result)
    await store.save_probe_result(rid, result.model_copy(update={"repeat": 2}))
    assert await store.done_probes(rid) == {("A-p1", 1), ("A-p1", 2)}
    assert len(await store.transcript(rid, "A-p1", repeat=1)) == 2
    totals = await store.token_totals(rid)
    assert totals.by_role["judge"].calls == 1 and totals.total == 110


async def test_archive_moves_every_row(store: RunStore) -> None:
    rid = "A-file-test-s0"
    await store.write_initial_checkpoint(rid, _ckpt(-1, WORLD))
    await store.commit_step(rid, _step(0), _events(1), _ckpt(0, WORLD), [_call("A-s0", 0)])
    archived = await store.archive_run(rid)
    assert archived == f"{rid}~1"
    assert await store.get_run(rid) is None
    assert [s.step_id for s in await store.steps(archived)] == ["A-s0"]
    assert len(await store.checkpoints(archived)) == 2
    await store.create_run(_run())
    assert await store.steps(rid) == []


async def test_donor_lookup_picks_latest_completed_accumulation_run(store: RunStore) -> None:
    assert await store.latest_completed_run("A", "test", exclude_memory=("none", "oracle")) is None
    await store.update_run("A-file-test-s0", status=RunStatus.COMPLETED)
    await store.create_run(_run("A-none-test-s0", memory="none", total_steps=0, status=RunStatus.COMPLETED))
    donor = await store.latest_completed_run("A", "test", exclude_memory=("none", "oracle"))
    assert donor is not None and donor.id == "A-file-test-s0"
    assert await store.latest_completed_run("B", "test") is None


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with RunStore(path) as s:
        await s.db.execute("UPDATE schema_version SET version = version + 1")
    with pytest.raises(StoreError, match="newer mempa"):
        async with RunStore(path):
            pass


async def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a usable run database"):
        async with RunStore(path):
            pass


async def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE foo (x INTEGER)")
    with pytest.raises(StoreError, match="not a mempa run database .*other tables: foo"):
        async with RunStore(path):
            pass
    with sqlite3.connect(path) as other:
        tables = [r[0] for r in other.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["foo"]  # none of mempa's tables written into it


async def test_read_only_open_reads_everything_and_refuses_writes_by_name(tmp_path: Path) -> None:
    path = tmp_path / "saves" / "mempa.sqlite"
    async with RunStore(path) as s:
        await s.create_run(_run())
    async with RunStore(path, read_only=True) as ro:
        assert ro.read_only
        assert [r.id for r in await ro.list_runs()] == ["A-file-test-s0"]
        with pytest.raises(StoreError, match=r"opened read-only .* nothing was written"):
            await ro.archive_run("A-file-test-s0")
    async with RunStore(path) as s:  # nothing was moved
        assert [r.id for r in await s.list_runs()] == ["A-file-test-s0"]
    with pytest.raises(StoreError, match="no run database here"):
        await RunStore(tmp_path / "elsewhere" / "mempa.sqlite", read_only=True).open()
    assert not (tmp_path / "elsewhere").exists()


async def test_an_unwritable_saves_folder_opens_read_only_unless_writing_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tests run as root, which may write anywhere, so the folder's permission is faked.
    path = tmp_path / "saves" / "mempa.sqlite"
    async with RunStore(path) as s:
        await s.create_run(_run())
    monkeypatch.setattr("mempa_tui.store._base.os.access", lambda *_a, **_k: False)
    async with RunStore(path) as auto:
        assert auto.read_only and len(await auto.list_runs()) == 1
    with pytest.raises(StoreError, match=r"cannot be written here .* --saves"):
        await RunStore(path, read_only=False).open()


async def test_a_read_only_database_of_an_older_schema_asks_for_one_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "mempa.sqlite"
    async with RunStore(path) as s:
        await s.create_run(_run())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = 1")
    with pytest.raises(StoreError, match=r"older mempa \(schema 1, now \d+\); open it once where it can be written"):
        await RunStore(path, read_only=True).open()
