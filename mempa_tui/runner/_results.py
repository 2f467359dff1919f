"""Results across stored runs: the tables of SPEC section 4.9 for the app, a bar chart, exports.

Reuses the scoring package (paper Section 3.5 metrics, Appendix F.2 floors and incompletes): the
store's probe rows become :class:`~mempa_tui.scoring.ProbeOutcome` values with
:func:`~mempa_tui.runner.report.outcome_of`, then :func:`~mempa_tui.scoring.score_conditions` or
:func:`~mempa_tui.scoring.breakdown` group them by memory condition and model, and optionally by
user, dimension or reply-vs-action group.

* :func:`stored_outcomes` - every probe outcome of the chosen runs (all runs by default).
* :func:`results_rows` - the rows of one grouping (means and SDs; intervals on request).
* :func:`results_text` / :func:`differences_text` - the same rows, and each condition's paired
  difference from No Memory (Table 13, right), as aligned text for ``mempa results``.
* :func:`bar_chart` - one bar per row for one metric, scaled to the metric's range.
* :func:`export_results` - the full report (``report.md`` and CSVs, with bootstrap intervals,
  via :func:`~mempa_tui.scoring.write_reports`) plus ``by_user.csv`` and ``screen.md`` (the table
  as grouped on screen).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from mempa_tui.runner.report import backbone_label, outcome_of
from mempa_tui.scoring import (
    ConditionScores,
    Difference,
    MetricSummary,
    ProbeOutcome,
    ReportPaths,
    breakdown,
    condition_label,
    condition_sort_key,
    differences_from,
    outcome_validity_lines,
    score_conditions,
    write_reports,
)
from mempa_tui.scoring._report import validity_section
from mempa_tui.store import RunRecord, RunStatus, RunStore

__all__ = [
    "GROUPINGS",
    "SHOWN_METRICS",
    "Bar",
    "ExportedResults",
    "Grouping",
    "RunGroup",
    "bar_chart",
    "comparable_groups",
    "differences_text",
    "export_results",
    "paired_differences",
    "partial_runs",
    "results_markdown",
    "results_rows",
    "results_text",
    "stored_outcomes",
    "timeline_kind_of",
]

Grouping = Literal["condition", "user", "dimension", "group"]
"""How rows are split beyond memory condition and model."""

GROUPINGS: tuple[Grouping, ...] = ("condition", "user", "dimension", "group")
"""The groupings in the order the app cycles through them."""

SHOWN_METRICS: tuple[str, ...] = ("PSA", "CS", "PET", "BRS", "PRS")
"""The metrics the results view shows (paper Section 3.5)."""

_SCALE = {"%": 100.0, "1-5": 5.0}


async def stored_outcomes(store: RunStore, run_ids: Sequence[str] | None = None) -> list[ProbeOutcome]:
    """The probe outcomes of stored runs.

    Args:
        store: the open run store.
        run_ids: the runs to include (None: every run in the store).

    Returns:
        One outcome per stored probe x repeat, in run order.

    Raises:
        StoreError: a named run is not in the store.
    """
    from mempa_tui.store import StoreError

    runs = await store.list_runs()
    by_id = {r.id: r for r in runs}
    chosen = list(by_id) if run_ids is None else list(run_ids)
    out: list[ProbeOutcome] = []
    for run_id in chosen:
        run = by_id.get(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in {store.path}")
        out.extend(outcome_of(r, run) for r in await store.probe_results(run_id))
    return out


async def partial_runs(store: RunStore) -> list[str]:
    """Runs whose probes are not all stored yet, as ``<run id> <done>/<total> probes``.

    Their outcomes still count in the results (scores are per probe), but a reader must know the
    rows do not cover every probe of those runs.

    Returns:
        One line per partial run, in the store's order; empty when every run is complete.
    """
    return [
        f"{s.run.id} {s.probes_done}/{s.run.total_probes} probes"
        for s in await store.summaries()
        if s.run.total_probes and s.probes_done < s.run.total_probes
    ]


def results_rows(
    outcomes: Sequence[ProbeOutcome], by: Grouping = "condition", *, intervals: bool = False,
    resamples: int = 1000,
) -> list[ConditionScores]:
    """The rows of one grouping.

    Args:
        outcomes: probe outcomes of any runs.
        by: ``condition`` (one row per memory condition and model, Tables 1-3), or additionally
            per ``user``, ``dimension`` (Table 14) or reply-vs-action ``group`` (Appendix G.1).
        intervals / resamples: compute bootstrap intervals (slow; off for the screen).

    Returns:
        Rows ordered memory conditions first, then No Memory, then Oracle; empty without outcomes.

    Raises:
        ValueError: unknown ``by``.
    """
    if not outcomes:
        return []
    if by == "condition":
        return score_conditions(outcomes, intervals=intervals, resamples=resamples)
    if by not in GROUPINGS:
        raise ValueError(f"group results by {by!r}: choose one of {', '.join(GROUPINGS)}")
    return breakdown(outcomes, by, intervals=intervals, resamples=resamples)


def _cell(summary: MetricSummary | None) -> str:
    return "N/A" if summary is None else summary.formatted(interval=True)


def _row_label(row: ConditionScores) -> str:
    parts = [row.label, row.model]
    if row.breakdown:
        parts.append(row.breakdown)
    return " · ".join(parts)


class Bar(BaseModel):
    """One bar of :func:`bar_chart`."""

    label: str
    """``memory · model[ · breakdown]``."""
    value: float | None
    """The metric's mean (None: N/A)."""
    fraction: float
    """``value`` over the metric's full range (100 % or 5), 0 for N/A."""
    text: str
    """The value as shown (``62.5%``, ``3.80``, ``N/A``)."""


def bar_chart(rows: Sequence[ConditionScores], metric: str) -> list[Bar]:
    """One bar per row for ``metric`` (PSA, CS, PET in %, BRS, PRS on 1-5).

    Raises:
        KeyError: unknown metric.
    """
    bars: list[Bar] = []
    for row in rows:
        summary = row.metric(metric)
        if summary is None or summary.mean is None:
            bars.append(Bar(label=_row_label(row), value=None, fraction=0.0, text="N/A"))
            continue
        scale = _SCALE.get(summary.unit, 1.0)
        text = f"{summary.mean:.1f}%" if summary.unit == "%" else f"{summary.mean:.2f}"
        bars.append(Bar(
            label=_row_label(row), value=summary.mean,
            fraction=max(0.0, min(1.0, summary.mean / scale)), text=text,
        ))
    return bars


ExtraColumns = Mapping[str, Callable[[ConditionScores], str]]
"""Extra columns after the fixed ones: header -> the row's cell (memory health, coverage)."""


def _table(rows: Sequence[ConditionScores], by: Grouping,
           extra: ExtraColumns | None = None) -> tuple[list[str], list[list[str]]]:
    header = ["Memory", "Model"] + ([by.capitalize()] if by != "condition" else [])
    header += [*SHOWN_METRICS, "Probes", "Floored", "Incomplete", *(extra or {})]
    body = []
    for r in rows:
        cells = [r.label, r.model] + ([r.breakdown or ""] if by != "condition" else [])
        cells += [_cell(r.metric(m)) for m in SHOWN_METRICS]
        cells += [str(r.probes), str(r.floored), str(r.incomplete), *(f(r) for f in (extra or {}).values())]
        body.append(cells)
    return header, body


def results_markdown(rows: Sequence[ConditionScores], by: Grouping, extra: ExtraColumns | None = None) -> str:
    """The rows as one Markdown table (cells ``mean ± SD``, with intervals when computed);
    ``extra`` adds columns (header -> cell of a row) after the fixed ones."""
    header, body = _table(rows, by, extra)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def _aligned(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def results_text(rows: Sequence[ConditionScores], by: Grouping = "condition",
                 extra: ExtraColumns | None = None) -> str:
    """The rows as an aligned plain-text table (cells ``mean ± SD [low, high]``), for the terminal.

    Same columns as :func:`results_markdown`: memory, model, the breakdown (unless ``by`` is
    ``condition``), PSA, CS, PET (%), BRS, PRS (1-5), probes, floored, incomplete, then ``extra``.
    """
    return _aligned(*_table(rows, by, extra))


def differences_text(diffs: Sequence[Difference]) -> str:
    """Each condition's difference from the reference as aligned text, one row per condition and
    model, one column per metric: ``+12.5 [+3.1, +20.0] n=28×3`` (percentage points; the paired
    95 % cluster-bootstrap interval of paper Appendix F.3, drawn from 28 units of 3 repeats), the
    point and ``n=2×1: no interval`` when it was drawn from one unit or every unit gave the same
    difference (:meth:`~mempa_tui.scoring.Difference.formatted`, legend
    :data:`~mempa_tui.scoring.INTERVAL_LEGEND`), ``N/A`` when either side has no eligible item.
    Empty string without differences."""
    if not diffs:
        return ""
    metrics = list(dict.fromkeys(d.metric for d in diffs))
    rows: dict[tuple[str, str], dict[str, Difference]] = {}
    for d in diffs:
        rows.setdefault((d.memory, d.model), {})[d.metric] = d

    def cell(d: Difference | None) -> str:
        return "N/A" if d is None else d.formatted()

    header = ["Memory", "Model", *(f"Δ{m}" for m in metrics)]
    body = [[condition_label(memory), model, *(cell(found.get(m)) for m in metrics)]
            for (memory, model), found in rows.items()]
    return _aligned(header, body)


class ExportedResults(BaseModel):
    """What :func:`export_results` wrote."""

    folder: Path
    """The export folder."""
    report: ReportPaths
    """The scoring package's report files (``report.md``, ``main.csv``...)."""
    by_user_csv: Path
    """Every metric per memory condition, model and user."""
    screen_md: Path
    """The table as grouped on screen."""

    def all(self) -> list[Path]:
        """Every written path."""
        return [*self.report.all(), self.by_user_csv, self.screen_md]


def export_results(
    outcomes: Sequence[ProbeOutcome], saves_dir: Path, *, by: Grouping = "condition",
    resamples: int = 5000, stamp: datetime | None = None, settings: Sequence[str] = (),
    extra: ExtraColumns | None = None, validity: Sequence[str] | None = None, notes: Sequence[str] = (),
) -> ExportedResults:
    """Write the results as Markdown and CSV into ``<saves_dir>/results-<UTC stamp>[-N]/`` (a new
    folder each time: two exports in the same second get ``-2``, ``-3``..., never one folder).

    Args:
        outcomes: the probe outcomes (at least one).
        saves_dir: the saves folder.
        by: the grouping of ``screen.md``.
        resamples: bootstrap resamples of the report's intervals (paper: 5,000).
        stamp: the folder's time stamp (default: now, UTC).
        settings: each run's settings line (``<run>: donor ...; thresholds; decoding``, from
            :func:`~mempa_tui.runner._settings.settings_lines`), written under both tables.
        extra: extra columns of ``screen.md`` (memory health, coverage), as in :func:`results_text`;
            its ``Health`` column is also written into ``report.md``'s main table and ``main.csv``.
        notes: the lines printed under the terminal table (a BROKEN memory's reasons...), written
            under the main table of ``report.md`` and of ``screen.md``.
        validity: the lines on what the scores could reach without memory and the Oracle check
            (:func:`~mempa_tui.runner._validity.validity_lines`), under both tables; default the
            outcomes' own (:func:`~mempa_tui.scoring.outcome_validity_lines`, runs not named).

    Raises:
        ValueError: no outcomes.
        OSError: the folder cannot be written.
    """
    if not outcomes:
        raise ValueError("no probe results to export: finish a run's probes first")
    when = stamp or datetime.now(UTC)
    folder = _new_folder(Path(saves_dir), f"results-{when:%Y%m%d-%H%M%S}")
    table_notes = list(notes)
    notes = list(validity) if validity is not None else outcome_validity_lines(outcomes)
    health = (extra or {}).get("Health")
    report = write_reports(outcomes, folder, resamples=resamples, validity=notes, health=health,
                           health_notes=list(table_notes))
    users = results_rows(outcomes, "user")
    by_user = folder / "by_user.csv"
    with by_user.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["memory", "model", "user", "metric", "mean", "sd", "eligible", "excluded"])
        for r in users:
            for m in SHOWN_METRICS:
                s = r.metric(m)
                writer.writerow([
                    r.memory, r.model, r.breakdown or "", m,
                    "" if s is None or s.mean is None else f"{s.mean:.4f}",
                    "" if s is None or s.sd is None else f"{s.sd:.4f}",
                    s.eligible if s else 0, s.excluded if s else 0,
                ])
    footer = ("\n## Run settings (donor, File memory thresholds, decoding)\n\n"
              + "".join(f"- {line}\n" for line in settings)) if settings else ""
    screen = folder / "screen.md"
    screen.write_text(
        f"# MemPABench results by {by}\n\n" + results_markdown(results_rows(outcomes, by), by, extra)
        + ("\n" + "".join(f"- {line}\n" for line in table_notes) if table_notes else "")
        + ("\n" + validity_section(notes) if notes else "") + footer,
        encoding="utf-8",
    )
    if footer:
        with report.main_md.open("a", encoding="utf-8") as fh:
            fh.write(footer)
    return ExportedResults(folder=folder, report=report, by_user_csv=by_user, screen_md=screen)


def _new_folder(parent: Path, name: str) -> Path:
    """Create and return ``parent/name``, or ``name-2``, ``name-3``... if taken (atomic mkdir)."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        folder = parent / (name if n == 1 else f"{name}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise OSError(f"{parent}: a thousand folders named {name}-N exist already")


class RunGroup(BaseModel):
    """Runs that can share one table: they played the same kind of timeline (paper Section 3.3:
    the whole timeline, or our quick-start slice of it), at most one run per user, memory
    condition and model."""

    timeline: str
    """``whole timeline``, ``quick-start slice`` or ``quick start``."""
    run_ids: list[str]
    """The runs, in the order given."""
    left_out: list[str] = []
    """Runs not shown because a preferred run holds the same user, condition and model (only when
    the runs were not named: named runs that collide are an error)."""


def timeline_kind_of(run: RunRecord) -> str:
    """What a stored run played: ``whole timeline``, ``quick-start slice`` or ``quick start``
    (:attr:`~mempa_tui.runner.RunConfig.timeline_kind` read from the stored configuration; a No
    Memory or Oracle run names the timeline of its donor's checkpoints). An unreadable
    configuration reads as ``whole timeline``. The one place that names it: results tables,
    the comparison and the run browser all use it (paper Section 3.3)."""
    try:
        config = json.loads(run.config_json)
    except (json.JSONDecodeError, AttributeError):
        return "whole timeline"
    if not isinstance(config, dict):
        return "whole timeline"
    return "quick start" if config.get("quick") else "quick-start slice" if config.get("slice") else "whole timeline"


def comparable_groups(runs: Sequence[RunRecord], *, named: bool) -> list[RunGroup]:
    """Split runs into tables that can be scored together (one per timeline kind).

    Probe outcomes are keyed by user, probe cell, kind, repeat, memory condition and model, so two
    runs with the same user, condition and model (another seed, a run and its archived copy) cannot
    share a table, and a slice's scores must not be compared with a whole timeline's.

    Args:
        runs: the chosen runs (a play, with its person in a seat, is kept like any run).
        named: the user named these runs; colliding runs are then an error instead of being left out.

    Returns:
        One group per timeline kind present, whole timeline first; within a group, when runs
        collide, a completed run is kept before one that is not, then the lowest seed (so a table
        of several conditions comes from one seed where it can), then the most recently updated.

    Raises:
        ValueError: ``named`` and two runs collide (names both and why).
    """
    groups: dict[str, RunGroup] = {}
    holder: dict[tuple[str, str, str, str], RunRecord] = {}
    def preference(run: RunRecord) -> tuple[bool, int, float]:
        return (run.status is RunStatus.COMPLETED, -run.seed, run.updated_at.timestamp())

    for run in sorted(runs, key=preference, reverse=True):
        sliced = timeline_kind_of(run)
        group = groups.setdefault(sliced, RunGroup(timeline=sliced, run_ids=[]))
        key = (sliced, run.user, run.memory, backbone_label(run))
        other = holder.get(key)
        if other is not None:
            if named:
                raise ValueError(
                    f"runs {other.id} and {run.id} both hold user {run.user}'s {run.memory} probes "
                    f"with model {key[3]}: one table cannot hold both (compare them in separate calls)")
            group.left_out.append(run.id)
            continue
        holder[key] = run
        group.run_ids.append(run.id)
    order = {r.id: i for i, r in enumerate(runs)}
    for group in groups.values():
        group.run_ids.sort(key=order.__getitem__)
    return [groups[k] for k in ("whole timeline", "quick-start slice", "quick start") if k in groups]


def paired_differences(
    outcomes: Sequence[ProbeOutcome], *, reference: str = "none", resamples: int = 5000
) -> tuple[list[Difference], dict[str, int]]:
    """Each condition's difference from ``reference`` over the probe repeats both hold (Table 13),
    one row per condition and model: a condition is compared with the same model's No Memory run.

    :func:`~mempa_tui.scoring.differences_from` pairs units by probe and repeat; when one side is
    missing probes (a run still going), its mean would come from other probes than the other
    side's. Here each condition and the reference are first cut to the (model, user, probe,
    repeat) units they share, so neither another model's runs nor another run's extra probes
    enter a difference.

    Returns:
        The differences (in the main table's condition order), and per condition how many of its
        outcomes had no partner (left out).
    """
    def unit(o: ProbeOutcome) -> tuple[str, str, str | None, int]:
        return (o.model, o.user, o.probe_id, o.repeat)

    ref = [o for o in outcomes if o.memory == reference]
    ref_units = {unit(o) for o in ref}
    out: list[Difference] = []
    dropped: dict[str, int] = {}
    for memory in sorted({o.memory for o in outcomes if o.memory != reference}, key=condition_sort_key):
        mine = [o for o in outcomes if o.memory == memory]
        common = ref_units & {unit(o) for o in mine}
        dropped[memory] = sum(unit(o) not in common for o in mine)
        paired = [o for o in mine if unit(o) in common] + [o for o in ref if unit(o) in common]
        if common:
            out.extend(differences_from(paired, reference=reference, resamples=resamples, pool_models=False))
    return out, dropped
