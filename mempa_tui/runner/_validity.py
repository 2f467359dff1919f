"""The lines under every results table that say what its scores could reach without memory, and
whether they measure the memory or the model (issue 12, validity).

Built from :mod:`mempa_tui.scoring._validity` (pure, outcomes only) plus what only stored runs
know: which run a row comes from (constant choices are named per run), and where an Oracle run
of the same user, profile and tool offer is stored outside the table, or the command that plays
one. ``mempa results``, the end of ``mempa run``, the run's ``report.md``, exported reports and
the app's Results screen all print :func:`validity_lines`, so they say the same thing.

* The random-selection reference (paper Appendix A.1; Section 5, Finding 1).
* A fixed-choice ceiling, when every final probe of an attribute has one target (a PA that
  always picks it scores PSA and CS 100 with no memory), and each run whose PA did pick one
  setting in every probe of an attribute.
* The Oracle check (paper Table 2: Oracle PSA 96.4-100; :data:`~mempa_tui.scoring._validity.
  ORACLE_FLOOR`), or the command that runs Oracle when no Oracle run is stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mempa_tui.runner.report import backbone_label, memory_label, outcome_of
from mempa_tui.scoring import ProbeOutcome
from mempa_tui.scoring._validity import ORACLE_PAPER_RANGE, oracle_checks, outcome_validity_lines
from mempa_tui.store import RunRecord, RunStore, StepRecord

__all__ = ["judges_line", "oracle_command", "validity_lines"]


def _config(run: RunRecord) -> dict[str, Any]:
    try:
        data = json.loads(run.config_json)
    except (json.JSONDecodeError, AttributeError):
        return {}
    return data if isinstance(data, dict) else {}


def oracle_command(run: RunRecord) -> str:
    """The command line that plays the Oracle condition on ``run``'s user, profile, seed,
    timeline and repeats (it probes from the File memory donor, as No Memory does).

    Returns:
        e.g. ``mempa run --user A --quick --memory oracle --model embedded --repeats 1``.
    """
    config = _config(run)
    flag = " --quick" if config.get("quick") else " --slice" if config.get("slice") else ""
    seed = f" --seed {run.seed}" if run.seed else ""
    repeats = config.get("repeats")
    times = f" --repeats {repeats}" if isinstance(repeats, int) and repeats != 3 else ""
    return f"mempa run --user {run.user}{flag} --memory oracle --model {run.profile}{seed}{times}"


def _model_name(spec: object) -> str | None:
    """``openai/qwen2.5-coder-0.5b-instruct temperature=0.0 ...`` (a run's ``profile_models``
    entry) -> ``qwen2.5-coder-0.5b-instruct``; None when missing."""
    if not isinstance(spec, str) or not spec.strip():
        return None
    return spec.split(" ", 1)[0].removeprefix("openai/")


def _size(alias: str) -> str:
    """``qwen2.5-coder-0.5b-instruct`` -> ``0.5B`` (the parameter count in a packaged alias)."""
    return next((part.upper() for part in alias.split("-") if part[:-1].replace(".", "").isdigit()
                 and part.endswith("b")), alias)


def judges_line(runs: Sequence[RunRecord]) -> str | None:
    """Who gave the table's BRS and PRS (finding 3), from each run's recorded ``profile_models``:
    the judge role gives BRS, the simulated user (its ``simulator`` role, without its memory) gives
    PRS (paper Section 3.5). The paper's BRS comes from a large judge checked against a second
    judge (Appendix H); when either is a packaged embedded model (0.5B / 1.5B,
    :data:`~mempa_tui.llm.embedded.MODELS`), the line says its BRS/PRS are unvalidated.

    Returns:
        One line, or None when no run recorded its models.
    """
    from mempa_tui.llm.embedded import MODELS

    pairs: dict[tuple[str, str], None] = {}
    for run in runs:
        models = _config(run).get("profile_models")
        if not isinstance(models, dict):
            continue
        judge, rater = _model_name(models.get("judge")), _model_name(models.get("simulator"))
        if judge or rater:
            pairs[(judge or "not recorded", rater or "not recorded")] = None
    if not pairs:
        return None
    who = "; ".join(f"BRS judged by {j}, PRS rated by the simulated user on {r}" for j, r in pairs)
    line = f"{who}; the paper's BRS comes from a large judge checked against a second judge (Appendix H)"
    roles = [role for role, i in (("judge", 0), ("rater", 1)) if any(pair[i] in MODELS for pair in pairs)]
    if roles:
        sizes = " / ".join(dict.fromkeys(_size(m) for pair in pairs for m in pair if m in MODELS))
        line += (f". The {' and '.join(roles)} {'is a' if len(roles) == 1 else 'are'} packaged embedded "
                 f"model{'s' if len(roles) > 1 else ''} ({sizes}): these BRS/PRS are unvalidated, do not "
                 "compare them with the paper's")
    return line


async def validity_lines(store: RunStore, runs: Sequence[RunRecord], outcomes: Sequence[ProbeOutcome]) -> list[str]:
    """Every validity line of one results table (see the module docstring).

    When the table holds no Oracle run for a (user, model) it shows, a stored Oracle run of the
    same user, profile, timeline (whole, slice, quick start) and tool offer is checked instead and
    named as outside the table; without one, the line gives the command that plays it.

    Args:
        store: the open run store (searched for Oracle runs outside the table).
        runs: the table's runs.
        outcomes: the table's probe outcomes (of ``runs``).

    Returns:
        The lines, in print order; empty without outcomes.
    """
    run_of = {(memory_label(r), backbone_label(r), r.user): r.id for r in runs}
    # an Oracle run still playing or stopped gets no verdict from the few probes it has (finding 9)
    planned = {(backbone_label(r), r.user): r.total_probes for r in runs if r.memory == "oracle" and r.total_probes}
    lines = outcome_validity_lines(outcomes, run_of, planned)
    if not lines:
        return lines
    covered = {(o.model, o.user) for o in outcomes if o.memory == "oracle"}
    shown = {(o.model, o.user) for o in outcomes}
    everything = None
    for run in runs:
        key = (backbone_label(run), run.user)
        if key in covered or key not in shown:
            continue
        covered.add(key)  # one line per user and model, whatever the number of its runs
        if everything is None:
            everything = await store.list_runs()
        mine = _config(run)
        found = [r for r in everything if r.memory == "oracle" and "~" not in r.id and r.user == run.user
                 and r.profile == run.profile and backbone_label(r) == key[0]
                 and bool(_config(r).get("quick")) == bool(mine.get("quick"))
                 and bool(_config(r).get("slice")) == bool(mine.get("slice"))
                 and _config(r).get("offered_tool_domains") == mine.get("offered_tool_domains")]
        checks = []
        for other in found:
            stored = [outcome_of(p, other) for p in await store.probe_results(other.id)]
            total = {(backbone_label(other), other.user): other.total_probes} if other.total_probes else None
            checks += [(other.id, c) for c in oracle_checks(stored, planned=total)]
        if checks:
            lines += [f"{rid} (stored, not in this table): {c.text()}" for rid, c in checks]
        else:
            lines.append(f"no Oracle run for user {run.user} on {key[0]}: `{oracle_command(run)}` measures whether "
                         f"this model applies a setting it is handed (the paper's Oracle PSA: {ORACLE_PAPER_RANGE}, "
                         "Table 2), which says whether differences here can be the memory's")
    for run in runs:
        if run.memory in ("none", "oracle"):
            continue  # no steps of its own: its donor's line says it
        discarded = discarded_line(run.id, await store.steps(run.id))
        if discarded:
            lines.append(discarded)
    judges = judges_line(runs)
    if judges:
        lines.append(judges)
    return lines


def discarded_line(run_id: str, steps: Sequence[StepRecord]) -> str | None:
    """``R-file-...: 2 of 3 timeline steps discarded (A-S51, A-S14: invalid); its memory learned
    from the other 1 and its probes ran on that`` for a run with discarded steps, else None.

    A timeline step that ended ``invalid`` or ``failed`` after its replays is dropped (paper
    Appendix D.4: a turn that fails its checks after the rewrites makes the session invalid), so
    the memory never saw it; the run still probes, and its Health can read ok. On the packaged
    1.5B simulated user both quick-start sessions ended so (issue 12), and the table's row then
    compares a memory of one change event, which it must say.

    Args:
        run_id: the run.
        steps: its stored steps (:meth:`~mempa_tui.store.RunStore.steps`).
    """
    dropped = [s for s in steps if s.status in ("invalid", "failed")]
    if not dropped:
        return None
    kinds = sorted({s.status for s in dropped})
    kept = len(steps) - len(dropped)
    return (f"{run_id}: {len(dropped)} of {len(steps)} timeline steps discarded "
            f"({', '.join(s.step_id for s in dropped)}: {' / '.join(kinds)}); its memory learned from the "
            f"other {kept} and its probes ran on that, so its row is not the condition's over the timeline")
