"""Memory systems: write latency, retrieval latency (p50/p95) and store size at 100, 1,000 and 5,000
stored turns (SPEC section 7: retrieval p50 at most about 20 ms with 5,000 stored turns).

Not a test: prints a table. Every system is built by ``make_memory`` exactly as a run builds it,
with a client of the scripted model served over loopback HTTP (its replies are instant, so the
figures are the memory's own cost plus the litellm round trip for systems that call a model).
At each size the store is pre-filled up to 30 turns short (Simple RAG and Mem0-style in batches,
see :func:`prefill`), then the last 30 writes are timed one by one, then 50 retrievals with varied
queries, and the snapshot's size is taken. Times in milliseconds.

    python benchmarks/bench_memory.py                          # every condition at 100, 1,000, 5,000
    python benchmarks/bench_memory.py --systems rag --sizes 100 1000
    python benchmarks/bench_memory.py consolidation --saves DIR --run RUN [--models 0.5b,1.5b]

``consolidation`` (issue 12) replays a stored run's File memory consolidation rounds on each
packaged embedded model and prints, per model and round, seconds, tokens, finish reason, usable or
the rejection reason and MEMORY.md's size, then the share of usable rounds
(``benchmarks/consolidation_replay.py``).

``rag`` and ``mem0`` need mem0ai 2.0.2 (``pip install -e ".[mem0ai]"``), ``memos`` MemOS's own
environment (``python -m mempa_tui.memory.memos_setup``); a condition that cannot be built is
named with the reason and skipped. Pre-fill goes around the libraries' own add (which would make a
model call and, in Mem0's case, list the whole store after every turn): rows with random vectors
go straight into Mem0's FAISS store or MemOS's cube; the timed writes and every query use each
library's own add and search.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mempa_tui, not an installed one

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest  # noqa: E402
from mempa_tui.llm.scripted_roles import fill_schema  # noqa: E402
from mempa_tui.memory import (  # noqa: E402
    MEMORY_BUILDERS,
    MemorySystem,
    SessionInfo,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._factory import MemoryConfigError  # noqa: E402
from mempa_tui.memory._mem0ai import Mem0aiMemory  # noqa: E402
from mempa_tui.memory._memos import MemosMemory, MemosState  # noqa: E402
from mempa_tui.memory._rag import RagMemory  # noqa: E402
from mempa_tui.taxonomy import Context  # noqa: E402

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
    """Instant valid replies: a note per turn for Mem0's and MemOS's extraction, a schema-shaped
    reply for everything else (File memory, preference-state memory)."""
    schema = _schema(request)
    props = schema.get("properties", {})
    last = request.messages[-1].content if request.messages else ""
    note = f"The user asked: {last[-200:].strip()[:120]}"
    if "memory list" in last:  # MemOS's extraction prompt
        return json.dumps({"memory list": [{"key": "ask", "memory_type": "UserMemory", "value": note, "tags": []}],
                           "summary": note})
    if set(props) == {"memory"}:  # Mem0's extraction
        return json.dumps({"memory": [{"text": note}]})
    return json.dumps(fill_schema(schema) if schema else {"ok": True})


def pct(values: list[float], q: float) -> float:
    """Percentile in milliseconds (numpy, linear interpolation)."""
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


TIMED_WRITES = 30
"""Writes timed at each size (the store grows by these; the rest is pre-filled)."""
READS = 50
"""Retrievals timed at each size."""


class RandomEmbedder:
    """Stands in for the model during pre-fill: random unit vectors of the model's name and size.

    FAISS search time and store size depend on how many vectors are stored, not on what they say;
    the timed writes and every query still go through the real model.
    """

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim
        self._rng = np.random.default_rng(0)

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``(len(texts), dim)`` random unit rows."""
        rows = self._rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        unit: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        return unit


def _random_units(n: int, dim: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


async def prefill(memory: MemorySystem, start: int, stop: int, *, model_vectors: bool = False) -> None:
    """Pre-fill without timing; retrieval stores get random vectors unless ``model_vectors``."""
    if isinstance(memory, RagMemory) and not model_vectors:
        real = memory.embedder
        memory.embedder = RandomEmbedder(real.name, real.dim)
        try:
            await prefill(memory, start, stop, model_vectors=True)
        finally:
            memory.embedder = real
        return
    await _prefill(memory, start, stop)


async def _prefill(memory: MemorySystem, start: int, stop: int) -> None:
    """Bring the store from ``start`` to ``stop`` turns without timing (one batch of work).

    ours-rag uses its batched :meth:`RagMemory.write_many`. Mem0 and Simple RAG get rows straight
    in Mem0's FAISS store, as its add would store them (a note per turn for Mem0, the user and
    assistant message for Simple RAG), with random unit vectors; MemOS gets items in its cube's
    dump format loaded by ``restore``. Other systems write turn by turn.
    """
    import hashlib
    import uuid

    records = [make_turn(i) for i in range(start, stop)]
    if not records:
        return
    if isinstance(memory, RagMemory):
        await memory.write_many(records)
    elif isinstance(memory, Mem0aiMemory):
        texts: list[tuple[str, TurnRecord, str]] = []
        for r in records:
            if memory.infer:
                texts.append((f"The user asked: {r.user_message[:120]}", r, ""))
            else:
                texts += [(r.user_message, r, "user"), (r.reply, r, "assistant")]
        vectors = _random_units(len(texts), memory.embedding_dim, start)
        payloads = []
        for text, r, role in texts:
            payload = {"data": text, "hash": hashlib.md5(text.encode()).hexdigest(), "user_id": memory.user_id,
                       "created_at": r.at.isoformat(), "updated_at": r.at.isoformat(), "step_id": r.step_id,
                       "context": r.context.value}
            if role:
                payload["role"] = role
            payloads.append(payload)
        memory._memory.vector_store.insert(vectors=vectors.tolist(), ids=[str(uuid.uuid4()) for _ in texts],
                                           payloads=payloads)
        memory._refresh()
    elif isinstance(memory, MemosMemory):
        state = MemosState.model_validate_json(memory.snapshot())
        vectors = _random_units(len(records), memory.embedding_dim, start)
        for r, vector in zip(records, vectors, strict=True):
            item_id = str(uuid.uuid4())
            state.items.append({"id": item_id, "vector": vector.tolist(), "payload": {
                "id": item_id, "memory": f"The user asked: {r.user_message[:120]}",
                "metadata": {"key": "ask", "source": "conversation", "tags": [], "updated_at": r.at.isoformat()}}})
        memory.restore(state.model_dump_json().encode("utf-8"))
    else:
        for record in records:
            await memory.write(record)


async def bench_system(
    name: str, client: LLMClient, sizes: list[int], root: Path, model_prefill: bool = False
) -> list[dict[str, Any]]:
    """At each size: pre-fill, then time the last writes one by one, then retrievals and size."""
    try:
        memory: MemorySystem = make_memory(name, client=client, folder=root / name, context_window=16_384)
    except MemoryConfigError as exc:
        print(f"| {name:<9} | skipped: {exc} |", flush=True)
        return []
    rows: list[dict[str, Any]] = []
    written = 0
    query_session = SessionInfo(step_id="B-probe", context=Context.WORK, at=START + timedelta(days=400), is_probe=True)
    for size in sizes:
        t_fill = time.perf_counter()
        await prefill(memory, written, max(written, size - TIMED_WRITES), model_vectors=model_prefill)
        fill_s = time.perf_counter() - t_fill
        written = max(written, size - TIMED_WRITES)
        writes: list[float] = []
        while written < size:
            t0 = time.perf_counter()
            await memory.write(make_turn(written))
            writes.append(time.perf_counter() - t0)
            written += 1
        reads: list[float] = []
        for q in range(READS):
            query = f"{VERBS[q % len(VERBS)]} {OBJECTS[(q * 7) % len(OBJECTS)]}"
            t0 = time.perf_counter()
            await memory.retrieve(query, query_session)
            reads.append(time.perf_counter() - t0)
        snap = memory.snapshot()
        rows.append({
            "system": name, "turns": size,
            "write_p50": pct(writes, 50), "write_p95": pct(writes, 95),
            "read_p50": pct(reads, 50), "read_p95": pct(reads, 95),
            "store_kb": len(snap) / 1024, "items": float(len(memory.inspect().stored)), "fill_s": fill_s,
        })
        print(_fmt(rows[-1]), flush=True)
    return rows


def _fmt(row: dict[str, Any]) -> str:
    return (
        f"| {row['system']:<9} | {row['turns']:>6} | {row['write_p50']:>9.2f} | {row['write_p95']:>9.2f} "
        f"| {row['read_p50']:>8.2f} | {row['read_p95']:>8.2f} | {row['store_kb']:>10.0f} | {row['items']:>7.0f} "
        f"| {row['fill_s']:>8.1f} |"
    )


HEADER = (
    "| system    |  turns | write p50 | write p95 | read p50 | read p95 | store (KB) | entries | fill (s) |\n"
    "|-----------|-------:|----------:|----------:|---------:|---------:|-----------:|--------:|---------:|"
)


async def main(systems: list[str], sizes: list[int], model_prefill: bool) -> None:
    """Run every system at every size and print one table (times in ms)."""
    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile(num_retries=0))
        if "ours-rag" in systems:
            t0 = time.perf_counter()
            make_memory("ours-rag", client=client, folder=Path(tempfile.mkdtemp()))
            print(f"embedder load (once per process): {time.perf_counter() - t0:.1f} s", flush=True)
        print(HEADER, flush=True)
        with tempfile.TemporaryDirectory(prefix="mempa-bench-memory-") as tmp:
            for name in systems:
                await bench_system(name, client, sizes, Path(tmp), model_prefill)


if __name__ == "__main__" and sys.argv[1:2] == ["consolidation"]:
    import asyncio

    from consolidation_replay import add_arguments
    from consolidation_replay import main as consolidation_main

    replay_parser = argparse.ArgumentParser(prog="bench_memory.py consolidation",
                                            description="Replay a stored run's consolidation rounds on each packaged model")
    add_arguments(replay_parser)
    asyncio.run(consolidation_main(replay_parser.parse_args(sys.argv[2:])))
elif __name__ == "__main__":
    default = list(MEMORY_BUILDERS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=default, choices=sorted(MEMORY_BUILDERS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1_000, 5_000])
    parser.add_argument("--model-prefill", action="store_true",
                        help="embed the pre-filled turns with the real model too (slow on a small CPU)")
    args = parser.parse_args()
    anyio.run(main, args.systems, sorted(args.sizes), args.model_prefill)
