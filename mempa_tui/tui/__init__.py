"""The terminal app (SPEC section 4.11), built on Textual; the only package that imports it.

Public face::

    from mempa_tui.tui import run_app
    run_app(worlds="worlds", models="models", saves="saves", local_memory="local_memory")

``MempaApp(AppSettings(...))`` is the app itself (tests drive it with ``app.run_test()``).
"""

from __future__ import annotations

from pathlib import Path

from mempa_tui.tui.app import MempaApp, RunUpdate
from mempa_tui.tui.book import RunBook, RunEntry, RunRequest
from mempa_tui.tui.engine import RunnerOptions, RunService
from mempa_tui.tui.settings import AppSettings

__all__ = [
    "AppSettings",
    "MempaApp",
    "RunBook",
    "RunEntry",
    "RunRequest",
    "RunService",
    "RunUpdate",
    "RunnerOptions",
    "run_app",
]


def run_app(
    *,
    worlds: str | Path = "worlds",
    models: str | Path = "models",
    saves: str | Path = "saves",
    local_memory: str | Path = "local_memory",
) -> int:
    """Open the app in the terminal and block until it quits.

    Args:
        worlds: folder with ``users/<label>/``.
        models: folder with the model profiles.
        saves: folder of the run database and reports.
        local_memory: parent of the per-run memory folders.

    Returns:
        The exit code (0; the app reports run errors on screen, never by exiting).
    """
    settings = AppSettings(
        worlds_dir=Path(worlds), models_dir=Path(models), saves_dir=Path(saves),
        local_memory_dir=Path(local_memory),
    )
    MempaApp(settings).run()
    return 0
