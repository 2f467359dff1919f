"""What the IX wrapper needs from the tool registry, as structural protocols.

The wrapper runs approved held items "through the registry on the working copy". It needs only
``get(name)`` (the tool's write flag and tag), ``call(wc, name, arguments)`` and, for the PA loop,
``specs()``; these protocols
let :class:`mempa_tui.tools.ToolRegistry` plug in without the wrapper importing it.
"""

from __future__ import annotations

from typing import Any, Protocol

from mempa_tui.llm.types import ToolSpec
from mempa_tui.world import WorkingCopy

__all__ = ["ToolBackend", "ToolDefLike", "ToolResultLike"]


class ToolDefLike(Protocol):
    """A registered tool: whether it writes, and its write tag (draft|routine|key|outward)."""

    @property
    def write(self) -> bool: ...

    @property
    def tag(self) -> str | None: ...


class ToolResultLike(Protocol):
    """A tool call's result: success flag, content text, error text."""

    @property
    def ok(self) -> bool: ...

    @property
    def content(self) -> str: ...

    @property
    def error(self) -> str | None: ...


class ToolBackend(Protocol):
    """The registry as the wrapper and the PA loop use it."""

    def get(self, name: str) -> ToolDefLike | None:
        """The tool called ``name`` (with or without ``mcp_state_``), or None if unknown."""
        ...

    def specs(self) -> list[ToolSpec]:
        """Specs of every world tool, in a stable order."""
        ...

    def call(
        self, wc: WorkingCopy, name: str, arguments: dict[str, Any]
    ) -> ToolResultLike:
        """Run the tool on ``wc``; never raises for bad input."""
        ...
