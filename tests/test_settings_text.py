"""The settings line says truly why File memory consolidated at every session's end (issue 12):
a quick start does by default, a slice or the whole timeline only by ``--memory-option``."""

from __future__ import annotations

import json

from mempa_tui.runner._settings import settings_line, settings_lines, thresholds_text, timeline_kind
from mempa_tui.store import RunRecord, RunStatus

_BUDGET = {"consolidate_at_tokens": 13401, "consolidate_to_tokens": 6700, "consolidate_at_session_end": 1,
           "scaled": 1, "set_by_option": 0, "pa_window": 32768, "tool_tokens": 9000}
_QUICK_REASON = "a quick start never reaches the threshold"


def test_timeline_kind_reads_quick_and_slice_from_a_stored_config() -> None:
    assert timeline_kind({"quick": True}) == "quick start"
    assert timeline_kind({"slice": True}) == "quick-start slice"
    assert timeline_kind({}) == "whole timeline"


def test_quick_start_says_it_never_reaches_the_threshold() -> None:
    text = thresholds_text(_BUDGET, kind="quick start")
    assert text.startswith("File memory consolidates at 13,401 -> 6,700 tokens of PA prompt (scaled")
    assert "and at the end of every session (not the paper's rule: " + _QUICK_REASON in text


def test_slice_and_whole_timeline_name_the_option_not_the_quick_start() -> None:
    for kind in ("quick-start slice", "whole timeline"):
        text = thresholds_text(_BUDGET, kind=kind)
        assert _QUICK_REASON not in text
        assert (f"and at the end of every session (not the paper's rule: set by --memory-option "
                f"consolidate_at_session_end for this {kind})") in text
    unknown = thresholds_text(_BUDGET)
    assert "at the end of every session" in unknown and _QUICK_REASON not in unknown


def test_without_session_end_no_clause_is_added() -> None:
    budget = {k: v for k, v in _BUDGET.items() if k != "consolidate_at_session_end"}
    assert "end of every session" not in thresholds_text(budget, kind="quick start")


def test_settings_line_and_lines_word_each_run_and_its_donor_by_what_it_played() -> None:
    quick = {"memory": "file", "quick": True, "file_memory_budget": _BUDGET}
    full = {"memory": "file", "file_memory_budget": _BUDGET}
    assert _QUICK_REASON in settings_line(quick)
    assert _QUICK_REASON not in settings_line(full) and "for this whole timeline" in settings_line(full)
    assert "donor's File memory" in settings_line({"memory": "none", "donor_run": "d"}, donor_budget=_BUDGET,
                                                   donor_kind="quick-start slice")
    assert "for this quick-start slice" in settings_line({"memory": "none", "donor_run": "d"},
                                                         donor_budget=_BUDGET, donor_kind="quick-start slice")

    donor = RunRecord(id="A-file-x-s0-slice", user="A", memory="file", profile="x", seed=0, repeats=1, config_hash="h",
                      config_json=json.dumps({"memory": "file", "slice": True, "file_memory_budget": _BUDGET}),
                      status=RunStatus.COMPLETED)
    ref = RunRecord(id="A-none-x-s0-slice", user="A", memory="none", profile="x", seed=0, repeats=1, config_hash="h2",
                    config_json=json.dumps({"memory": "none", "slice": True, "donor_run": donor.id}),
                    status=RunStatus.COMPLETED)
    lines = settings_lines([ref, donor])
    assert all(_QUICK_REASON not in line for line in lines)
    assert any(line.startswith("A-none-x-s0-slice: donor A-file-x-s0-slice; donor's File memory") and
               "for this quick-start slice" in line for line in lines)
