"""Memory health (issue 16, point 1): a memory's counted failures become a run problem shown by
``mempa runs``, ``mempa report`` and every results table, and a broken run is marked, never an
ordinary row; results rows say what they pool, and plays are left out unless asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browse_support import FILE_RUN, MEM0AI_RUN, NONE_RUN, PLAY_RUN, seed

from mempa_tui.cli.main import main
from mempa_tui.runner._health import BROKEN_RATE, EMPTY_AFTER_WRITES, health_of_stats, health_summary
from mempa_tui.runner._pooling import coverage_by_row, mixed_coverage
from mempa_tui.scoring import ProbeOutcome, ProbeStatus
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import Context


def test_the_two_broken_memories_of_the_issue_are_broken_and_a_healthy_one_is_ok() -> None:
    # mem0: 66 of 66 replies malformed, 0 memories stored
    mem0ai = health_of_stats("r1", "mem0", {"turns_written": 66, "model_calls": 66, "malformed_replies": 66,
                                              "memories_stored": 0})
    assert mem0ai.broken and mem0ai.short() == "BROKEN"
    assert "66/66 malformed memory-model replies (100%)" in mem0ai.problems
    assert "empty store after 66 turn(s) written" in mem0ai.problems
    # prefstate: 43 items dropped, 0 cells kept
    prefstate = health_of_stats("r2", "prefstate", {"turns_written": 50, "turns_extracted": 43, "items_accepted": 0,
                                                    "items_dropped": 43, "cells": 0})
    assert prefstate.broken and "43/43 extracted items dropped (100%)" in prefstate.problems
    ok = health_of_stats("r3", "file", {"turns_written": 40, "consolidations": 2, "consolidation_failures": 0,
                                        "history_entries": 2, "pending_turns": 5})
    assert ok.state == "ok" and ok.stored == 7 and not ok.problems
    assert health_of_stats("r4", "none", {}).state == "n/a"


def test_the_stated_rate_and_the_empty_store_rule_have_exact_edges() -> None:
    assert BROKEN_RATE == 0.20 and EMPTY_AFTER_WRITES == 5
    at_rate = health_of_stats("r", "file", {"turns_written": 10, "turns_archived_raw": 2, "history_entries": 3})
    assert at_rate.state == "warning" and at_rate.short() == "warn: 2 failure(s)"  # 20% is not above 20%
    above = health_of_stats("r", "file", {"turns_written": 10, "turns_archived_raw": 3, "history_entries": 3})
    assert above.broken and above.problems == ["3/10 turns archived raw after a failed consolidation (30%)"]
    # an empty Simple RAG store: broken from 5 writes on, not before
    assert health_of_stats("r", "rag", {"turns_written": 4, "turns_stored": 0}).state == "ok"
    assert health_of_stats("r", "rag", {"turns_written": 5, "turns_stored": 0}).broken
    # a counter of a memory system added later is still counted
    later = health_of_stats("r", "memos", {"turns_written": 10, "add_failures": 9, "memories_stored": 1})
    assert later.broken and later.failures[0].counter == "add_failures"
    assert health_summary([ok_h := health_of_stats("a", "file", {"turns_written": 1}), above]) == "BROKEN 1/2"
    assert health_summary([ok_h]) == "ok"


def _outcome(memory: str, user: str, probe: int, repeat: int) -> ProbeOutcome:
    return ProbeOutcome(user=user, context=Context.WORK, attribute="verbosity", probe_kind=ProbeKind.FINAL,
                        repeat=repeat, target="Terse", selection="Terse", status=ProbeStatus.COMPLETED,
                        memory=memory, model="m", probe_id=f"{user}-final-{probe}")


def test_rows_that_pool_other_users_or_repeats_are_marked() -> None:
    outcomes = [_outcome("file", u, p, r) for u in "AB" for p in range(3) for r in (1, 2, 3)]
    outcomes += [_outcome("none", u, p, r) for u in "AB" for p in range(3) for r in (1, 2, 3)]
    outcomes += [_outcome("mem0ai", "C", p, r) for p in range(3) for r in (1, 2)]
    cover = coverage_by_row(outcomes)
    assert cover[("file", "m")].text() == "A+B 6x3"
    assert cover[("mem0ai", "m")].text() == "C 3x2"
    assert mixed_coverage(cover) == {("mem0ai", "m")}
    assert mixed_coverage({k: v for k, v in cover.items() if k[0] != "mem0ai"}) == set()


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    import anyio

    folder = tmp_path / "saves"
    folder.mkdir()
    anyio.run(seed, folder / "mempa.sqlite")
    return folder


def test_runs_report_and_results_show_the_broken_memory(saves: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--saves", str(saves)]) == 0
    out = capsys.readouterr().out
    header, *lines = out.splitlines()
    assert "MEMORY" in header.split()
    row = next(ln for ln in lines if ln.startswith(MEM0AI_RUN))
    assert "BROKEN" in row.split()
    assert next(ln for ln in lines if ln.startswith(FILE_RUN)).split()[5] == "ok"
    assert next(ln for ln in lines if ln.startswith(NONE_RUN)).split()[5] == "n/a"
    assert f"{MEM0AI_RUN}: memory health: BROKEN" in out and "66/66 malformed memory-model replies" in out
    assert PLAY_RUN not in out and "not shown: 1 finished play(s)" in out
    assert main(["runs", "--saves", str(saves), "--plays"]) == 0
    assert PLAY_RUN in capsys.readouterr().out

    assert main(["report", MEM0AI_RUN, "--saves", str(saves)]) == 0
    assert "memory health: BROKEN, 66 turn(s) written, 0 memories stored after the last step" in capsys.readouterr().out
    # finding 5: the written report carries the same Health cell and reason (the file that is shared)
    written = (saves / MEM0AI_RUN / "report.md").read_text(encoding="utf-8").split("## By dimension")[0]
    assert "| Health |" in written and "| BROKEN 1/1 |" in written
    assert f"BROKEN memory in {MEM0AI_RUN}: 66/66 malformed memory-model replies (100%)" in written
    import csv

    with (saves / MEM0AI_RUN / "main.csv").open(newline="", encoding="utf-8") as fh:
        assert [r["health"] for r in csv.DictReader(fh)] == ["BROKEN 1/1"]

    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0].splitlines()
    head = next(ln for ln in table if ln.startswith("Memory"))
    assert head.split()[-2:] == ["Health", "Covers"]
    mem0ai_row = next(ln for ln in table if ln.startswith("Mem0 "))
    assert "BROKEN 1/1" in mem0ai_row
    assert f"BROKEN memory in {MEM0AI_RUN}: 66/66 malformed memory-model replies (100%)" in out
    assert "not shown: 1 play(s)" in out
    file_row = next(ln for ln in table if ln.startswith("File memory"))
    assert "R 2x2" in file_row and " ok " in f" {file_row} "


def test_exported_screen_table_keeps_the_health_column(saves: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", "--saves", str(saves), "--export", "--resamples", "100"]) == 0
    capsys.readouterr()
    screen = next(saves.glob("results-*")) / "screen.md"
    text = screen.read_text()
    assert "| Health | Covers |" in text and "BROKEN 1/1" in text
    # finding 5: report.md ("with intervals") and main.csv have the Health too, with the reason
    report = (screen.parent / "report.md").read_text(encoding="utf-8").split("## Pooled")[0]
    assert "| Health |" in report and "| BROKEN 1/1 |" in report and f"BROKEN memory in {MEM0AI_RUN}" in report
    assert f"BROKEN memory in {MEM0AI_RUN}" in text
    import csv

    with (screen.parent / "main.csv").open(newline="", encoding="utf-8") as fh:
        cells = {r["memory"]: r["health"] for r in csv.DictReader(fh)}
    assert cells["mem0"] == "BROKEN 1/1" and cells["file"] == "ok" and cells["none"] == "n/a"


def test_a_run_whose_memory_breaks_says_so_while_it_plays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The scripted protocol model answers the preference-state extractor with text that is no
    # extraction reply, so every turn fails: the run warns after its first step, and its
    # report and the runs list mark it.
    import yaml
    from test_runner_support import WORLDS, protocol_responder

    from mempa_tui.llm import ScriptedModelServer

    with ScriptedModelServer(protocol_responder) as server:
        profile = tmp_path / "scripted.yaml"
        profile.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
        saves = tmp_path / "saves"
        assert main(["run", "--user", "R", "--memory", "prefstate", "--model", str(profile), "--repeats", "1",
                     "--worlds", str(WORLDS), "--saves", str(saves), "--local-memory", str(tmp_path / "lm")]) == 0
    out = capsys.readouterr().out
    first = out.index("step 1/3 R-s1 completed")
    warning = out.index("warning: memory health: BROKEN")
    assert first < warning < out.index("step 2/3")  # said as soon as it shows, not at the end
    assert "turns with no usable extraction reply (100%)" in out
    assert out.count("warning: memory health: BROKEN") == 1  # once per run, not once per step
    assert main(["runs", "--saves", str(saves)]) == 0
    assert "BROKEN" in capsys.readouterr().out


async def test_health_reads_only_the_last_step_and_falls_back_to_earlier_counters(saves: Path) -> None:
    from mempa_tui.runner._health import run_health
    from mempa_tui.store import CheckpointData, RunStore, StepRecord, utc_now

    async with RunStore(saves / "mempa.sqlite") as store:
        assert (await store.last_step(NONE_RUN)) is None
        last = await store.last_step(MEM0AI_RUN)
        assert last is not None and last.step_id == "R-s1" and "malformed_replies" in last.result_json
        # a later step stored without counters (an older build): the earlier step's counters still count
        now = utc_now()
        await store.commit_step(MEM0AI_RUN, StepRecord(index=1, step_id="R-s2", kind="accumulation",
                                                       status="completed", started_at=now, finished_at=now,
                                                       result_json="{}"),
                                [], CheckpointData(step_index=1, step_id="R-s2", world_files={}, world_manifest={}))
        run = await store.get_run(MEM0AI_RUN)
        assert run is not None and (await run_health(store, run)).broken


def test_file_memory_that_never_consolidated_is_broken_because_its_probes_saw_nothing() -> None:
    """Issue 12: the quick start's File memory held 10 pending turns, no consolidation, no history
    entry; probes get no raw turns (paper 3.5), so every probe was handed an empty memory."""
    stats = {"turns_written": 10, "consolidations": 0, "history_entries": 0, "pending_turns": 10,
             "prompt_tokens_estimate": 1703, "consolidate_at_tokens": 13401}
    health = health_of_stats("A-file", "file", stats)
    assert health.state == "broken" and health.short() == "BROKEN"
    assert "MEMORY.md never written" in health.text() and "13,401" in health.text() and "1,703" in health.text()
    # a few turns in (the run has barely started) is not judged yet, and one consolidation is enough
    assert health_of_stats("A-file", "file", {**stats, "turns_written": 3, "pending_turns": 3}).state == "ok"
    assert health_of_stats("A-file", "file", {**stats, "consolidations": 1, "history_entries": 1}).state == "ok"


def test_file_memory_whose_rounds_all_failed_names_the_memory_model_not_the_threshold() -> None:
    """Finding 6: consolidation ran at each session end and the memory model refused every round;
    the reason must say so and point at a larger memory model, not at a lower threshold."""
    stats = {"turns_written": 9, "consolidations": 0, "consolidation_failures": 3, "history_entries": 0,
             "pending_turns": 9, "prompt_tokens_estimate": 1440, "consolidate_at_tokens": 13401,
             "consolidation_unusable_refusal": 3}
    text = health_of_stats("A-file", "file", stats).text()
    assert "MEMORY.md never written" in text and "ran 3 round(s) and every one failed" in text
    assert "refusal instead of notes 3" in text and "roles.memory" in text
    assert "consolidate_at_tokens=N" not in text and "13,401" not in text
    # no round ran: the threshold is the cause, and the advice stays the threshold's
    quiet = health_of_stats("A-file", "file", {**stats, "consolidation_failures": 0,
                                               "consolidation_unusable_refusal": 0}).text()
    assert "consolidate_at_tokens=N" in quiet and "roles.memory" not in quiet


def test_the_store_count_names_what_it_counts() -> None:
    """Fresh-user check: Health said "1 item(s) stored" while ``mempa show --memory-store`` listed
    2 entries (MEMORY.md and one history entry), and 9 against 10 (the last consolidation failure):
    no item was lost, the count and the listing count different things. The count now says which."""
    from mempa_tui.runner._health import not_counted, stored_phrase

    file_stats = {"turns_written": 6, "consolidations": 1, "history_entries": 1, "pending_turns": 0,
                  "memory_md_chars": 120}
    health = health_of_stats("r", "file", file_stats)
    assert health.stored == 1
    assert "1 history entry and 0 pending turns (MEMORY.md apart) stored after the last step" in health.text()
    assert "item(s) stored" not in health.text()
    assert not_counted(file_stats) == "MEMORY.md and the last consolidation failure"
    assert stored_phrase({"pending_turns": 9, "memory_md_chars": 0}) == (
        "0 history entries and 9 pending turns (MEMORY.md empty)")
    assert stored_phrase({"memories_stored": 1}) == "1 memory"
    assert stored_phrase({"turns_stored": 10}) == "10 turns"
    assert stored_phrase({"cells": 4}) == "4 preference cells"
    assert stored_phrase({"turns_written": 3}) is None and not_counted({"turns_written": 3}) is None
