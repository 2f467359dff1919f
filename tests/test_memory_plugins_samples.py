"""Broken and odd memory plugins for tests/test_memory_plugins.py (no tests here).

Each class gets one thing wrong, so the error it gets can be checked to name the class and the
method. Loaded by import path (``test_memory_plugins_samples:Name``; pytest puts tests/ on the path).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mempa_tui.memory import Evidence, MemoryInspection, SessionInfo, TurnRecord


class _Works:
    """A correct minimal plugin the broken ones start from."""

    def __init__(self, folder: Path, **options: Any) -> None:
        self.turns: list[str] = []
        self.options = options

    async def write(self, record: TurnRecord) -> None:
        self.turns.append(record.user_message)

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        return Evidence(system_text="\n".join(self.turns))

    def snapshot(self) -> bytes:
        return json.dumps(self.turns).encode()

    def restore(self, data: bytes) -> None:
        self.turns = json.loads(data)

    def inspect(self) -> MemoryInspection:
        return MemoryInspection(system="works", stats={"turns": len(self.turns)})


Works = _Works


class NoRetrieve:
    """Not a memory at all: only a write."""

    def __init__(self, folder: Path) -> None:
        pass

    async def write(self, record: TurnRecord) -> None:
        pass


class SyncWrite(_Works):
    def write(self, record: TurnRecord) -> None:  # type: ignore[override]  # must be async
        pass


class RaisesOnLoad(_Works):
    def __init__(self, folder: Path) -> None:
        raise RuntimeError("cannot open the vector store")


class RaisingRetrieve(_Works):
    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        raise RuntimeError("index is corrupt")


class StringEvidence(_Works):
    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        return "remember: the user likes short replies"  # type: ignore[return-value]


class BadItems(_Works):
    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        return {"system_text": "x", "items": [{"score": 0.5}]}  # type: ignore[return-value]  # no text


class TextSnapshot(_Works):
    def snapshot(self) -> bytes:
        return "not bytes"  # type: ignore[return-value]


NOT_A_CLASS = 42
