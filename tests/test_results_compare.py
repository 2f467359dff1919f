"""Comparing stored runs (``mempa results`` and the end of a multi-condition ``mempa run``): which
runs can share a table, differences from No Memory paired over the probes both runs hold, and
exports that never overwrite each other (paper Tables 1 and 13; SPEC 4.9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.runner import RunConfig
from mempa_tui.runner._results import (
    comparable_groups,
    export_results,
    paired_differences,
)
from mempa_tui.runner.report import backbone_label
from mempa_tui.scoring import ProbeOutcome, ProbeStatus, differences_from
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.store import RunRecord, RunStatus
from mempa_tui.taxonomy import Context

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _run(memory: str, *, seed: int = 0, sliced: bool = False, minutes: int = 0, archived: str = "",
         profile: str = "demo") -> RunRecord:
    config = RunConfig(user="A", profile=profile, memory=memory, seed=seed, slice=sliced,
                       profile_models={"pa": "ollama/qwen2.5:7b temperature=0.0"})
    return RunRecord(
        id=config.run_id + archived, user="A", profile=profile, memory=memory, seed=seed, repeats=1,
        config_json=config.model_dump_json(), config_hash=config.config_hash(),
        updated_at=T0 + timedelta(minutes=minutes),
    )


def test_whole_and_slice_runs_never_share_a_table() -> None:
    runs = [_run("file", sliced=True), _run("none"), _run("file"), _run("none", sliced=True)]
    groups = comparable_groups(runs, named=True)
    assert [(g.timeline, g.run_ids) for g in groups] == [
        ("whole timeline", ["A-none-demo-s0", "A-file-demo-s0"]),
        ("quick-start slice", ["A-file-demo-s0-slice", "A-none-demo-s0-slice"]),
    ]


def test_runs_holding_the_same_cells_keep_the_newest_or_are_refused_when_named() -> None:
    older, newer = _run("file", minutes=0), _run("file", seed=1, minutes=5)
    copy = _run("file", minutes=9, archived="~1")
    groups = comparable_groups([older, newer, copy, _run("none", minutes=1)], named=False)
    assert groups[0].run_ids == ["A-file-demo-s0~1", "A-none-demo-s0"]
    assert sorted(groups[0].left_out) == ["A-file-demo-s0", "A-file-demo-s1"]
    with pytest.raises(ValueError, match=r"runs A-file-demo-s0 and A-file-demo-s1 both hold user A's file probes"):
        comparable_groups([older, newer], named=True)
    # a completed run is kept before a newer one that stopped part-way
    done = older.model_copy(update={"status": RunStatus.COMPLETED})
    stopped = _run("file", minutes=30, archived="~2").model_copy(update={"status": RunStatus.STOPPED})
    assert comparable_groups([stopped, done], named=False)[0].run_ids == ["A-file-demo-s0"]


def test_two_profiles_with_the_same_pa_model_keep_their_own_rows() -> None:
    # Same PA model, other simulator or judge: not the same backbone row, not a collision.
    runs = [_run("file"), _run("file", profile="demo2"), _run("none"), _run("none", profile="demo2")]
    (group,) = comparable_groups(runs, named=True)
    assert group.run_ids == ["A-file-demo-s0", "A-file-demo2-s0", "A-none-demo-s0", "A-none-demo2-s0"]
    assert group.left_out == []
    assert backbone_label(runs[1]) == "ollama/qwen2.5:7b (demo2)"


CELLS = [  # (context, attribute, target, another setting): six distinct cells
    (context, attribute, target, other)
    for context in (Context.WORK, Context.PERSONAL)
    for attribute, target, other in (("verbosity", "Terse", "Detailed"), ("guidance_level", "Guided", "Assumed"),
                                     ("reasoning_visibility", "Show", "Hide"))
]


def _outcome(memory: str, probe: int, repeat: int, right: bool) -> ProbeOutcome:
    context, attribute, target, other = CELLS[probe]
    return ProbeOutcome(
        user="A", context=context, attribute=attribute, probe_kind=ProbeKind.FINAL, repeat=repeat,
        target=target, selection=target if right else other, status=ProbeStatus.COMPLETED, memory=memory,
        model="m", probe_id=f"A-final-{probe}",
    )


def test_differences_use_only_the_probes_both_conditions_hold() -> None:
    # File memory gets every probe right except probe 0; No Memory stored only probes 0-2 so far
    # (a run still going) and gets probes 0 and 1 right. Over the shared probes the difference is
    # (2/3 - 2/3) = 0 points; over unequal sets it would be (5/6 - 2/3) = +16.7.
    file = [_outcome("file", p, 1, right=p != 0) for p in range(6)]
    none = [_outcome("none", p, 1, right=p in (0, 1)) for p in range(3)]
    naive = differences_from(file + none, metrics=("PSA",), resamples=200)
    assert naive[0].point == pytest.approx(100 * (5 / 6 - 2 / 3))
    diffs, dropped = paired_differences(file + none, resamples=200)
    psa = next(d for d in diffs if d.metric == "PSA")
    assert psa.memory == "file" and psa.point == pytest.approx(0.0)
    assert dropped == {"file": 3}
    assert paired_differences(file, resamples=200) == ([], {"file": 6})


def test_each_model_is_compared_with_its_own_no_memory_run_in_the_table_order() -> None:
    # Model "m": File memory and No Memory both get every probe right (difference 0). Model "big"
    # has only a No Memory run, which gets every probe wrong; it must not enter m's difference
    # (pooled it would give +50 points), and "big" gets no difference row of its own.
    file = [_outcome("file", p, 1, right=True) for p in range(6)]
    prefstate = [_outcome("prefstate", p, 1, right=True) for p in range(6)]
    none = [_outcome("none", p, 1, right=True) for p in range(6)]
    big_none = [o.model_copy(update={"model": "big", "selection": "x"}) for o in none]
    diffs, dropped = paired_differences(prefstate + none + big_none + file, resamples=200)
    psa = [d for d in diffs if d.metric == "PSA"]
    assert [(d.memory, d.model) for d in psa] == [("file", "m"), ("prefstate", "m")]  # main table order
    assert all(d.point == pytest.approx(0.0) for d in psa)
    assert dropped == {"file": 0, "prefstate": 0}


def test_two_exports_in_the_same_second_get_two_folders(tmp_path: Path) -> None:
    outcomes = [_outcome("file", p, 1, right=True) for p in range(3)]
    first = export_results(outcomes, tmp_path, stamp=T0, resamples=100)
    second = export_results(outcomes, tmp_path, stamp=T0, resamples=100)
    assert first.folder.name == "results-20261129-120000" and second.folder.name == "results-20261129-120000-2"
    assert first.report.main_md.is_file() and second.report.main_md.is_file()
