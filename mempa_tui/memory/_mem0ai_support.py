"""Pieces of the Mem0 library adapter that need no Mem0 store: its settings, models, reply and snapshot checks.

See :mod:`mempa_tui.memory._mem0ai` for the adapter itself (``--memory mem0`` and ``rag``; paper
Section 4 ❷ ❸).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.memory._reference import SnapshotError
from mempa_tui.memory.base import TurnRecord

__all__ = [
    "COLLECTION",
    "EMBEDDING_DIM",
    "EMPTY_EXTRACTION",
    "EXTRACTION_SCHEMA",
    "INSTALL_HINT",
    "KNOWN_NOTICES",
    "FailureKind",
    "MEM0AI_VERSION",
    "SAFE_NAME",
    "Mem0aiError",
    "Mem0aiFailure",
    "Mem0aiState",
    "Mem0aiStats",
    "check_extraction_reply",
    "check_faiss_files",
    "check_history_db",
    "decode_b64",
    "import_mem0",
    "user_from_folder",
]

MEM0AI_VERSION = "2.0.2"
"""The mem0ai release this adapter is written and tested against (it reaches into its store)."""
INSTALL_HINT = 'pip install -e ".[mem0ai]"'
COLLECTION = "mem0ai"
"""FAISS collection name (files ``<folder>/faiss/mem0ai.faiss`` and ``.json``)."""
EMBEDDING_DIM = 384
"""Dimension of the packaged all-MiniLM-L6-v2."""
EMPTY_EXTRACTION = '{"memory": []}'
"""What mem0 is handed in place of a malformed extraction reply."""
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "attributed_to": {"type": "string"}},
                "required": ["text"],
            },
        }
    },
    "required": ["memory"],
}
"""JSON schema of mem0's extraction reply, passed to the client (constrained decoding where the
runtime supports it)."""
KNOWN_NOTICES = (
    "does not support keyword search",
    "spaCy",
)
"""Parts of Mem0 log lines that describe this set-up, not a failure: FAISS has no keyword search
(so Mem0's hybrid scoring is off), and spaCy is not installed (Mem0 then skips lemmas for its
keyword index and entity extraction for its entity links, as it does for any install without its
``nlp`` extra). Every other warning or error Mem0 logs during a call is counted."""
_RUN_ID = re.compile(r"^([A-Za-z0-9]+)-(?:mem0|rag)-.+$")
FailureKind = Literal["model_error", "malformed_reply", "library_error"]
"""``model_error``: the memory-role call failed; ``malformed_reply``: Mem0 could not have used the
reply; ``library_error``: Mem0 logged a failure of its own (or raised) during one of our calls."""
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
"""A file name a snapshot may carry (no folders, no leading dot)."""


class Mem0aiError(RuntimeError):
    """mem0ai is missing, of another version, or cannot be set up; the message says what to do."""


class Mem0aiFailure(BaseModel):
    """A model call or reply that could not be used.

    Attributes:
        at: story time of the turn (``YYYY-MM-DD HH:MM``).
        kind: see :data:`FailureKind`.
        error: what was wrong.
        reply: the start of the reply (empty for a failed call).
    """

    model_config = ConfigDict(extra="forbid")

    at: str
    kind: FailureKind
    error: str
    reply: str = ""


class Mem0aiStats(BaseModel):
    """Counters shown in ``inspect().stats`` and ``stats.json``; no failure goes uncounted."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    duplicate_writes: int = 0
    """Turn records written a second time (skipped)."""
    model_calls: int = 0
    """Calls mem0 made through the memory role, failed ones included."""
    model_errors: int = 0
    """Calls that failed outright; mem0 then stores nothing for the turn."""
    malformed_replies: int = 0
    """Extraction replies that were not ``{"memory": [{"text": str}, ...]}`` (nothing stored)."""
    library_errors: int = 0
    """Failures Mem0 logged (and went on) or raised during one of our calls."""
    failed_writes: int = 0
    """Turns whose ``add`` had a failure (a failed call, or one Mem0 logged or raised)."""
    memories_added: int = 0
    retrievals: int = 0
    turns_trimmed: int = 0


class Mem0aiState(BaseModel):
    """Everything a snapshot holds (JSON; file contents base64-encoded)."""

    model_config = ConfigDict(extra="forbid")

    system: Literal["mem0", "rag"]
    """The condition the store belongs to."""
    embedder: str
    """Name of the embedding model the vectors came from."""
    embedding_dim: int
    """Their dimension."""
    user_id: str
    faiss_files: dict[str, str] = Field(default_factory=dict)
    """File name under ``faiss/`` -> base64 bytes (the index and its docstore)."""
    history_b64: str = ""
    """mem0's SQLite history database, base64."""
    seen: list[str] = Field(default_factory=list)
    """sha256 keys of the turn records already written."""
    window: list[TurnRecord] = Field(default_factory=list)
    stats: Mem0aiStats = Field(default_factory=Mem0aiStats)
    failures: list[Mem0aiFailure] = Field(default_factory=list)


def check_extraction_reply(text: str) -> str | None:
    """Whether mem0ai 2.0.2 can use an extraction reply; read as mem0 reads it.

    mem0 strips a code fence and think blocks, parses the JSON (or the span from the first ``{`` to
    the last ``}``) and takes ``memory``. Usable means: a JSON object whose ``memory`` is a list of
    objects, each with a string ``text`` (an empty list is a valid "nothing to remember").

    Args:
        text: the reply text.

    Returns:
        None when usable, else what is wrong.
    """
    body = text.strip()
    fenced = re.match(r"^```[a-zA-Z0-9]*\n([\s\S]*?)\n```$", body)
    body = re.sub(r"<think>.*?</think>", "", fenced.group(1) if fenced else body, flags=re.DOTALL).strip()
    if not body:
        return "empty reply"
    try:
        data = json.loads(body, strict=False)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end <= start:
            return "no JSON object in the reply"
        try:
            data = json.loads(body[start : end + 1], strict=False)
        except json.JSONDecodeError as exc:
            return f"the reply's JSON does not parse ({exc.msg} at character {exc.pos})"
    if not isinstance(data, dict):
        return f"the reply is a JSON {type(data).__name__}, not an object"
    if "memory" not in data:
        return f"the reply has no 'memory' key (keys: {', '.join(sorted(map(str, data))) or 'none'})"
    items = data["memory"]
    if not isinstance(items, list):
        return f"'memory' is a {type(items).__name__}, not a list"
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            return f"memory[{n}] is not an object with a string 'text': {json.dumps(item)[:80]}"
    return None


class _KeywordSearchNotice(logging.Filter):
    """Drops mem0's warning that FAISS has no keyword search (hybrid scoring off; known, chosen)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "does not support keyword search" not in record.getMessage()


def import_mem0(mem0_dir: Path) -> Any:
    """Import mem0 offline with telemetry off; returns the ``mem0`` package.

    Raises:
        Mem0aiError: not installed, or another version.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(mem0_dir))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import mem0  # type: ignore[import-untyped]
        import mem0.memory.main as mem0_main  # type: ignore[import-untyped]
        import mem0.memory.telemetry as mem0_telemetry  # type: ignore[import-untyped]
    except ImportError as exc:
        raise Mem0aiError(f"memory conditions 'mem0' and 'rag' need the mem0ai library ({exc}); install it: {INSTALL_HINT}") from None
    # expected with the FAISS store this adapter chooses; said once per store, it would only be noise
    main_log = logging.getLogger("mem0.memory.main")
    if not any(isinstance(f, _KeywordSearchNotice) for f in main_log.filters):
        main_log.addFilter(_KeywordSearchNotice())
    # imported earlier by someone else with telemetry on: switch it off where mem0 reads it
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False  # type: ignore[attr-defined]
    version = getattr(mem0, "__version__", "unknown")
    if version != MEM0AI_VERSION:
        raise Mem0aiError(
            f"memory conditions 'mem0' and 'rag' are written for mem0ai {MEM0AI_VERSION}, found {version}; "
            f"install the pinned one: {INSTALL_HINT}"
        )
    return mem0


def user_from_folder(folder: Path) -> str | None:
    """The user label in a run folder path ``.../<user>-mem0-<profile>-s<seed>/...`` (or ``-rag-``), if any."""
    for part in reversed(Path(folder).parts):
        match = _RUN_ID.match(part)
        if match:
            return match.group(1)
    return None



def decode_b64(where: str, text: str) -> bytes:
    """Bytes of a base64 snapshot field.

    Raises:
        SnapshotError: not base64; names the field ``where``.
    """
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise SnapshotError(f"mem0ai memory: bad snapshot at {where}: not base64 ({exc})") from None


def check_faiss_files(files: dict[str, bytes]) -> None:
    """Refuse FAISS files mem0 could not load: index and docstore must both be there and agree."""
    if not files:
        return
    index_name, doc_name = f"{COLLECTION}.faiss", f"{COLLECTION}.json"
    missing = [n for n in (index_name, doc_name) if n not in files]
    if missing:
        raise SnapshotError(f"mem0ai memory: bad snapshot: faiss_files lacks {', '.join(missing)}")
    import faiss
    import numpy as np

    try:
        index = faiss.deserialize_index(np.frombuffer(files[index_name], dtype=np.uint8))
    except RuntimeError as exc:
        raise SnapshotError(f"mem0ai memory: bad snapshot: {index_name} is not a FAISS index ({exc})") from None
    if index.d != EMBEDDING_DIM:
        raise SnapshotError(
            f"mem0ai memory: the snapshot's index is {index.d}-dimensional but the packaged embedder gives {EMBEDDING_DIM}"
        )
    try:
        doc = json.loads(files[doc_name])
        mapped = len(doc["index_to_id"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotError(f"mem0ai memory: bad snapshot: {doc_name} is not mem0's docstore ({exc})") from None
    if mapped != index.ntotal:
        raise SnapshotError(f"mem0ai memory: bad snapshot: {index.ntotal} vectors but {mapped} docstore ids")


def check_history_db(data: bytes) -> None:
    """Refuse history bytes that are not an SQLite database with mem0's ``history`` table."""
    if not data:
        return
    import sqlite3

    probe = sqlite3.connect(":memory:")
    try:
        probe.deserialize(data)
        probe.execute("SELECT COUNT(*) FROM history").fetchone()
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"mem0ai memory: bad snapshot at history_b64: not mem0's history database ({exc})") from None
    finally:
        probe.close()

