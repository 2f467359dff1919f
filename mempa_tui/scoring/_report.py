"""Result tables: printed text, Markdown and CSV, shaped like the paper's tables.

- main: one row per memory condition and backbone with PSA, CS, PET, BRS, PRS and carry-over as
  ``mean ± SD [95% interval]`` (Tables 1-3, 13; Appendix F.2-F.3);
- pooled: one row per memory condition averaged over backbones, with the difference from No
  Memory and its paired interval (Table 13), written when No Memory or several backbones exist;
- dimensions / groups: PSA, BRS and PRS per dimension (Tables 14, 17, 18) and per reply-vs-action
  group (Appendix G.1);
- defaults: each backbone's default setting under No Memory (Table 20);
- incomplete: the probes kept apart from every score, with their reasons (Appendix F.2).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel

from mempa_tui.scoring._defaults import BackboneDefaults, backbone_defaults
from mempa_tui.scoring._metrics import (
    METRICS,
    ConditionScores,
    Difference,
    breakdown,
    differences_from,
    score_conditions,
)
from mempa_tui.scoring._outcome import ProbeOutcome, ProbeStatus, condition_label
from mempa_tui.scoring._stats import DEFAULT_RESAMPLES, INTERVAL_LEGEND, MetricSummary, interval_fields
from mempa_tui.scoring._validity import outcome_validity_lines
from mempa_tui.taxonomy import ATTRIBUTES, Dimension, RealizationGroup

__all__ = ["VALIDITY_HEADING", "ReportPaths", "format_table", "validity_section", "write_reports"]

VALIDITY_HEADING = "Reading these scores (without memory: random and fixed choices; the Oracle check)"
"""The heading of the validity lines under every results table (CLI, report.md, the app)."""


def validity_section(lines: Sequence[str]) -> str:
    """The validity lines as a Markdown section (``### <VALIDITY_HEADING>`` and a list); empty
    without lines."""
    if not lines:
        return ""
    return f"### {VALIDITY_HEADING}\n\n" + "".join(f"- {line}\n" for line in lines)


class ReportPaths(BaseModel):
    """The files :func:`write_reports` wrote (None where a table does not apply)."""

    main_md: Path
    main_csv: Path
    pooled_csv: Path | None = None
    dimensions_csv: Path
    groups_csv: Path
    defaults_csv: Path | None = None
    incomplete_csv: Path

    def all(self) -> list[Path]:
        """Every written path."""
        return [p for p in self.model_dump().values() if p is not None]


def _cell(s: MetricSummary | None, *, interval: bool = True) -> str:
    return "N/A" if s is None else s.formatted(interval=interval)


HealthCell = Callable[[ConditionScores], str]
"""A row -> its memory Health cell (``ok``, ``n/a``, ``warn``, ``BROKEN 1/1``), as the terminal
tables show it (:meth:`~mempa_tui.runner._health.RowAnnotations.columns`)."""


def _main_rows(rows: Sequence[ConditionScores], health: HealthCell | None = None) -> tuple[list[str], list[list[str]]]:
    header = ["Memory", "Model", *METRICS, "Floored", "Incomplete", *(["Health"] if health else [])]
    body = [
        [r.label, r.model, *(_cell(r.metric(m)) for m in METRICS), str(r.floored), str(r.incomplete),
         *([health(r)] if health else [])]
        for r in rows
    ]
    return header, body


def format_table(rows: Sequence[ConditionScores]) -> str:
    """The main table as aligned plain text (for the terminal).

    Args:
        rows: from :func:`score_conditions`.

    Returns:
        Header, rule and one line per row; metric cells read ``mean ± SD [low, high]``.
    """
    header, body = _main_rows(rows)
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def _markdown(header: list[str], body: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(out) + "\n"


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _metric_fields(s: MetricSummary | None) -> list[str]:
    """The :data:`_FIELDS` of one metric; its interval as :func:`interval_fields` writes it."""
    if s is None or s.mean is None:
        return ["N/A", "", "", "", "", str(s.eligible if s else 0), str(s.excluded if s else 0)]
    return [_num(s.mean), _num(s.sd), *interval_fields(s.interval), str(s.eligible), str(s.excluded)]


_INCOMPLETE_HEADER = [
    "memory", "model", "user", "probe_id", "context", "attribute", "probe_kind", "repeat", "reason"
]
_FIELDS = ("mean", "sd", "ci_low", "ci_high", "ci_note", "eligible", "excluded")
"""Each metric's CSV fields: ``ci_note`` is ``n=U×R`` or ``n=U×R: no interval`` (with empty
bounds), as the tables print it (:func:`~mempa_tui.scoring._stats.interval_fields`)."""


def _write_csv(path: Path, header: list[str], rows: Iterable[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _scores_csv(path: Path, rows: Sequence[ConditionScores], diffs: Sequence[Difference] = (),
                health: HealthCell | None = None) -> Path:
    slug = {m: m.lower().replace("-", "_") for m in METRICS}
    header = ["memory", "memory_label", "model"]
    header += [f"{slug[m]}_{f}" for m in METRICS for f in _FIELDS]
    header += ["probes", "floored", "incomplete", *(["health"] if health else [])]
    diff_metrics = sorted({d.metric for d in diffs}, key=METRICS.index)
    header += [f"delta_{slug[m]}_{f}" for m in diff_metrics for f in ("point", "ci_low", "ci_high", "ci_note")]
    lookup = {(d.memory, d.model, d.metric): d for d in diffs}
    out = []
    for r in rows:
        cells = [r.memory, r.label, r.model]
        for m in METRICS:
            cells += _metric_fields(r.metric(m))
        cells += [str(r.probes), str(r.floored), str(r.incomplete), *([health(r)] if health else [])]
        for m in diff_metrics:
            d = lookup.get((r.memory, r.model, m))
            cells += ["", "", "", ""] if d is None else [
                _num(d.point), *(interval_fields(d.interval) if d.point is not None else ("", "", ""))
            ]
        out.append(cells)
    return _write_csv(path, header, out)


def _breakdown_section(title: str, rows: Sequence[ConditionScores], keys: list[str]) -> str:
    parts = [f"## {title}\n"]
    for metric in ("PSA", "BRS", "PRS"):
        cells: dict[tuple[str, str], dict[str, str]] = {}
        for r in rows:
            cells.setdefault((r.label, r.model), {})[r.breakdown or ""] = _cell(
                r.metric(metric), interval=False
            )
        body = [[label, model, *(c.get(k, "N/A") for k in keys)] for (label, model), c in cells.items()]
        unit = "%" if metric == "PSA" else "1-5"
        parts.append(f"### {metric} ({unit}, mean ± SD over repeats)\n")
        parts.append(_markdown(["Memory", "Model", *keys], body))
    return "\n".join(parts)


def _breakdown_csv(path: Path, rows: Sequence[ConditionScores], by: str) -> Path:
    header = ["memory", "memory_label", "model", by, "metric", *_FIELDS]
    out = [
        [r.memory, r.label, r.model, r.breakdown or "", m, *_metric_fields(r.metric(m))]
        for r in rows
        for m in ("PSA", "CS", "PET", "BRS", "PRS")
    ]
    return _write_csv(path, header, out)


def _defaults_section(defaults: BackboneDefaults) -> tuple[str, list[str], list[list[str]]]:
    models = defaults.models
    body = []
    for a in ATTRIBUTES:
        row = [a.dimension.value, a.name]
        for m in models:
            e = next((x for x in defaults.entries if x.model == m and x.attribute == a.key), None)
            row.append(
                "" if e is None else f"{e.setting} {e.share:.0f}% ({e.count}/{e.total})" + (" tie" if e.tied else "")
            )
        body.append(row)
    md = "## Backbone defaults under No Memory (Appendix G.3)\n\n" + _markdown(
        ["Dimension", "Attribute", *models], body
    )
    header = ["model", "attribute", "setting", "count", "total", "share", "tied"]
    csv_rows = [
        [e.model, e.attribute, e.setting, str(e.count), str(e.total), f"{e.share:.1f}", str(e.tied)]
        for e in defaults.entries
    ]
    return md, header, csv_rows


def write_reports(
    outcomes: Iterable[ProbeOutcome],
    folder: Path,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    no_memory: str = "none",
    validity: Sequence[str] | None = None,
    health: HealthCell | None = None,
    health_notes: Sequence[str] = (),
) -> ReportPaths:
    """Score the outcomes and write the report files into ``folder``.

    Writes ``report.md`` (every table) and ``main.csv``, ``pooled.csv`` (when it applies),
    ``dimensions.csv``, ``groups.csv``, ``defaults.csv`` (when No Memory outcomes exist) and
    ``incomplete.csv``.

    Args:
        outcomes: probe outcomes of any conditions and backbones.
        folder: output folder (created if missing).
        resamples / seed: bootstrap settings (5,000 resamples in the paper).
        no_memory: the No Memory condition's name.
        validity: the lines written under the main table on what its scores could reach without
            memory and the Oracle check (the runner's :func:`~mempa_tui.runner._validity.
            validity_lines`, which name runs); default :func:`~mempa_tui.scoring._validity.
            outcome_validity_lines` of the outcomes.
        health: each main row's memory Health cell (``BROKEN 1/1``...): adds a ``Health`` column
            to the main table of ``report.md`` and a ``health`` column to ``main.csv``, so a broken
            memory's row never reads as a valid score (None: no column, for outcomes without runs).
        health_notes: lines written under the main table (a broken run's reasons), as the terminal
            prints them under its table.

    Returns:
        The written paths.

    Raises:
        ValueError: no outcomes.
    """
    items = list(outcomes)
    if not items:
        raise ValueError("write_reports: no probe outcomes to report")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    found = backbone_defaults(items, no_memory=no_memory)
    defaults = found if found.entries else None
    main = score_conditions(items, defaults=defaults, no_memory=no_memory, resamples=resamples, seed=seed)
    models = {o.model for o in items}
    has_ref = any(o.memory == no_memory for o in items)
    md = ["# MemPABench results\n", "## Per memory condition and backbone\n"]
    md.append(
        "Cells: mean ± sample SD over repeats [95% cluster-bootstrap interval, "
        f"{resamples} resamples, seed {seed}]; {INTERVAL_LEGEND}. PSA, CS, PET, carry-over in %; "
        "BRS, PRS on 1-5.\n"
    )
    md.append(_markdown(*_main_rows(main, health)))
    if health_notes:
        md.append("\nMemory health and run notes:\n\n" + "".join(f"- {line}\n" for line in health_notes))
    notes = list(validity) if validity is not None else outcome_validity_lines(items)
    if notes:
        md.append("\n" + validity_section(notes))
    paths = ReportPaths(
        main_md=folder / "report.md",
        main_csv=_scores_csv(folder / "main.csv", main, health=health),
        dimensions_csv=folder / "dimensions.csv",
        groups_csv=folder / "groups.csv",
        incomplete_csv=folder / "incomplete.csv",
    )
    if len(models) > 1 or has_ref:
        pooled = score_conditions(
            items, pool_models=True, defaults=defaults, no_memory=no_memory, resamples=resamples, seed=seed
        )
        diffs = (
            differences_from(items, reference=no_memory, defaults=defaults, resamples=resamples, seed=seed)
            if has_ref
            else []
        )
        md.append(f"\n## Pooled over backbones; Δ from {condition_label(no_memory)}\n")
        header, body = _main_rows(pooled)
        for row, r in zip(body, pooled, strict=True):
            for m in ("PSA", "CS", "PET", "Carry-over"):
                d = next((x for x in diffs if x.memory == r.memory and x.metric == m), None)
                row.append("–" if d is None or d.point is None else d.formatted())
        md.append(_markdown(header + [f"Δ {m}" for m in ("PSA", "CS", "PET", "Carry-over")], body))
        paths.pooled_csv = _scores_csv(folder / "pooled.csv", pooled, diffs)
    dims = breakdown(items, "dimension")
    groups = breakdown(items, "group")
    md.append("\n" + _breakdown_section("By dimension", dims, [d.value for d in Dimension]))
    md.append("\n" + _breakdown_section("Reply vs action", groups, [g.value for g in RealizationGroup]))
    _breakdown_csv(paths.dimensions_csv, dims, "dimension")
    _breakdown_csv(paths.groups_csv, groups, "group")
    if defaults is not None:
        text, header, rows = _defaults_section(defaults)
        md.append("\n" + text)
        paths.defaults_csv = _write_csv(folder / "defaults.csv", header, rows)
    incomplete = [
        [o.memory, o.model, o.user, o.probe_id, o.context.value, o.attribute, o.probe_kind.value,
         str(o.repeat), o.reason or ""]
        for o in items
        if o.status is ProbeStatus.INCOMPLETE
    ]
    _write_csv(paths.incomplete_csv, _INCOMPLETE_HEADER, incomplete)
    md.append(f"\n## Incomplete probes (kept apart from every score): {len(incomplete)}\n")
    if incomplete:
        md.append(_markdown(_INCOMPLETE_HEADER, incomplete))
    paths.main_md.write_text("\n".join(md), encoding="utf-8")
    return paths
