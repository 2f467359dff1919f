"""Builder of our own whole-turn retrieval condition ``ours-rag`` for :func:`make_memory`.

``ours-rag`` is not the paper's Simple RAG (that is ``rag``, Mem0 with ``infer=False``): it is
our FAISS store of whole turns, kept because it can embed with the profile's embedder.

Options (``RunConfig.memory_options``), all optional:

- ``embedder``: ``auto`` (default), ``local`` (packaged all-MiniLM-L6-v2) or ``profile`` (the
  profile's ``embedder`` role through litellm); see :func:`~mempa_tui.memory._embed.make_embedder`.
- ``trim_at_tokens`` / ``trim_to_tokens``: raw-conversation limit; default File memory's
  thresholds for the PA's window (paper: 20k -> 10k).
- ``top_k`` / ``evidence_tokens``: the evidence rule (paper: 10 results within 4,000 tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._embed import EmbedderError, make_embedder
from mempa_tui.memory._file import default_thresholds
from mempa_tui.memory._rag import RagMemory
from mempa_tui.memory.base import MemorySystem

__all__ = ["RETRIEVAL_OPTIONS", "build_ours_rag"]

RETRIEVAL_OPTIONS = ("embedder", "evidence_tokens", "top_k", "trim_at_tokens", "trim_to_tokens")
"""Option names ``ours-rag`` accepts."""


def _settings(name: str, client: object | None, context_window: int | None, options: dict[str, Any]) -> dict[str, Any]:
    from mempa_tui.memory._factory import MemoryConfigError

    unknown = set(options) - set(RETRIEVAL_OPTIONS)
    if unknown:
        raise MemoryConfigError(
            f"memory condition {name!r}: unknown option(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(RETRIEVAL_OPTIONS)}"
        )
    for key in RETRIEVAL_OPTIONS[1:]:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemoryConfigError(f"memory condition {name!r}: {key} must be an integer, got {value!r}")
    try:
        at, to = default_thresholds(context_window)
        embedder = make_embedder(client, str(options.get("embedder", "auto")))
    except (ValueError, EmbedderError) as exc:
        raise MemoryConfigError(f"memory condition {name!r}: {exc}") from None
    counter = getattr(client, "count_tokens", None)
    return {
        "embedder": embedder,
        "token_counter": counter if callable(counter) else None,
        "trim_at_tokens": options.get("trim_at_tokens", at),
        "trim_to_tokens": options.get("trim_to_tokens", to),
        "top_k": options.get("top_k", 10),
        "evidence_tokens": options.get("evidence_tokens", 4_000),
    }


def build_ours_rag(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    """Whole-turn RAG, ours (``--memory ours-rag``).

    Raises:
        MemoryConfigError: a bad option, or the embedder cannot be loaded (names what to install).
    """
    from mempa_tui.memory._factory import MemoryConfigError

    settings = _settings("ours-rag", client, context_window, options)
    try:
        return RagMemory(folder=folder, **settings)
    except ValueError as exc:
        raise MemoryConfigError(str(exc)) from None
