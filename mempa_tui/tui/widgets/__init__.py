"""Widgets of the terminal app (styled from the screens' ``.tcss`` files)."""

from __future__ import annotations

from mempa_tui.tui.widgets.memory_panel import MemoryPanel
from mempa_tui.tui.widgets.run_card import RunCard
from mempa_tui.tui.widgets.transcript import TranscriptLog
from mempa_tui.tui.widgets.transcript_view import CallFold, TranscriptView

__all__ = ["CallFold", "MemoryPanel", "RunCard", "TranscriptLog", "TranscriptView"]
