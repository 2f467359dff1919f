"""Pieces shared by the retrieval-based memories (Simple RAG, Mem0-style; paper Section 4 ❷ ❸).

- :class:`VectorIndex`: a FAISS inner-product index over unit vectors (cosine similarity) with
  stable integer ids, removal, and byte serialisation for checkpoints.
- :func:`pick_within_budget`: the paper's evidence rule, at most 10 results and 4,000 tokens.
- :func:`trim_window`: the raw conversation the PA keeps, trimmed at the configured limit; the
  turns dropped are already in the store (Section 4, 'They trim raw conversation at the same
  20k-token limit').

faiss is imported when the first index is made, never at ``mempa`` start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mempa_tui.llm.types import ChatMessage
from mempa_tui.memory._embed import Embedder, EmbedderError
from mempa_tui.memory._file import _turn_messages, default_thresholds
from mempa_tui.memory.base import EvidenceItem, TurnRecord

__all__ = [
    "EVIDENCE_TOKENS",
    "TOP_K",
    "DimensionMismatchError",
    "VectorIndex",
    "check_embedder",
    "estimate_tokens",
    "pick_within_budget",
    "raw_messages",
    "render_evidence",
    "trim_limits",
    "trim_window",
    "window_tokens",
    "write_files",
]

TOP_K = 10
"""Results retrieved per user message (paper Section 4)."""
EVIDENCE_TOKENS = 4_000
"""Most tokens of retrieved text placed in the PA's prompt (paper Section 4)."""

_INSTALL_HINT = 'install the memory extra: pip install -e ".[memory]"'


class DimensionMismatchError(EmbedderError):
    """Vectors of one dimension met an index of another (the embedding model changed).

    The message names both dimensions and both model names.
    """


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise EmbedderError(f"faiss is not installed; {_INSTALL_HINT}") from None
    return faiss


class VectorIndex:
    """Cosine-similarity search over unit vectors with integer ids (``IndexIDMap2(IndexFlatIP)``).

    Args:
        dim: vector dimension (384 for the packaged MiniLM).
        model: the embedder's name, used in mismatch errors.
    """

    def __init__(self, dim: int, model: str) -> None:
        faiss = _faiss()
        self.dim = dim
        self.model = model
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    @property
    def size(self) -> int:
        """Vectors stored."""
        return int(self._index.ntotal)

    def check(self, vectors: npt.NDArray[np.float32], model: str) -> None:
        """Refuse vectors whose dimension differs from the index's.

        Raises:
            DimensionMismatchError: names the index's and the vectors' dimension and model.
        """
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            got = vectors.shape[1] if vectors.ndim == 2 else vectors.shape
            raise DimensionMismatchError(
                f"embedding dimension mismatch: the store holds {self.dim}-dimensional vectors from "
                f"{self.model!r}, but {model!r} produced {got}-dimensional ones; start a fresh store "
                "or use the original embedding model"
            )

    def add(self, ids: Sequence[int], vectors: npt.NDArray[np.float32], model: str) -> None:
        """Add vectors under ``ids`` (each id must be new)."""
        self.check(vectors, model)
        self._index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))

    def remove(self, ids: Sequence[int]) -> None:
        """Remove the vectors stored under ``ids`` (unknown ids are ignored)."""
        if ids:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(self, query: npt.NDArray[np.float32], k: int, model: str) -> list[tuple[int, float]]:
        """The ``k`` most similar stored vectors to one query row, best first.

        Returns:
            ``[(id, cosine score)]``; empty when the index is empty (never placeholder ids).
        """
        self.check(query, model)
        if self.size == 0 or k <= 0:
            return []
        scores, ids = self._index.search(query[:1], min(k, self.size))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def to_bytes(self) -> bytes:
        """The index as FAISS's own serialisation."""
        return bytes(_faiss().serialize_index(self._index).tobytes())

    @classmethod
    def from_bytes(cls, data: bytes, dim: int, model: str) -> VectorIndex:
        """Rebuild an index written by :meth:`to_bytes`.

        Raises:
            DimensionMismatchError: the bytes hold an index of another dimension than ``dim``.
            ValueError: the bytes are not a FAISS index.
        """
        faiss = _faiss()
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError as exc:
            raise ValueError(f"not a FAISS index: {str(exc).splitlines()[0]}") from None
        if int(index.d) != dim:
            raise DimensionMismatchError(
                f"embedding dimension mismatch: the snapshot's index is {index.d}-dimensional but its "
                f"records say {dim} ({model!r})"
            )
        out = cls.__new__(cls)
        out.dim, out.model, out._index = dim, model, index
        return out


def pick_within_budget(
    candidates: Sequence[tuple[str, float, str]],
    count: Callable[[str], int],
    *,
    top_k: int = TOP_K,
    budget: int = EVIDENCE_TOKENS,
) -> list[tuple[str, float, str]]:
    """The first ``top_k`` candidates, best first, that fit together into ``budget`` tokens.

    A candidate too long for what is left of the budget is skipped; later, shorter ones may fit.

    Args:
        candidates: ``(text, score, source id)`` sorted best first.
        count: text -> tokens.
        top_k: most candidates considered (10 in the paper).
        budget: most tokens in total (4,000 in the paper).

    Returns:
        The kept candidates, in the same order.
    """
    kept: list[tuple[str, float, str]] = []
    used = 0
    for text, score, source in list(candidates)[:top_k]:
        tokens = count(text)
        if used + tokens <= budget:
            kept.append((text, score, source))
            used += tokens
    return kept


def window_tokens(turns: Sequence[TurnRecord], count: Callable[[str], int]) -> int:
    """Tokens the turns take as raw chat messages in the PA's history (4 per message overhead)."""
    return sum(count(m.content) + 4 for turn in turns for m in _turn_messages(turn))


def trim_window(
    window: list[TurnRecord], count: Callable[[str], int], *, trim_at: int, trim_to: int
) -> tuple[list[TurnRecord], int]:
    """Drop the oldest raw turns once the window passes ``trim_at`` tokens, until below ``trim_to``.

    The hysteresis keeps the PA's prompt prefix stable between trims (KV-cache reuse).

    Returns:
        ``(kept turns, number dropped)``.
    """
    sizes = [window_tokens([turn], count) for turn in window]
    total = sum(sizes)
    if total <= trim_at:
        return window, 0
    dropped = 0
    while dropped < len(window) and total >= trim_to:
        total -= sizes[dropped]
        dropped += 1
    return list(window[dropped:]), dropped


def raw_messages(window: Sequence[TurnRecord], step_id: str, is_probe: bool) -> list[ChatMessage]:
    """The raw turns as chat messages before the current session; none in probes.

    Turns of the current step are left out: the PA already holds this session's history.
    """
    if is_probe:
        return []
    out: list[ChatMessage] = []
    for turn in window:
        if turn.step_id != step_id:
            out.extend(_turn_messages(turn))
    return out



def trim_limits(
    system: str, trim_at: int | None, trim_to: int | None, top_k: int, evidence_tokens: int
) -> tuple[int, int]:
    """The raw-conversation limits of a retrieval memory, checked with its evidence rule.

    Args:
        system: the memory's name for messages, e.g. ``"Simple RAG"``.
        trim_at / trim_to: tokens at which the raw conversation is trimmed, and the level it is
            trimmed to; None takes File memory's defaults (paper: 20,000 -> 10,000).
        top_k / evidence_tokens: the evidence rule, checked for being positive.

    Returns:
        ``(trim_at, trim_to)``.

    Raises:
        ValueError: a limit is not positive, or ``trim_to`` is not below ``trim_at``.
    """
    at_default, to_default = default_thresholds(None)
    at = trim_at if trim_at is not None else at_default
    to = trim_to if trim_to is not None else to_default
    if min(at, to, top_k, evidence_tokens) <= 0:
        raise ValueError(f"{system}: trim limits, top_k and evidence_tokens must be positive")
    if to >= at:
        raise ValueError(f"{system}: trim_to_tokens ({to}) must be below trim_at_tokens ({at})")
    return at, to

def estimate_tokens(text: str) -> int:
    """A model-free token estimate: about four characters a token (at least one for any text)."""
    return (len(text) + 3) // 4 if text else 0


def render_evidence(heading: str, items: Sequence[EvidenceItem]) -> str:
    """The retrieved items as the PA's memory section, numbered, each with its score.

    Returns:
        ``""`` when there are no items (the PA sees no memory section rather than an empty one).
    """
    if not items:
        return ""
    lines = [f"{heading} (most similar first; score = cosine similarity):"]
    for n, item in enumerate(items, 1):
        score = f"{item.score:.2f}" if item.score is not None else "n/a"
        lines.append(f"[{n}] (score {score}) {item.text}")
    return "\n".join(lines)


def check_embedder(stored_name: str, stored_dim: int, embedder: Embedder, system: str) -> None:
    """Refuse a snapshot built with another embedding model or dimension (issue 15 point 4).

    Checked on every restore (run resume, probe branches, the probe stepper). The model name is
    compared whenever the snapshot names one, even before the embedder knows its dimension (a
    profile embedder learns it on its first call); the dimension whenever both sides know it.
    An embedder that does not know its dimension yet takes the snapshot's, and its first call
    then refuses vectors of any other dimension.

    Args:
        stored_name / stored_dim: the model name and dimension recorded in the snapshot (``""`` /
            0 when the store never embedded anything).
        embedder: the embedder of the store being restored into.
        system: the memory's name, for the message.

    Raises:
        DimensionMismatchError: names both models and both dimensions.
    """
    name_differs = bool(stored_name) and stored_name != embedder.name
    dim_differs = bool(embedder.dim and stored_dim) and stored_dim != embedder.dim
    if name_differs or dim_differs:
        ours = f"{embedder.dim} dimensions" if embedder.dim else "dimension not known before its first call"
        theirs = f"{stored_dim} dimensions" if stored_dim else "no vectors yet"
        raise DimensionMismatchError(
            f"{system}: the snapshot was embedded with {stored_name!r} ({theirs}) but this "
            f"store embeds with {embedder.name!r} ({ours}); start a fresh run or use "
            "the original embedding model"
        )
    if not embedder.dim and stored_dim:
        embedder.dim = stored_dim


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write each file under ``folder`` atomically (temporary file, then rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, folder / name)
