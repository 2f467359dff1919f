"""The settings line of a run: its donor, File memory's thresholds and the decoding in use.

Shown in a run's header and under every results table (issue 11.4), so a number is never read
without what produced it: which File memory run the reference conditions probed from (paper
Section 4, 'Reference Condition Runs'), the consolidation thresholds (Section 4; scaled to the
window or the paper's 20k -> 10k), and per role the temperature and reply budget (Section 4:
PA 0.7 with 8,192 tokens, simulator 0, a deterministic judge), with the LLM message checker switch
(Section 4, 'Live review').

Everything is read from the run's stored configuration, so a table of old runs shows what they
were played with, not what the profile says today.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mempa_tui.runner.config import offered_tools_text
from mempa_tui.store import RunRecord

__all__ = ["decoding_text", "donor_mismatches", "settings_line", "settings_lines", "thresholds_text",
           "timeline_kind"]

_ROLES = ("pa", "simulator", "judge", "checker", "memory")


def _fields(fingerprint: str) -> dict[str, str]:
    """``"<model> temperature=0.7 max_tokens=8192 ..."`` -> ``{"model": .., "temperature": ..}``."""
    parts = fingerprint.split()
    out = {"model": parts[0]} if parts else {}
    for part in parts[1:]:
        key, _, value = part.partition("=")
        out[key] = value
    return out


def decoding_text(profile_models: dict[str, str]) -> str:
    """Per role ``temperature`` and ``max_tokens``, then the message checker switch, and the PA's
    model-call cap and repeated-call policy where they are not the paper's (40; run every call).

    Args:
        profile_models: a run's :func:`~mempa_tui.runner.config.profile_fingerprint`.

    Returns:
        e.g. ``pa t=0.7 max 8192, simulator t=0.0 max 4096, ...; LLM message checker on``, or
        ``decoding not recorded`` for a run stored without it. A role played by another model than
        the PA's names it (``simulator openai/qwen2.5-coder-1.5b-instruct t=0.0 max 200``), so a
        table never hides that the user was simulated by a different model (issue 12).
    """
    if not profile_models:
        return "decoding not recorded"
    pa_model = _fields(profile_models.get("pa", "")).get("model")
    roles = []
    for role in _ROLES:
        if role in profile_models:
            f = _fields(profile_models[role])
            model = f" {f['model']}" if pa_model and f.get("model") and f["model"] != pa_model else ""
            roles.append(f"{role}{model} t={f.get('temperature', '?')} max {f.get('max_tokens', '?')}")
    checker = profile_models.get("options", "")
    switch = "on" if "llm_message_checker=True" in checker else "off" if checker else "not recorded"
    options = _fields("x " + checker)
    cap = options.get("pa_max_model_calls")
    capped = f"; PA model calls per user turn {cap} (paper: 40)" if cap else ""
    if options.get("pa_repeated_call") == "wrap_up":
        capped += "; a repeated identical PA call wraps the turn up (paper: runs it again)"
    if options.get("simulator_rewrite_temperature"):
        capped += (f"; simulator rewrites after a failed check t={options['simulator_rewrite_temperature']} "
                   "(first attempts at the simulator's own)")
    return ", ".join(roles) + f"; LLM message checker {switch}{capped}"


def timeline_kind(config: dict[str, Any]) -> str:
    """What a stored run's configuration plays, as :attr:`RunConfig.timeline_kind
    <mempa_tui.runner.config.RunConfig.timeline_kind>` words it: ``quick start``,
    ``quick-start slice`` or ``whole timeline`` (a config without ``quick``/``slice`` played the
    whole timeline: runs stored before the fields existed did)."""
    return "quick start" if config.get("quick") else "quick-start slice" if config.get("slice") else "whole timeline"


def thresholds_text(budget: dict[str, Any], *, kind: str | None = None) -> str:
    """File memory's thresholds as stored in a run's config (``file_memory_budget``).

    Args:
        budget: the run's ``file_memory_budget``
            (:func:`~mempa_tui.runner._budget.file_memory_budget`).
        kind: what the run played (:func:`timeline_kind`), which says why a run consolidated at
            every session's end: a quick start does so by default (issue 12), a slice or the whole
            timeline only when ``--memory-option consolidate_at_session_end=true`` asked for it.
            None: not known (the reason is then left out).

    Returns:
        ``File memory consolidates at 13,401 -> 6,700 tokens of PA prompt (<why>)``, followed by
        `` and at the end of every session (...)`` when the run did that too.
    """
    if not budget:
        return "File memory thresholds not recorded (run stored before they were)"
    at, to = budget.get("consolidate_at_tokens"), budget.get("consolidate_to_tokens")
    if budget.get("set_by_option"):
        why = "set by --memory-option"
    elif budget.get("scaled"):
        why = (f"scaled from the paper's 20,000 -> 10,000: a {budget.get('pa_window', 0):,}-token window "
               f"holds {budget.get('tool_tokens', 0):,} tokens of tools beside the prompt")
    else:
        why = "the paper's values"
    text = f"File memory consolidates at {at:,} -> {to:,} tokens of PA prompt ({why})"
    if budget.get("consolidate_at_session_end"):
        if kind == "quick start":  # setup turns it on for a quick start unless the options say
            reason = "a quick start never reaches the threshold, and probes see only MEMORY.md"
        elif kind is not None:  # only an option turns it on outside a quick start
            reason = f"set by --memory-option consolidate_at_session_end for this {kind}"
        else:
            reason = "probes see only MEMORY.md"
        text += f" and at the end of every session (not the paper's rule: {reason})"
    return text


def settings_line(config: dict[str, Any], *, donor_budget: dict[str, Any] | None = None,
                  donor_kind: str | None = None) -> str:
    """One run's settings: donor (reference runs), thresholds (File memory, own or donor's), decoding.

    Args:
        config: the run's stored configuration (``RunConfig`` as JSON data).
        donor_budget: for a reference run, its donor's ``file_memory_budget`` (the memory that
            wrote the checkpoints it probes from).
        donor_kind: what the donor played (:func:`timeline_kind` of its config; None: not known).
    """
    memory = config.get("memory", "?")
    parts: list[str] = []
    if memory in ("none", "oracle"):
        donor = config.get("donor_run")
        parts.append(f"donor {donor}" if donor else "no donor (not probed yet)")
        if donor_budget is not None:
            parts.append("donor's " + thresholds_text(donor_budget, kind=donor_kind))
    elif memory == "file":
        parts.append(thresholds_text(config.get("file_memory_budget") or {}, kind=timeline_kind(config)))
    parts.append("decoding: " + decoding_text(config.get("profile_models") or {}))
    return "; ".join(parts)


def _config(record: RunRecord) -> dict[str, Any]:
    try:
        data = json.loads(record.config_json)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def settings_lines(records: Sequence[RunRecord], donors: Sequence[RunRecord] = ()) -> list[str]:
    """``<run id>: <settings>`` for each run, in order (the footer of a results table), and for a
    run that offered the PA fewer than every tool (a quick start, issue 12) a second line saying
    which (``<run id>: tools offered: 22 of 83 (...)``).

    Args:
        records: the runs of the table.
        donors: further stored runs to look donors up in (the table's own runs are searched too).
    """
    by_id = {r.id: r for r in [*donors, *records]}
    lines = []
    for record in records:
        config = _config(record)
        donor = by_id.get(str(config.get("donor_run"))) if config.get("donor_run") else None
        donor_budget = (_config(donor).get("file_memory_budget") or {}) if donor is not None else None
        donor_kind = timeline_kind(_config(donor)) if donor is not None else None
        lines.append(f"{record.id}: {settings_line(config, donor_budget=donor_budget, donor_kind=donor_kind)}")
        if config.get("offered_tool_domains") is not None:  # a quick start's smaller offer (issue 12)
            lines.append(f"{record.id}: {offered_tools_text(config['offered_tool_domains'])}")
    return lines


def donor_mismatches(records: Sequence[RunRecord]) -> list[str]:
    """Warnings for reference runs shown beside File memory runs that are not their donor.

    No Memory and Oracle probe from one File memory run's checkpoints (paper Section 4); their
    difference from a File memory run is paired on the same worlds only when that run is their
    donor. A File memory run played again with ``--fresh`` moves the old one aside (``<id>~N``),
    and a reference run that probed the old one keeps following it, so a table can show the new
    File memory run beside a No Memory run that probed the old one.

    Args:
        records: the runs of one results table.

    Returns:
        One line per reference run whose donor is not among the table's File memory runs, naming
        both and what to run to pair them, or whose donor offered the PA other tools (a quick
        start's ``offered_tool_domains``, issue 12); empty when every reference run is paired.
    """
    files = {r.id for r in records if r.memory == "file"}
    offers = {r.id: _config(r).get("offered_tool_domains") for r in records if r.memory == "file"}
    lines = []
    for record in records:
        if record.memory not in ("none", "oracle") or not files:
            continue
        donor = _config(record).get("donor_run")
        mine = _config(record).get("offered_tool_domains")
        if donor in files and offers[donor] != mine:  # only a run stored by hand can get here
            lines.append(
                f"{record.id} offered the PA other tools than its donor {donor} "
                f"({offered_tools_text(mine)}; the donor: {offered_tools_text(offers[donor])}): their "
                f"difference mixes tool offers; rerun it with --fresh"
            )
        if donor and donor not in files:
            lines.append(
                f"{record.id} probed from donor {donor}, which is not the File memory run shown here "
                f"({', '.join(sorted(files))}): their difference compares different checkpoints; rerun "
                f"it with --fresh --donor {sorted(files)[0]} to pair them"
            )
    return lines
