"""Mem0-style extraction memory: extract, then ADD/UPDATE/DELETE/NONE (paper Section 4 ❸, Table 11).

Write, per turn record (the flow of Mem0's ``add`` with inference on):

1. The ``memory``-role model extracts candidate memories from the turn
   (:func:`~mempa_tui.memory._mem0_prompts.extraction_messages`).
2. For each candidate, the 5 most similar stored memories (FAISS cosine) are shown to the model
   under ids 0..4 and it answers ADD, UPDATE (id, merged text), DELETE (id) or NONE. With an empty
   store the candidate is added without a call (there is nothing to compare with).

Malformed replies (code fences, prose before the JSON, a reply cut off, an empty reply, values of
the wrong type or an id not shown) are repaired where the meaning is clear and otherwise retried
once with the problem named (:func:`~mempa_tui.llm.structured.complete_json`). A reply still
unusable, or a failed model call, is counted and kept in :attr:`Mem0Stats` and the failure log
(snapshot, ``stats.json``, ``failures.jsonl``, ``inspect()``); the run goes on without that
memory. Nothing is invented in its place.

Retrieve: semantic search over the extracted memories with the user message; the top 10 within
4,000 tokens go into the PA's system prompt with scores. Outside probes the PA keeps the raw
conversation of earlier sessions, trimmed as in Simple RAG.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import Role
from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._embed import Embedder
from mempa_tui.memory._mem0_prompts import (
    DECISION_SCHEMA,
    EXTRACTION_SCHEMA,
    MAX_CANDIDATES,
    Decision,
    decision_messages,
    extraction_messages,
    read_decision,
    read_extraction,
)
from mempa_tui.memory._reference import SnapshotError
from mempa_tui.memory._vectors import (
    EVIDENCE_TOKENS,
    TOP_K,
    VectorIndex,
    check_embedder,
    estimate_tokens,
    pick_within_budget,
    raw_messages,
    render_evidence,
    trim_limits,
    trim_window,
    window_tokens,
    write_files,
)
from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)

__all__ = ["Mem0Failure", "Mem0Memory", "Mem0State", "Mem0Stats", "StoredMemory"]

SIMILAR_SHOWN = 5
"""Stored memories shown to the model for each candidate (Mem0's update step)."""
FAILURE_LOG = 200
"""Most failure notes kept in the snapshot (counters keep counting past it)."""


class StoredMemory(BaseModel):
    """One extracted memory.

    Attributes:
        id: its FAISS id (stable across updates).
        text: the memory sentence.
        created: ``YYYY-MM-DD HH:MM`` story time of the turn that added it.
        updated: story time of its last UPDATE, if any.
        step_id: the step whose turn added or last updated it.
        previous: earlier texts, oldest first (UPDATE keeps the history).
    """

    model_config = ConfigDict(extra="forbid")

    id: int
    text: str
    created: str
    updated: str | None = None
    step_id: str
    previous: list[str] = Field(default_factory=list)


class Mem0Failure(BaseModel):
    """A reply or call that could not be used (kept for the run record and the side panel).

    Attributes:
        at: story time of the turn.
        stage: ``extraction`` or ``decision``.
        error: what was wrong (the reader's message or the model error).
        reply: the start of the last reply (empty for a failed call).
    """

    model_config = ConfigDict(extra="forbid")

    at: str
    stage: Literal["extraction", "decision"]
    error: str
    reply: str = ""


class Mem0Stats(BaseModel):
    """Counters shown in ``inspect().stats``; every failure is counted, none is silent."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    duplicate_writes: int = 0
    extraction_calls: int = 0
    """Extraction model calls, retries included."""
    extraction_retries: int = 0
    """Turns whose extraction needed the retry."""
    extraction_failures: int = 0
    """Turns whose extraction was unusable after the retry, or whose call failed."""
    candidates: int = 0
    candidates_cut: int = 0
    """Candidates beyond the per-turn limit, dropped."""
    decision_calls: int = 0
    decision_retries: int = 0
    decision_failures: int = 0
    """Candidates whose decision was unusable after the retry, or whose call failed (skipped)."""
    adds: int = 0
    updates: int = 0
    deletes: int = 0
    nones: int = 0
    model_errors: int = 0
    """Model calls that failed outright (also counted in the stage's failures)."""
    retrievals: int = 0
    turns_trimmed: int = 0


class Mem0State(BaseModel):
    """Everything a Mem0-style snapshot holds (JSON; the FAISS index base64-encoded)."""

    model_config = ConfigDict(extra="forbid")

    system: Literal["mem0"] = "mem0"
    embedder: str
    dim: int
    next_id: int = 0
    memories: list[StoredMemory] = Field(default_factory=list)
    seen: list[str] = Field(default_factory=list)
    """sha256 keys of the turn records already written."""
    window: list[TurnRecord] = Field(default_factory=list)
    stats: Mem0Stats = Field(default_factory=Mem0Stats)
    failures: list[Mem0Failure] = Field(default_factory=list)
    index_b64: str = ""


class Mem0Memory(MemorySystem):
    """Mem0-style extraction memory behind the common adapter (paper Section 4 ❸).

    Args:
        client: model client; role ``memory`` extracts and decides.
        embedder: turns texts into unit vectors.
        folder: store folder (``local_memory/<run>/``).
        token_counter: text -> tokens (default: ``client.count_tokens``).
        trim_at_tokens / trim_to_tokens: raw-conversation limit (default: File memory's).
        top_k / evidence_tokens: the evidence rule (10 results within 4,000 tokens).

    Raises:
        ValueError: limits not positive or ``trim_to_tokens`` not below ``trim_at_tokens``.
    """

    name = "mem0"

    def __init__(
        self,
        client: CompletionClient,
        embedder: Embedder,
        folder: Path,
        *,
        token_counter: Callable[[str], int] | None = None,
        trim_at_tokens: int | None = None,
        trim_to_tokens: int | None = None,
        top_k: int = TOP_K,
        evidence_tokens: int = EVIDENCE_TOKENS,
    ) -> None:
        self.trim_at, self.trim_to = trim_limits(
            "Mem0-style memory", trim_at_tokens, trim_to_tokens, top_k, evidence_tokens
        )
        self.client = client
        self.embedder = embedder
        self.folder = Path(folder)
        self.top_k = top_k
        self.evidence_tokens = evidence_tokens
        self._count = token_counter or getattr(client, "count_tokens", None) or estimate_tokens
        self._memories: dict[int, StoredMemory] = {}
        self._seen: set[str] = set()
        self._window: list[TurnRecord] = []
        self._stats = Mem0Stats()
        self._failures: list[Mem0Failure] = []
        self._next_id = 0
        self._index: VectorIndex | None = None
        self._last: Evidence | None = None

    @property
    def stats(self) -> Mem0Stats:
        """A copy of the counters."""
        return self._stats.model_copy()

    @property
    def failures(self) -> list[Mem0Failure]:
        """Copies of the kept failure notes, oldest first."""
        return [f.model_copy() for f in self._failures]

    @property
    def memories(self) -> list[str]:
        """The stored memory texts, in id order."""
        return [m.text for m in sorted(self._memories.values(), key=lambda m: m.id)]

    def _ensure_index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(self.embedder.dim, self.embedder.name)
        return self._index

    def _fail(self, at: str, stage: Literal["extraction", "decision"], error: str, reply: str = "") -> None:
        self._failures.append(Mem0Failure(at=at, stage=stage, error=error, reply=reply[:300]))
        del self._failures[:-FAILURE_LOG]

    # -- write ---------------------------------------------------------------------------

    async def write(self, record: TurnRecord) -> None:
        """Extract candidate memories from the turn and fold each into the store.

        Model failures are counted and logged, never raised.

        Raises:
            DimensionMismatchError: the embedder's vectors do not fit the index.
        """
        key = hashlib.sha256(record.model_dump_json().encode("utf-8")).hexdigest()
        if key in self._seen:
            self._stats.duplicate_writes += 1
            return
        self._seen.add(key)
        self._stats.turns_written += 1
        self._window.append(record.model_copy(deep=True))
        self._window, dropped = trim_window(self._window, self._count, trim_at=self.trim_at, trim_to=self.trim_to)
        self._stats.turns_trimmed += dropped
        at = f"{record.at:%Y-%m-%d %H:%M}"
        for candidate in await self._extract(record, at):
            await self._fold(candidate, record, at)

    async def end_session(self, session: SessionInfo) -> None:
        """Write memories, failures, counters and the index to the folder."""
        self._persist()

    async def _extract(self, record: TurnRecord, at: str) -> list[str]:
        stats = self._stats
        try:
            outcome = await complete_json(
                self.client, Role.MEMORY, extraction_messages(record), schema=EXTRACTION_SCHEMA,
                read=read_extraction, retry_hint='Reply with {"memories": [...]} only.',
            )
        except LLMError as exc:
            stats.extraction_calls += 1
            stats.extraction_failures += 1
            stats.model_errors += 1
            self._fail(at, "extraction", f"model call failed: {exc}")
            return []
        stats.extraction_calls += outcome.attempts
        if outcome.attempts > 1:
            stats.extraction_retries += 1
        if outcome.value is None:
            stats.extraction_failures += 1
            self._fail(at, "extraction", outcome.error or "unusable reply", outcome.replies[-1] if outcome.replies else "")
            return []
        notes = list(dict.fromkeys(outcome.value))
        stats.candidates_cut += max(0, len(notes) - MAX_CANDIDATES)
        notes = notes[:MAX_CANDIDATES]
        stats.candidates += len(notes)
        return notes

    async def _fold(self, candidate: str, record: TurnRecord, at: str) -> None:
        index = self._ensure_index()
        vector = await self.embedder.embed([candidate])
        hits = index.search(vector, SIMILAR_SHOWN, self.embedder.name)
        shown = [self._memories[i] for i, _ in hits if i in self._memories]
        if any(m.text == candidate for m in shown):
            self._stats.nones += 1
            return
        if not shown:
            self._add(candidate, vector, record, at)
            return
        decision = await self._decide(candidate, [m.text for m in shown], at)
        if decision is None:
            return
        if decision.event == "ADD":
            vec = vector if decision.text == candidate else await self.embedder.embed([decision.text])
            self._add(decision.text, vec, record, at)
        elif decision.event == "UPDATE" and decision.shown_id is not None:
            target = shown[decision.shown_id]
            new_vec = await self.embedder.embed([decision.text])
            index.remove([target.id])
            index.add([target.id], new_vec, self.embedder.name)
            target.previous.append(target.text)
            target.text, target.updated, target.step_id = decision.text, at, record.step_id
            self._stats.updates += 1
        elif decision.event == "DELETE" and decision.shown_id is not None:
            target = shown[decision.shown_id]
            index.remove([target.id])
            del self._memories[target.id]
            self._stats.deletes += 1
        else:
            self._stats.nones += 1

    async def _decide(self, candidate: str, shown: list[str], at: str) -> Decision | None:
        stats = self._stats
        try:
            outcome = await complete_json(
                self.client, Role.MEMORY, decision_messages(candidate, shown), schema=DECISION_SCHEMA,
                read=lambda text: read_decision(text, len(shown), candidate),
                retry_hint='Reply with {"event": ..., "id": ..., "text": ...} only.',
            )
        except LLMError as exc:
            stats.decision_calls += 1
            stats.decision_failures += 1
            stats.model_errors += 1
            self._fail(at, "decision", f"model call failed: {exc}")
            return None
        stats.decision_calls += outcome.attempts
        if outcome.attempts > 1:
            stats.decision_retries += 1
        if outcome.value is None:
            stats.decision_failures += 1
            self._fail(at, "decision", outcome.error or "unusable reply", outcome.replies[-1] if outcome.replies else "")
        return outcome.value

    def _add(self, text: str, vector: object, record: TurnRecord, at: str) -> None:
        memory = StoredMemory(id=self._next_id, text=text, created=at, step_id=record.step_id)
        self._ensure_index().add([memory.id], vector, self.embedder.name)  # type: ignore[arg-type]
        self._memories[memory.id] = memory
        self._next_id += 1
        self._stats.adds += 1

    # -- retrieve ------------------------------------------------------------------------

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Top memories by cosine similarity to ``user_message`` within the budget; raw window."""
        self._stats.retrievals += 1
        items: list[EvidenceItem] = []
        if self._memories and user_message.strip():
            query = await self.embedder.embed([user_message])
            hits = self._ensure_index().search(query, self.top_k, self.embedder.name)
            candidates = [(self._memories[i].text, s, f"mem-{i}") for i, s in hits if i in self._memories]
            kept = pick_within_budget(candidates, self._count, top_k=self.top_k, budget=self.evidence_tokens)
            items = [EvidenceItem(text=t, score=round(s, 4), source=src) for t, s, src in kept]
        self._last = Evidence(
            system_text=render_evidence("Memories about the user related to the message", items),
            items=items,
            prior_messages=raw_messages(self._window, session.step_id, session.is_probe),
        )
        return self._last.model_copy(deep=True)

    # -- checkpoints ---------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The whole store as JSON bytes (memories, counters, failures, serialised FAISS index)."""
        index = self._index
        state = Mem0State(
            embedder=self.embedder.name, dim=self.embedder.dim, next_id=self._next_id,
            memories=sorted(self._memories.values(), key=lambda m: m.id), seen=sorted(self._seen),
            window=list(self._window), stats=self._stats, failures=self._failures,
            index_b64=base64.b64encode(index.to_bytes()).decode("ascii") if index is not None else "",
        )
        return state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the store with a snapshot.

        Raises:
            SnapshotError: not a Mem0-style snapshot, or its index and memories disagree.
            DimensionMismatchError: built with another embedding model or dimension (names both).
        """
        try:
            state = Mem0State.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"Mem0-style memory: bad snapshot at {where}: {first['msg']}") from None
        check_embedder(state.embedder, state.dim, self.embedder, "Mem0-style memory")
        index = None
        if state.index_b64:
            try:
                index = VectorIndex.from_bytes(base64.b64decode(state.index_b64), state.dim, state.embedder)
            except ValueError as exc:
                raise SnapshotError(f"Mem0-style memory: bad snapshot index: {exc}") from None
        if (index.size if index else 0) != len(state.memories):
            raise SnapshotError(
                f"Mem0-style memory: snapshot index holds {index.size if index else 0} vectors "
                f"for {len(state.memories)} memories"
            )
        self._index = index
        self._memories = {m.id: m for m in state.memories}
        self._seen = set(state.seen)
        self._window = list(state.window)
        self._stats = state.stats
        self._failures = list(state.failures)
        self._next_id = state.next_id
        self._last = None
        self._persist()

    def _persist(self) -> None:
        index = self._index
        write_files(self.folder, {
            "memories.jsonl": "".join(m.model_dump_json() + "\n" for m in self._memories.values()).encode("utf-8"),
            "failures.jsonl": "".join(f.model_dump_json() + "\n" for f in self._failures).encode("utf-8"),
            "stats.json": (self._stats.model_dump_json(indent=2) + "\n").encode("utf-8"),
            "index.faiss": index.to_bytes() if index is not None else b"",
        })

    def inspect(self) -> MemoryInspection:
        """Stored memories, failure notes, counters, and the last evidence with its scores."""
        stored = [
            f"mem-{m.id} [{m.updated or m.created}] {m.text}" + (f" (was: {m.previous[-1]})" if m.previous else "")
            for m in sorted(self._memories.values(), key=lambda m: m.id)
        ]
        stored.extend(f"FAILED {f.stage} [{f.at}] {f.error}" for f in self._failures[-20:])
        stats = {k: float(v) for k, v in self._stats.model_dump().items()}
        stats["memories_stored"] = float(len(self._memories))
        stats["window_tokens"] = float(window_tokens(self._window, self._count))
        stats["embedding_dim"] = float(self.embedder.dim)
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)
