"""The app's screens, one module each (with its ``.tcss`` beside it)."""

from __future__ import annotations

from mempa_tui.tui.screens.dashboard import DashboardScreen
from mempa_tui.tui.screens.help import HelpScreen, KeyRow, key_rows
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.screens.session import SessionScreen

__all__ = ["DashboardScreen", "HelpScreen", "KeyRow", "LauncherScreen", "SessionScreen", "key_rows"]
