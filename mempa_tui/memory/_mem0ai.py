"""Mem0 and Simple RAG through the published Mem0 library (paper Section 4 ❷ ❸, Table 11).

Both paper conditions run ``mem0ai==2.0.2`` (the paper's version) behind the common adapter:

- ``--memory mem0``: ``Memory.add(messages, infer=True)``, Mem0's own extraction prompt, and
  ``Memory.search`` over the extracted memories;
- ``--memory rag``: ``Memory.add(messages, infer=False)`` (every non-system message stored raw,
  one vector each) and the same ``Memory.search`` over the raw messages.

Install with ``pip install -e ".[mem0ai]"``; ``mem0`` is imported only when a store is built.

What 2.0.2's ``add`` does with ``infer=True`` (read from the installed package): one extraction
call per ``add`` shows the model the new messages, up to 10 similar stored memories and up to 10
earlier messages of the scope, and the model answers ``{"memory": [{"text": ...}, ...]}``; new
texts are added (exact duplicates skipped by hash), then the entities of the new memories are
linked in a second FAISS collection. Its ``DEFAULT_UPDATE_MEMORY_PROMPT`` (the ADD/UPDATE/DELETE
decision of the Mem0 paper) is defined in ``mem0.configs.prompts`` but no code path of 2.0.2
calls it: this release only adds.

Fully offline configuration:

- model calls: Mem0's LLM slot is :class:`_ProfileLLM`, which sends every call through the run's
  :class:`~mempa_tui.llm.LLMClient` with role ``memory`` (the profile's model, ``api_base``,
  retries, concurrency limit and call records all apply). Mem0's configuration still names a
  built-in provider (its schema accepts no other); that placeholder is replaced before any call.
- embedder: Mem0's ``huggingface`` provider loading the packaged all-MiniLM-L6-v2 (384
  dimensions) from its folder, Hugging Face hub offline. The paper used text-embedding-3-small;
  :data:`~mempa_tui.memory._sources.CONDITION_SOURCES` names the substitution in results.
- vector store: Mem0's FAISS store, cosine similarity, under ``<folder>/faiss/``; Mem0's SQLite
  history at ``<folder>/history.db``.
- telemetry: ``MEM0_TELEMETRY=False`` before import (and forced off where Mem0 reads it).

Failures Mem0 swallows are counted, never silent (SPEC 4.7 health counters):

- a model call that fails: 2.0.2 logs it and stores nothing for the turn. :class:`_ProfileLLM`
  counts it (``model_errors``) and the turn is counted in ``failed_writes``;
- an extraction reply Mem0 would read as "nothing extracted" (prose, bad JSON, wrong shape):
  checked before Mem0 sees it, counted in ``malformed_replies``, Mem0 gets an empty list;
- anything else Mem0 logs at warning level or above while it runs one of our calls (an embedding
  or insert that failed, a message skipped, entity linking that failed): caught by a log handler
  on the ``mem0`` logger bound to the calling thread and counted in ``library_errors``.
  Two notices that describe this set-up and no failure are left out (:data:`KNOWN_NOTICES`).

Every failure is kept in ``failures`` (the side panel's ``FAILED`` lines), ``failures.jsonl``,
``stats.json``, the snapshot and the run record (``memory_stats``).

Retrieve: Mem0's ``search`` with the user message (top 10, Mem0's own 0.1 similarity floor),
the results within 4,000 tokens in the PA's system prompt with their scores; outside probes the PA
also keeps the raw conversation of earlier sessions, trimmed at File memory's limit (Section 4).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import threading
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
from pydantic import ValidationError

from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._embed import DEFAULT_EMBEDDER_NAME
from mempa_tui.memory._file import _turn_messages
from mempa_tui.memory._mem0ai_support import (
    COLLECTION,
    EMBEDDING_DIM,
    EMPTY_EXTRACTION,
    EXTRACTION_SCHEMA,
    KNOWN_NOTICES,
    MEM0AI_VERSION,
    SAFE_NAME,
    FailureKind,
    Mem0aiError,
    Mem0aiFailure,
    Mem0aiState,
    Mem0aiStats,
    check_extraction_reply,
    check_faiss_files,
    check_history_db,
    decode_b64,
    import_mem0,
    user_from_folder,
)
from mempa_tui.memory._reference import SnapshotError
from mempa_tui.memory._vectors import (
    EVIDENCE_TOKENS,
    TOP_K,
    DimensionMismatchError,
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

__all__ = [
    "MEM0AI_OPTIONS",
    "MEM0AI_VERSION",
    "Mem0aiError",
    "Mem0aiFailure",
    "Mem0aiMemory",
    "Mem0aiState",
    "Mem0aiStats",
    "build_mem0",
    "build_rag",
    "check_extraction_reply",
    "user_from_folder",
]

FAILURE_LOG = 200
"""Most failure notes kept (the counters keep counting past it)."""


class _ProfileLLM:
    """Mem0's LLM slot, served by the run's model client with role ``memory``.

    Mem0 calls :meth:`generate_response` from the worker thread that runs ``add``; the call is
    carried back to the event loop with :func:`anyio.from_thread.run`.
    """

    def __init__(self, client: CompletionClient, owner: Mem0aiMemory) -> None:
        self._client = client
        self._owner = owner

    def generate_response(
        self,
        messages: list[dict[str, Any]],
        response_format: Any = None,
        tools: Any = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        """One memory-role call; returns the reply text, or an empty extraction if it is malformed.

        Raises:
            LLMError: the call failed (counted here; 2.0.2 logs it and stores nothing).
        """
        chat = [
            ChatMessage(role="system" if m.get("role") == "system" else "assistant" if m.get("role") == "assistant" else "user",
                        content=str(m.get("content") or ""))
            for m in messages
        ]
        schema = EXTRACTION_SCHEMA if response_format else None
        owner = self._owner
        owner._stats.model_calls += 1
        try:
            completion = anyio.from_thread.run(partial(self._client.complete, Role.MEMORY, chat, json_schema=schema))
        except LLMError as exc:
            owner._stats.model_errors += 1
            owner._fail("model_error", f"model call failed: {exc}")
            owner._expected_log = True  # 2.0.2 logs this failure once more and goes on
            raise
        text = completion.text
        if schema is not None:
            problem = check_extraction_reply(text)
            if problem is not None:
                owner._stats.malformed_replies += 1
                owner._fail("malformed_reply", problem, text)
                return EMPTY_EXTRACTION
        return text


class _LibraryLog(logging.Handler):
    """Counts what Mem0 logs at warning level or above while it runs a call of one store.

    Mem0 reports most of its own failures only through its logger and goes on. The handler sits on
    the ``mem0`` logger once per process; a store binds the worker thread that runs its call, so
    records from other stores' threads go to those stores.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._owners: dict[int, Mem0aiMemory] = {}
        self._lock = threading.Lock()

    def bind(self, owner: Mem0aiMemory) -> None:
        with self._lock:
            self._owners[threading.get_ident()] = owner

    def unbind(self) -> None:
        with self._lock:
            self._owners.pop(threading.get_ident(), None)

    def emit(self, record: logging.LogRecord) -> None:
        owner = self._owners.get(record.thread or 0)
        if owner is None:
            return
        message = record.getMessage()
        if any(notice in message for notice in KNOWN_NOTICES):
            return
        if owner._expected_log:  # the model error _ProfileLLM already counted, logged again by Mem0
            owner._expected_log = False
            return
        owner._stats.library_errors += 1
        owner._fail("library_error", f"{record.name}: {message}"[:500])


_LOG_HANDLER = _LibraryLog()
_LOG_SETUP = threading.Lock()


def _install_log_handler() -> None:
    with _LOG_SETUP:
        log = logging.getLogger("mem0")
        if _LOG_HANDLER not in log.handlers:
            log.addHandler(_LOG_HANDLER)
        if log.getEffectiveLevel() > logging.WARNING:
            log.setLevel(logging.WARNING)


class Mem0aiMemory(MemorySystem):
    """The published Mem0 library behind the common adapter (``--memory mem0`` and ``rag``).

    Args:
        client: model client; role ``memory`` serves Mem0's extraction calls (none with
            ``infer=False``).
        folder: store folder (``local_memory/<run>/...``); ``faiss/`` and ``history.db`` live here.
        infer: True for Mem0 (extraction), False for Simple RAG (raw messages).
        user_id: Mem0's ``user_id`` scope; default: the user label of the run folder
            (``A-mem0-...``), else ``user``.
        token_counter: text -> tokens (default: ``client.count_tokens``).
        trim_at_tokens / trim_to_tokens: raw-conversation limit (default: File memory's).
        top_k / evidence_tokens: the evidence rule (10 results within 4,000 tokens).

    Raises:
        Mem0aiError: mem0ai missing or another version, the packaged embedder missing, or Mem0
            cannot build its store (the message names the extra to install).
        ValueError: limits not positive, ``trim_to_tokens`` not below ``trim_at_tokens``, or an
            empty ``user_id``.
    """

    def __init__(
        self,
        client: CompletionClient | None,
        folder: Path,
        *,
        infer: bool = True,
        user_id: str | None = None,
        token_counter: Any = None,
        trim_at_tokens: int | None = None,
        trim_to_tokens: int | None = None,
        top_k: int = TOP_K,
        evidence_tokens: int = EVIDENCE_TOKENS,
    ) -> None:
        self.infer = infer
        self.name = "mem0" if infer else "rag"
        self._label = "Mem0" if infer else "Simple RAG"
        self.trim_at, self.trim_to = trim_limits(self._label, trim_at_tokens, trim_to_tokens, top_k, evidence_tokens)
        if infer and client is None:
            raise ValueError("Mem0 needs a model client (role 'memory')")
        self.folder = Path(folder)
        self.user_id = (user_id if user_id is not None else user_from_folder(self.folder) or "user").strip()
        if not self.user_id:
            raise ValueError(f"{self._label}: user_id must not be empty")
        self.client = client
        self.top_k = top_k
        self.evidence_tokens = evidence_tokens
        self.embedder_name = DEFAULT_EMBEDDER_NAME
        self.embedding_dim = EMBEDDING_DIM
        self._count = token_counter or getattr(client, "count_tokens", None) or estimate_tokens
        self._stats = Mem0aiStats()
        self._failures: list[Mem0aiFailure] = []
        self._seen: set[str] = set()
        self._window: list[TurnRecord] = []
        self._rows: list[dict[str, Any]] = []
        self._stale = False
        self._last: Evidence | None = None
        self._at = ""
        self._expected_log = False
        self._busy = threading.Event()
        import_mem0(self.folder.resolve() / ".mem0")
        _install_log_handler()
        self._memory = self._build()
        if client is not None:
            self._memory.llm = _ProfileLLM(client, self)

    # -- set-up ------------------------------------------------------------------------------

    @property
    def faiss_dir(self) -> Path:
        """Folder of Mem0's FAISS files."""
        return self.folder / "faiss"

    @property
    def history_path(self) -> Path:
        """Mem0's SQLite history database."""
        return self.folder / "history.db"

    def _build(self) -> Any:
        from mempa_tui.memory._embed import (
            EmbedderError,
            packaged_model_path,
            prepare_local_model_loading,
        )

        try:
            model_path = packaged_model_path()
            prepare_local_model_loading()
        except EmbedderError as exc:
            raise Mem0aiError(f"memory condition {self.name!r}: {exc}") from None
        self.folder.mkdir(parents=True, exist_ok=True)
        from mem0 import Memory  # type: ignore[import-untyped]
        from mem0.configs.base import MemoryConfig  # type: ignore[import-untyped]

        self._config = MemoryConfig(
            vector_store={"provider": "faiss", "config": {
                "collection_name": COLLECTION, "path": str(self.faiss_dir),
                "distance_strategy": "cosine", "embedding_model_dims": EMBEDDING_DIM,
            }},
            # placeholder: Mem0's schema only accepts its own providers; replaced by _ProfileLLM
            llm={"provider": "openai", "config": {
                "model": "memory-role", "api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1",
            }},
            embedder={"provider": "huggingface", "config": {
                "model": str(model_path), "embedding_dims": EMBEDDING_DIM, "model_kwargs": {"device": "cpu"},
            }},
            history_db_path=str(self.history_path),
        )
        try:
            memory = Memory(self._config)
        except ImportError as exc:
            raise Mem0aiError(
                f"memory condition {self.name!r} cannot build its store ({exc}); install the extras: "
                f'pip install -e ".[memory,mem0ai]"'
            ) from None
        model = memory.embedding_model.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = int(getter())
        if dim != EMBEDDING_DIM:
            raise Mem0aiError(f"memory condition {self.name!r}: the packaged embedder has {dim} dimensions, expected {EMBEDDING_DIM}")
        return memory

    def _fail(self, kind: FailureKind, error: str, reply: str = "") -> None:
        self._failures.append(Mem0aiFailure(at=self._at, kind=kind, error=error, reply=reply[:300]))
        del self._failures[:-FAILURE_LOG]

    @property
    def stats(self) -> Mem0aiStats:
        """A copy of the counters."""
        return self._stats.model_copy()

    @property
    def failures(self) -> list[Mem0aiFailure]:
        """Copies of the kept failure notes, oldest first."""
        return [f.model_copy() for f in self._failures]

    @property
    def memories(self) -> list[str]:
        """The stored memory texts (raw messages under ``rag``), oldest first."""
        return [str(m.get("memory", "")) for m in self._stored]

    @property
    def _stored(self) -> list[dict[str, Any]]:
        """Every stored row, oldest first; listed from Mem0 again only after a change (listing the
        whole store after every add made writes grow with the store)."""
        if self._stale:
            self._refresh()
        return self._rows

    def _refresh(self) -> None:
        listed = self._memory.get_all(filters={"user_id": self.user_id}, top_k=1_000_000)
        rows = [r for r in listed.get("results", []) if isinstance(r, dict)]
        self._rows = sorted(rows, key=lambda r: (str(r.get("created_at") or ""), str(r.get("id"))))
        self._stale = False

    async def _run(self, fn: Any) -> Any:
        def bound() -> Any:
            _LOG_HANDLER.bind(self)
            try:
                return fn()
            finally:
                _LOG_HANDLER.unbind()

        self._busy.set()
        try:
            return await anyio.to_thread.run_sync(bound)
        finally:
            self._busy.clear()

    # -- write -------------------------------------------------------------------------------

    async def write(self, record: TurnRecord) -> None:
        """``Memory.add`` of the turn's user and assistant messages, ``user_id`` = the run's user.

        Nothing of a turn is held back or added: the record is the Table 11 turn (no target, no
        withheld content). A failed model call, a malformed reply or a failure Mem0 only logs is
        counted and kept as a note, never raised.
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
        self._at = f"{record.at:%Y-%m-%d %H:%M}"
        # a turn with no assistant reply (a change event's last turn: the user's new rule) has an
        # empty assistant message; Simple RAG would store it as an empty `assistant:` item
        messages = [{"role": m.role, "content": m.content} for m in _turn_messages(record) if m.content.strip()]
        if not messages:
            return
        metadata = {"created_at": record.at.isoformat(), "step_id": record.step_id, "context": record.context.value}

        def add() -> Any:
            try:
                return self._memory.add(messages, user_id=self.user_id, metadata=metadata, infer=self.infer)
            finally:
                self._stale = True

        errors_before = (self._stats.model_errors, self._stats.library_errors)
        try:
            result = await self._run(add)
        except Exception as exc:  # noqa: BLE001 - Mem0 raised: counted and noted, the run goes on
            self._stats.failed_writes += 1
            self._stats.library_errors += 1
            self._fail("library_error", f"add raised {type(exc).__name__}: {exc}"[:500])
            return
        finally:
            self._expected_log = False
        if (self._stats.model_errors, self._stats.library_errors) != errors_before:
            self._stats.failed_writes += 1
        self._stats.memories_added += sum(1 for r in result.get("results", []) if r.get("event") == "ADD")

    async def end_session(self, session: SessionInfo) -> None:
        """Write counters and failure notes next to the store."""
        self._persist()

    def _persist(self) -> None:
        write_files(self.folder, {
            "failures.jsonl": "".join(f.model_dump_json() + "\n" for f in self._failures).encode("utf-8"),
            "stats.json": (self._stats.model_dump_json(indent=2) + "\n").encode("utf-8"),
        })

    # -- retrieve ----------------------------------------------------------------------------

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Mem0's search with the user message: top 10 within 4,000 tokens, with scores; raw window.

        A search that raises is counted (``library_errors``) and the PA gets no items this turn.
        """
        self._stats.retrievals += 1
        items: list[EvidenceItem] = []
        if (self._rows or self._stale) and user_message.strip():  # no listing of the store per turn
            search = partial(self._memory.search, user_message, top_k=self.top_k, filters={"user_id": self.user_id})
            try:
                found = (await self._run(search)).get("results", [])
            except Exception as exc:  # noqa: BLE001 - counted and noted; the PA goes on without evidence
                self._stats.library_errors += 1
                self._fail("library_error", f"search raised {type(exc).__name__}: {exc}"[:500])
                found = []
            candidates = [
                (str(r.get("memory", "")), float(r.get("score") or 0.0), str(r.get("id", "")))
                for r in found if isinstance(r, dict) and r.get("memory")
            ]
            kept = pick_within_budget(candidates, self._count, top_k=self.top_k, budget=self.evidence_tokens)
            items = [EvidenceItem(text=t, score=round(s, 4), source=src) for t, s, src in kept]
        heading = ("What Mem0 remembers about the user that bears on this message" if self.infer
                   else "Earlier messages most similar to this one")
        self._last = Evidence(
            system_text=render_evidence(heading, items),
            items=items,
            prior_messages=raw_messages(self._window, session.step_id, session.is_probe),
        )
        return self._last.model_copy(deep=True)

    # -- checkpoints -------------------------------------------------------------------------

    def _check_idle(self, what: str) -> None:
        if self._busy.is_set():
            raise SnapshotError(f"{self._label}: cannot {what} while a write or search is running")

    def snapshot(self) -> bytes:
        """The whole store as JSON bytes: Mem0's FAISS files, its history database, counters,
        and the embedder's name and dimension.

        Raises:
            SnapshotError: a write or search is still running.
        """
        self._check_idle("snapshot")
        files = {}
        if self.faiss_dir.is_dir():
            for path in sorted(self.faiss_dir.iterdir()):
                if path.is_file() and SAFE_NAME.match(path.name):
                    files[path.name] = base64.b64encode(path.read_bytes()).decode("ascii")
        history = self._memory.db.connection.serialize()
        state = Mem0aiState(
            system=self.name, embedder=self.embedder_name, embedding_dim=self.embedding_dim,
            user_id=self.user_id, faiss_files=files, history_b64=base64.b64encode(history).decode("ascii"),
            seen=sorted(self._seen), window=list(self._window), stats=self._stats, failures=self._failures,
        )
        return state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the store with a snapshot: files rewritten, Mem0's store and database reopened.

        Raises:
            SnapshotError: not a snapshot of this condition, a file name or content that is not
                valid (names which), or a write or search still running.
            DimensionMismatchError: the snapshot was embedded by another model or dimension (names
                both models and both dimensions; issue 15 point 4).
            The store is untouched when any of these is raised.
        """
        self._check_idle("restore")
        try:
            state = Mem0aiState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"{self._label}: bad snapshot at {where}: {first['msg']}") from None
        if state.system != self.name:
            raise SnapshotError(f"{self._label}: the snapshot is of condition {state.system!r}, not {self.name!r}")
        if (state.embedder, state.embedding_dim) != (self.embedder_name, self.embedding_dim):
            raise DimensionMismatchError(
                f"{self._label}: the snapshot was embedded with {state.embedder!r} ({state.embedding_dim} "
                f"dimensions) but this store embeds with {self.embedder_name!r} ({self.embedding_dim} "
                "dimensions); start a fresh run or use the original embedding model"
            )
        files = {name: decode_b64(f"faiss_files.{name}", text) for name, text in state.faiss_files.items()}
        for name in files:
            if not SAFE_NAME.match(name):
                raise SnapshotError(f"{self._label}: bad snapshot file name {name!r}")
        check_faiss_files(files)
        history = decode_b64("history_b64", state.history_b64) if state.history_b64 else b""
        check_history_db(history)

        from mem0.memory.storage import SQLiteManager  # type: ignore[import-untyped]
        from mem0.utils.factory import VectorStoreFactory  # type: ignore[import-untyped]

        self._memory.close()
        self.faiss_dir.mkdir(parents=True, exist_ok=True)
        for path in self.faiss_dir.iterdir():
            if path.is_file():
                path.unlink()
        write_files(self.faiss_dir, files)
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.history_path}{suffix}").unlink(missing_ok=True)
        if history:
            write_files(self.folder, {self.history_path.name: history})
        self._memory.vector_store = VectorStoreFactory.create("faiss", self._config.vector_store.config)
        self._memory._entity_store = None
        self._memory.db = SQLiteManager(str(self.history_path))
        self.user_id = state.user_id
        self._seen = set(state.seen)
        self._window = list(state.window)
        self._stats = state.stats
        self._failures = list(state.failures)
        self._last = None
        self._refresh()
        self._persist()

    # -- inspect -----------------------------------------------------------------------------

    def inspect(self) -> MemoryInspection:
        """Stored memories (id, story time, step, role under ``rag``), failure notes, counters,
        and the last evidence with its scores."""
        stored = []
        for row in self._stored:
            meta = row.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            when = str(row.get("created_at") or "")[:16].replace("T", " ")
            role = f" {row['role']}:" if not self.infer and row.get("role") else ""
            stored.append(f"{str(row.get('id', ''))[:8]} [{when} {meta.get('step_id', '')}]{role} {row.get('memory', '')}")
        stored.extend(f"FAILED {f.kind} [{f.at}] {f.error}" for f in self._failures[-20:])
        stats = {k: float(v) for k, v in self._stats.model_dump().items()}
        stats["failures"] = float(self._stats.model_errors + self._stats.malformed_replies + self._stats.library_errors)
        stats["memories_stored"] = float(len(self._stored))
        stats["window_tokens"] = float(window_tokens(self._window, self._count))
        stats["embedding_dim"] = float(self.embedding_dim)
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)


MEM0AI_OPTIONS = ("user_id", "top_k", "evidence_tokens", "trim_at_tokens", "trim_to_tokens")
"""The option names of ``--memory mem0`` and ``--memory rag``."""


def _build(
    name: Literal["mem0", "rag"], client: CompletionClient | None, folder: Path, context_window: int | None,
    options: dict[str, Any],
) -> MemorySystem:
    from mempa_tui.memory._factory import MemoryConfigError
    from mempa_tui.memory._file import default_thresholds

    unknown = set(options) - set(MEM0AI_OPTIONS)
    if unknown:
        raise MemoryConfigError(
            f"memory condition {name!r}: unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(MEM0AI_OPTIONS)}"
        )
    if client is None and name == "mem0":
        raise MemoryConfigError("memory condition 'mem0' needs a model client (role 'memory')")
    user_id = options.get("user_id")
    if user_id is not None and not isinstance(user_id, str):
        raise MemoryConfigError(f"memory condition {name!r}: user_id must be a string, got {user_id!r}")
    for key in MEM0AI_OPTIONS[1:]:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemoryConfigError(f"memory condition {name!r}: {key} must be an integer, got {value!r}")
    at, to = default_thresholds(context_window)
    try:
        return Mem0aiMemory(
            client, folder, infer=name == "mem0", user_id=user_id,
            trim_at_tokens=options.get("trim_at_tokens", at), trim_to_tokens=options.get("trim_to_tokens", to),
            top_k=options.get("top_k", TOP_K), evidence_tokens=options.get("evidence_tokens", EVIDENCE_TOKENS),
        )
    except (Mem0aiError, ValueError) as exc:
        raise MemoryConfigError(str(exc)) from None


def build_mem0(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    """Mem0 (``--memory mem0``): mem0ai 2.0.2's add with inference; needs a client with role ``memory``.

    Options: ``user_id`` (default: the run's user label), ``top_k`` (10), ``evidence_tokens``
    (4,000), ``trim_at_tokens`` / ``trim_to_tokens`` (File memory's thresholds for the window).

    Raises:
        MemoryConfigError: no client, a bad option, or mem0ai / the packaged embedder missing
            (names ``pip install -e ".[mem0ai]"``).
    """
    return _build("mem0", client, folder, context_window, options)


def build_rag(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    """Simple RAG (``--memory rag``): mem0ai 2.0.2's add with ``infer=False`` and its search.

    Options as :func:`build_mem0`; makes no model call.

    Raises:
        MemoryConfigError: a bad option, or mem0ai / the packaged embedder missing.
    """
    return _build("rag", client, folder, context_window, options)
