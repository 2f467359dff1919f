"""Adapter to the real ``mem0ai`` library (optional extra; paper Section 4 ❸, Appendix F.1).

``--memory mem0ai`` runs the published Mem0 code (``mem0ai==2.2.1``) behind the common adapter,
next to our own Mem0-style re-implementation (``--memory mem0``). Install it with
``pip install -e ".[mem0ai]"``; ``mem0`` is imported only when a store is built.

Fully offline configuration:

- model calls: mem0's LLM slot is filled by :class:`_ProfileLLM`, which sends every call through
  the run's :class:`~mempa_tui.llm.LLMClient` with role ``memory`` (so the profile's model,
  ``api_base``, key, retries, concurrency limit and call records all apply: scripted, embedded
  llama.cpp and Ollama profiles alike). mem0's configuration still names a built-in provider
  (its schema accepts no other); that placeholder client is replaced before any call.
- embedder: mem0's ``huggingface`` provider loading the packaged all-MiniLM-L6-v2 from its folder
  (384 dimensions), Hugging Face hub offline.
- vector store: mem0's FAISS store with cosine similarity under ``<folder>/faiss/``; mem0's
  SQLite history (its change log and the recent messages it shows the extractor) at
  ``<folder>/history.db``.
- telemetry: ``MEM0_TELEMETRY=False`` before import (also forced off if mem0 was imported
  earlier), so no PostHog client and no remote notice configuration is fetched. ``MEM0_DIR``
  defaults to ``<folder>/.mem0`` of the first store built in the process (mem0 writes a small
  ``config.json`` there on import and, with telemetry off, nothing later).

What mem0 2.2.1 does on ``add``: one extraction call shows the model the new messages, up to 10
similar stored memories and up to 10 earlier messages, and the model answers
``{"memory": [{"text": ...}, ...]}``; new texts are added (this version's pipeline only adds;
exact duplicates are skipped by hash). mem0 itself turns an unparseable reply into "nothing
extracted" without telling anyone, and crashes on some wrongly typed ones, so :class:`_ProfileLLM`
checks each extraction reply first: a malformed one is counted and logged, and mem0 is handed an
empty list in its place. A failed model call is counted and logged; the turn is skipped. Neither
is ever raised into the run.

Retrieve: mem0's ``search`` with the user message (top 10, mem0's own 0.1 similarity floor), the
results within 4,000 tokens in the PA's system prompt with their scores; outside probes the PA
also keeps the raw conversation of earlier sessions, trimmed as in Simple RAG and ``mem0``.
"""

from __future__ import annotations

import base64
import hashlib
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
from mempa_tui.memory._file import _turn_messages
from mempa_tui.memory._mem0ai_support import (
    COLLECTION,
    EMBEDDING_DIM,
    EMPTY_EXTRACTION,
    EXTRACTION_SCHEMA,
    MEM0AI_VERSION,
    SAFE_NAME,
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
    "build_mem0ai",
    "check_extraction_reply",
    "user_from_folder",
]

FAILURE_LOG = 200
"""Most failure notes kept (the counters keep counting past it)."""


class _ProfileLLM:
    """mem0's LLM slot, served by the run's model client with role ``memory``.

    mem0 calls :meth:`generate_response` from the worker thread that runs ``add``; the call is
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
            LLMError: the call failed (counted; mem0 turns it into its own ``LLMError``).
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
            raise
        text = completion.text
        if schema is not None:
            problem = check_extraction_reply(text)
            if problem is not None:
                owner._stats.malformed_replies += 1
                owner._fail("malformed_reply", problem, text)
                return EMPTY_EXTRACTION
        return text


class Mem0aiMemory(MemorySystem):
    """The real mem0ai library behind the common adapter (``--memory mem0ai``).

    Args:
        client: model client; role ``memory`` serves mem0's extraction calls.
        folder: store folder (``local_memory/<run>/...``); ``faiss/`` and ``history.db`` live here.
        user_id: mem0's ``user_id`` scope; default: the user label of the run folder
            (``A-mem0ai-...``), else ``user``.
        token_counter: text -> tokens (default: ``client.count_tokens``).
        trim_at_tokens / trim_to_tokens: raw-conversation limit (default: File memory's).
        top_k / evidence_tokens: the evidence rule (10 results within 4,000 tokens).

    Raises:
        Mem0aiError: mem0ai missing or another version, the packaged embedder missing, or mem0
            cannot build its store (the message names the extra to install).
        ValueError: limits not positive, ``trim_to_tokens`` not below ``trim_at_tokens``, or an
            empty ``user_id``.
    """

    name = "mem0ai"

    def __init__(
        self,
        client: CompletionClient,
        folder: Path,
        *,
        user_id: str | None = None,
        token_counter: Any = None,
        trim_at_tokens: int | None = None,
        trim_to_tokens: int | None = None,
        top_k: int = TOP_K,
        evidence_tokens: int = EVIDENCE_TOKENS,
    ) -> None:
        self.trim_at, self.trim_to = trim_limits("mem0ai memory", trim_at_tokens, trim_to_tokens, top_k, evidence_tokens)
        self.folder = Path(folder)
        self.user_id = (user_id if user_id is not None else user_from_folder(self.folder) or "user").strip()
        if not self.user_id:
            raise ValueError("mem0ai memory: user_id must not be empty")
        self.client = client
        self.top_k = top_k
        self.evidence_tokens = evidence_tokens
        self._count = token_counter or getattr(client, "count_tokens", None) or estimate_tokens
        self._stats = Mem0aiStats()
        self._failures: list[Mem0aiFailure] = []
        self._seen: set[str] = set()
        self._window: list[TurnRecord] = []
        self._stored: list[dict[str, Any]] = []
        self._last: Evidence | None = None
        self._at = ""
        self._busy = threading.Event()
        import_mem0(self.folder.resolve() / ".mem0")
        self._memory = self._build()
        self._memory.llm = _ProfileLLM(client, self)

    # -- set-up ------------------------------------------------------------------------------

    @property
    def faiss_dir(self) -> Path:
        """Folder of mem0's FAISS files."""
        return self.folder / "faiss"

    @property
    def history_path(self) -> Path:
        """mem0's SQLite history database."""
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
            raise Mem0aiError(f"memory condition 'mem0ai': {exc}") from None
        self.folder.mkdir(parents=True, exist_ok=True)
        from mem0 import Memory  # type: ignore[import-untyped]
        from mem0.configs.base import MemoryConfig  # type: ignore[import-untyped]

        self._config = MemoryConfig(
            vector_store={"provider": "faiss", "config": {
                "collection_name": COLLECTION, "path": str(self.faiss_dir),
                "distance_strategy": "cosine", "embedding_model_dims": EMBEDDING_DIM,
            }},
            # placeholder: mem0's schema only accepts its own providers; replaced by _ProfileLLM
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
                f"memory condition 'mem0ai' cannot build its store ({exc}); install the extras: "
                f'pip install -e ".[memory,mem0ai]"'
            ) from None
        model = memory.embedding_model.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = int(getter())
        if dim != EMBEDDING_DIM:
            raise Mem0aiError(f"memory condition 'mem0ai': the packaged embedder has {dim} dimensions, expected {EMBEDDING_DIM}")
        return memory

    def _fail(self, kind: Literal["model_error", "malformed_reply"], error: str, reply: str = "") -> None:
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
        """The stored memory texts, oldest first."""
        return [str(m.get("memory", "")) for m in self._stored]

    def _refresh(self) -> None:
        listed = self._memory.get_all(filters={"user_id": self.user_id}, top_k=1_000_000)
        rows = [r for r in listed.get("results", []) if isinstance(r, dict)]
        self._stored = sorted(rows, key=lambda r: (str(r.get("created_at") or ""), str(r.get("id"))))

    async def _run(self, fn: Any) -> Any:
        self._busy.set()
        try:
            return await anyio.to_thread.run_sync(fn)
        finally:
            self._busy.clear()

    # -- write -------------------------------------------------------------------------------

    async def write(self, record: TurnRecord) -> None:
        """Add the turn's user and assistant messages with ``user_id`` = the run's user.

        A failed model call or a malformed reply is counted and logged, never raised.
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
        messages = [{"role": m.role, "content": m.content} for m in _turn_messages(record)]
        metadata = {"created_at": record.at.isoformat(), "step_id": record.step_id, "context": record.context.value}
        from mem0.exceptions import LLMError as Mem0LLMError  # type: ignore[import-untyped]

        def add() -> Any:
            try:
                return self._memory.add(messages, user_id=self.user_id, metadata=metadata)
            finally:
                self._refresh()

        noted = self._stats.model_errors
        try:
            result = await self._run(add)
        except Mem0LLMError as exc:
            self._stats.failed_writes += 1
            if self._stats.model_errors == noted:  # not a model error _ProfileLLM already logged
                self._stats.model_errors += 1
                self._fail("model_error", f"extraction failed: {exc}")
            return
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
        """mem0's search with the user message: top 10 within 4,000 tokens, with scores; raw window."""
        self._stats.retrievals += 1
        items: list[EvidenceItem] = []
        if self._stored and user_message.strip():
            search = partial(self._memory.search, user_message, top_k=self.top_k, filters={"user_id": self.user_id})
            found = (await self._run(search)).get("results", [])
            candidates = [
                (str(r.get("memory", "")), float(r.get("score") or 0.0), str(r.get("id", "")))
                for r in found if isinstance(r, dict) and r.get("memory")
            ]
            kept = pick_within_budget(candidates, self._count, top_k=self.top_k, budget=self.evidence_tokens)
            items = [EvidenceItem(text=t, score=round(s, 4), source=src) for t, s, src in kept]
        self._last = Evidence(
            system_text=render_evidence("What mem0 remembers about the user that bears on this message", items),
            items=items,
            prior_messages=raw_messages(self._window, session.step_id, session.is_probe),
        )
        return self._last.model_copy(deep=True)

    # -- checkpoints -------------------------------------------------------------------------

    def _check_idle(self, what: str) -> None:
        if self._busy.is_set():
            raise SnapshotError(f"mem0ai memory: cannot {what} while a write or search is running")

    def snapshot(self) -> bytes:
        """The whole store as JSON bytes: mem0's FAISS files, its history database, counters.

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
            user_id=self.user_id, faiss_files=files, history_b64=base64.b64encode(history).decode("ascii"),
            seen=sorted(self._seen), window=list(self._window), stats=self._stats, failures=self._failures,
        )
        return state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the store with a snapshot: files rewritten, mem0's store and database reopened.

        Raises:
            SnapshotError: not a mem0ai snapshot, a file name or content that is not valid (names
                which), or a write or search still running. The store is untouched then.
        """
        self._check_idle("restore")
        try:
            state = Mem0aiState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"mem0ai memory: bad snapshot at {where}: {first['msg']}") from None
        files = {name: decode_b64(f"faiss_files.{name}", text) for name, text in state.faiss_files.items()}
        for name in files:
            if not SAFE_NAME.match(name):
                raise SnapshotError(f"mem0ai memory: bad snapshot file name {name!r}")
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
        """Stored memories (story time, step), failure notes, counters, and the last evidence."""
        stored = []
        for row in self._stored:
            meta = row.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            when = str(row.get("created_at") or "")[:16].replace("T", " ")
            stored.append(f"{str(row.get('id', ''))[:8]} [{when} {meta.get('step_id', '')}] {row.get('memory', '')}")
        stored.extend(f"FAILED {f.kind} [{f.at}] {f.error}" for f in self._failures[-20:])
        stats = {k: float(v) for k, v in self._stats.model_dump().items()}
        stats["memories_stored"] = float(len(self._stored))
        stats["window_tokens"] = float(window_tokens(self._window, self._count))
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)


MEM0AI_OPTIONS = ("user_id", "top_k", "evidence_tokens", "trim_at_tokens", "trim_to_tokens")
"""The option names of ``--memory mem0ai``."""


def build_mem0ai(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    """The real mem0ai library (``--memory mem0ai``); needs a client with role ``memory``.

    Options: ``user_id`` (default: the run's user label), ``top_k`` (10), ``evidence_tokens``
    (4,000), ``trim_at_tokens`` / ``trim_to_tokens`` (File memory's thresholds for the window).

    Raises:
        MemoryConfigError: no client, a bad option, or mem0ai / the packaged embedder missing
            (names ``pip install -e ".[mem0ai]"``).
    """
    from mempa_tui.memory._factory import MemoryConfigError
    from mempa_tui.memory._file import default_thresholds

    unknown = set(options) - set(MEM0AI_OPTIONS)
    if unknown:
        raise MemoryConfigError(
            f"memory condition 'mem0ai': unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(MEM0AI_OPTIONS)}"
        )
    if client is None:
        raise MemoryConfigError("memory condition 'mem0ai' needs a model client (role 'memory')")
    user_id = options.get("user_id")
    if user_id is not None and not isinstance(user_id, str):
        raise MemoryConfigError(f"memory condition 'mem0ai': user_id must be a string, got {user_id!r}")
    for key in MEM0AI_OPTIONS[1:]:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemoryConfigError(f"memory condition 'mem0ai': {key} must be an integer, got {value!r}")
    at, to = default_thresholds(context_window)
    try:
        return Mem0aiMemory(
            client, folder, user_id=user_id,
            trim_at_tokens=options.get("trim_at_tokens", at), trim_to_tokens=options.get("trim_to_tokens", to),
            top_k=options.get("top_k", TOP_K), evidence_tokens=options.get("evidence_tokens", EVIDENCE_TOKENS),
        )
    except (Mem0aiError, ValueError) as exc:
        raise MemoryConfigError(str(exc)) from None
