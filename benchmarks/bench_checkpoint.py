"""Checkpoint cost per timeline step (SPEC section 7: at most about 50 ms and 1 MB per step).

Not a test: prints numbers. It replays what the runner does after each step of a user's
timeline, against a real :class:`~mempa_tui.store.RunStore` in a temporary folder:

* the world changes a little (one record appended to one collection file, as a session's write
  does), so most files are unchanged and must be stored once;
* the memory snapshot grows (File memory's pending turns), the simulator memory gains an entry;
* the step row, ~60 transcript events, ~40 model-call rows and the checkpoint are committed in
  one transaction.

It reports, per step: the time to build the checkpoint (manifest, snapshots) and commit it, the
bytes the checkpoint itself added (new blobs and the manifest row) and the bytes everything of
the step added to the database; and the time to restore the last checkpoint (resume).

    python benchmarks/bench_checkpoint.py                       # User A's fixtures, 99 steps
    python benchmarks/bench_checkpoint.py --steps 30 --world worlds/users/A/fixtures
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from mempa_tui.llm.types import LLMCallRecord, Role
from mempa_tui.store import (
    CheckpointData,
    LLMCallRow,
    RunRecord,
    RunStore,
    StepRecord,
    TokenTotals,
    TranscriptEventRecord,
    utc_now,
)
from mempa_tui.world import WorldState


def _events(step: int) -> list[TranscriptEventRecord]:
    body = {"type": "pa_reply", "text": "A reply of ordinary length for this turn. " * 8}
    return [
        TranscriptEventRecord(seq=i, kind="pa_reply", event_json=json.dumps({**body, "turn_index": i, "step": step}))
        for i in range(60)
    ]


def _calls(step_id: str) -> list[LLMCallRow]:
    call = LLMCallRecord(role=Role.PA, model="bench", prompt_tokens=3000, completion_tokens=200,
                         reused_prefix_tokens=2500, latency_s=1.0, ok=True)
    return [LLMCallRow(step_id=step_id, seq=i, call=call) for i in range(40)]


async def _db_bytes(store: RunStore) -> int:
    await store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store.path.stat().st_size


async def bench(world_dir: Path, steps: int) -> None:
    world = WorldState.from_directory(world_dir)
    files, size = len(world), sum(len(b) for b in world.values())
    target = max(world, key=lambda p: len(world[p]))  # the biggest collection file takes the writes
    memory = b'{"system":"file","pending":['
    simulator: dict[str, list[object]] = {"entries": [], "impressions": ["careful"]}
    with tempfile.TemporaryDirectory() as tmp:
        async with RunStore(Path(tmp) / "bench.sqlite") as store:
            run_id = "BENCH-file-bench-s0"
            await store.create_run(RunRecord(id=run_id, user="A", profile="bench", memory="file", seed=0,
                                             repeats=3, config_json="{}", config_hash="x", total_steps=steps))
            await store.write_initial_checkpoint(run_id, CheckpointData(
                step_index=-1, world_files=dict(world.files), world_manifest=world.manifest(),
                memory_snapshot=memory, simulator_memory_json=json.dumps(simulator)))
            times: list[float] = []
            ckpt_bytes: list[int] = []
            step_bytes: list[int] = []
            before = await _db_bytes(store)
            for i in range(steps):
                step_id = f"BENCH-s{i:03d}"
                record = f"\n- id: bench_{i:04d}\n  entered_at: 2026-03-01T09:00\n  note: written by step {i}\n"
                world = world.with_files({target: world[target] + record.encode()})
                memory += json.dumps({"turn": i, "text": "user and assistant turn text " * 20}).encode() + b","
                simulator["entries"].append({"on": "2026-03-01", "kind": "session",
                                             "text": "I asked for help and it went fine. It checked first."})
                blobs_before = (await store.blob_stats())[1]
                started = time.perf_counter()
                ckpt = CheckpointData(
                    step_index=i, step_id=step_id, story_time=None, world_files=dict(world.files),
                    world_manifest=world.manifest(), memory_snapshot=memory,
                    simulator_memory_json=json.dumps(simulator), tokens=TokenTotals(),
                )
                now = utc_now()
                await store.commit_step(
                    run_id,
                    StepRecord(index=i, step_id=step_id, kind="accumulation", status="completed",
                               started_at=now, finished_at=now, result_json="{}" * 5000),
                    _events(i), ckpt, _calls(step_id),
                )
                times.append(time.perf_counter() - started)
                manifest_row = len(json.dumps(ckpt.world_manifest))
                ckpt_bytes.append((await store.blob_stats())[1] - blobs_before + manifest_row)
                after = await _db_bytes(store)
                step_bytes.append(after - before)
                before = after
            started = time.perf_counter()
            last = await store.latest_checkpoint(run_id)
            assert last is not None and last.memory_blob is not None
            restored = WorldState(await store.load_world(last.world_manifest))
            await store.load_blob(last.memory_blob)
            restore_s = time.perf_counter() - started
            assert restored == world
    ms = sorted(t * 1000 for t in times)
    print(f"world: {world_dir} ({files} files, {size:,} bytes at the start); {steps} steps")
    print(f"checkpoint+commit time per step: mean {statistics.mean(ms):.1f} ms, "
          f"p50 {ms[len(ms) // 2]:.1f} ms, max {ms[-1]:.1f} ms   (target: about 50 ms)")
    print(f"checkpoint bytes per step (new blobs, compressed, + manifest): mean {statistics.mean(ckpt_bytes):,.0f}, "
          f"max {max(ckpt_bytes):,}   (target: about 1 MB)")
    print(f"database growth per step (everything of the step): mean {statistics.mean(step_bytes):,.0f}, "
          f"max {max(step_bytes):,}")
    print(f"restore the last checkpoint (resume): {restore_s * 1000:.1f} ms")


def main() -> None:
    """Parse arguments and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=Path("worlds/users/A/fixtures"), help="fixture tree")
    parser.add_argument("--steps", type=int, default=99, help="timeline steps (default 99)")
    args = parser.parse_args()
    anyio.run(bench, args.world, args.steps)


if __name__ == "__main__":
    main()
