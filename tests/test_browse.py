"""The run browser without the app (issue 16, point 3): ``mempa show RUN [STEP|PROBE]`` lists a
stored run's steps and probes, prints one in full (transcript, tool calls and results, model
calls, IX selection, evidence, target and scores), filters probes, and ``--compare`` puts runs
side by side per probe and repeat with a ``--where`` filter and a Markdown export."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from test_browse_support import FILE_RUN, MEM0AI_RUN, NONE_RUN, seed

from mempa_tui.cli.main import main
from mempa_tui.runner._browse import (
    BrowseError,
    ProbeFilter,
    compare_runs,
    filter_compare,
    parse_where,
    run_listing,
    step_details,
)
from mempa_tui.store import RunStore


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    folder = tmp_path / "saves"
    folder.mkdir()
    anyio.run(seed, folder / "mempa.sqlite")
    return folder


async def test_engine_lists_filters_details_and_compares(saves: Path) -> None:
    async with RunStore(saves / "mempa.sqlite") as store:
        listing = await run_listing(store, NONE_RUN)
        assert [(p.probe_id[-9:], p.repeat, p.outcome) for p in listing.probes] == [
            ("n_breadth", 1, "wrong"), ("n_breadth", 2, "floored"), ("verbosity", 1, "correct"),
            ("verbosity", 2, "correct")]
        assert listing.health.state == "n/a" and listing.steps == []
        f = ProbeFilter(attribute="Verbosity", dimension="expression").check()
        assert f.attribute == "verbosity" and f.dimension == "Expression Style"
        assert [p.repeat for p in listing.probes if f.keeps(p)] == [1, 2]
        assert [p.outcome for p in listing.probes if ProbeFilter(outcome="floored").check().keeps(p)] == ["floored"]
        with pytest.raises(BrowseError, match="choose one of Expression Style"):
            ProbeFilter(dimension="colour").check()
        with pytest.raises(BrowseError, match="unknown attribute 'tone-ish'"):
            ProbeFilter(attribute="tone-ish").check()

        (detail,) = await step_details(store, FILE_RUN, "R-final-work-verbosity", 2)
        assert detail.target == "Terse" and detail.outcome == "correct" and detail.brs_reason == "judge: matches"
        assert [e.kind for e in detail.events] == ["user_message", "evidence", "tool_call", "ix_selection", "pa_reply"]
        assert "prefers terse replies" in detail.evidence[0].system_text
        assert [(c.role, c.prompt_tokens) for c in detail.calls] == [("pa", 120)]  # only this repeat's calls
        assert len(await step_details(store, FILE_RUN, "R-final-work-verbosity")) == 2
        (step,) = await step_details(store, MEM0AI_RUN, "R-s1")
        assert step.memory_stats["malformed_replies"] == 66 and [c.role for c in step.calls] == ["pa", "memory"]
        with pytest.raises(BrowseError, match="R-s1 of run .* is a timeline step, played once: it has no repeats"):
            await step_details(store, MEM0AI_RUN, "R-s1", 5)
        with pytest.raises(BrowseError, match=r"no repeat 3 \(stored: 1, 2\)"):
            await step_details(store, FILE_RUN, "R-final-work-verbosity", 3)
        with pytest.raises(BrowseError, match="no step or probe 'R-s9' .*steps: R-s1"):
            await step_details(store, FILE_RUN, "R-s9")

        rows = await compare_runs(store, [FILE_RUN, NONE_RUN])
        assert len(rows) == 4
        where = parse_where("file right, none not right", [FILE_RUN, NONE_RUN])
        kept = filter_compare(rows, where)
        assert [(r.attribute, r.repeat) for r in kept] == [("solution_breadth", 1), ("solution_breadth", 2)]
        assert kept[0].cells[FILE_RUN].evidence.startswith("MEMORY.md")  # type: ignore[union-attr]
        assert kept[0].cells[NONE_RUN].evidence == ""  # type: ignore[union-attr]
        assert filter_compare(rows, parse_where("#2 floored", [FILE_RUN, NONE_RUN]))[0].repeat == 2
        assert filter_compare(rows, parse_where(f"{NONE_RUN} wrong", [FILE_RUN, NONE_RUN]))[0].repeat == 1
        with pytest.raises(BrowseError, match="'scripted' names more than one run"):
            parse_where("scripted right", [FILE_RUN, NONE_RUN])
        with pytest.raises(BrowseError, match="write RUN \\[not\\] right"):
            parse_where("file is great", [FILE_RUN, NONE_RUN])
        with pytest.raises(BrowseError, match="two or more"):
            await compare_runs(store, [FILE_RUN, FILE_RUN])


def test_show_prints_a_run_a_probe_and_a_comparison(saves: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    s = ["--saves", str(saves)]
    assert main(["show", MEM0AI_RUN, *s]) == 0
    out = capsys.readouterr().out
    assert "memory health: BROKEN" in out and "R-s1" in out and "accumulation" in out
    assert out.count("R-final-work-") == 4  # every probe repeat listed

    assert main(["show", NONE_RUN, "--outcome", "floored", *s]) == 0
    out = capsys.readouterr().out
    assert "1 shown by the filter, 4 repeat(s) stored" in out and out.count("floored") >= 2

    assert main(["show", FILE_RUN, "R-final-work-verbosity", "--repeat", "1", *s]) == 0
    out = capsys.readouterr().out
    for expected in ("USER [b1]:", "EVIDENCE handed to the PA: 1 item(s)", "The user prefers terse replies",
                     "[0.910] prefers terse replies", 'TOOL documents_search({"query": "quarterly"}) -> executed',
                     '{"hits": ["doc-7"]}', "IX SELECTION verbosity = Terse", "Done: the note is in doc-7.",
                     "target: Terse  -> correct", "BRS: 4  (judge: matches)", "PRS: 5  (user: fine)"):
        assert expected in out, expected
    assert "scripted-pa  120" in out  # the model call with its tokens

    md = tmp_path / "cmp.md"
    assert main(["show", "--compare", FILE_RUN, NONE_RUN, MEM0AI_RUN, "--where", "file right, none wrong",
                 "--out", str(md), *s]) == 0
    out = capsys.readouterr().out
    assert "#3 R-mem0-scripted-s0 (memory BROKEN)" in out and "its memory is BROKEN" in out
    assert "R-final-work-solution_breadth  1" in out and "R-final-work-verbosity" not in out
    text = md.read_text()
    assert text.startswith("# Probe-by-probe comparison where file right, none wrong")
    assert "| R-final-work-solution_breadth | 1 | Low | Low correct BRS 4 PRS 5 | High wrong BRS 2 PRS 3 |" in text
    assert "> - The user prefers terse replies at work." in text and "> (the memory handed the PA nothing)" in text

    assert main(["show", "--compare", FILE_RUN, NONE_RUN, "--where", "none right, file wrong", *s]) == 1
    assert "(no probe repeat matches)" in capsys.readouterr().out
    assert main(["show", FILE_RUN, "R-nope", *s]) == 2
    assert "no step or probe 'R-nope'" in capsys.readouterr().err
    assert main(["show", "R-nope", *s]) == 2
    assert FILE_RUN in capsys.readouterr().err  # the stored runs are named
    assert main(["show", FILE_RUN, "--where", "file right", *s]) == 2
    assert "--where and --out are for --compare" in capsys.readouterr().err


async def _add_other_user_run(db: Path) -> str:
    from test_runner_support import WORLDS

    from mempa_tui.runner import RunConfig
    from mempa_tui.store import ProbeResultRecord, RunRecord, RunStatus, utc_now

    config = RunConfig(user="Q", profile="scripted", memory="none", repeats=1, worlds_dir=WORLDS)
    async with RunStore(db) as store:
        await store.create_run(RunRecord(
            id=config.run_id, user="Q", profile="scripted", memory="none", seed=0, repeats=1,
            config_json=config.model_dump_json(), config_hash=config.config_hash(), status=RunStatus.COMPLETED,
            total_probes=1))
        await store.save_probe_result(config.run_id, ProbeResultRecord(
            probe_id="Q-final-work-verbosity", repeat=1, kind="final", context="work", attribute="verbosity",
            target="Terse", selection="Terse", status="completed", brs=4, prs=4, started_at=utc_now(),
            finished_at=utc_now()))
    return config.run_id


def test_compare_refuses_other_users_and_results_mark_rows_that_pool_other_users(
    saves: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = anyio.run(_add_other_user_run, saves / "mempa.sqlite")
    assert main(["show", "--compare", FILE_RUN, other, "--saves", str(saves)]) == 2
    assert f"compare runs of one user: {FILE_RUN} is user R, {other} is user Q" in capsys.readouterr().err
    assert main(["show", "--compare", FILE_RUN, NONE_RUN, "--repeat", "2", "--saves", str(saves)]) == 0
    out = capsys.readouterr().out
    assert "R-final-work-verbosity         2" in out and "R-final-work-verbosity         1" not in out

    # No Memory now pools users Q and R (3 probes, one with 1 repeat): its row says so
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    none_row = next(ln for ln in out.splitlines() if ln.startswith("No Memory"))
    assert none_row.rstrip().endswith("Q+R 3x1-2 *")
    file_row = next(ln for ln in out.splitlines() if ln.startswith("File memory"))
    assert file_row.rstrip().endswith("R 2x2")
    assert "rows marked * in Covers pool other users, probes or repeat counts" in out


def test_results_by_user_give_each_row_its_users_coverage(saves: Path, capsys: pytest.CaptureFixture[str]) -> None:
    anyio.run(_add_other_user_run, saves / "mempa.sqlite")
    assert main(["results", "--saves", str(saves), "--by", "user", "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("No Memory")]
    assert [ln.rstrip().rsplit("  ", 1)[-1] for ln in rows] == ["Q 1x1", "R 2x2"]  # one user each, alone: unmarked
    assert "rows marked *" not in out


def test_show_lists_the_memory_store_at_the_checkpoint(saves: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = ["--saves", str(saves)]
    assert main(["show", FILE_RUN, "R-final-work-verbosity", "--repeat", "1", "--memory-store", *s]) == 0
    out = capsys.readouterr().out
    # fresh-user check: the count says what Health counts and what the listing adds
    assert (f"memory store where the probe started (checkpoint 0 of {FILE_RUN}): 0 history entries and "
            "0 pending turns (MEMORY.md apart) stored, as Health counts them; 1 entry listed below: the count "
            "leaves out MEMORY.md and the last consolidation failure") in out
    assert "  MEMORY.md\n  - The user prefers terse replies at work." in out
    assert main(["show", FILE_RUN, "R-s1", "--memory-store", *s]) == 0
    assert "memory store after the step (checkpoint 0 of" in capsys.readouterr().out
    # No Memory probes from its donor's checkpoint with the memory cleared: nothing to list
    assert main(["show", NONE_RUN, "R-final-work-verbosity", "--memory-store", *s]) == 0
    assert "(none: no accumulated memory" in capsys.readouterr().out
    # a snapshot that cannot be rebuilt is said, not hidden
    assert main(["show", MEM0AI_RUN, "R-s1", "--memory-store", *s]) == 0
    assert "could not rebuild the mem0 memory from the snapshot" in capsys.readouterr().out
    assert main(["show", FILE_RUN, "--memory-store", *s]) == 2
    assert "--memory-store needs RUN STEP|PROBE" in capsys.readouterr().err
