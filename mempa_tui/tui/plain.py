"""Plain-text notifications for the app's own messages (issue 6.4).

Our notifications carry file paths, commands such as ``pip install -e ".[embedded]"`` and model or
engine text, any of which may hold square brackets; they are shown with markup off. Textual's own
notifications (for example ctrl+c's "Press [b]ctrl+q[/b] to quit") keep their markup, so the app
itself does not force it off.
"""

from __future__ import annotations

from typing import cast

from textual.notifications import SeverityLevel
from textual.widget import Widget

__all__ = ["PlainNotify"]


class PlainNotify:
    """Mixin for our screens and widgets (list it before the Textual base class): ``notify``
    shows its message as plain text unless the caller asks for markup."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Show a notification, by default as plain text.

        Args:
            message: the text (shown verbatim unless ``markup``).
            title: the notification's title.
            severity: ``information``, ``warning`` or ``error``.
            timeout: seconds it stays up (None: Textual's default).
            markup: read ``message`` as Textual markup (only for text that we wrote with markup).
        """
        cast("Widget", self).app.notify(message, title=title, severity=severity, timeout=timeout, markup=markup)
