"""Widgets of the terminal app (styled from the screens' ``.tcss`` files)."""

from __future__ import annotations

from mempa_tui.tui.widgets.memory_panel import MemoryPanel
from mempa_tui.tui.widgets.run_card import RunCard
from mempa_tui.tui.widgets.transcript import TranscriptLog

__all__ = ["MemoryPanel", "RunCard", "TranscriptLog"]
