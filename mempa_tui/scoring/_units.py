"""Scoring units: the probes, pairs and cells each metric counts, as matrices.

Every metric of Section 3.5 / Appendix F.2 is a pooled ratio: per repeat (and model), the passing
count (or score sum) over the eligible count, summed over units. A :class:`UnitTable` holds, for
each unit (a final probe's cell for PSA, BRS and PRS; a user-attribute pair for CS and
carry-over; a changed cell for PET) and each slice (one model's one repeat), the numerator and the
denominator. Point estimates and the cluster bootstrap (Appendix F.3) both work on this table, so
they always agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mempa_tui.scoring._outcome import ProbeOutcome, ProbeStatus
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import Context

__all__ = [
    "DuplicateOutcomeError",
    "MatrixConflictError",
    "Slice",
    "UnitTable",
    "carry_over_units",
    "cs_pairs",
    "cs_units",
    "index_outcomes",
    "pet_units",
    "probe_units",
]

Slice = tuple[str, int]
"""``(model, repeat)``: the results of one backbone in one repeat."""

UnitKey = tuple[str, ...]
_Index = dict[tuple[str, Context, str, ProbeKind, str, int], ProbeOutcome]


class DuplicateOutcomeError(ValueError):
    """Two outcomes claim the same probe run (memory, model, user, context, attribute, kind,
    repeat); the message names it."""


@dataclass
class UnitTable:
    """Numerators and denominators per unit and slice.

    Attributes:
        keys: unit keys, e.g. ``("A", "work", "verbosity")``.
        strata: per unit, the stratum it is resampled within (the user for probe units, one
            shared stratum for pairs and cells).
        slices: the ``(model, repeat)`` columns.
        num: passing count or score sum, shape ``(units, slices)``.
        den: eligible count, shape ``(units, slices)``.
        excluded: per slice, eligible-looking items kept apart because an endpoint is incomplete
            or missing.
    """

    keys: list[UnitKey]
    strata: list[str]
    slices: list[Slice]
    num: NDArray[np.float64]
    den: NDArray[np.float64]
    excluded: dict[Slice, int] = field(default_factory=dict)

    @property
    def repeats(self) -> list[int]:
        """The repeat numbers present, ascending."""
        return sorted({r for _, r in self.slices})


def index_outcomes(outcomes: Iterable[ProbeOutcome]) -> _Index:
    """Index outcomes of ONE memory condition by ``(user, context, attribute, kind, model, repeat)``.

    Raises:
        DuplicateOutcomeError: two outcomes for the same probe run.
    """
    index: _Index = {}
    for o in outcomes:
        key = (o.user, o.context, o.attribute, o.probe_kind, o.model, o.repeat)
        if key in index:
            raise DuplicateOutcomeError(
                f"two outcomes for user {o.user}, {o.context.value} {o.attribute}, "
                f"{o.probe_kind.value} probe, memory {o.memory}, model {o.model}, repeat {o.repeat}"
            )
        index[key] = o
    return index


def _slices(outcomes: Sequence[ProbeOutcome]) -> list[Slice]:
    return sorted({(o.model, o.repeat) for o in outcomes})


def _table(
    rows: dict[UnitKey, dict[Slice, tuple[float, float]]],
    strata: dict[UnitKey, str],
    slices: list[Slice],
    excluded: dict[Slice, int],
) -> UnitTable:
    keys = sorted(rows)
    col = {s: j for j, s in enumerate(slices)}
    num = np.zeros((len(keys), len(slices)))
    den = np.zeros((len(keys), len(slices)))
    for i, key in enumerate(keys):
        for s, (n, d) in rows[key].items():
            num[i, col[s]] = n
            den[i, col[s]] = d
    return UnitTable(keys, [strata[k] for k in keys], slices, num, den, excluded)


def probe_units(
    outcomes: Sequence[ProbeOutcome], value: Callable[[ProbeOutcome], float | None]
) -> UnitTable:
    """Units = final probes' cells, stratified by user (PSA, BRS, PRS).

    Args:
        outcomes: outcomes of one memory condition (several models allowed).
        value: the probe's score (``1.0``/``0.0`` for PSA, the 1-5 score for BRS/PRS), or None
            when it is not counted (incomplete probe, missing rating).

    Returns:
        The table; ``excluded`` counts final probes with no value.
    """
    index_outcomes(outcomes)
    rows: dict[UnitKey, dict[Slice, tuple[float, float]]] = defaultdict(dict)
    strata: dict[UnitKey, str] = {}
    excluded: dict[Slice, int] = defaultdict(int)
    for o in outcomes:
        if o.probe_kind is not ProbeKind.FINAL:
            continue
        key = (o.user, o.context.value, o.attribute)
        strata[key] = o.user
        v = value(o)
        s = (o.model, o.repeat)
        if v is None:
            excluded[s] += 1
            rows[key][s] = (0.0, 0.0)
        else:
            rows[key][s] = (v, 1.0)
    return _table(rows, strata, _slices(outcomes), dict(excluded))


class MatrixConflictError(ValueError):
    """Outcomes of one user-attribute pair disagree on whether the preference matrix sets its
    two contexts differently; the message names the pair."""


def cs_pairs(outcomes: Iterable[ProbeOutcome]) -> set[tuple[str, str]]:
    """CS's set D (Section 3.5): user-attribute pairs whose settings differ between work and
    personal in the preference matrix (``ProbeOutcome.differs_in_matrix``), not in the final
    targets - a change event may make the final targets differ, or agree, where the matrix does
    not. Carry-over counts over the same pairs (Appendix F.3).

    Raises:
        MatrixConflictError: two outcomes of one pair disagree on it.
    """
    said: dict[tuple[str, str], bool] = {}
    for o in outcomes:
        if o.differs_in_matrix is None:
            continue
        key = (o.user, o.attribute)
        if said.setdefault(key, o.differs_in_matrix) != o.differs_in_matrix:
            raise MatrixConflictError(
                f"user {o.user}, {o.attribute}: outcomes disagree on whether the preference matrix "
                "sets work and personal differently (mixed worlds?)"
            )
    return {pair for pair, differs in said.items() if differs}


def _pair_units(
    outcomes: Sequence[ProbeOutcome],
    score: Callable[[ProbeOutcome, ProbeOutcome], float],
) -> UnitTable:
    index = index_outcomes(outcomes)
    slices = _slices(outcomes)
    rows: dict[UnitKey, dict[Slice, tuple[float, float]]] = defaultdict(dict)
    strata: dict[UnitKey, str] = {}
    excluded: dict[Slice, int] = defaultdict(int)
    for user, attr in sorted(cs_pairs(outcomes)):
        key = (user, attr)
        strata[key] = "pairs"
        rows[key] = {}
        for model, rep in slices:
            work = index.get((user, Context.WORK, attr, ProbeKind.FINAL, model, rep))
            pers = index.get((user, Context.PERSONAL, attr, ProbeKind.FINAL, model, rep))
            if work is None and pers is None:
                continue
            if work is None or pers is None or not (work.scorable and pers.scorable):
                excluded[(model, rep)] += 1
                continue
            rows[key][(model, rep)] = (score(work, pers), 1.0)
    return _table(rows, strata, slices, dict(excluded))


def cs_units(outcomes: Sequence[ProbeOutcome]) -> UnitTable:
    """Units = CS pairs, the set D of :func:`cs_pairs` (Section 3.5): a pair passes when both
    final selections are correct (each against its own final target).

    A floored endpoint fails the pair; an incomplete or missing endpoint keeps the pair out of
    that slice and counts it in ``excluded`` (Appendix F.2).
    """
    return _pair_units(outcomes, lambda w, p: float(w.correct and p.correct))


def carry_over_units(
    outcomes: Sequence[ProbeOutcome], default: Callable[[str, str], str | None]
) -> UnitTable:
    """Units = CS pairs; a pair instance is a carry-over (Appendix F.3) when both completed
    selections are the same setting, that setting is the target of one of the two contexts, and
    it differs from the backbone's default under No Memory.

    Args:
        outcomes: outcomes of one memory condition.
        default: ``(model, attribute) -> default setting`` (None when unknown: never a carry-over).
    """

    def carried(w: ProbeOutcome, p: ProbeOutcome) -> float:
        if w.status is not ProbeStatus.COMPLETED or p.status is not ProbeStatus.COMPLETED:
            return 0.0
        chosen = w.valid_selection
        if chosen is None or chosen != p.valid_selection or chosen not in (w.target, p.target):
            return 0.0
        base = default(w.model, w.attribute)
        return float(base is not None and chosen != base)

    return _pair_units(outcomes, carried)


def pet_units(outcomes: Sequence[ProbeOutcome]) -> UnitTable:
    """Units = changed cells, those with a pre-event probe (Section 3.5).

    A cell passes in a slice when its pre-event and final probes of that same repeat are both
    correct; a floored endpoint fails it; an incomplete or missing endpoint keeps it out.
    """
    index = index_outcomes(outcomes)
    slices = _slices(outcomes)
    cells = sorted(
        {(u, c, a) for (u, c, a, k, _, _) in index if k is ProbeKind.PRE_EVENT},
        key=lambda t: (t[0], t[1].value, t[2]),
    )
    rows: dict[UnitKey, dict[Slice, tuple[float, float]]] = defaultdict(dict)
    strata: dict[UnitKey, str] = {}
    excluded: dict[Slice, int] = defaultdict(int)
    for user, ctx, attr in cells:
        key = (user, ctx.value, attr)
        strata[key] = "cells"
        rows[key] = {}
        for model, rep in slices:
            pre = index.get((user, ctx, attr, ProbeKind.PRE_EVENT, model, rep))
            fin = index.get((user, ctx, attr, ProbeKind.FINAL, model, rep))
            if pre is None and fin is None:
                continue
            if pre is None or fin is None or not (pre.scorable and fin.scorable):
                excluded[(model, rep)] += 1
                continue
            rows[key][(model, rep)] = (float(pre.correct and fin.correct), 1.0)
    return _table(rows, strata, slices, dict(excluded))
