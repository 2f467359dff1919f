"""What a results row pools: users, probes and repeats behind each row (issue 16, point 4).

A results table row (one memory condition and model, paper Tables 1-3) pools every probe outcome
of its runs. Rows that pool different users, different probes or different repeat counts are not
comparable number for number (paper Appendix F.2 averages the same 28 final probes per user over
three repeats for every condition). :func:`row_coverage` says what each row covers and
:func:`mixed_coverage` which rows differ from the others, so the table can say so on the row.

Plays (runs with a person in a seat, ids ``play-...``) are not benchmark runs; :func:`is_play`
lets ``mempa runs`` and ``mempa results`` leave them out unless asked for (``--plays``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from mempa_tui.scoring import ProbeOutcome

__all__ = ["PLAY_PREFIX", "RowCoverage", "coverage_by_row", "is_play", "mixed_coverage", "row_coverage"]

PLAY_PREFIX = "play-"
"""Run ids of plays (``runner/play.py``) start with this."""


def is_play(run_id: str) -> bool:
    """True for a play's run id (``play-<seat>-<step>-<time>``)."""
    return run_id.startswith(PLAY_PREFIX)


class RowCoverage(BaseModel):
    """What one (memory condition, model) row pools."""

    users: list[str]
    """User labels, sorted."""
    probes: int
    """Distinct (user, probe) pairs with at least one outcome."""
    repeats: list[int]
    """Distinct counts of repeats per (user, probe), sorted (``[3]`` when every probe has 3)."""

    def text(self) -> str:
        """``A+B 66x3`` (users, probes x repeats; ``66x2-3`` when probes differ in repeats)."""
        reps = "-".join(str(r) for r in (self.repeats[:1] + self.repeats[-1:] if len(self.repeats) > 1
                                         else self.repeats))
        return f"{'+'.join(self.users)} {self.probes}x{reps or 0}"

    def key(self) -> tuple[tuple[str, ...], int, tuple[int, ...]]:
        """What two rows must share to be compared number for number."""
        return (tuple(self.users), self.probes, tuple(self.repeats))


def row_coverage(outcomes: Sequence[ProbeOutcome]) -> RowCoverage:
    """The coverage of a set of outcomes (one row's)."""
    per_probe: dict[tuple[str, str | None], set[int]] = {}
    for o in outcomes:
        per_probe.setdefault((o.user, o.probe_id or f"{o.context}/{o.attribute}/{o.probe_kind}"), set()).add(o.repeat)
    return RowCoverage(
        users=sorted({o.user for o in outcomes}),
        probes=len(per_probe),
        repeats=sorted({len(r) for r in per_probe.values()}),
    )


def coverage_by_row(outcomes: Sequence[ProbeOutcome]) -> dict[tuple[str, str], RowCoverage]:
    """Coverage per (memory condition, model), the key of a ``by="condition"`` row."""
    groups: dict[tuple[str, str], list[ProbeOutcome]] = {}
    for o in outcomes:
        groups.setdefault((o.memory, o.model), []).append(o)
    return {k: row_coverage(v) for k, v in groups.items()}


def mixed_coverage(coverage: dict[tuple[str, str], RowCoverage]) -> set[tuple[str, str]]:
    """The rows whose coverage differs from the most common one (empty when all rows agree).

    Ties go to the coverage with the most probes, so the smaller rows are the ones marked.
    """
    if len({c.key() for c in coverage.values()}) <= 1:
        return set()
    counts: dict[tuple[tuple[str, ...], int, tuple[int, ...]], int] = {}
    for c in coverage.values():
        counts[c.key()] = counts.get(c.key(), 0) + 1
    common = max(counts, key=lambda k: (counts[k], k[1], len(k[0])))
    return {row for row, c in coverage.items() if c.key() != common}

