"""Where the terminal app finds its data (SPEC section 2: ``worlds/``, ``models/``, ``saves/``,
``local_memory/``). Imports nothing from Textual."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

__all__ = ["AppSettings"]


class AppSettings(BaseModel):
    """The folders the app reads and writes, as ``mempa tui`` received them."""

    model_config = ConfigDict(frozen=True)

    worlds_dir: Path = Path("worlds")
    """Benchmark content: ``users/<label>/`` folders (the launcher lists them)."""
    models_dir: Path = Path("models")
    """Model profiles, ``<name>.yaml`` (the launcher lists them)."""
    saves_dir: Path = Path("saves")
    """The run database (``mempa.sqlite``) and the per-run report folders."""
    local_memory_dir: Path = Path("local_memory")
    """Memory stores, one folder per run."""
    probe_concurrency: int = 2
    """Probe repeats a run plays at once (as ``mempa run --probe-concurrency``)."""
