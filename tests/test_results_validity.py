"""What a results table's scores could reach without memory, and the Oracle check (issue 12).

Engine (mempa_tui.scoring._validity) on hand-made outcomes with known numbers of settings, then
``mempa results`` and ``mempa report`` on a hand-made store shaped like the quick start of user R:
one Solution Breadth cell per context, work changed Low -> High (a pre-event probe with target
Low, both final probes with target High).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_runner_support import WORLDS

from mempa_tui.cli.main import main
from mempa_tui.runner import RunConfig
from mempa_tui.scoring import (
    ORACLE_FLOOR,
    ProbeOutcome,
    ProbeStatus,
    constant_ceiling,
    constant_choices,
    oracle_checks,
    outcome_validity_lines,
    random_reference,
    write_reports,
)
from mempa_tui.scripts.loader import load_user
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.store import ProbeResultRecord, RunRecord, RunStatus, RunStore, utc_now
from mempa_tui.taxonomy import ATTRIBUTES, Context, chance_of, chance_psa


SHIPPED_WORLDS = Path(__file__).parent.parent / "worlds"


def _o(context: str, attr: str, kind: str, target: str, selection: str | None, *, memory: str = "file",
       repeat: int = 1, user: str = "R", status: ProbeStatus = ProbeStatus.COMPLETED) -> ProbeOutcome:
    return ProbeOutcome(user=user, context=Context(context), attribute=attr, probe_kind=ProbeKind(kind),
                        repeat=repeat, target=target, selection=selection, status=status, memory=memory,
                        model="m", differs_in_matrix=True)


def test_random_reference_is_the_exact_expectation_over_the_tables_cells() -> None:
    # verbosity: 2 settings, tone_formality: 3, autonomy_level: 3
    outcomes = [
        _o("work", "verbosity", "final", "Terse", "Terse"),
        _o("personal", "verbosity", "final", "Detailed", "Terse"),
        _o("work", "tone_formality", "final", "Formal", "Casual"),
        _o("work", "tone_formality", "pre_event", "Casual", "Casual"),
        _o("personal", "autonomy_level", "final", "Reactive", None),
        # another condition and repeat of the same cells: each cell still counts once
        _o("work", "verbosity", "final", "Terse", "Detailed", memory="none", repeat=2),
        # an incomplete probe is in no score, so its cell is not either
        _o("work", "guidance_level", "final", "Guided", None, status=ProbeStatus.INCOMPLETE),
    ]
    ref = random_reference(outcomes)
    assert (ref.cells, ref.pairs, ref.changed) == (4, 1, 1)
    assert ref.psa == pytest.approx((1 / 2 + 1 / 2 + 1 / 3 + 1 / 3) / 4)
    assert ref.cs == pytest.approx(1 / 4)  # verbosity's pair: both contexts right, 1/2 * 1/2
    assert ref.pet == pytest.approx(1 / 9)  # tone_formality at work: pre and final right, 1/3 * 1/3
    assert ref.text().startswith("random selection on these cells: PSA 41.7, CS 25.0, PET 11.1")
    assert "Appendix A.1" in ref.text()
    empty = random_reference([])
    assert (empty.psa, empty.cs, empty.pet) == (None, None, None)
    assert "PSA N/A, CS N/A, PET N/A" in empty.text()


def test_random_reference_over_every_cell_is_the_papers_chance() -> None:
    # one user, every attribute in both contexts: the paper's 28 cells (Appendix A.1: 45.2 %)
    outcomes = [_o(c, a.key, "final", a.setting_names[0], None) for a in ATTRIBUTES for c in ("work", "personal")]
    ref = random_reference(outcomes)
    assert ref.cells == 28 and ref.psa == pytest.approx(float(chance_psa())) and round(100 * ref.psa, 1) == 45.2
    assert ref.pairs == 14 and ref.cs == pytest.approx(sum(float(chance_of(a.key)) ** 2 for a in ATTRIBUTES) / 14)


def test_random_reference_on_user_a_full_timeline_is_worked_out_by_hand() -> None:
    """Every probe of user A's full timeline (worlds/users/A: 28 final probes, 5 pre-event probes),
    scored as the runner stores them (``differs_in_matrix`` from A's preference matrix), against
    numbers worked out by hand from the settings counts (10 attributes have 2 settings, 4 have 3)."""
    bundle = load_user(SHIPPED_WORLDS, "A")
    two = {a.key for a in ATTRIBUTES if len(a.settings) == 2}
    assert len(two) == 10 and len(ATTRIBUTES) == 14  # the counts the numbers below are worked from
    matrix = bundle.matrix
    outcomes = [
        _o(p.context.value, p.attribute, p.probe_kind.value, bundle.targets_at(p.context, p.starts_at)[p.attribute],
           None, user="A")
        .model_copy(update={"differs_in_matrix": matrix.setting(Context.WORK, p.attribute)
                            != matrix.setting(Context.PERSONAL, p.attribute)})
        for p in bundle.probes.values()
    ]
    # A's world, as the hand numbers assume it: the events change 4 two-setting cells and one
    # three-setting cell (information_elicitation at work); the matrix sets 8 attributes apart
    # between work and personal, 2 of them with 3 settings (tone_formality, information_elicitation).
    changed = {(p.context, p.attribute) for p in bundle.probes.values() if p.probe_kind is ProbeKind.PRE_EVENT}
    assert len(changed) == 5 and [a for _, a in changed if a not in two] == ["information_elicitation"]
    apart = {o.attribute for o in outcomes if o.differs_in_matrix}
    assert len(apart) == 8 and apart - two == {"tone_formality", "information_elicitation"}

    ref = random_reference(outcomes)
    assert (ref.cells, ref.pairs, ref.changed) == (28, 8, 5)
    # PSA: 20 cells at 1/2 and 8 at 1/3 -> (10 + 8/3) / 28 = 38/84 = 0.45238 (the paper's 45.2 %)
    assert ref.psa == pytest.approx(38 / 84)
    # CS: both contexts right, 1/k * 1/k: 6 pairs at 1/4, 2 at 1/9 -> (3/2 + 2/9) / 8 = 31/144
    assert ref.cs == pytest.approx(31 / 144)
    # PET: pre-event and final right: 4 cells at 1/4, 1 at 1/9 -> (1 + 1/9) / 5 = 2/9
    assert ref.pet == pytest.approx(2 / 9)
    assert ref.text().startswith("random selection on these cells: PSA 45.2, CS 21.5, PET 22.2")


def _quick(memory: str, selections: tuple[str, str, str]) -> list[ProbeOutcome]:
    """R's quick-start cells: pre-event work Low, final work High, final personal High."""
    pre, work, personal = selections
    return [_o("work", "solution_breadth", "pre_event", "Low", pre, memory=memory),
            _o("work", "solution_breadth", "final", "High", work, memory=memory),
            _o("personal", "solution_breadth", "final", "High", personal, memory=memory)]


def test_a_constant_choice_is_named_for_the_run_that_made_it_and_not_for_one_that_varied() -> None:
    outcomes = _quick("file", ("High", "High", "High")) + _quick("none", ("Low", "High", "Low"))
    ceiling = constant_ceiling(outcomes)
    assert ceiling.full and ceiling.settings == {"solution_breadth": "High"}
    assert (ceiling.psa, ceiling.cs, ceiling.pet) == (1.0, 1.0, 0.0)
    choices = constant_choices(outcomes)
    assert [(c.memory, c.setting, c.probes, c.targets) for c in choices] == [("file", "High", 3, ("Low", "High"))]
    lines = outcome_validity_lines(outcomes, {("file", "m", "R"): "R-file-run"})
    assert lines[1].startswith("every final probe here has the same target per attribute: a PA that always "
                               "picks High for solution_breadth scores PSA 100.0 / CS 100.0 / PET 0.0")
    assert "only PET (whose targets change) can" in lines[1]
    named = [line for line in lines if line.startswith("R-file-run: ")]
    assert len(named) == 1 and "the PA selected High in all 3 probes of solution_breadth" in named[0]
    assert "targets differ (Low, High): a choice that does not follow the target" in named[0]
    assert named[0].endswith("the fixed choice above, which scores PSA 100.0 / CS 100.0 on these cells without memory")
    assert not any("No Memory" in line or "none" in line.split(":")[0] for line in lines)


def test_a_fixed_choice_that_cannot_score_full_marks_is_not_claimed() -> None:
    # the final targets differ between contexts: no single choice scores 100, and a PA that varies
    # its choice is not named
    outcomes = [_o("work", "solution_breadth", "final", "Low", "Low"),
                _o("personal", "solution_breadth", "final", "High", "High")]
    assert not constant_ceiling(outcomes).full and constant_ceiling(outcomes).psa == pytest.approx(0.5)
    assert outcome_validity_lines(outcomes) == [random_reference(outcomes).text()]


def test_a_constant_choice_over_differing_targets_is_named_even_when_no_fixed_choice_scores_full() -> None:
    outcomes = [_o("work", "solution_breadth", "final", "Low", "High"),
                _o("personal", "solution_breadth", "final", "High", "High")]
    lines = outcome_validity_lines(outcomes)
    assert len(lines) == 2 and lines[1].startswith("File memory · m · user R: the PA selected High in both probes")
    assert lines[1].endswith("although their targets differ (Low, High): a choice that does not follow the target")
    assert "fixed choice" not in lines[1]  # no fixed choice scores full marks here


def test_a_constant_wrong_choice_on_one_target_is_not_named() -> None:
    # both final targets High, the PA picks Low in both: it scores 0, nothing to warn about
    outcomes = [_o("work", "solution_breadth", "final", "High", "Low"),
                _o("personal", "solution_breadth", "final", "High", "Low")]
    assert constant_ceiling(outcomes).full and len(constant_choices(outcomes)) == 1
    lines = outcome_validity_lines(outcomes)
    assert len(lines) == 2 and lines[1].startswith("every final probe here has the same target")
    assert "and no probe here tests a change (no PET)" in lines[1]


def test_oracle_verdict_below_the_floor_and_not_above() -> None:
    missed = oracle_checks(_quick("oracle", ("High", "High", "High")))  # the Low pre-event probe missed
    assert len(missed) == 1 and (missed[0].applied, missed[0].probes, missed[0].psa) == (2, 3, 1.0)
    assert missed[0].below_floor
    text = missed[0].text()
    assert text.startswith("Oracle PSA 100.0 (paper: 96.4-100, Table 2)")
    assert "2 of 3 probes (66.7%" in text
    assert "this model often does not apply a setting it is handed" in text
    assert "measure the model, not the memory" in text
    right = oracle_checks(_quick("oracle", ("Low", "High", "High")))
    assert not right[0].below_floor and "measure the model" not in right[0].text()
    assert "3 of 3 probes (100.0%" in right[0].text()
    # nine of ten is at the floor, not below it
    tenth = [_o("work", "verbosity", "final", "Terse", "Terse" if r < 10 else "Detailed", memory="oracle", repeat=r)
             for r in range(1, 11)]
    assert ORACLE_FLOOR == pytest.approx(0.9) and not oracle_checks(tenth)[0].below_floor
    # a floored probe counts as not applied
    floored = _quick("oracle", ("Low", "High", "High"))[:2] + [
        _o("personal", "solution_breadth", "final", "High", None, memory="oracle", status=ProbeStatus.FLOORED)]
    assert oracle_checks(floored)[0].below_floor
    assert oracle_checks(_quick("file", ("High", "High", "High"))) == []
    # a floored probe that did select the handed setting is said apart (fresh user, 4 December:
    # "1 of 3" read as if the PA had ignored the setting twice)
    selected = _quick("oracle", ("Low", "High", "High"))[:2] + [
        _o("personal", "solution_breadth", "final", "High", "High", memory="oracle", status=ProbeStatus.FLOORED)]
    check = oracle_checks(selected)[0]
    assert (check.applied, check.probes, check.floored_selected) == (2, 3, 1) and check.below_floor
    assert "2 of 3 probes (66.7%, final and pre-event; 1 more floored probe selected it and then failed the turn" in (
        check.text())
    assert oracle_checks(floored)[0].floored_selected == 0


def test_report_md_holds_the_lines_under_its_main_table(tmp_path: Path) -> None:
    paths = write_reports(_quick("file", ("High", "High", "High")), tmp_path, resamples=50)
    text = paths.main_md.read_text()
    main, rest = text.split("### Reading these scores", 1)
    assert "| File memory |" in main
    assert "- random selection on these cells: PSA 50.0, CS 25.0, PET 25.0" in rest.split("## By dimension")[0]


# ---- stored runs: mempa results / mempa report -------------------------------------------------

PROBES = (  # probe id, kind, context, target
    ("R-PE-work-solution_breadth", "pre_event", "work", "Low"),
    ("R-PF-personal-solution_breadth", "final", "personal", "High"),
    ("R-PF-work-solution_breadth", "final", "work", "High"),
)
SELECTIONS = {"file": ("High", "High", "High"), "none": ("Low", "High", "Low"), "oracle": ("High", "High", "High")}


async def _seed(db: Path, memories: tuple[str, ...]) -> None:
    async with RunStore(db) as store:
        for memory in memories:
            config = RunConfig(user="R", profile="scripted", memory=memory, repeats=1, worlds_dir=WORLDS, quick=True,
                               donor_run=None if memory == "file" else "R-file-scripted-s0-quick")
            await store.create_run(RunRecord(
                id=config.run_id, user="R", profile="scripted", memory=memory, seed=0, repeats=1,
                config_json=config.model_dump_json(), config_hash=config.config_hash(),
                status=RunStatus.COMPLETED, total_probes=3, donor_run=config.donor_run,
            ))
            for (probe_id, kind, context, target), selection in zip(PROBES, SELECTIONS[memory], strict=True):
                await store.save_probe_result(config.run_id, ProbeResultRecord(
                    probe_id=probe_id, repeat=1, kind=kind, context=context, attribute="solution_breadth",
                    target=target, selection=selection, status="completed", brs=4, prs=4,
                    started_at=utc_now(), finished_at=utc_now(),
                ))


def test_results_cli_prints_the_reference_lines_and_the_oracle_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    saves = tmp_path / "saves"
    saves.mkdir()
    asyncio.run(_seed(saves / "mempa.sqlite", ("file", "none")))
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    below = out.split("Reading these scores (without memory: random and fixed choices; the Oracle check):", 1)[1]
    assert "  random selection on these cells: PSA 50.0, CS 25.0, PET 25.0" in below
    assert "a PA that always picks High for solution_breadth scores PSA 100.0 / CS 100.0 / PET 0.0" in below
    assert "  R-file-scripted-s0-quick: the PA selected High in all 3 probes of solution_breadth" in below
    assert "R-none-scripted-s0-quick: the PA selected" not in below
    assert ("no Oracle run for user R on scripted: `mempa run --user R --quick --memory oracle --model scripted "
            "--repeats 1` measures whether this model applies a setting it is handed") in below
    assert below.index("random selection") < below.index("run settings (donor")  # under the table, before settings


def test_results_cli_checks_an_oracle_run_in_the_table_or_stored_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    saves = tmp_path / "saves"
    saves.mkdir()
    asyncio.run(_seed(saves / "mempa.sqlite", ("file", "none", "oracle")))
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  R-oracle-scripted-s0-quick: Oracle PSA"))
    assert "Oracle PSA 100.0 (paper: 96.4-100, Table 2)" in line and "2 of 3 probes (66.7%" in line
    assert "differences between memory conditions here measure the model, not the memory" in line
    assert "no Oracle run for user R" not in out
    # a table without the Oracle run: the stored one of the same user, profile and tool offer is checked
    assert main(["results", "R-file-scripted-s0-quick", "R-none-scripted-s0-quick", "--saves", str(saves),
                 "--resamples", "100"]) == 0
    named = capsys.readouterr().out
    assert "  R-oracle-scripted-s0-quick (stored, not in this table): Oracle PSA 100.0" in named
    assert "measure the model, not the memory" in named
    # the one-run report says the same, and so does its report.md
    assert main(["report", "R-file-scripted-s0-quick", "--saves", str(saves)]) == 0
    printed = capsys.readouterr().out
    assert "R-oracle-scripted-s0-quick (stored, not in this table)" in printed
    report = (saves / "R-file-scripted-s0-quick" / "report.md").read_text()
    assert "- random selection on these cells: PSA 50.0, CS 25.0, PET 25.0" in report
    assert "- R-file-scripted-s0-quick: the PA selected High in all 3 probes" in report


def test_an_unfinished_oracle_run_gets_no_verdict_and_says_how_many_probes_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 9: an Oracle run stopped at 1 of 3 probes gave the model a verdict from that probe."""
    one = [_o("work", "solution_breadth", "pre_event", "Low", "High", memory="oracle")]
    check = oracle_checks(one, planned={("m", "R"): 3})[0]
    assert check.unfinished and not check.below_floor
    assert check.text().endswith("0 of 1 probes (0.0%, final and pre-event) (run not finished: 1 of 3 probes): "
                                 "too few probes for a verdict")
    assert "does not apply" not in check.text()
    # every probe stored: the verdict is back
    done = oracle_checks(_quick("oracle", ("High", "High", "High")), planned={("m", "R"): 3})[0]
    assert not done.unfinished and done.below_floor and "not finished" not in done.text()

    import asyncio

    saves = tmp_path / "saves"
    saves.mkdir()
    asyncio.run(_seed(saves / "mempa.sqlite", ("file", "none", "oracle")))

    async def stop_oracle_after_one() -> None:  # the stored run as a stopped one: 1 of its 3 probes
        import aiosqlite

        async with aiosqlite.connect(saves / "mempa.sqlite") as db:
            await db.execute("DELETE FROM probe_results WHERE run_id = ? AND probe_id != ?",
                             ("R-oracle-scripted-s0-quick", PROBES[0][0]))
            await db.commit()

    asyncio.run(stop_oracle_after_one())
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  R-oracle-scripted-s0-quick: Oracle PSA"))
    assert "(run not finished: 1 of 3 probes): too few probes for a verdict" in line
    assert "measure the model" not in out
    # the stored Oracle run beside a table is read the same way
    assert main(["results", "R-file-scripted-s0-quick", "R-none-scripted-s0-quick", "--saves", str(saves),
                 "--resamples", "100"]) == 0
    named = capsys.readouterr().out
    assert "(stored, not in this table)" in named and "too few probes for a verdict" in named
    assert "measure the model" not in named


def test_the_reading_lines_say_who_gave_brs_and_prs_and_flag_packaged_models() -> None:
    """Finding 3: BRS/PRS were printed with no word on who judged them."""
    import json

    from mempa_tui.runner._validity import judges_line

    def run(judge: str, simulator: str, run_id: str = "A-file-embedded-s0-quick") -> RunRecord:
        config = {"profile_models": {"pa": "openai/qwen2.5-coder-0.5b-instruct temperature=0.7",
                                     "judge": f"openai/{judge} temperature=0.0 max_tokens=224",
                                     "simulator": f"openai/{simulator} temperature=0.0"}}
        return RunRecord(id=run_id, user="A", profile="p", memory="file", seed=0, repeats=1,
                         config_json=json.dumps(config), config_hash="h")

    embedded = judges_line([run("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")])
    assert embedded is not None
    assert embedded.startswith("BRS judged by qwen2.5-coder-0.5b-instruct, PRS rated by the simulated user on "
                               "qwen2.5-coder-1.5b-instruct; the paper's BRS comes from a large judge checked "
                               "against a second judge (Appendix H)")
    assert "The judge and rater are packaged embedded models (0.5B / 1.5B): these BRS/PRS are unvalidated" in embedded
    large = judges_line([run("gpt-4o", "gpt-4o-mini")])
    assert large is not None and "unvalidated" not in large and "BRS judged by gpt-4o" in large
    one = judges_line([run("gpt-4o", "qwen2.5-coder-1.5b-instruct")])
    assert one is not None and "The rater is a packaged embedded model (1.5B)" in one
    assert judges_line([RunRecord(id="x", user="A", profile="p", memory="file", seed=0, repeats=1,
                                  config_json="{}", config_hash="h")]) is None


def test_a_run_with_discarded_timeline_steps_says_so_and_one_without_says_nothing() -> None:
    from datetime import datetime, timezone

    from mempa_tui.runner._validity import discarded_line
    from mempa_tui.store.rows import StepRecord

    at = datetime(2026, 12, 2, tzinfo=timezone.utc)

    def step(i: int, step_id: str, kind: str, status: str) -> StepRecord:
        return StepRecord(index=i, step_id=step_id, kind=kind, status=status, started_at=at, finished_at=at)

    # measured on the packaged 1.5B simulated user (issue 12): both quick-start sessions ended invalid
    steps = [step(0, "A-S51", "accumulation", "invalid"), step(1, "A-S14", "accumulation", "invalid"),
             step(2, "A-E01", "change_event", "completed")]
    line = discarded_line("A-file-embedded-s0-quick", steps)
    assert line is not None and line.startswith(
        "A-file-embedded-s0-quick: 2 of 3 timeline steps discarded (A-S51, A-S14: invalid); "
        "its memory learned from the other 1")
    assert discarded_line("R", [s.model_copy(update={"status": "completed"}) for s in steps]) is None
    assert discarded_line("R", [step(0, "S", "accumulation", "floored")]) is None  # floored is kept
