"""Report files: Markdown and CSV shaped like the paper's tables, and the printed table."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_scoring import all_repeats

from mempa_tui.scoring import (
    ProbeOutcome,
    format_table,
    score_conditions,
    write_reports,
)


def data() -> list[ProbeOutcome]:
    base = all_repeats()
    return (
        base
        + [x.model_copy(update={"memory": "none"}) for x in base]
        + [x.model_copy(update={"model": "m2"}) for x in base]
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_reports_exist_and_parse(tmp_path: Path) -> None:
    outcomes = data()
    paths = write_reports(outcomes, tmp_path / "out", resamples=200, seed=1)
    assert all(p.exists() and p.stat().st_size > 0 for p in paths.all())
    assert paths.pooled_csv is not None and paths.defaults_csv is not None

    main = read_csv(paths.main_csv)
    assert [(r["memory"], r["model"]) for r in main] == [("file", "m"), ("file", "m2"), ("none", "m")]
    expected = score_conditions(outcomes, resamples=200, seed=1)
    for row, scores in zip(main, expected, strict=True):
        assert float(row["psa_mean"]) == pytest.approx(scores.psa.mean, abs=1e-4)
        assert float(row["cs_sd"]) == pytest.approx(scores.cs.sd, abs=1e-4)
        assert scores.psa.interval is not None
        assert float(row["psa_ci_low"]) == pytest.approx(scores.psa.interval.low, abs=1e-4)
        assert row["incomplete"] == "3" and row["floored"] == "3"
        assert row["memory_label"] in ("File memory", "No Memory")

    pooled = read_csv(paths.pooled_csv)
    assert [(r["memory"], r["model"]) for r in pooled] == [("file", "all models"), ("none", "all models")]
    assert float(pooled[0]["delta_psa_point"]) == pytest.approx(0.0, abs=1e-4)
    assert pooled[1]["delta_psa_point"] == ""  # the reference has no difference

    dims = read_csv(paths.dimensions_csv)
    assert {r["dimension"] for r in dims} == {"Expression Style", "Initiative & Autonomy"}
    assert {r["metric"] for r in dims} == {"PSA", "CS", "PET", "BRS", "PRS"}
    assert len(dims) == 3 * 2 * 5
    na = [r for r in dims if r["dimension"] == "Initiative & Autonomy" and r["metric"] == "CS"]
    assert all(r["mean"] == "N/A" for r in na)  # autonomy targets agree across contexts

    groups = read_csv(paths.groups_csv)
    assert {r["group"] for r in groups} == {"reply", "action"}

    incomplete = read_csv(paths.incomplete_csv)
    assert len(incomplete) == 9 and {r["attribute"] for r in incomplete} == {"verbosity"}

    defaults = read_csv(paths.defaults_csv)
    assert {r["attribute"] for r in defaults} == {"verbosity", "tone_formality", "autonomy_level", "guidance_level"}

    md = paths.main_md.read_text()
    for heading in ("Per memory condition and backbone", "Pooled over backbones", "By dimension",
                    "Reply vs action", "Backbone defaults", "Incomplete probes"):
        assert heading in md
    assert "| File memory | m |" in md and "N/A" in md


def test_single_condition_writes_no_pooled_or_defaults(tmp_path: Path) -> None:
    paths = write_reports(all_repeats(), tmp_path, resamples=100)
    assert paths.pooled_csv is None and paths.defaults_csv is None
    assert {p.name for p in paths.all()} == {"report.md", "main.csv", "dimensions.csv", "groups.csv", "incomplete.csv"}
    with pytest.raises(ValueError, match="no probe outcomes"):
        write_reports([], tmp_path)


def test_printed_table_is_aligned() -> None:
    rows = score_conditions(data(), resamples=100)
    text = format_table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + len(rows)
    column = lines[0].index("PSA")
    for line in lines[2:]:
        assert line[column - 2 : column] == "  " and line[column] != " "
    assert "File memory" in lines[2] and "No Memory" in lines[-1]


def test_health_column_and_broken_note_are_written_into_report_md_and_main_csv(tmp_path: Path) -> None:
    """Finding 5: a BROKEN memory's row must not read as a valid score in the written report."""
    outcomes = data()
    cell = {("none", "m"): "n/a"}
    note = "BROKEN memory in A-file: MEMORY.md never written - its row is marked"
    paths = write_reports(outcomes, tmp_path, resamples=50,
                          health=lambda r: cell.get((r.memory, r.model), "BROKEN 1/1"), health_notes=[note])
    md = paths.main_md.read_text(encoding="utf-8")
    table = md.split("## Pooled")[0]
    assert "| Health |" in table and "| BROKEN 1/1 |" in table and "| n/a |" in table
    assert f"- {note}" in table
    rows = read_csv(paths.main_csv)
    assert {(r["memory"], r["health"]) for r in rows} >= {("none", "n/a")}
    assert any(r["health"] == "BROKEN 1/1" for r in rows if r["memory"] != "none")
    # without runs (outcomes only) there is no Health to show: no column, no empty cells
    plain = write_reports(outcomes, tmp_path / "plain", resamples=50)
    assert "Health" not in plain.main_md.read_text(encoding="utf-8")
    assert "health" not in read_csv(plain.main_csv)[0]


def test_a_difference_from_one_unit_is_written_as_no_interval_not_a_zero_width_one(tmp_path: Path) -> None:
    """Fresh-user check: with one final probe of one repeat (n=1×1) ``main.csv``/``pooled.csv``
    wrote the difference's interval as ``[x, x]`` while every table said ``no interval``. The CSV
    now leaves the bounds empty and says so in the ``ci_note`` column, as the tables do."""
    from test_scoring import o

    from mempa_tui.scoring import differences_from, interval_note

    one = [o("A", "work", "verbosity", "Terse", "Terse", brs=4, prs=4),
           o("A", "work", "verbosity", "Terse", "Detailed", brs=2, prs=2, memory="none")]
    paths = write_reports(one, tmp_path, resamples=100, seed=1)
    assert paths.pooled_csv is not None
    (diff,) = [d for d in differences_from(one, reference="none", resamples=100, seed=1) if d.metric == "PSA"]
    assert interval_note(diff.interval, 1, signed=True) == " n=1×1: no interval"  # what the tables print
    file_row = next(r for r in read_csv(paths.pooled_csv) if r["memory"] == "file")
    assert float(file_row["delta_psa_point"]) == pytest.approx(100.0)
    assert (file_row["delta_psa_ci_low"], file_row["delta_psa_ci_high"]) == ("", "")
    assert file_row["delta_psa_ci_note"] == "n=1×1: no interval"
    for row in read_csv(paths.main_csv):  # each condition's own PSA: one unit, no interval either
        assert (row["psa_ci_low"], row["psa_ci_high"], row["psa_ci_note"]) == ("", "", "n=1×1: no interval")


def test_an_interval_from_units_that_differ_keeps_its_bounds_and_counts(tmp_path: Path) -> None:
    paths = write_reports(data(), tmp_path, resamples=200, seed=1)
    row = read_csv(paths.main_csv)[0]
    assert row["psa_ci_low"] and row["psa_ci_high"] and row["psa_ci_note"].startswith("n=")
    assert "no interval" not in row["psa_ci_note"]
