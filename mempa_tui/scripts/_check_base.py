"""Shared state and helpers of the ``worlds check`` rules: violations, fixture index, replays.

See :mod:`mempa_tui.scripts.check` for the list of rules.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mempa_tui.scripts._yamldoc import Loc, WorldFileError, YamlDoc
from mempa_tui.scripts.loader import UserScan
from mempa_tui.tools import ToolRegistry, ToolResult
from mempa_tui.world import (
    COLLECTIONS,
    FixtureError,
    Record,
    WorkingCopy,
    WorldError,
    WorldState,
    collection_issues,
)

__all__ = ["CLOSE_ID_CUTOFF", "CheckerBase", "Violation", "closest_hint", "closest_ids"]

CLOSE_ID_CUTOFF = 0.75
"""Least :class:`difflib.SequenceMatcher` ratio for an id to be offered as the one meant: one
character off in a four-character id (``T-s3`` for ``T-s2``) still is; ids of one kind look alike
(``em_0001`` ... ``em_0077``), and a looser cutoff (difflib's 0.6) offers ids that share only the
common prefix."""


def closest_ids(value: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The (at most ``n``) ids of ``known`` nearest to the misspelt ``value``, best first; empty
    when none is close (then nothing is suggested).

    ``known`` must be ids of the kind the reference takes (record ids of the named collection for
    a record, step ids for a timeline step, fact ids for a fact...), never ids of other kinds.
    Candidates come from :func:`difflib.get_close_matches` at :data:`CLOSE_ID_CUTOFF`; only those
    with the best ratio are offered (ids of one kind differ in a digit or two, and the second-best
    ones are noise), ordered by how near their length is to ``value``'s, then by id (difflib alone
    breaks ties towards the alphabetically last id). Case is ignored (``T-S2`` finds ``T-s2``).
    """
    folded: dict[str, list[str]] = {}
    for x in sorted(set(known)):
        folded.setdefault(x.casefold(), []).append(x)
    want = value.casefold()
    close = difflib.get_close_matches(want, list(folded), n=len(folded) or 1, cutoff=CLOSE_ID_CUTOFF)

    def rank(x: str) -> tuple[float, int, str]:
        return (-difflib.SequenceMatcher(None, want, x).ratio(), abs(len(x) - len(want)), x)

    ranked = sorted(close, key=rank)
    if not ranked:
        return []
    top = rank(ranked[0])[0]  # only the nearest tier: em_001 -> em_0001, not em_0002 and em_0003 too
    return [orig for x in ranked if rank(x)[0] == top for orig in folded[x]][:n]


def closest_hint(value: str, known: Iterable[str], *, prefix: str = "") -> str:
    """`` (closest: a, b)`` from :func:`closest_ids` (each id behind ``prefix``), ``""`` when none
    is close."""
    best = closest_ids(value, known)
    return f" (closest: {', '.join(prefix + b for b in best)})" if best else ""


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule, located in a file.

    Attributes:
        path: the file (as reached from the ``worlds`` folder given).
        line: 1-based line of the offending key or value (1 for a whole-file problem).
        message: what is wrong.
    """

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class CheckerBase:
    """One user's scan, the tools, the fixture index, and the violations found so far.

    Args:
        scan: the user's files as read by :func:`~mempa_tui.scripts.loader.scan_user`.
        registry: the tools scripted calls must name.
    """

    def __init__(self, scan: UserScan, registry: ToolRegistry) -> None:
        self.scan = scan
        self.registry = registry
        self.violations: list[Violation] = [Violation(e.path, e.line, e.message) for e in scan.errors]
        self.state: WorldState | None = None
        self.index: dict[str, dict[str, Record]] = {}
        self.bad_collections: set[str] = set()

    # ---- helpers ------------------------------------------------------------------------

    def add(self, doc: YamlDoc | None, loc: Loc, message: str, fallback: Path | None = None) -> None:
        """Record a violation at ``loc`` of ``doc`` (or line 1 of ``fallback`` when there is no doc)."""
        if doc is not None:
            self.violations.append(Violation(str(doc.path), doc.line(loc), message))
        else:
            self.violations.append(Violation(str(fallback or self.scan.root), 1, message))

    def doc(self, key: str) -> YamlDoc | None:
        """The parsed file of a script id (or ``persona``/``preferences``/``timeline``), if valid."""
        return self.scan.sources.get(key)

    # ---- fixture tree -------------------------------------------------------------------

    def check_fixtures(self) -> None:
        """Read the fixture tree; report bad files and records; build the record index."""
        fdir = self.scan.fixture_dir
        if not fdir.is_dir():
            return  # reported by the scan
        try:
            self.state = WorldState.from_directory(fdir)
        except WorldError as exc:
            self.violations.append(Violation(str(fdir), 1, str(exc)))
            return
        known = {f"{c}.yaml": c for c in COLLECTIONS}
        for path, data in self.state.items():
            collection = known.get(path)
            if collection is None:
                self.violations.append(
                    Violation(
                        str(fdir / path),
                        1,
                        "not a known collection file; expected one of " + ", ".join(sorted(known)),
                    )
                )
                continue
            issues = collection_issues(collection, data)
            if issues:
                self.bad_collections.add(collection)
            for issue in issues:
                self.violations.append(self._fixture_violation(fdir / path, data, issue))
        wc = WorkingCopy(self.state, datetime.max)
        for collection in COLLECTIONS:
            if collection not in self.bad_collections:
                self.index[collection] = {r.id: r for r in wc._all_records(collection)}

    @staticmethod
    def _fixture_violation(path: Path, data: bytes, issue: FixtureError) -> Violation:
        line = issue.line or 1
        if issue.index is not None:
            try:
                doc: YamlDoc | None = YamlDoc.parse(path, data.decode("utf-8"))
            except (WorldFileError, UnicodeDecodeError):
                doc = None
            if doc is not None:
                line = doc.line((issue.index, *(issue.field.split(".") if issue.field else ())))
        message = str(issue).removeprefix(issue.path).lstrip(": ")
        return Violation(str(path), line, message)

    def check_ref(self, doc: YamlDoc | None, loc: Loc, ref: str, when: datetime, what: str) -> None:
        """A bound record must exist in the fixture tree and be visible at ``when``."""
        collection, _, rid = ref.partition(":")
        if collection not in COLLECTIONS:
            self.add(
                doc,
                loc,
                f"{what} {ref!r}: unknown collection {collection!r}; known: "
                + ", ".join(sorted(COLLECTIONS)),
            )
            return
        if collection in self.bad_collections or self.state is None:
            return  # the fixture problem is reported already
        record = self.index.get(collection, {}).get(rid)
        if record is None:
            # the record ids of the named collection only, compared without the shared prefix
            hint = closest_hint(rid, self.index.get(collection, {}), prefix=f"{collection}:")
            self.add(doc, loc, f"{what} {ref!r}: no such record in the fixture tree{hint}")
        elif record.entered_at > when:
            self.add(
                doc,
                loc,
                f"{what} {ref!r} enters the world at {record.entered_at:%Y-%m-%dT%H:%M}, "
                f"after the beat's time {when:%Y-%m-%dT%H:%M}",
            )

    def replay(
        self,
        doc: YamlDoc | None,
        loc: Loc,
        wc: WorkingCopy,
        tool: str,
        args: dict[str, object],
        expect_error: bool = False,
    ) -> ToolResult | None:
        """Run one scripted call through the real tools; report an unexpected outcome.

        Returns:
            The tool's result, or None when the tool is unknown or the fixture tree is broken.
        """
        if self.registry.get(tool) is None:
            self.add(doc, (*loc, "tool"), f"tool: {self.registry.unknown_tool_message(tool)}")
            return None
        try:
            result = self.registry.call(wc, tool, args)
        except FixtureError:
            return None  # reported with the fixture tree
        if not result.ok and not expect_error:
            self.add(doc, loc, f"tool step fails: {result.error}")
        elif result.ok and expect_error:
            self.add(doc, loc, f"tool step {tool!r} was expected to fail (expect_error) but succeeded")
        return result
