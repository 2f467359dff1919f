"""Point estimates, repeat SD (Eq. 3) and 95% cluster-bootstrap intervals (Appendix F.3).

One statistic serves both: per slice (model, repeat) the pooled ratio ``sum(num) / sum(den)``;
per repeat the mean over the models present; overall the mean over repeats. With one model this
is the paper's 'pool within a repeat, then average the repeats'; with several it is the average
over backbones as in Table 13. The reported SD is the sample SD (n-1) of the repeat values.

The bootstrap redraws units with replacement (within each stratum: per user for final probes; all
pairs or cells together for CS and PET). A drawn unit brings its numbers for every model and
repeat, so a unit's repeats always enter a resample together. The interval spans the 2.5th to
97.5th percentiles of the resampled statistic.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from mempa_tui.scoring._units import UnitTable

__all__ = [
    "DEFAULT_RESAMPLES",
    "INTERVAL_LEGEND",
    "Interval",
    "MetricSummary",
    "RepeatValue",
    "bootstrap_difference",
    "bootstrap_distribution",
    "bootstrap_interval",
    "interval_fields",
    "interval_note",
    "summarise",
]

DEFAULT_RESAMPLES = 5_000
"""Resamples per interval (Appendix F.3)."""


class RepeatValue(BaseModel):
    """A metric's value in one repeat (averaged over the models present).

    Attributes:
        repeat: repeat number.
        value: the value (percent or 1-5), None when the repeat has no eligible item.
    """

    repeat: int
    value: float | None


class Interval(BaseModel):
    """A percentile bootstrap interval.

    Attributes:
        low / high: the 2.5th and 97.5th percentiles (same unit as the metric), None when no
            resample had an eligible item.
        resamples: number of resamples drawn.
        seed: the generator seed.
        units: how many units (probes, pairs or cells with an eligible item) the resamples drew
            from; None when not counted.
        repeats: how many repeats those units hold; None when not counted.
    """

    low: float | None
    high: float | None
    resamples: int
    seed: int
    units: int | None = None
    repeats: int | None = None

    @property
    def informative(self) -> bool:
        """The interval says something about uncertainty: it has bounds, was drawn from at least
        two units, and the resamples did not all give one value (a zero-width interval from a
        handful of identical units reads as certainty it does not hold)."""
        if self.low is None or self.high is None:
            return False
        if self.units is not None and self.units < 2:
            return False
        return self.high - self.low > 1e-9


INTERVAL_LEGEND = (
    "n=U×R: U units (final probes for PSA, BRS and PRS; pairs for CS and carry-over; changed cells "
    "for PET) of R repeats each; an interval is shown only from two or more units whose values "
    "differ, else 'no interval' (one unit, or every unit gave the same value: too few samples to "
    "show any spread)"
)
"""Explains :func:`interval_note`'s counts; printed under every table that uses it."""


def interval_fields(interval: Interval | None, digits: int = 4) -> tuple[str, str, str]:
    """``(ci_low, ci_high, ci_note)`` as the CSV files write an interval, saying what the tables
    say (:func:`interval_note`): bounds only where the tables print them, and the note ``n=28×3``
    or ``n=1×1: no interval`` (one unit, or units that all gave one value: the empty bounds are
    no interval, never a zero-width one); ``no interval`` for one without bounds or counts;
    ``("", "", "")`` when none was computed (breakdown cells).

    Args:
        interval: the interval, or None.
        digits: decimals of the bounds.
    """
    if interval is None:
        return "", "", ""
    has_bounds = interval.low is not None and interval.high is not None
    shown = has_bounds and (interval.units is None or interval.informative)
    low = f"{interval.low:.{digits}f}" if shown and interval.low is not None else ""
    high = f"{interval.high:.{digits}f}" if shown and interval.high is not None else ""
    if interval.units is None:
        return low, high, "" if shown else "no interval"
    n = f"n={interval.units}×{interval.repeats or 0}"
    return low, high, n if shown else f"{n}: no interval"


def interval_note(interval: Interval, digits: int, *, signed: bool = False) -> str:
    """The interval as printed after a value: `` [low, high] n=28×3`` (units × repeats, see
    :data:`INTERVAL_LEGEND`) when it is :attr:`~Interval.informative`, else `` n=1×1: no
    interval`` (one unit, or units that all gave one value); the bare bounds when the interval
    has no counts, and empty when it has neither.

    Args:
        interval: the interval.
        digits: decimals of the bounds.
        signed: print bounds with a sign (differences).
    """
    sign = "+" if signed else ""
    bounds = ("" if interval.low is None or interval.high is None
              else f" [{interval.low:{sign}.{digits}f}, {interval.high:{sign}.{digits}f}]")
    if interval.units is None:
        return bounds
    n = f" n={interval.units}×{interval.repeats or 0}"
    return bounds + n if interval.informative else n + ": no interval"


class MetricSummary(BaseModel):
    """One metric for one group of outcomes (a memory condition and model, or a breakdown cell).

    Attributes:
        metric: ``PSA``, ``CS``, ``PET``, ``BRS``, ``PRS`` or ``Carry-over``.
        unit: ``%`` (PSA, CS, PET, carry-over) or ``1-5`` (BRS, PRS).
        mean: mean over repeats; None means N/A (no eligible item at all).
        sd: sample SD over repeats (Eq. 3, n-1); None with fewer than two repeat values.
        per_repeat: the repeat values.
        eligible: eligible items summed over repeats and models (the denominators).
        passing: passing items (percent metrics) or the score sum (BRS, PRS), summed likewise.
        excluded: items kept apart because they are incomplete or their rating is missing.
        interval: the 95% cluster-bootstrap interval, when computed.
    """

    metric: str
    unit: str
    mean: float | None
    sd: float | None
    per_repeat: list[RepeatValue] = Field(default_factory=list)
    eligible: int = 0
    passing: float = 0.0
    excluded: int = 0
    interval: Interval | None = None

    def formatted(self, *, digits: int | None = None, interval: bool = True) -> str:
        """``mean ± sd [low, high] n=28×3``; ``N/A`` when there is no eligible item. An interval
        drawn from one unit, or whose resamples all gave one value, is printed as ``n=1×1: no
        interval`` (:func:`interval_note`)."""
        if self.mean is None:
            return "N/A"
        d = digits if digits is not None else (1 if self.unit == "%" else 2)
        text = f"{self.mean:.{d}f}"
        if self.sd is not None:
            text += f" ± {self.sd:.{d}f}"
        if interval and self.interval is not None:
            text += interval_note(self.interval, d)
        return text


def _repeat_matrix(table: UnitTable) -> tuple[NDArray[np.float64], list[int]]:
    repeats = table.repeats
    col = {r: j for j, r in enumerate(repeats)}
    m = np.zeros((len(table.slices), len(repeats)))
    for i, (_, r) in enumerate(table.slices):
        m[i, col[r]] = 1.0
    return m, repeats


def _statistic(
    num: NDArray[np.float64], den: NDArray[np.float64], member: NDArray[np.float64], scale: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Repeat values and overall value from per-slice sums (last axis = slices)."""
    valid = den > 0
    rate = np.divide(num, den, out=np.zeros_like(num), where=valid) * scale
    rep_sum = rate @ member
    rep_cnt = valid.astype(np.float64) @ member
    rep_ok = rep_cnt > 0
    rep_val = np.divide(rep_sum, rep_cnt, out=np.full_like(rep_sum, np.nan), where=rep_ok)
    n_ok = rep_ok.sum(axis=-1)
    total = np.where(rep_ok, rep_val, 0.0).sum(axis=-1)
    overall = np.divide(total, n_ok, out=np.full(total.shape, np.nan), where=n_ok > 0)
    return rep_val, overall


def summarise(metric: str, table: UnitTable, *, unit: str) -> MetricSummary:
    """Point estimate, per-repeat values and SD of a metric.

    Args:
        metric: the metric's name.
        table: its unit table.
        unit: ``%`` (values scaled by 100) or ``1-5``.

    Returns:
        The summary without an interval.
    """
    scale = 100.0 if unit == "%" else 1.0
    member, repeats = _repeat_matrix(table)
    num = table.num.sum(axis=0) if table.keys else np.zeros(len(table.slices))
    den = table.den.sum(axis=0) if table.keys else np.zeros(len(table.slices))
    rep_val, overall = _statistic(num, den, member, scale)
    values = [None if math.isnan(v) else float(v) for v in rep_val]
    present = [v for v in values if v is not None]
    sd = float(np.std(present, ddof=1)) if len(present) >= 2 else None
    mean = None if math.isnan(float(overall)) else float(overall)
    return MetricSummary(
        metric=metric,
        unit=unit,
        mean=mean,
        sd=sd,
        per_repeat=[RepeatValue(repeat=r, value=v) for r, v in zip(repeats, values, strict=True)],
        eligible=int(den.sum()),
        passing=float(num.sum()),
        excluded=sum(table.excluded.values()),
    )


def _weights(
    strata: list[str], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """How often each unit is drawn in each resample: shape ``(resamples, units)``."""
    n = len(strata)
    counts = np.zeros((resamples, n))
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    rows = np.arange(resamples)[:, None]
    for members in groups.values():
        idx = np.asarray(members)
        drawn = idx[rng.integers(0, len(idx), size=(resamples, len(idx)))]
        np.add.at(counts, (np.broadcast_to(rows, drawn.shape), drawn), 1.0)
    return counts


def _counts(*tables: UnitTable) -> tuple[int, int]:
    """Units with an eligible item in any of ``tables`` (aligned on the same keys when several)
    and the repeats present."""
    eligible: set[tuple[str, ...]] = set()
    for t in tables:
        if t.keys:
            eligible |= {k for k, row in zip(t.keys, t.den, strict=True) if float(row.sum()) > 0}
    repeats = set().union(*(set(t.repeats) for t in tables))
    return len(eligible), len(repeats)


def _percentiles(values: NDArray[np.float64], resamples: int, seed: int,
                 counts: tuple[int, int] | None = None) -> Interval:
    units, repeats = counts if counts is not None else (None, None)
    ok = values[~np.isnan(values)]
    if ok.size == 0:
        return Interval(low=None, high=None, resamples=resamples, seed=seed, units=units, repeats=repeats)
    low, high = np.percentile(ok, [2.5, 97.5])
    return Interval(low=float(low), high=float(high), resamples=resamples, seed=seed, units=units, repeats=repeats)


def bootstrap_distribution(
    table: UnitTable, *, unit: str, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.float64]:
    """The resampled values of a metric's statistic (Appendix F.3).

    Args:
        table: the metric's unit table.
        unit: ``%`` or ``1-5``.
        resamples: number of resamples (5,000 in the paper).
        seed: seed of ``numpy.random.default_rng``; the same seed gives the same values.

    Returns:
        Shape ``(resamples,)``; NaN where a resample has no eligible item (empty when there is
        no unit).
    """
    if not table.keys:
        return np.zeros(0)
    rng = np.random.default_rng(seed)
    w = _weights(table.strata, resamples, rng)
    member, _ = _repeat_matrix(table)
    scale = 100.0 if unit == "%" else 1.0
    _, overall = _statistic(w @ table.num, w @ table.den, member, scale)
    return overall


def bootstrap_interval(
    table: UnitTable, *, unit: str, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Interval:
    """95% cluster-bootstrap interval of a metric: percentiles 2.5 and 97.5 (Appendix F.3).

    Args:
        table: the metric's unit table.
        unit: ``%`` or ``1-5``.
        resamples: number of resamples (5,000 in the paper).
        seed: seed of ``numpy.random.default_rng``; the same seed gives the same interval.

    Returns:
        The interval (bounds None when there is no unit).
    """
    values = bootstrap_distribution(table, unit=unit, resamples=resamples, seed=seed)
    return _percentiles(values, resamples, seed, _counts(table))


def _align(table: UnitTable, keys: list[tuple[str, ...]], slices: list[tuple[str, int]]) -> UnitTable:
    row = {k: i for i, k in enumerate(table.keys)}
    col = {s: j for j, s in enumerate(table.slices)}
    num = np.zeros((len(keys), len(slices)))
    den = np.zeros((len(keys), len(slices)))
    for i, k in enumerate(keys):
        if k not in row:
            continue
        for j, s in enumerate(slices):
            if s in col:
                num[i, j] = table.num[row[k], col[s]]
                den[i, j] = table.den[row[k], col[s]]
    strata = dict(zip(table.keys, table.strata, strict=True))
    return UnitTable(keys, [strata.get(k, "") for k in keys], slices, num, den)


def bootstrap_difference(
    a: UnitTable,
    b: UnitTable,
    *,
    unit: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float | None, Interval]:
    """Difference ``a - b`` of a metric between two conditions, with a paired cluster bootstrap.

    Both conditions share each resample's draw of units (matched by key), as in Table 13's
    difference from No Memory.

    Args:
        a / b: unit tables of the same metric for two memory conditions.
        unit: ``%`` or ``1-5``.
        resamples / seed: as in :func:`bootstrap_interval`.

    Returns:
        ``(point difference or None, interval)``.
    """
    keys = sorted(set(a.keys) | set(b.keys))
    slices = sorted(set(a.slices) | set(b.slices))
    a2, b2 = _align(a, keys, slices), _align(b, keys, slices)
    strata = [sa or sb for sa, sb in zip(a2.strata, b2.strata, strict=True)]
    pa, pb = summarise("a", a2, unit=unit).mean, summarise("b", b2, unit=unit).mean
    point = None if pa is None or pb is None else pa - pb
    counts = _counts(a2, b2)
    if not keys:
        return point, Interval(low=None, high=None, resamples=resamples, seed=seed, units=0, repeats=counts[1])
    rng = np.random.default_rng(seed)
    w = _weights(strata, resamples, rng)
    member, _ = _repeat_matrix(a2)
    scale = 100.0 if unit == "%" else 1.0
    _, va = _statistic(w @ a2.num, w @ a2.den, member, scale)
    _, vb = _statistic(w @ b2.num, w @ b2.den, member, scale)
    return point, _percentiles(va - vb, resamples, seed, counts)
