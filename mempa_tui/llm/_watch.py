"""Watching a model call while it is in flight (SPEC section 4.10; issue: a dead server hung runs).

Two things are watched, every :data:`WATCH_INTERVAL_S` seconds of a call:

* a server process mempa started itself (the embedded llama.cpp server) registers a *check* for
  its ``/v1`` base URL here (:func:`register_server`); when the check reports the process gone,
  the call fails at once with :class:`~mempa_tui.llm.errors.ModelServerExitedError` instead of
  waiting out the spec's ``timeout_s`` (3600 s on the embedded profile);
* every call, on any server, reports how long it has been waiting to the listeners added with
  the client's ``wait_listeners`` (:class:`~mempa_tui.llm.client.LLMClient`; the runner turns that into a ``model_waiting`` progress event), so a
  hung call is visible.

This is the model layer: it knows nothing of runs, the command line or the terminal app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "WATCH_INTERVAL_S",
    "CallWait",
    "ServerCheck",
    "check_server",
    "is_watched",
    "register_server",
    "unregister_server",
]

WATCH_INTERVAL_S = 5.0
"""Seconds between two looks at a call in flight (tests lower it through the client's
``watch_interval_s``)."""


@dataclass(frozen=True)
class CallWait:
    """A model call that has been waiting for its reply.

    Attributes:
        role: the role of the call (``pa``, ``simulator``...).
        model: the litellm model string.
        call: the client's running number of the call (1 = its first call).
        waited_s: seconds since the request was sent (after any wait for a free slot).
        api_base: the server's URL, or None for a provider's own endpoint.
    """

    role: str
    model: str
    call: int
    waited_s: float
    api_base: str | None

    @property
    def line(self) -> str:
        """One line: ``waiting for the model: 95 s (pa, call 3)``."""
        return f"waiting for the model: {self.waited_s:.0f} s ({self.role}, call {self.call})"


ServerCheck = Callable[[], "tuple[str, int, str] | None"]
"""Returns None while the server runs, else ``(server name, exit code, log path)``."""

_servers: dict[str, ServerCheck] = {}


def _key(api_base: str) -> str:
    return api_base.rstrip("/")


def register_server(api_base: str, check: ServerCheck) -> None:
    """Watch the process behind ``api_base`` during calls to it (until :func:`unregister_server`)."""
    _servers[_key(api_base)] = check


def unregister_server(api_base: str) -> None:
    """Stop watching ``api_base`` (its process was stopped on purpose)."""
    _servers.pop(_key(api_base), None)


def check_server(api_base: str | None) -> tuple[str, int, str] | None:
    """``(server name, exit code, log path)`` when the watched process behind ``api_base`` has
    exited; None when it runs or nothing watches it."""
    check = _servers.get(_key(api_base)) if api_base else None
    return check() if check is not None else None


def is_watched(api_base: str | None) -> bool:
    """Whether a process mempa started is registered behind ``api_base``."""
    return bool(api_base) and _key(api_base or "") in _servers
