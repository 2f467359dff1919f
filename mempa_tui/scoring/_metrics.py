"""PSA, CS, PET, BRS, PRS and carry-over per memory condition and model, with breakdowns.

Definitions: paper Section 3.5 (PSA, CS, PET, BRS, PRS), Appendix F.2 (floors, incomplete probes,
pooling CS and PET within a repeat, mean and sample SD over repeats, N/A), F.3 (intervals,
carry-over), G.1 (breakdowns by dimension and by reply-vs-action group). BRS and PRS are averaged
over the final probes, like PSA.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from mempa_tui.scoring._defaults import BackboneDefaults, backbone_defaults
from mempa_tui.scoring._outcome import (
    CONDITION_LABELS,
    ProbeOutcome,
    ProbeStatus,
    condition_label,
)
from mempa_tui.scoring._stats import (
    DEFAULT_RESAMPLES,
    Interval,
    MetricSummary,
    bootstrap_difference,
    bootstrap_interval,
    interval_note,
    summarise,
)
from mempa_tui.scoring._units import (
    UnitTable,
    carry_over_units,
    cs_units,
    pet_units,
    probe_units,
)

__all__ = [
    "ALL_MODELS",
    "METRICS",
    "ConditionScores",
    "Difference",
    "breakdown",
    "carry_over",
    "condition_sort_key",
    "differences_from",
    "metric_tables",
    "score_conditions",
    "score_group",
]

ALL_MODELS = "all models"
"""The model label of rows pooled over backbones."""

METRICS: tuple[str, ...] = ("PSA", "CS", "PET", "BRS", "PRS", "Carry-over")
"""Metric names in report order."""

_UNITS = {"PSA": "%", "CS": "%", "PET": "%", "BRS": "1-5", "PRS": "1-5", "Carry-over": "%"}


class ConditionScores(BaseModel):
    """All metrics of one group of outcomes.

    Attributes:
        memory: memory condition name (``none``, ``file``...).
        model: backbone label, or :data:`ALL_MODELS` for rows pooled over backbones.
        breakdown: the breakdown value (a dimension, ``reply``/``action``, a user), or None.
        psa / cs / pet / brs / prs: the metric summaries (mean None means N/A).
        carry_over: carry-over share of CS pair instances, when backbone defaults are known.
        probes: outcomes in the group (final and pre-event).
        floored: floored outcomes (scored PSA 0, BRS 1).
        incomplete: incomplete outcomes (kept out of every score).
    """

    memory: str
    model: str
    breakdown: str | None = None
    psa: MetricSummary
    cs: MetricSummary
    pet: MetricSummary
    brs: MetricSummary
    prs: MetricSummary
    carry_over: MetricSummary | None = None
    probes: int
    floored: int
    incomplete: int

    @property
    def label(self) -> str:
        """The memory condition's display name."""
        return condition_label(self.memory)

    def metric(self, name: str) -> MetricSummary | None:
        """The summary of metric ``name`` (one of :data:`METRICS`)."""
        return {
            "PSA": self.psa,
            "CS": self.cs,
            "PET": self.pet,
            "BRS": self.brs,
            "PRS": self.prs,
            "Carry-over": self.carry_over,
        }[name]


class Difference(BaseModel):
    """A metric's difference from the reference condition with its paired bootstrap interval."""

    memory: str
    model: str
    metric: str
    reference: str
    point: float | None
    interval: Interval

    def formatted(self, digits: int = 1) -> str:
        """``+12.5 [+3.1, +20.0] n=28×3`` (percentage points; units × repeats), or the point with
        ``n=1×1: no interval`` where the interval cannot mean anything (one unit, or units that
        all gave the same difference; see :func:`~mempa_tui.scoring._stats.interval_note`);
        ``N/A`` when either side has no eligible item."""
        if self.point is None:
            return "N/A"
        return f"{self.point:+.{digits}f}" + interval_note(self.interval, digits, signed=True)


def _psa_value(o: ProbeOutcome) -> float | None:
    return float(o.correct) if o.scorable else None


def metric_tables(
    outcomes: Sequence[ProbeOutcome], defaults: BackboneDefaults | None = None
) -> dict[str, UnitTable]:
    """The unit table of every metric for one memory condition's outcomes.

    Returns:
        Metric name -> table; carry-over only when ``defaults`` is given.
    """
    tables = {
        "PSA": probe_units(outcomes, _psa_value),
        "CS": cs_units(outcomes),
        "PET": pet_units(outcomes),
        "BRS": probe_units(outcomes, lambda o: o.brs_scored),
        "PRS": probe_units(outcomes, lambda o: o.prs_scored),
    }
    if defaults is not None:
        tables["Carry-over"] = carry_over_units(outcomes, defaults.setting)
    return tables


def score_group(
    outcomes: Sequence[ProbeOutcome],
    *,
    memory: str,
    model: str,
    breakdown: str | None = None,
    defaults: BackboneDefaults | None = None,
    intervals: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> ConditionScores:
    """Score one group of outcomes (one memory condition; one or several models).

    Args:
        outcomes: the group's outcomes (all of one memory condition).
        memory / model / breakdown: labels for the row.
        defaults: backbone defaults for carry-over (None: no carry-over).
        intervals: compute 95% cluster-bootstrap intervals.
        resamples / seed: bootstrap settings.

    Returns:
        The scores.

    Raises:
        ValueError: the outcomes mix memory conditions.
        DuplicateOutcomeError: two outcomes for the same probe run.
    """
    if len({o.memory for o in outcomes}) > 1:
        raise ValueError("score_group: outcomes of several memory conditions; split them first")
    summaries: dict[str, MetricSummary] = {}
    for name, table in metric_tables(outcomes, defaults).items():
        s = summarise(name, table, unit=_UNITS[name])
        if intervals:
            s.interval = bootstrap_interval(table, unit=_UNITS[name], resamples=resamples, seed=seed)
        summaries[name] = s
    return ConditionScores(
        memory=memory,
        model=model,
        breakdown=breakdown,
        psa=summaries["PSA"],
        cs=summaries["CS"],
        pet=summaries["PET"],
        brs=summaries["BRS"],
        prs=summaries["PRS"],
        carry_over=summaries.get("Carry-over"),
        probes=len(outcomes),
        floored=sum(o.status is ProbeStatus.FLOORED for o in outcomes),
        incomplete=sum(o.status is ProbeStatus.INCOMPLETE for o in outcomes),
    )


def carry_over(
    outcomes: Sequence[ProbeOutcome],
    defaults: BackboneDefaults,
    *,
    intervals: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> MetricSummary:
    """Carry-over of one memory condition (Appendix F.3): the share of CS pair instances in which
    the PA selects the same setting in both contexts, that setting is the target of one context,
    and it differs from the backbone's default under No Memory.

    Args:
        outcomes: one memory condition's outcomes (one or several backbones).
        defaults: from :func:`backbone_defaults` on the No Memory outcomes.
        intervals / resamples / seed: bootstrap settings (pairs are the resampled units).

    Returns:
        The summary in %: ``passing`` counts carry-overs, ``eligible`` the pair instances.
    """
    table = carry_over_units(outcomes, defaults.setting)
    summary = summarise("Carry-over", table, unit="%")
    if intervals:
        summary.interval = bootstrap_interval(table, unit="%", resamples=resamples, seed=seed)
    return summary


def condition_sort_key(memory: str) -> tuple[int, str]:
    """Where a memory condition's rows go: memory systems first (in :data:`CONDITION_LABELS`
    order, unknown ones after them), then No Memory, then Oracle."""
    known = [m for m in CONDITION_LABELS if m not in ("none", "oracle")] + ["none", "oracle"]
    return (known.index(memory) if memory in known else len(known) - 2, memory)


def _groups(
    outcomes: Iterable[ProbeOutcome], pool_models: bool, key: Callable[[ProbeOutcome], str] | None
) -> list[tuple[tuple[str, str, str | None], list[ProbeOutcome]]]:
    groups: dict[tuple[str, str, str | None], list[ProbeOutcome]] = {}
    for o in outcomes:
        g = (o.memory, ALL_MODELS if pool_models else o.model, key(o) if key else None)
        groups.setdefault(g, []).append(o)
    return sorted(groups.items(), key=lambda kv: (condition_sort_key(kv[0][0]), kv[0][1], kv[0][2] or ""))


def score_conditions(
    outcomes: Iterable[ProbeOutcome],
    *,
    pool_models: bool = False,
    defaults: BackboneDefaults | None = None,
    no_memory: str = "none",
    intervals: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[ConditionScores]:
    """Score every memory condition (and model, unless pooled) - the rows of Tables 1-3 and 13.

    Args:
        outcomes: outcomes of any conditions and models.
        pool_models: one row per memory condition, averaging the backbones (Table 13).
        defaults: backbone defaults for carry-over; by default derived from the No Memory
            outcomes present (no carry-over when there are none).
        no_memory: the No Memory condition's name.
        intervals / resamples / seed: bootstrap settings.

    Returns:
        Rows ordered memory conditions first, then No Memory, then Oracle.
    """
    items = list(outcomes)
    if defaults is None:
        found = backbone_defaults(items, no_memory=no_memory)
        defaults = found if found.entries else None
    return [
        score_group(
            group,
            memory=memory,
            model=model,
            defaults=defaults,
            intervals=intervals,
            resamples=resamples,
            seed=seed,
        )
        for (memory, model, _), group in _groups(items, pool_models, None)
    ]


_BREAKDOWNS: dict[str, Callable[[ProbeOutcome], str]] = {
    "dimension": lambda o: o.attr.dimension.value,
    "group": lambda o: o.attr.group.value,
    "user": lambda o: o.user,
}


def breakdown(
    outcomes: Iterable[ProbeOutcome],
    by: Literal["dimension", "group", "user"],
    *,
    pool_models: bool = False,
    intervals: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[ConditionScores]:
    """Scores per memory condition, model and dimension / reply-vs-action group / user (G.1).

    Args:
        outcomes: outcomes of any conditions and models.
        by: ``dimension`` (Table 14), ``group`` (reply vs action, taxonomy
            ``RealizationGroup``) or ``user``.
        pool_models: pool backbones into one row per condition.
        intervals / resamples / seed: bootstrap settings (off by default for breakdowns).

    Returns:
        One row per (memory, model, breakdown value); ``breakdown`` holds the value.

    Raises:
        ValueError: unknown ``by``.
    """
    key = _BREAKDOWNS.get(by)
    if key is None:
        raise ValueError(f"breakdown by {by!r}: choose one of {', '.join(_BREAKDOWNS)}")
    return [
        score_group(
            group,
            memory=memory,
            model=model,
            breakdown=value,
            intervals=intervals,
            resamples=resamples,
            seed=seed,
        )
        for (memory, model, value), group in _groups(outcomes, pool_models, key)
    ]


def differences_from(
    outcomes: Iterable[ProbeOutcome],
    *,
    reference: str = "none",
    metrics: Sequence[str] = ("PSA", "CS", "PET", "Carry-over"),
    pool_models: bool = True,
    defaults: BackboneDefaults | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[Difference]:
    """Each condition's difference from the reference with paired intervals (Table 13, right).

    Args:
        outcomes: outcomes of the reference and the other conditions.
        reference: the reference condition (No Memory by default).
        metrics: which metrics to compare.
        pool_models: compare pooled over backbones (else per backbone).
        defaults: backbone defaults for carry-over (derived from No Memory when None).
        resamples / seed: bootstrap settings.

    Returns:
        One entry per other condition (and model) and metric; empty without reference outcomes.
    """
    items = list(outcomes)
    if defaults is None:
        found = backbone_defaults(items, no_memory=reference)
        defaults = found if found.entries else None
    groups = _groups(items, pool_models, None)
    refs = {model: g for (memory, model, _), g in groups if memory == reference}
    out: list[Difference] = []
    for (memory, model, _), group in groups:
        if memory == reference or model not in refs:
            continue
        mine, theirs = metric_tables(group, defaults), metric_tables(refs[model], defaults)
        for name in metrics:
            if name not in mine:
                continue
            point, interval = bootstrap_difference(
                mine[name], theirs[name], unit=_UNITS[name], resamples=resamples, seed=seed
            )
            out.append(
                Difference(
                    memory=memory,
                    model=model,
                    metric=name,
                    reference=reference,
                    point=point,
                    interval=interval,
                )
            )
    return out
