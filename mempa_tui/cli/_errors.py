"""The CLI's errors: the shared ones of :mod:`mempa_tui.runner.errors`, re-exported for the commands."""

from __future__ import annotations

from mempa_tui.runner.errors import UserError, unwritable, user_error_message

__all__ = ["UserError", "unwritable", "user_error_message"]
