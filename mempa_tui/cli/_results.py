"""``mempa results``: stored runs side by side (paper Tables 1-3 and 13; SPEC 4.9), also printed at
the end of a multi-condition ``mempa run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mempa_tui.cli._commands import _need_database
from mempa_tui.cli._errors import UserError, unwritable
from mempa_tui.cli._run import database_path

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from mempa_tui.runner._results import Grouping
    from mempa_tui.scoring import ConditionScores, ProbeOutcome
    from mempa_tui.store import RunStore

__all__ = ["cmd_results", "print_results"]


async def print_results(
    store: RunStore, run_ids: Sequence[str], out: TextIO, *, by: Grouping = "condition",
    resamples: int = 5000, export_to: Path | None = None, named: bool = True, plot_to: Path | None = None,
) -> bool:
    """Print the side-by-side table of ``run_ids`` and each condition's difference from No Memory.

    Shared by ``mempa results`` and a multi-condition ``mempa run``. Runs are split by the kind of
    timeline they played (whole or quick-start slice: one table each, never mixed), and a table
    holds one run per user, condition and model (see
    :func:`~mempa_tui.runner._results.comparable_groups`). Rows are means ± sample SD over repeats
    (paper Table 1; the intervals are in the exported report); differences from No Memory are
    paired over the probe repeats both runs hold, with 95 % cluster-bootstrap intervals (Table 13).

    Args:
        store: the open run store.
        run_ids: the runs (each must exist).
        out: where to print.
        by: the grouping of the rows.
        resamples: bootstrap resamples.
        export_to: also write the Markdown and CSV tables (one folder per table) under this folder.
        named: the user named the runs (colliding runs are then an error, not left out).
        plot_to: also write the figures of :mod:`mempa_tui.scoring.plot` into this folder (one
            subfolder per table when runs are split by timeline kind).

    Returns:
        False when none of the runs has a probe result yet.

    Raises:
        UserError: named runs that cannot share a table (same user, condition and model), or
            ``plot_to`` without matplotlib or not writable.
    """
    from mempa_tui.runner._results import (
        comparable_groups,
        differences_text,
        export_results,
        paired_differences,
        partial_runs,
        results_rows,
        results_text,
        stored_outcomes,
    )
    from mempa_tui.runner._settings import donor_mismatches, settings_lines
    from mempa_tui.runner._validity import validity_lines
    from mempa_tui.scoring._report import VALIDITY_HEADING
    from mempa_tui.runner._health import row_annotations, runs_health, runs_pa_repeats
    from mempa_tui.memory import CONDITION_SOURCES, source_notes
    from mempa_tui.scoring import INTERVAL_LEGEND, condition_label

    records = {r.id: r for r in await store.list_runs()}
    try:
        groups = comparable_groups([records[i] for i in dict.fromkeys(run_ids)], named=named)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    partial = {line.split(" ", 1)[0]: line for line in await partial_runs(store)}
    shown = False
    for group in groups:
        outcomes = await stored_outcomes(store, group.run_ids)
        heading = f"{group.timeline} runs" if len(groups) > 1 else ""
        if heading:
            print(("\n" if shown else "") + f"== {heading} ==", file=out)
        if group.left_out:
            print("left out (a completed, lower-seed or newer run holds the same user, condition and model; "
                  "name runs to choose): " + ", ".join(group.left_out), file=out)
        if not outcomes:
            print(f"no probe results yet in {', '.join(group.run_ids)}; nothing to compare", file=out)
            continue
        shown = True
        rows = results_rows(outcomes, by)
        group_runs = [records[i] for i in group.run_ids]
        notes = row_annotations(group_runs, await runs_health(store, group_runs), outcomes, by=by,
                                repeats=await runs_pa_repeats(store, group_runs))
        print(results_text(rows, by, notes.columns()), file=out)
        for note in notes.notes:
            print(f"  {note}", file=out)
        validity = await validity_lines(store, group_runs, outcomes)  # chance, fixed choices, Oracle (issue 12)
        if validity:
            print(f"\n{VALIDITY_HEADING}:\n" + "\n".join(f"  {line}" for line in validity), file=out)
        settings = settings_lines([records[i] for i in group.run_ids], list(records.values()))  # issue 11.4
        print("\nrun settings (donor, File memory thresholds, decoding):\n"
              + "\n".join(f"  {line}" for line in settings), file=out)
        for line in donor_mismatches([records[i] for i in group.run_ids]):
            print(f"  warning: {line}", file=out)
        conditions = {o.memory for o in outcomes}
        sources = source_notes([m for m in CONDITION_SOURCES if m in conditions])  # sources, ours, substitutions
        if sources:
            print("\nConditions (source; what running offline substitutes):\n" + "\n".join(f"  {n}" for n in sources),
                  file=out)
        if "none" in conditions and len(conditions) > 1:
            diffs, dropped = paired_differences(outcomes, resamples=resamples)
            if diffs:
                print("\nDifference from No Memory (percentage points; paired over the same probes and "
                      "repeats, 95% cluster-bootstrap interval):", file=out)
                print(differences_text(diffs), file=out)
                print(f"  {INTERVAL_LEGEND}", file=out)
                if any(cell.startswith("BROKEN") for cell in notes.health.values()):
                    print("  (a condition marked BROKEN above has a broken memory: its difference is not the "
                          "condition's)", file=out)
            for memory, count in dropped.items():
                if count:
                    print(f"  {condition_label(memory)}: {count} probe repeat(s) without a No Memory "
                          "counterpart left out of its difference", file=out)
        elif len(conditions) > 1:
            print("\n(no No Memory run among these, so no differences from it; add one with "
                  "`mempa run --memory none ...`)", file=out)
        waiting = [partial[i] for i in group.run_ids if i in partial]
        if waiting:
            print("\nnot every probe is stored yet for: " + "; ".join(waiting), file=out)
        if export_to is not None:
            try:
                exported = export_results(outcomes, export_to, by=by, resamples=resamples, settings=settings,
                                          extra=notes.columns(), validity=validity, notes=notes.notes)
            except OSError as exc:
                raise unwritable(exc, "the exported tables") from exc
            print(f"\nexported: {exported.report.main_md} (with intervals; CSV tables in {exported.folder})",
                  file=out)
        if plot_to is not None:
            folder = plot_to / _slug(group.timeline) if len(groups) > 1 else plot_to
            for path in _plot(outcomes, folder, notes.columns(), resamples=resamples, title=heading):
                print(f"figure: {path}", file=out)
    return shown


async def cmd_results(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``mempa results``: the side-by-side table of stored runs (all, or those named)."""
    from mempa_tui.runner._pooling import is_play
    from mempa_tui.store import RunStore

    out = out or sys.stdout
    plot_to = Path(args.plot) if getattr(args, "plot", None) else None
    if plot_to is not None:  # before any work: a missing matplotlib is a usage problem (exit 2)
        from mempa_tui.scoring.plot import PlotUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except PlotUnavailable as exc:
            raise UserError(str(exc)) from None
    async with RunStore(_need_database(args.saves)) as store:
        runs = await store.list_runs()
        known = [r.id for r in runs]
        missing = [r for r in args.run_ids if r not in known]
        if missing:
            raise UserError(f"no run {', '.join(map(repr, missing))} in {database_path(args.saves)}"
                            + (f" (runs: {', '.join(known)})" if known else ""))
        chosen = list(args.run_ids) or [r.id for r in runs if "~" not in r.id and (args.plays or not is_play(r.id))]
        plays = [r.id for r in runs if is_play(r.id)]
        if plays and not args.run_ids and not args.plays:
            print(f"not shown: {len(plays)} play(s) (a person in a seat; --plays to include them)", file=out)
        archived = [r.id for r in runs if "~" in r.id and (not args.user or r.user in {u.upper() for u in args.user})]
        if archived and not args.run_ids:
            print(f"not shown: {len(archived)} archived run(s) (moved aside by --fresh; name one, "
                  f"without the run that replaced it, to see its scores): {', '.join(archived)}", file=out)
        if args.user:
            users = {u.upper() for u in args.user}
            stored_users = sorted({r.user for r in runs})
            unknown = sorted(users - set(stored_users))
            if unknown:  # finding 13: a typo read as "no runs to compare" (exit 1), not as a wrong user
                raise UserError(f"unknown user {', '.join(map(repr, unknown))}: no stored run in "
                                f"{database_path(args.saves)} is of that user"
                                + (f" (users with stored runs: {', '.join(stored_users)})" if stored_users else ""))
            chosen = [r.id for r in runs if r.id in chosen and r.user in users]
        if not chosen:
            print("no runs to compare" + (f" for user {', '.join(args.user)}" if args.user else ""), file=out)
            return 1
        ok = await print_results(store, chosen, out, by=args.by, resamples=args.resamples,
                                 export_to=_export_folder(args),
                                 named=bool(args.run_ids), plot_to=plot_to)
    return 0 if ok else 1


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


def _plot(outcomes: Sequence[ProbeOutcome], folder: Path, columns: Mapping[str, Callable[[ConditionScores], str]],
          *, resamples: int, title: str) -> list[Path]:
    """Write one table's figures (:func:`mempa_tui.scoring.plot.write_figures`) from the rows the
    table shows, with the intervals the exported report computes; rows the table marks in its
    ``Health`` (BROKEN) or ``Covers`` (``*``: pools other users, probes or repeats) columns are
    hatched in the figures."""
    from mempa_tui.runner._results import results_rows
    from mempa_tui.scoring.plot import PlotUnavailable, write_figures

    health, covers = columns["Health"], columns["Covers"]

    def mark(row: ConditionScores) -> str | None:
        why = []
        if health(row).startswith("BROKEN"):
            why.append(f"memory {health(row)} (see the table's notes): not the condition's score")
        if covers(row).endswith("*"):
            why.append(f"covers {covers(row).rstrip(' *')}: other users, probes or repeats than the other rows")
        return "; ".join(why) or None

    rows = results_rows(outcomes, "condition", intervals=True, resamples=resamples)
    dims = results_rows(outcomes, "dimension", intervals=True, resamples=resamples)
    try:
        return write_figures(rows, dims, folder, mark=mark, title=title)
    except PlotUnavailable as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        where = f" to {exc.filename}" if exc.filename else ""
        raise UserError(f"cannot write the figures{where} ({exc.strerror or exc}); pass --plot DIR with a "
                        "folder you can write to") from exc


def _export_folder(args: argparse.Namespace) -> Path | None:
    """Where ``mempa results`` exports: ``--out``, else the saves folder with ``--export``, else nowhere."""
    if args.out:
        return Path(args.out)
    return Path(args.saves) if args.export else None
