"""MemOS (paper Section 4 ❹, Table 11 last row): MemoryOS 2.0.15 in its own environment, on loopback.

MemoryOS pins ``ollama==0.5.0``, ``openai<2``, ``transformers<5``, ``sentence-transformers<5`` and
``fastapi<0.116``, which conflict with mempa's own stack, so it runs the way a deployment runs it:

- **Environment.** A virtual environment of its own, created by mempa on first use from the
  package registry with pinned versions (:data:`MEMOS_REQUIREMENTS`), at ``$MEMPA_MEMOS_ENV`` or
  ``~/.cache/mempa/memos-2.0.15``. ``python -m mempa_tui.memory.memos_setup`` creates it ahead of time.
- **Server.** :mod:`mempa_tui.memory._memos_server` started with that environment's Python on
  127.0.0.1 (a free port) when the first MemOS store of a process is built, stopped when the
  process ends (or by :func:`stop_memos_server`). One server holds every cube of the process (the
  run's store and its probe branches), so torch and the embedder load once.
- **Memory.** One ``GeneralMemCube`` per store, textual memory only, as in the paper. The paper's
  ``tree_text`` needs a graph database server (Neo4j, PolarDB or PostgreSQL) that does not run
  here; the closest offline type is ``general_text`` (MemOS's own extraction prompt, its Qdrant
  vector store embedded on disk under ``local_memory/<run>/.../qdrant``). The embedder is the
  packaged all-MiniLM-L6-v2 through MemOS's ``sentence_transformer`` backend (the paper used
  text-embedding-3-small). Both substitutions are named in results (:data:`CONDITION_SOURCES`).
- **Model calls.** MemOS's ``openai`` LLM backend pointed at the profile's ``memory`` role
  endpoint (OpenAI-compatible: ``/v1`` of an Ollama server, the embedded llama.cpp server, the
  scripted test server). These calls do not pass through mempa's client, so they are not in the
  run's call log; the adapter counts them (``model_calls``) and every failure.

Write: the cube's native add (``text_mem.extract`` then ``text_mem.add``) of the turn's user and
assistant messages. A failed extraction (MemOS retries unparseable JSON three times, then gives
up) or a failed add is counted (``failed_writes``, a note in ``failures``), never raised.
Retrieve: the cube's search with the user message, top 10 within 4,000 tokens with scores; outside
probes the PA keeps the raw conversation of earlier sessions, trimmed at File memory's limit.
Snapshot: every stored item with its vector (JSON) and the adapter's state; restore replaces the
cube's items, after checking the embedder's name and dimension (issue 15 point 4).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.llm.types import Role
from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._embed import DEFAULT_EMBEDDER_NAME
from mempa_tui.memory._file import _turn_messages
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
    "MEMOS_OPTIONS",
    "MEMOS_REQUIREMENTS",
    "MEMOS_VERSION",
    "MemosError",
    "MemosMemory",
    "MemosStats",
    "build_memos",
    "ensure_memos_env",
    "memos_env_dir",
    "memos_endpoint",
    "stop_memos_server",
]

MEMOS_VERSION = "2.0.15"
MEMOS_REQUIREMENTS = (
    f"MemoryOS=={MEMOS_VERSION}",
    "qdrant-client>=1.16,<2",
    "sentence-transformers>=4.1,<5",
    "torch==2.13.0",
)
"""What ``pip`` installs into MemOS's environment: MemOS itself (its own pins come along), the
Qdrant client its ``general_text`` store needs, and the embedder's packages (CPU torch)."""
ENV_VAR = "MEMPA_MEMOS_ENV"
"""Environment variable naming MemOS's virtual environment folder."""
_START_TIMEOUT_S = 600.0
_CALL_TIMEOUT_S = 600.0


class MemosError(RuntimeError):
    """MemOS's environment or server cannot be made or reached; the message says what to do."""


class MemosFailure(BaseModel):
    """A write or search that failed (``at``: story time; ``kind``; ``error``: what MemOS said)."""

    model_config = ConfigDict(extra="forbid")

    at: str
    kind: Literal["extract_failed", "add_failed", "search_failed"]
    error: str


class MemosStats(BaseModel):
    """Counters shown in ``inspect().stats`` and ``stats.json``; no failure goes uncounted."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    duplicate_writes: int = 0
    model_calls: int = 0
    """Extraction requests sent to MemOS (each is one LLM call, more when MemOS retries)."""
    failed_writes: int = 0
    """Turns whose extraction or add failed (nothing stored for them)."""
    failed_searches: int = 0
    memories_added: int = 0
    retrievals: int = 0
    turns_trimmed: int = 0


class MemosState(BaseModel):
    """Everything a MemOS snapshot holds (JSON)."""

    model_config = ConfigDict(extra="forbid")

    system: Literal["memos"] = "memos"
    embedder: str
    embedding_dim: int
    items: list[dict[str, Any]] = Field(default_factory=list)
    """Qdrant items as MemOS dumps them (id, vector, payload)."""
    seen: list[str] = Field(default_factory=list)
    window: list[TurnRecord] = Field(default_factory=list)
    stats: MemosStats = Field(default_factory=MemosStats)
    failures: list[MemosFailure] = Field(default_factory=list)


# -- the environment --------------------------------------------------------------------------


def memos_env_dir() -> Path:
    """MemOS's virtual environment: ``$MEMPA_MEMOS_ENV`` or ``~/.cache/mempa/memos-2.0.15``."""
    raw = os.environ.get(ENV_VAR, "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".cache" / "mempa" / f"memos-{MEMOS_VERSION}"


def _env_python(env: Path) -> Path:
    return env / "bin" / "python"


def _env_version(env: Path) -> str | None:
    python = _env_python(env)
    if not python.is_file():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('MemoryOS'))"],
        capture_output=True, text=True, timeout=120,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def ensure_memos_env(env: Path | None = None, *, create: bool = True) -> Path:
    """MemOS's environment, created from the package registry when it is missing.

    Args:
        env: the folder (default :func:`memos_env_dir`).
        create: False only checks.

    Returns:
        The environment's Python interpreter.

    Raises:
        MemosError: the environment is missing (``create=False``), holds another MemoryOS, or
            ``venv`` / ``pip`` failed (the message has pip's last lines and the command).
    """
    env = Path(env) if env is not None else memos_env_dir()
    version = _env_version(env)
    if version == MEMOS_VERSION:
        return _env_python(env)
    if version is not None:
        raise MemosError(f"MemOS's environment {env} holds MemoryOS {version}, not {MEMOS_VERSION}; "
                         f"remove it or point {ENV_VAR} elsewhere")
    command = f"{sys.executable} -m venv {env} && {env}/bin/pip install " + " ".join(f"'{r}'" for r in MEMOS_REQUIREMENTS)
    if not create:
        raise MemosError(f"MemOS's environment {env} does not exist; create it with: "
                         f"python -m mempa_tui.memory.memos_setup (runs: {command})")
    env.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("mempa.memory").warning(
        "creating MemOS's own environment at %s (once; several minutes, about 1.6 GB): %s", env, command)
    steps = [[sys.executable, "-m", "venv", str(env)], [str(env / "bin" / "pip"), "install", *MEMOS_REQUIREMENTS]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
            raise MemosError(f"creating MemOS's environment failed at `{' '.join(step)}` (exit {done.returncode}):\n{tail}\n"
                             f"the whole command: {command}")
    if _env_version(env) != MEMOS_VERSION:
        raise MemosError(f"MemOS's environment {env} was created but MemoryOS {MEMOS_VERSION} does not import there")
    return _env_python(env)


# -- the server -------------------------------------------------------------------------------


def memos_endpoint(client: Any) -> tuple[str, str, str, float, int]:
    """The profile's ``memory`` role as an OpenAI-compatible endpoint.

    Returns:
        ``(base_url, model, api_key, temperature, max_tokens)``: ``/v1`` of an Ollama server for
        ``ollama*/`` models, the spec's ``api_base`` otherwise; the model without its litellm
        provider prefix; the role's sampling settings.

    Raises:
        MemosError: the client has no profile, or the role has no server URL.
    """
    profile = getattr(client, "profile", None)
    if profile is None:
        raise MemosError("memory condition 'memos' needs a model client with a profile (role 'memory')")
    spec = profile.spec_for(Role.MEMORY)
    provider, _, model = spec.model.partition("/")
    base = spec.api_base
    if not base:
        raise MemosError(f"memory condition 'memos': the memory role's model {spec.model} has no api_base")
    base = base.rstrip("/")
    if provider.startswith("ollama") and not base.endswith("/v1"):
        base += "/v1"
    key = os.environ.get(spec.api_key_env, "") if spec.api_key_env else ""
    return base, model or spec.model, key or "unused", float(spec.temperature), int(spec.max_tokens)


class _Server:
    """One MemOS server process (see :mod:`mempa_tui.memory._memos_server`)."""

    def __init__(self, python: Path, endpoint: tuple[str, str, str, float, int], embedder_path: Path) -> None:
        from mempa_tui.memory._embed import EMBED_THREADS_ENV

        base, model, key, temperature, max_tokens = endpoint
        threads = os.environ.get(EMBED_THREADS_ENV, "1").strip()
        self.endpoint = endpoint
        script = Path(__file__).with_name("_memos_server.py")
        home = python.parent.parent / "memos_home"  # MemOS writes its settings folder under the cwd
        home.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [str(python), str(script), "--embedder-path", str(embedder_path), "--embedder-name", DEFAULT_EMBEDDER_NAME,
             "--llm-base", base, "--llm-model", model, "--llm-key", key, "--llm-temperature", str(temperature),
             "--llm-max-tokens", str(max_tokens), "--threads", threads if threads.isdigit() else "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(home),
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEMOS_DIR": str(home / ".memos"),
                 "PYTHONPATH": ""},
        )
        # MemOS logs to stdout too: read until the ready line (or the end), keep the rest drained
        seen: list[str] = []
        ready = threading.Event()

        def read_stdout() -> None:
            stream = self.process.stdout
            if stream is None:
                ready.set()
                return
            for line in stream:
                if not ready.is_set():
                    seen.append(line)
                    del seen[:-20]
                    if line.startswith("MEMOS_READY "):
                        ready.set()
            ready.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        ready.wait(_START_TIMEOUT_S)
        line = seen[-1] if seen else ""
        if not line.startswith("MEMOS_READY "):
            self.process.kill()
            err = (self.process.stderr.read() if self.process.stderr else "")[-2000:]
            said = "".join(seen[-5:]).strip()
            raise MemosError(f"MemOS's server did not start; its output ends:\n{said}\n{err}")
        # drain stderr so MemOS's logging never blocks the process
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"
        self.health = self.call("/health", None)

    def _drain(self) -> None:
        stream = self.process.stderr
        if stream is not None:
            for _ in stream:
                pass

    def call(self, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        """One request; returns the JSON reply.

        Raises:
            MemosError: the server is gone or answered an error (its message included).
        """
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method="POST" if body is not None else "GET",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=_CALL_TIMEOUT_S) as reply:
                return dict(json.loads(reply.read()))
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", "")
            except ValueError:
                message = str(exc)
            raise MemosError(f"MemOS server {path}: HTTP {exc.code}: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise MemosError(f"MemOS server {path}: unreachable ({exc}); exit code {self.process.poll()}") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("/shutdown", {})
                self.process.wait(timeout=30)
            except (MemosError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


_SERVERS: dict[tuple[str, str, str, float, int], _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _server_for(client: Any) -> _Server:
    from mempa_tui.memory._embed import EmbedderError, packaged_model_path

    endpoint = memos_endpoint(client)
    with _SERVERS_LOCK:
        server = _SERVERS.get(endpoint)
        if server is not None and server.process.poll() is None:
            return server
        try:
            embedder_path = packaged_model_path()
        except EmbedderError as exc:
            raise MemosError(f"memory condition 'memos': {exc}") from None
        python = ensure_memos_env()
        server = _Server(python, endpoint, embedder_path)
        version = server.health.get("memos_version")
        if version != MEMOS_VERSION:
            server.stop()
            raise MemosError(f"MemOS's server runs MemoryOS {version}, not {MEMOS_VERSION}")
        _SERVERS[endpoint] = server
        return server


def stop_memos_server() -> None:
    """Stop every MemOS server this process started (also run when the process exits)."""
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


atexit.register(stop_memos_server)


# -- the adapter ------------------------------------------------------------------------------


class MemosMemory(MemorySystem):
    """MemOS behind the common adapter (``--memory memos``).

    Args:
        client: the run's model client (its profile's ``memory`` role is MemOS's LLM).
        folder: the store folder (``local_memory/<run>/...``); the cube's Qdrant files live here.
        token_counter / trim_at_tokens / trim_to_tokens / top_k / evidence_tokens: as Mem0's.

    Raises:
        MemosError: the environment cannot be made or the server does not start (says why).
        ValueError: bad limits.
    """

    name = "memos"

    def __init__(
        self,
        client: CompletionClient,
        folder: Path,
        *,
        token_counter: Any = None,
        trim_at_tokens: int | None = None,
        trim_to_tokens: int | None = None,
        top_k: int = TOP_K,
        evidence_tokens: int = EVIDENCE_TOKENS,
    ) -> None:
        self.trim_at, self.trim_to = trim_limits("MemOS", trim_at_tokens, trim_to_tokens, top_k, evidence_tokens)
        self.folder = Path(folder)
        self.top_k = top_k
        self.evidence_tokens = evidence_tokens
        self._count = token_counter or getattr(client, "count_tokens", None) or estimate_tokens
        self._server = _server_for(client)
        self.embedder_name = str(self._server.health.get("embedder"))
        self.embedding_dim = int(self._server.health.get("embedding_dim") or 0)
        self.cube = hashlib.sha256(str(self.folder.resolve()).encode()).hexdigest()[:16]
        self._server.call("/cube", {"cube": self.cube, "folder": str(self.folder.resolve())})
        self._stats = MemosStats()
        self._failures: list[MemosFailure] = []
        self._seen: set[str] = set()
        self._window: list[TurnRecord] = []
        self._stored: list[dict[str, Any]] = []
        self._last: Evidence | None = None
        self._busy = threading.Event()

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._busy.set()
        try:
            return await anyio.to_thread.run_sync(self._server.call, path, body)
        finally:
            self._busy.clear()

    def _fail(self, at: str, kind: Literal["extract_failed", "add_failed", "search_failed"], error: str) -> None:
        self._failures.append(MemosFailure(at=at, kind=kind, error=error[:500]))
        del self._failures[:-200]

    @property
    def stats(self) -> MemosStats:
        """A copy of the counters."""
        return self._stats.model_copy()

    @property
    def failures(self) -> list[MemosFailure]:
        """Copies of the failure notes, oldest first."""
        return [f.model_copy() for f in self._failures]

    @property
    def memories(self) -> list[str]:
        """Stored memory texts, in MemOS's order."""
        return [str(i.get("memory", "")) for i in self._stored]

    async def write(self, record: TurnRecord) -> None:
        """The cube's native add of the turn's messages; failures counted and noted, never raised."""
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
        # a turn with no reply (a change event's last user turn) has no assistant message to store
        messages = [{"role": m.role, "content": m.content} for m in _turn_messages(record) if m.content.strip()]
        if not messages:
            return
        self._stats.model_calls += 1
        try:
            reply = await self._call("/add", {"cube": self.cube, "messages": messages})
        except MemosError as exc:
            self._stats.failed_writes += 1
            self._fail(at, "add_failed", str(exc))
            return
        if reply.get("error"):
            self._stats.failed_writes += 1
            error = str(reply["error"])
            self._fail(at, "extract_failed" if error.startswith("extract") else "add_failed", error)
            return
        self._stats.memories_added += len(reply.get("added") or [])
        self._stored = list((await self._call("/all", {"cube": self.cube})).get("items") or [])

    async def end_session(self, session: SessionInfo) -> None:
        """Write counters and failure notes next to the store."""
        self._persist()

    def _persist(self) -> None:
        write_files(self.folder, {
            "failures.jsonl": "".join(f.model_dump_json() + "\n" for f in self._failures).encode("utf-8"),
            "stats.json": (self._stats.model_dump_json(indent=2) + "\n").encode("utf-8"),
        })

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """The cube's search with the user message: top 10 within 4,000 tokens, scored; raw window."""
        self._stats.retrievals += 1
        items: list[EvidenceItem] = []
        if self._stored and user_message.strip():
            try:
                found = (await self._call("/search", {"cube": self.cube, "query": user_message, "top_k": self.top_k}))["results"]
            except MemosError as exc:
                self._stats.failed_searches += 1
                self._fail(f"{session.at:%Y-%m-%d %H:%M}", "search_failed", str(exc))
                found = []
            candidates = [(str(r.get("memory", "")), float(r.get("score") or 0.0), str(r.get("id", ""))) for r in found
                          if r.get("memory")]
            kept = pick_within_budget(candidates, self._count, top_k=self.top_k, budget=self.evidence_tokens)
            items = [EvidenceItem(text=t, score=round(s, 4), source=src) for t, s, src in kept]
        self._last = Evidence(
            system_text=render_evidence("What MemOS remembers that bears on this message", items),
            items=items,
            prior_messages=raw_messages(self._window, session.step_id, session.is_probe),
        )
        return self._last.model_copy(deep=True)

    def snapshot(self) -> bytes:
        """Every stored item with its vector, the raw window, counters and notes (JSON).

        Raises:
            SnapshotError: a write or search is running.
        """
        if self._busy.is_set():
            raise SnapshotError("MemOS: cannot snapshot while a write or search is running")
        items = self._server.call("/dump", {"cube": self.cube}).get("items") or []
        items = sorted(items, key=lambda i: str(i.get("id")))
        state = MemosState(embedder=self.embedder_name, embedding_dim=self.embedding_dim, items=items,
                           seen=sorted(self._seen), window=list(self._window), stats=self._stats, failures=self._failures)
        return state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the cube's items and the adapter's state with a snapshot.

        Raises:
            SnapshotError: not a MemOS snapshot (names the field), or a write is running.
            DimensionMismatchError: another embedding model or dimension (names both of each).
        """
        if self._busy.is_set():
            raise SnapshotError("MemOS: cannot restore while a write or search is running")
        try:
            state = MemosState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"MemOS: bad snapshot at {where}: {first['msg']}") from None
        if (state.embedder, state.embedding_dim) != (self.embedder_name, self.embedding_dim):
            raise DimensionMismatchError(
                f"MemOS: the snapshot was embedded with {state.embedder!r} ({state.embedding_dim} dimensions) but "
                f"this store embeds with {self.embedder_name!r} ({self.embedding_dim} dimensions); start a fresh "
                "run or use the original embedding model")
        for n, item in enumerate(state.items):
            vector = item.get("vector")
            if not isinstance(vector, list) or len(vector) != self.embedding_dim:
                raise SnapshotError(f"MemOS: bad snapshot at items.{n}.vector: expected {self.embedding_dim} numbers")
        self._server.call("/load", {"cube": self.cube, "items": state.items})
        self._seen = set(state.seen)
        self._window = list(state.window)
        self._stats = state.stats
        self._failures = list(state.failures)
        self._stored = list(self._server.call("/all", {"cube": self.cube}).get("items") or [])
        self._last = None
        self._persist()

    def inspect(self) -> MemoryInspection:
        """Stored memories (id, key, text), failure notes, counters, and the last evidence."""
        stored = []
        for item in self._stored:
            meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
            stored.append(f"{str(item.get('id', ''))[:8]} [{meta.get('key', '')}] {item.get('memory', '')}")
        stored.extend(f"FAILED {f.kind} [{f.at}] {f.error}" for f in self._failures[-20:])
        stats = {k: float(v) for k, v in self._stats.model_dump().items()}
        stats["failures"] = float(self._stats.failed_writes + self._stats.failed_searches)
        stats["memories_stored"] = float(len(self._stored))
        stats["window_tokens"] = float(window_tokens(self._window, self._count))
        stats["embedding_dim"] = float(self.embedding_dim)
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)


MEMOS_OPTIONS = ("top_k", "evidence_tokens", "trim_at_tokens", "trim_to_tokens")
"""The option names of ``--memory memos``."""


def build_memos(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    """MemOS (``--memory memos``); needs a client whose profile has a ``memory`` role endpoint.

    Raises:
        MemoryConfigError: no client, a bad option, or MemOS's environment / server cannot be made
            (the message says why and how to create the environment).
    """
    from mempa_tui.memory._factory import MemoryConfigError
    from mempa_tui.memory._file import default_thresholds

    unknown = set(options) - set(MEMOS_OPTIONS)
    if unknown:
        raise MemoryConfigError(
            f"memory condition 'memos': unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(MEMOS_OPTIONS)}")
    if client is None:
        raise MemoryConfigError("memory condition 'memos' needs a model client (role 'memory')")
    for key in MEMOS_OPTIONS:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemoryConfigError(f"memory condition 'memos': {key} must be an integer, got {value!r}")
    at, to = default_thresholds(context_window)
    try:
        return MemosMemory(client, folder, trim_at_tokens=options.get("trim_at_tokens", at),
                           trim_to_tokens=options.get("trim_to_tokens", to), top_k=options.get("top_k", TOP_K),
                           evidence_tokens=options.get("evidence_tokens", EVIDENCE_TOKENS))
    except (MemosError, ValueError) as exc:
        raise MemoryConfigError(str(exc)) from None
