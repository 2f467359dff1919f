"""Paper-style figures of a results table (SPEC 4.9 "and plots"; paper Section 5, Figures 6-8 and
Table 13), drawn with matplotlib's Agg backend (no display) as PNG and SVG.

The figures draw the numbers the results table already holds - :class:`ConditionScores` rows from
:func:`~mempa_tui.scoring.score_conditions` / :func:`~mempa_tui.scoring.breakdown` with their 95 %
cluster-bootstrap intervals (paper Appendix F.3) - and compute nothing of their own:

* ``headline``: PSA, CS, PET (%) and BRS, PRS (1-5) per memory condition, one panel each;
* ``dimensions``: PSA per dimension of the taxonomy and condition (paper Figure 8, Table 14);
* ``carry_over``: the carry-over share per condition (paper Table 13; needs No Memory outcomes
  for the backbone defaults, else the figure says so).

Error bars are the rows' intervals; a row without an interval gets a bar without one. A row the
table marks (a BROKEN memory, a row that pools other users or probes) is drawn hatched and named
in a note under the figure, so it is never read as an ordinary bar.

matplotlib is an optional dependency (``pip install -e ".[plot]"``); :func:`require_matplotlib`
raises :class:`PlotUnavailable` naming that command when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempa_tui.scoring._metrics import ConditionScores
from mempa_tui.scoring._stats import MetricSummary
from mempa_tui.taxonomy import Dimension

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURE_NAMES", "INSTALL_HINT", "PlotUnavailable", "require_matplotlib", "write_figures"]

INSTALL_HINT = 'pip install -e ".[plot]"'
"""The command that installs matplotlib (the ``plot`` extra)."""

FIGURE_NAMES = ("headline", "dimensions", "carry_over")
"""The figures :func:`write_figures` writes, each as ``<name>.png`` and ``<name>.svg``."""

_HEADLINE = ("PSA", "CS", "PET", "BRS", "PRS")
_HATCH = "///"


class PlotUnavailable(ImportError):
    """matplotlib is not installed; the message names :data:`INSTALL_HINT`."""


def require_matplotlib() -> Any:
    """Import matplotlib and return the module. Figures are drawn on ``matplotlib.figure.Figure``
    objects saved through the Agg canvas: no pyplot, no display, no global figure state.

    Raises:
        PlotUnavailable: matplotlib cannot be imported.
    """
    try:
        import matplotlib
        import matplotlib.figure  # noqa: F401 - the Figure class used below
    except ImportError as exc:
        raise PlotUnavailable(f"plotting needs matplotlib, which is not installed: run `{INSTALL_HINT}`") from exc
    return matplotlib


def _label(row: ConditionScores, models: int) -> str:
    return row.label if models <= 1 else f"{row.label}\n{row.model}"


def _bar(summary: MetricSummary | None) -> tuple[float | None, tuple[float, float] | None]:
    """(mean, (minus, plus) error) of one summary; None where N/A or without an interval."""
    if summary is None or summary.mean is None:
        return None, None
    iv = summary.interval
    if iv is None or iv.low is None or iv.high is None:
        return summary.mean, None
    return summary.mean, (max(0.0, summary.mean - iv.low), max(0.0, iv.high - summary.mean))


def _limits(metric: str) -> tuple[float, float]:
    return (1.0, 5.0) if metric in ("BRS", "PRS") else (0.0, 100.0)


def _draw_bars(ax: Any, xs: Sequence[float], summaries: Sequence[MetricSummary | None], *, width: float,
               color: Any, hatched: Sequence[bool], label: str | None = None) -> None:
    """One bar per summary at ``xs`` with its interval as an error bar; N/A is written, not drawn."""
    low = ax.get_ylim()[0]
    for i, (x, summary) in enumerate(zip(xs, summaries, strict=True)):
        mean, err = _bar(summary)
        if mean is None:
            ax.text(x, low, "N/A", ha="center", va="bottom", fontsize=7, rotation=90)
            continue
        ax.bar(x, mean - low, width, bottom=low, color=color, edgecolor="black", linewidth=0.6,
               hatch=_HATCH if hatched[i] else None, label=label if i == 0 else None)
        ax.text(x, mean, f"{mean:.1f}" if summary.unit == "%" else f"{mean:.2f}",  # type: ignore[union-attr]
                ha="center", va="bottom", fontsize=6)
        if err is not None:
            ax.errorbar(x, mean, yerr=[[err[0]], [err[1]]], fmt="none", ecolor="black", capsize=3, linewidth=0.9)


def _note(fig: Figure, marked: Mapping[str, str]) -> None:
    if marked:
        lines = [f"hatched ({_HATCH}): {name} - {why}" for name, why in marked.items()]
        fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, va="bottom", ha="left")


def _save(fig: Figure, folder: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = folder / f"{name}.{ext}"
        fig.savefig(path, format=ext, dpi=150, metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    return paths


def write_figures(
    rows: Sequence[ConditionScores], dimension_rows: Sequence[ConditionScores], folder: Path, *,
    mark: Callable[[ConditionScores], str | None] | None = None, title: str = "",
) -> list[Path]:
    """Write the three figures of the module docstring into ``folder`` as PNG and SVG.

    Args:
        rows: one row per memory condition and model, with intervals (``score_conditions(...,
            intervals=True)``, as the exported report computes them); carry-over where known.
        dimension_rows: the same outcomes by dimension (``breakdown(..., "dimension",
            intervals=True)``); rows are matched to ``rows`` by (memory, model).
        folder: created if missing.
        mark: row -> why the table marks it (``BROKEN memory``, ``pools other users...``) or None;
            marked rows are hatched and named under each figure.
        title: a line over each figure (e.g. the timeline kind).

    Returns:
        The written paths, ``headline``, ``dimensions``, ``carry_over``, each ``.png`` then ``.svg``.

    Raises:
        PlotUnavailable: matplotlib is missing.
        ValueError: no rows.
        OSError: the folder cannot be written.
    """
    if not rows:
        raise ValueError("no results rows to plot: finish a run's probes first")
    mpl = require_matplotlib()
    # text stays text in the SVG (searchable, no glyph paths); a fixed salt keeps SVG ids stable
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mempa"}):
        return _write(mpl, rows, dimension_rows, Path(folder), mark, title)


def _write(mpl: Any, rows: Sequence[ConditionScores], dimension_rows: Sequence[ConditionScores], folder: Path,
           mark: Callable[[ConditionScores], str | None] | None, title: str) -> list[Path]:
    from matplotlib.figure import Figure

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    models = len({r.model for r in rows})
    labels = [_label(r, models) for r in rows]
    why = [(mark(r) if mark else None) for r in rows]
    hatched = [w is not None for w in why]
    marked = {lab.replace("\n", " "): w for lab, w in zip(labels, why, strict=True) if w is not None}
    colors = mpl.colormaps["tab10"]
    written: list[Path] = []
    suffix = f" - {title}" if title else ""

    # (a) headline metrics, one panel per metric
    fig = Figure(figsize=(3.0 * len(_HEADLINE), 4.2 + 0.15 * len(marked)))
    axes = fig.subplots(1, len(_HEADLINE))
    xs = list(range(len(rows)))
    for ax, metric in zip(axes, _HEADLINE, strict=True):
        ax.set_ylim(*_limits(metric))
        for i, row in enumerate(rows):
            _draw_bars(ax, [xs[i]], [row.metric(metric)], width=0.7, color=colors(i % 10), hatched=[hatched[i]])
        unit = "1-5" if metric in ("BRS", "PRS") else "%"
        ax.set_title(f"{metric} ({unit})")
        ax.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
        ax.set_xlim(-0.6, len(rows) - 0.4)
    fig.suptitle("Scores per memory condition, 95% cluster-bootstrap intervals" + suffix, fontsize=10)
    fig.tight_layout(rect=(0, 0.04 + 0.03 * len(marked), 1, 1))
    _note(fig, marked)
    written += _save(fig, folder, "headline")

    # (b) PSA per dimension, grouped by dimension, one bar per condition row
    dims = [d.value for d in Dimension]
    by_row = {(r.memory, r.model, r.breakdown): r for r in dimension_rows}
    fig = Figure(figsize=(2.2 * len(dims) + 2, 4.6 + 0.15 * len(marked)))
    ax = fig.subplots()
    ax.set_ylim(0, 100)
    width = 0.8 / len(rows)
    for i, row in enumerate(rows):
        summaries = [(by_row[(row.memory, row.model, d)].psa if (row.memory, row.model, d) in by_row else None)
                     for d in dims]
        offsets = [j - 0.4 + width * (i + 0.5) for j in range(len(dims))]
        _draw_bars(ax, offsets, summaries, width=width, color=colors(i % 10), hatched=[hatched[i]] * len(dims),
                   label=labels[i].replace("\n", " "))
    ax.set_xticks(range(len(dims)), dims, fontsize=8)
    ax.set_xlim(-0.5, len(dims) - 0.5)
    ax.set_ylabel("PSA (%)")
    ax.set_title("PSA per dimension and memory condition, 95% intervals" + suffix, fontsize=10)
    if ax.get_legend_handles_labels()[0]:  # no bar at all (no dimension rows): no empty legend
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout(rect=(0, 0.04 + 0.03 * len(marked), 1, 1))
    _note(fig, marked)
    written += _save(fig, folder, "dimensions")

    # (c) carry-over per condition
    fig = Figure(figsize=(max(4.0, 1.1 * len(rows) + 2), 4.2 + 0.15 * len(marked)))
    ax = fig.subplots()
    ax.set_ylim(0, 100)
    for i, row in enumerate(rows):
        _draw_bars(ax, [xs[i]], [row.carry_over], width=0.7, color=colors(i % 10), hatched=[hatched[i]])
    ax.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel("carry-over (% of CS pair instances)")
    ax.set_title("Carry-over per memory condition, 95% intervals" + suffix, fontsize=10)
    if all(r.carry_over is None or r.carry_over.mean is None for r in rows):
        ax.text(0.5, 0.5, "no carry-over: it needs CS pairs and\n"
                "a No Memory run of the same model", transform=ax.transAxes,
                ha="center", va="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.04 + 0.03 * len(marked), 1, 1))
    _note(fig, marked)
    written += _save(fig, folder, "carry_over")
    return written
