"""Memory systems: write latency, retrieval latency (p50/p95) and store size at 100, 1,000 and 5,000
stored turns (SPEC section 7: retrieval p50 at most about 20 ms with 5,000 stored turns).

Not a test: prints a table. Every system is built by ``make_memory`` exactly as a run builds it,
with a client of the scripted model served over loopback HTTP (its replies are instant, so the
figures are the memory's own cost plus the litellm round trip for systems that call a model).
Turns are written one by one; at each size the write latencies since the previous size, 50
retrievals with varied queries, and the snapshot's size are measured.

    python benchmarks/bench_memory.py                          # none, file, rag, mem0 (+prefstate)
    python benchmarks/bench_memory.py --systems rag --sizes 100 1000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.llm.scripted_roles import fill_schema
from mempa_tui.memory import MEMORY_BUILDERS, MemorySystem, SessionInfo, TurnRecord, make_memory
from mempa_tui.taxonomy import Context

START = datetime(2025, 1, 6, 9, 0)
VERBS = ["Book", "Move", "Cancel", "Summarise", "Check", "Order", "Email", "Find", "Add", "Review"]
OBJECTS = [
    "the meeting room", "my dentist appointment", "the cinema tickets", "the invoice from Nordwind",
    "the recipe for lasagna", "the shipment of chairs", "the train to Lisbon", "the quarterly report",
    "the birthday present for Mia", "the paper on battery recycling", "the weather for Saturday",
]
TAILS = ["please.", "and keep it short.", "and tell me what you did.", "before noon.", "for next week."]


def make_turn(i: int) -> TurnRecord:
    """A varied, deterministic turn (about 60 tokens)."""
    rng = np.random.default_rng(i)
    msg = f"{VERBS[rng.integers(len(VERBS))]} {OBJECTS[rng.integers(len(OBJECTS))]} {TAILS[rng.integers(len(TAILS))]} (#{i})"
    return TurnRecord(
        step_id=f"B-s{i // 5:04d}", context=Context.WORK if i % 3 else Context.PERSONAL,
        at=START + timedelta(hours=i), turn_index=i % 5, user_message=msg,
        reply=f"Done: {msg.lower()} I have noted it in your calendar and will follow up if anything changes.",
    )


def _schema(request: ScriptedRequest) -> dict[str, Any]:
    if isinstance(request.ollama_format, dict):
        return request.ollama_format
    fmt = request.response_format or {}
    return dict(fmt.get("json_schema", {}).get("schema", {}))


def responder(request: ScriptedRequest) -> str:
    """Instant valid replies: a note per turn for Mem0-style extraction, ADD for its decisions,
    a schema-shaped reply for everything else (File memory, preference-state memory)."""
    schema = _schema(request)
    props = schema.get("properties", {})
    last = request.messages[-1].content if request.messages else ""
    if set(props) == {"memories"}:
        first_line = next((ln for ln in last.splitlines() if ln.startswith("User:")), "User: something")
        return json.dumps({"memories": [f"The user asked: {first_line[6:][:120]}"]})
    if set(props) == {"event", "id", "text"}:
        return json.dumps({"event": "ADD", "id": None, "text": ""})
    return json.dumps(fill_schema(schema) if schema else {"ok": True})


def pct(values: list[float], q: float) -> float:
    """Percentile in milliseconds (numpy, linear interpolation)."""
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


async def bench_system(name: str, client: LLMClient, sizes: list[int], root: Path) -> list[dict[str, Any]]:
    """Write up to each size, measuring writes, retrievals and the snapshot size."""
    memory: MemorySystem = make_memory(name, client=client, folder=root / name, context_window=16_384)
    rows: list[dict[str, Any]] = []
    written = 0
    query_session = SessionInfo(step_id="B-probe", context=Context.WORK, at=START + timedelta(days=400), is_probe=True)
    for size in sizes:
        writes: list[float] = []
        step_started = make_turn(written).step_id if written < size else ""
        while written < size:
            record = make_turn(written)
            if record.step_id != step_started:
                await memory.end_session(SessionInfo(step_id=step_started, context=record.context, at=record.at))
                step_started = record.step_id
            t0 = time.perf_counter()
            await memory.write(record)
            writes.append(time.perf_counter() - t0)
            written += 1
        reads: list[float] = []
        for q in range(50):
            query = f"{VERBS[q % len(VERBS)]} {OBJECTS[(q * 7) % len(OBJECTS)]}"
            t0 = time.perf_counter()
            await memory.retrieve(query, query_session)
            reads.append(time.perf_counter() - t0)
        snap = memory.snapshot()
        rows.append({
            "system": name, "turns": size,
            "write_p50": pct(writes, 50), "write_p95": pct(writes, 95),
            "read_p50": pct(reads, 50), "read_p95": pct(reads, 95),
            "store_kb": len(snap) / 1024,
            "items": statistics.mean(len(memory.inspect().stored) for _ in range(1)),
        })
        print(_fmt(rows[-1]), flush=True)
    return rows


def _fmt(row: dict[str, Any]) -> str:
    return (
        f"| {row['system']:<9} | {row['turns']:>6} | {row['write_p50']:>9.2f} | {row['write_p95']:>9.2f} "
        f"| {row['read_p50']:>8.2f} | {row['read_p95']:>8.2f} | {row['store_kb']:>10.0f} | {row['items']:>7.0f} |"
    )


HEADER = (
    "| system    |  turns | write p50 | write p95 | read p50 | read p95 | store (KB) | entries |\n"
    "|-----------|-------:|----------:|----------:|---------:|---------:|-----------:|--------:|"
)


async def main(systems: list[str], sizes: list[int]) -> None:
    """Run every system at every size and print one table (times in ms)."""
    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile(num_retries=0))
        if any(s in ("rag", "mem0") for s in systems):
            t0 = time.perf_counter()
            make_memory("rag", client=client, folder=Path(tempfile.mkdtemp()))
            print(f"embedder load (once per process): {time.perf_counter() - t0:.1f} s", flush=True)
        print(HEADER, flush=True)
        with tempfile.TemporaryDirectory(prefix="mempa-bench-memory-") as tmp:
            for name in systems:
                await bench_system(name, client, sizes, Path(tmp))


if __name__ == "__main__":
    default = [s for s in ("none", "file", "rag", "mem0", "prefstate") if s in MEMORY_BUILDERS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=default, choices=sorted(MEMORY_BUILDERS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1_000, 5_000])
    args = parser.parse_args()
    anyio.run(main, args.systems, sorted(args.sizes))
