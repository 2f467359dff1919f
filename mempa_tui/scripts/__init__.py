"""Benchmark content: schemas of ``worlds/`` files, the loader and ``worlds check``.

``schema`` holds the pydantic models; ``loader`` reads one user (:func:`load_user`) with
``path:line`` errors; ``check`` holds :func:`check_worlds`. The loader and checker are imported on
first use (they depend on :mod:`mempa_tui.world`, which itself uses the schema).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "UserBundle",
    "Violation",
    "WorldFileError",
    "check_worlds",
    "list_users",
    "load_user",
]

_LAZY = {
    "UserBundle": "loader",
    "WorldFileError": "loader",
    "list_users": "loader",
    "load_user": "loader",
    "Violation": "check",
    "check_worlds": "check",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
