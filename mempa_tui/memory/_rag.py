"""Whole-turn RAG, ours (``--memory ours-rag``): raw turns, sentence embeddings, FAISS cosine search.

Not the paper's Simple RAG (``--memory rag`` runs Mem0 with ``infer=False``, paper Section 4 ❷);
this store keeps whole turns and can embed with the profile's embedder.

Write: each :class:`TurnRecord` is stored raw and its text embedded into a FAISS inner-product
index over unit vectors. Writing the same record twice stores it once.

Retrieve: the user message is the query (as in Mem0's reference integration); the 10 most similar
stored turns that fit into 4,000 tokens go into the PA's system prompt, each with its cosine score.
Turns of the current step are not handed back (the PA already holds them). An empty store hands
back nothing. Outside probes the PA also keeps the raw conversation of earlier sessions, trimmed at
the configured limit (default: File memory's thresholds, 20k -> 10k tokens capped at half and a
quarter of the PA's window); the turns dropped are already in the store.

Store folder (``local_memory/<run>/``): ``turns.jsonl`` (appended on each write), and on each
session end or restore ``index.faiss``, ``window.jsonl`` and ``stats.json``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.memory._embed import Embedder
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

__all__ = ["RagEntry", "RagMemory", "RagState", "RagStats", "embedding_text"]


def embedding_text(record: TurnRecord) -> str:
    """What is embedded for a turn: the user's message and the delivered reply (each only when it
    has text).

    The header (date, context, step) and tool results stay out of the vector: they are alike in
    every turn and would pull all turns towards each other. The evidence shows the whole turn.
    """
    lines = [f"User: {record.user_message}"] if record.user_message.strip() else []
    if record.reply.strip():  # a change event's last turn has no reply: no empty "Assistant:" line
        lines.append(f"Assistant: {record.reply}")
    return "\n".join(lines)


class RagEntry(BaseModel):
    """One stored turn.

    Attributes:
        id: the FAISS id of its vector.
        key: sha256 of the record's JSON (duplicate writes are recognised by it).
        record: the turn as written.
    """

    model_config = ConfigDict(extra="forbid")

    id: int
    key: str
    record: TurnRecord


class RagStats(BaseModel):
    """Counters shown in ``inspect().stats``."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    """Distinct turns stored."""
    duplicate_writes: int = 0
    """Writes of a record already stored (ignored)."""
    retrievals: int = 0
    """Retrieve calls answered."""
    turns_trimmed: int = 0
    """Raw turns dropped from the PA's carried conversation (still in the store)."""


class RagState(BaseModel):
    """Everything a Simple RAG snapshot holds (JSON; the FAISS index base64-encoded)."""

    model_config = ConfigDict(extra="forbid")

    system: Literal["rag"] = "rag"
    embedder: str
    """Name of the embedding model the vectors came from."""
    dim: int
    """Vector dimension."""
    next_id: int = 0
    """Next FAISS id."""
    entries: list[RagEntry] = Field(default_factory=list)
    window: list[TurnRecord] = Field(default_factory=list)
    """Raw turns still carried as conversation, oldest first."""
    stats: RagStats = Field(default_factory=RagStats)
    index_b64: str = ""
    """``faiss.serialize_index`` bytes, base64."""


class RagMemory(MemorySystem):
    """Whole-turn RAG, ours: each turn embedded once, searched by the user message.

    Args:
        embedder: turns texts into unit vectors (default in the factory: packaged MiniLM).
        folder: the store folder, created on the first write.
        token_counter: text -> tokens (default: about four characters a token).
        trim_at_tokens / trim_to_tokens: raw-conversation limit and the level it is trimmed to.
        top_k / evidence_tokens: the evidence rule (10 results within 4,000 tokens).

    Raises:
        ValueError: limits not positive or ``trim_to_tokens`` not below ``trim_at_tokens``.
    """

    name = "ours-rag"

    def __init__(
        self,
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
            "ours-rag", trim_at_tokens, trim_to_tokens, top_k, evidence_tokens
        )
        self.embedder = embedder
        self.folder = Path(folder)
        self.top_k = top_k
        self.evidence_tokens = evidence_tokens
        self._count = token_counter or estimate_tokens
        self._entries: dict[int, RagEntry] = {}
        self._keys: set[str] = set()
        self._window: list[TurnRecord] = []
        self._stats = RagStats()
        self._next_id = 0
        self._index: VectorIndex | None = None
        self._last: Evidence | None = None

    # -- adapter -------------------------------------------------------------------------

    def _ensure_index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(self.embedder.dim, self.embedder.name)
        return self._index

    async def write(self, record: TurnRecord) -> None:
        """Store and embed the turn unless it is already stored; append it to the raw window.

        Raises:
            DimensionMismatchError: the embedder's vectors do not fit the index.
        """
        key = hashlib.sha256(record.model_dump_json().encode("utf-8")).hexdigest()
        if key in self._keys:
            self._stats.duplicate_writes += 1
            return
        vectors = await self.embedder.embed([embedding_text(record)])
        index = self._ensure_index()
        entry = RagEntry(id=self._next_id, key=key, record=record.model_copy(deep=True))
        index.add([entry.id], vectors, self.embedder.name)
        self._next_id += 1
        self._entries[entry.id] = entry
        self._keys.add(key)
        self._stats.turns_written += 1
        self._window.append(entry.record)
        self._window, dropped = trim_window(self._window, self._count, trim_at=self.trim_at, trim_to=self.trim_to)
        self._stats.turns_trimmed += dropped
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / "turns.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(entry.model_dump_json() + "\n")

    async def write_many(self, records: list[TurnRecord], batch: int = 64) -> None:
        """Store many turns with batched embedding (an import or a benchmark's pre-fill).

        Stores the same turns as :meth:`write` called on each record in order, but embeds the texts
        ``batch`` at a time, trims the raw window once at the end and rewrites the folder once.
        """
        fresh: list[RagEntry] = []
        for record in records:
            key = hashlib.sha256(record.model_dump_json().encode("utf-8")).hexdigest()
            if key in self._keys:
                self._stats.duplicate_writes += 1
                continue
            self._keys.add(key)
            fresh.append(RagEntry(id=self._next_id, key=key, record=record.model_copy(deep=True)))
            self._next_id += 1
        index = self._ensure_index()
        for start in range(0, len(fresh), batch):
            chunk = fresh[start : start + batch]
            vectors = await self.embedder.embed([embedding_text(e.record) for e in chunk])
            index.add([e.id for e in chunk], vectors, self.embedder.name)
            for entry in chunk:
                self._entries[entry.id] = entry
                self._window.append(entry.record)
        self._stats.turns_written += len(fresh)
        self._window, dropped = trim_window(self._window, self._count, trim_at=self.trim_at, trim_to=self.trim_to)
        self._stats.turns_trimmed += dropped
        self._persist()

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Top turns by cosine similarity to ``user_message`` within the budget; raw window."""
        self._stats.retrievals += 1
        items: list[EvidenceItem] = []
        if self._entries and user_message.strip():
            index = self._ensure_index()
            current = sum(1 for e in self._entries.values() if e.record.step_id == session.step_id)
            query = await self.embedder.embed([user_message])
            hits = index.search(query, self.top_k + current, self.embedder.name)
            candidates = [
                (self._entries[i].record.as_text(), score, f"turn-{i}")
                for i, score in hits
                if i in self._entries and self._entries[i].record.step_id != session.step_id
            ]
            kept = pick_within_budget(candidates, self._count, top_k=self.top_k, budget=self.evidence_tokens)
            items = [EvidenceItem(text=t, score=round(s, 4), source=src) for t, s, src in kept]
        self._last = Evidence(
            system_text=render_evidence("Earlier conversation turns similar to the user's message", items),
            items=items,
            prior_messages=raw_messages(self._window, session.step_id, session.is_probe),
        )
        return self._last.model_copy(deep=True)

    async def end_session(self, session: SessionInfo) -> None:
        """Write the index, the raw window and the counters to the folder."""
        self._persist()

    # -- checkpoints ---------------------------------------------------------------------

    def _state(self) -> RagState:
        index = self._index
        return RagState(
            embedder=self.embedder.name,
            dim=self.embedder.dim,
            next_id=self._next_id,
            entries=list(self._entries.values()),
            window=list(self._window),
            stats=self._stats.model_copy(),
            index_b64=base64.b64encode(index.to_bytes()).decode("ascii") if index is not None else "",
        )

    def snapshot(self) -> bytes:
        """The whole store as JSON bytes (records, raw window, counters, serialised FAISS index)."""
        return self._state().model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the store with a snapshot.

        Raises:
            SnapshotError: not a Simple RAG snapshot, or its index and records disagree.
            DimensionMismatchError: the snapshot was built by another embedding model or dimension
                (the message names both).
        """
        try:
            state = RagState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"ours-rag: bad snapshot at {where}: {first['msg']}") from None
        check_embedder(state.embedder, state.dim, self.embedder, "ours-rag")
        index = None
        if state.index_b64:
            try:
                index = VectorIndex.from_bytes(base64.b64decode(state.index_b64), state.dim, state.embedder)
            except ValueError as exc:
                raise SnapshotError(f"ours-rag: bad snapshot index: {exc}") from None
        if (index.size if index else 0) != len(state.entries):
            raise SnapshotError(
                f"ours-rag: snapshot index holds {index.size if index else 0} vectors for {len(state.entries)} turns"
            )
        self._index = index
        self._entries = {e.id: e for e in state.entries}
        self._keys = {e.key for e in state.entries}
        self._window = list(state.window)
        self._stats = state.stats
        self._next_id = state.next_id
        self._last = None
        self._persist()

    def _persist(self) -> None:
        index = self._index
        write_files(
            self.folder,
            {
                "turns.jsonl": "".join(e.model_dump_json() + "\n" for e in self._entries.values()).encode("utf-8"),
                "window.jsonl": "".join(t.model_dump_json() + "\n" for t in self._window).encode("utf-8"),
                "stats.json": (self._stats.model_dump_json(indent=2) + "\n").encode("utf-8"),
                "index.faiss": index.to_bytes() if index is not None else b"",
            },
        )

    def inspect(self) -> MemoryInspection:
        """Stored turns (id, text), counters, and the last evidence with its scores."""
        stored = [f"turn-{e.id} {e.record.as_text()}" for e in self._entries.values()]
        s = self._stats
        stats = {
            "turns_stored": float(len(self._entries)),
            "turns_written": float(s.turns_written),
            "duplicate_writes": float(s.duplicate_writes),
            "retrievals": float(s.retrievals),
            "turns_trimmed": float(s.turns_trimmed),
            "window_turns": float(len(self._window)),
            "window_tokens": float(window_tokens(self._window, self._count)),
            "embedding_dim": float(self.embedder.dim),
        }
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)
