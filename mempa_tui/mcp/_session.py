"""One world session served over MCP: a working copy of a fixture tree at a fixed story time.

Source: paper Appendix C.2 ('Working copy', 'Commit or discard', 'Tool behavior and logs'). The
session reads a fixture tree once, lets every tool call run through the shared registry on one
:class:`~mempa_tui.world.WorkingCopy`, and at the end either drops the copy (the default, like a
probe) or writes the changed collection files back into the tree it came from (``--commit``, like
a completed accumulation session).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mempa_tui.tools import ToolRegistry, ToolResult, default_registry
from mempa_tui.world import (
    COLLECTIONS,
    WorkingCopy,
    WorldState,
    collection_issues,
    collection_path,
)

__all__ = ["CommitReport", "WorldSession"]


@dataclass(frozen=True)
class CommitReport:
    """What :meth:`WorldSession.finish` did.

    Attributes:
        calls: tool calls served (accepted and rejected).
        rejected: calls answered with an error.
        changes: record changes the accepted writes made.
        written: world-relative paths written back (empty when discarded or nothing changed).
        committed: whether the changes were written back.
    """

    calls: int
    rejected: int
    changes: int
    written: tuple[str, ...]
    committed: bool

    def summary(self, folder: Path) -> str:
        """One line for stderr, e.g. ``4 calls (1 rejected), 2 changes; discarded``."""
        head = f"{self.calls} call(s) ({self.rejected} rejected), {self.changes} change(s)"
        if not self.committed:
            return f"{head}; discarded (pass --commit to keep them)"
        if not self.written:
            return f"{head}; nothing to write back"
        return f"{head}; wrote {len(self.written)} file(s) back to {folder}"


@dataclass
class WorldSession:
    """A fixture tree opened at one story time, with a registry to call tools on it.

    Args:
        folder: the fixture tree (e.g. ``worlds/users/A/fixtures``).
        at: the session's story time; records entering later stay hidden.
        registry: the tools to serve (default: every built tool).

    Raises:
        WorldPathError: the folder is missing or holds a link or an escaping path.
        FixtureError: a collection file of the tree is invalid (the first problem found), so a
            broken world fails at start rather than on some later call.
    """

    folder: Path
    at: datetime
    registry: ToolRegistry = field(default_factory=default_registry)
    _start: WorldState = field(init=False, repr=False)
    wc: WorkingCopy = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._start = WorldState.from_directory(self.folder)
        for collection in COLLECTIONS:
            data = self._start.get(collection_path(collection))
            issues = collection_issues(collection, data) if data is not None else []
            if issues:
                raise issues[0]
        self.wc = WorkingCopy(self._start, self.at)

    def call(self, name: str, arguments: object) -> ToolResult:
        """Run one call (name with or without ``mcp_state_``); a bad call returns an error result.

        Raises:
            FixtureError: a collection file of the tree is invalid (nothing is written).
        """
        return self.registry.call(self.wc, name, arguments)

    def write_log(self, path: Path) -> None:
        """Write the session's call log and change log as one JSON object ``{calls, changes}``.

        Every accepted or rejected call, and every record change with the call that made it
        (paper Appendix C.2, 'Tool behavior and logs').

        Raises:
            OSError: the file cannot be written.
        """
        log = {
            "at": self.at.isoformat(timespec="minutes"),
            "calls": [c.model_dump(mode="json") for c in self.wc.call_log],
            "changes": [c.model_dump(mode="json") for c in self.wc.change_log],
        }
        path.write_text(json.dumps(log, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    def finish(self, commit: bool) -> CommitReport:
        """End the session: write changed collection files back into :attr:`folder`, or drop them.

        Args:
            commit: True to write back; False to discard.

        Returns:
            What was served and written.
        """
        rejected = sum(1 for c in self.wc.call_log if not c.ok)
        written: list[str] = []
        if commit:
            end = self.wc.to_state()
            for path, data in end.files.items():
                if self._start.get(path) != data:
                    written.append(path)
            if written:
                WorldState({p: end[p] for p in written}).write_to(self.folder)
        return CommitReport(
            calls=len(self.wc.call_log),
            rejected=rejected,
            changes=len(self.wc.change_log),
            written=tuple(written),
            committed=commit,
        )
