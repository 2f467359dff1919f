"""From stored probe results to the run's report (paper Section 3.5, Appendix F.2; SPEC 4.9).

Used at the end of a run and by ``mempa report RUN``: the store's probe rows become
:class:`~mempa_tui.scoring.ProbeOutcome` values, scoring writes ``saves/<run_id>/report.md`` and
its CSV tables, and the printed table is returned for the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from mempa_tui.runner._scoring import matrix_differing
from mempa_tui.runner._settings import settings_lines
from mempa_tui.scoring import ProbeOutcome, ProbeStatus, score_conditions
from mempa_tui.scoring._report import VALIDITY_HEADING, ReportPaths, format_table, write_reports
from mempa_tui.scripts._yamldoc import WorldFileError
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.store import ProbeResultRecord, RunRecord, RunStore, StoreError

__all__ = ["RunReport", "backbone_label", "last_memory_stats", "memory_label", "outcome_of", "write_run_report"]


class RunReport(BaseModel):
    """A written report."""

    run_id: str
    """The run."""
    paths: ReportPaths
    """Files written (``report.md``, ``main.csv``, ...)."""
    table: str
    """The main table as printed text."""
    outcomes: int
    """Probe outcomes scored."""
    memory_stats: dict[str, float] = {}
    """The memory's counters after the last settled timeline step (``inspect().stats``: turns
    written, duplicates, Mem0-style extraction and decision failures ...); empty for runs stored
    before the counters were recorded."""


def backbone_label(run: RunRecord) -> str:
    """The model label of a run's rows: ``<PA model> (<profile>)``, else the profile name.

    The paper's Model column is the PA backbone; the profile is added because two profiles can
    share the PA model and differ in the simulator, judge or memory model, and their runs must
    not share a row or a No Memory reference.
    """
    try:
        models = json.loads(run.config_json).get("profile_models") or {}
    except (json.JSONDecodeError, AttributeError):
        models = {}
    pa = models.get("pa") if isinstance(models, dict) else None
    return f"{str(pa).split(' ', 1)[0]} ({run.profile})" if pa else run.profile


def memory_label(run: RunRecord) -> str:
    """The memory column of a run's rows: the condition's name, or for a plugin (issue 17) its
    ``<import path> <version>`` as recorded when the run was configured (``memory_version``)."""
    try:
        version = json.loads(run.config_json).get("memory_version")
    except (json.JSONDecodeError, AttributeError):
        version = None
    return version if isinstance(version, str) and version else run.memory


_STATUS = {"completed": ProbeStatus.COMPLETED, "floored": ProbeStatus.FLOORED}


def outcome_of(record: ProbeResultRecord, run: RunRecord) -> ProbeOutcome:
    """One stored probe result as a scoring outcome.

    ``completed`` and ``floored`` keep their status; ``invalid`` and ``failed`` runs (the
    simulator broke, the harness failed, the prompt did not fit the window) are ``incomplete``:
    kept apart, never scored as zero (Appendix F.2). ``differs_in_matrix`` comes from the user's
    preference matrix in the run's worlds folder (CS's set D, Section 3.5); when that folder
    cannot be read (moved, or results read from another folder) it is None, so CS and carry-over
    read N/A for the run while its other scores stand.
    """
    status = _STATUS.get(record.status, ProbeStatus.INCOMPLETE)
    try:
        worlds_dir = json.loads(run.config_json).get("worlds_dir") or "worlds"
    except (json.JSONDecodeError, AttributeError):
        worlds_dir = "worlds"
    try:
        differing: frozenset[str] | None = matrix_differing(worlds_dir, run.user)
    except WorldFileError:
        # The run's worlds folder moved or is not here (a copied saves folder, another working
        # folder): CS and carry-over read N/A for this run rather than refusing every other score.
        differing = None
    return ProbeOutcome(
        user=run.user, context=record.context, attribute=record.attribute,  # type: ignore[arg-type]
        probe_kind=ProbeKind(record.kind), repeat=record.repeat, target=record.target,
        selection=record.selection, status=status, brs=record.brs, prs=record.prs,
        memory=memory_label(run), model=backbone_label(run), probe_id=record.probe_id,
        reason=record.reason if status is not ProbeStatus.COMPLETED else None,
        differs_in_matrix=None if differing is None else record.attribute in differing,
    )


async def write_run_report(
    store: RunStore, run_id: str, reports_root: Path, *, resamples: int = 5000
) -> RunReport | None:
    """Score a run's stored probe results and write its report folder.

    Args:
        store: the open run store.
        run_id: the run.
        reports_root: parent of the per-run folders (``saves``); files go to
            ``<reports_root>/<run_id>/``.
        resamples: bootstrap resamples (paper: 5,000).

    Returns:
        The report, or None when the run has no probe results yet.

    Raises:
        StoreError: no such run.
    """
    run = await store.get_run(run_id)
    if run is None:
        raise StoreError(f"no run {run_id!r} in {store.path}")
    outcomes = [outcome_of(r, run) for r in await store.probe_results(run_id)]
    if not outcomes:
        return None
    folder = Path(reports_root) / run_id
    from mempa_tui.runner._validity import validity_lines

    validity = await validity_lines(store, [run], outcomes)  # chance, fixed choices, Oracle (issue 12)
    from mempa_tui.runner._health import row_annotations, run_health

    # the memory's Health as the terminal prints it (a BROKEN File memory must not read as a valid
    # PSA 100 in the written report); the coverage note of one run says nothing, so it is left out
    annotations = row_annotations([run], {run.id: await run_health(store, run)}, outcomes)
    broken = [n for n in annotations.notes if n.startswith("BROKEN")]
    paths = write_reports(outcomes, folder, resamples=resamples, validity=validity,
                          health=annotations.columns()["Health"], health_notes=broken)
    rows = score_conditions(outcomes, resamples=resamples)
    table = format_table(rows)
    if run.memory != "none" and all(r.carry_over is None for r in rows):
        table += ("\nCarry-over is N/A in a one-run report: it compares with the model's No Memory answers "
                  "(Appendix F.3); `mempa results` computes it with this user and model's No Memory run.")
    if validity:
        table += f"\n{VALIDITY_HEADING}:" + "".join(f"\n  {line}" for line in validity)
    donor = await store.get_run(run.donor_run) if run.donor_run else None
    # donor, File memory thresholds, decoding (issue 11.4), then a quick start's smaller tool offer
    # (issue 12.2): every line settings_lines gives, as `mempa results` prints them
    settings, *more = [line.split(": ", 1)[1] for line in settings_lines([run], [donor] if donor is not None else [])]
    table += f"\nRun settings: {settings}" + "".join(f"\nRun settings: {line}" for line in more)
    from mempa_tui.runner._health import run_pa_repeats

    repeats = await run_pa_repeats(store, run)  # a warning of the PA's own (issue 12)
    if repeats.any:
        table += f"\nRun problem: {repeats.text()}"
    with paths.main_md.open("a", encoding="utf-8") as fh:
        fh.write("\n## Run settings\n\n" + "\n\n".join([settings, *more]) + "\n")
        if repeats.any:
            fh.write(f"\n## Run problems\n\n{repeats.text()}\n")
    return RunReport(run_id=run_id, paths=paths, table=table, outcomes=len(outcomes),
                     memory_stats=await last_memory_stats(store, run_id))


async def last_memory_stats(store: RunStore, run_id: str) -> dict[str, float]:
    """The memory counters stored with the run's last settled timeline step (SPEC 4.7).

    Returns:
        Counter name -> value; empty when no step carries counters (no step yet, a memory
        without counters, or a run stored before they were recorded).

    Raises:
        StoreError: a step's stored result is not readable JSON.
    """
    for step in reversed(await store.steps(run_id, with_results=True)):
        if not step.result_json:
            continue
        try:
            stats = json.loads(step.result_json).get("memory_stats") or {}
        except json.JSONDecodeError as exc:
            raise StoreError(f"run {run_id!r} step {step.step_id}: stored result is not JSON ({exc})") from exc
        if stats:
            return {str(k): float(v) for k, v in stats.items()}
    return {}
