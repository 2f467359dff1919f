"""``mempa show`` prints a floored probe's scores as scoring counts them (fresh-user check).

A floored final probe is stored without a BRS (no judge reads it): the floor rule of paper
Appendix F.2 scores it PSA 0 and BRS 1, and PRS is what was rated (1 by rule when the PA gave no
reply at all). ``mempa show RUN`` printed "-" for such a BRS while ``mempa results`` counted 1;
it now prints ``1 (floor)`` and lists each floored repeat with its reason, and
``mempa show RUN PROBE`` prints ``BRS: 1`` with the rule and the reason.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from test_runner_support import WORLDS

from mempa_tui.cli.main import main
from mempa_tui.runner import RunConfig
from mempa_tui.runner._scoring import _FLOORED_BRS, _NO_REPLY_PRS
from mempa_tui.store import ProbeResultRecord, RunRecord, RunStatus, RunStore, utc_now

NO_REPLY = "no reply to judge: no final reply after 8 model calls"
IX_TEXT = "interaction-tool text in the reply: names IX_solution_breadth"
PROBES = {  # probe id -> (attribute, target, reason, brs_reason, prs, prs_reason)
    "R-final-work-verbosity": ("verbosity", "Terse", NO_REPLY, _FLOORED_BRS, 1, _NO_REPLY_PRS),
    "R-final-work-solution_breadth": ("solution_breadth", "Low", IX_TEXT, None, 2, "user: it listed one option"),
}


async def _seed(db: Path) -> str:
    config = RunConfig(user="R", profile="scripted", memory="none", repeats=1, worlds_dir=WORLDS)
    async with RunStore(db) as store:
        await store.create_run(RunRecord(
            id=config.run_id, user="R", profile="scripted", memory="none", seed=0, repeats=1,
            config_json=config.model_dump_json(), config_hash=config.config_hash(),
            status=RunStatus.COMPLETED, total_probes=len(PROBES), total_steps=0))
        for probe_id, (attr, target, reason, brs_reason, prs, prs_reason) in PROBES.items():
            await store.save_probe_result(config.run_id, ProbeResultRecord(
                probe_id=probe_id, repeat=1, kind="final", context="work", attribute=attr, target=target,
                selection=None, status="floored", reason=reason, brs=None, brs_reason=brs_reason,
                prs=prs, prs_reason=prs_reason, started_at=utc_now(), finished_at=utc_now()), [], [])
    return config.run_id


@pytest.fixture
def saves(tmp_path: Path) -> tuple[Path, str]:
    run_id = anyio.run(_seed, tmp_path / "mempa.sqlite")
    return tmp_path, run_id


def test_the_listing_prints_the_floor_scores_and_each_floored_repeat_with_its_reason(
    saves: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, run_id = saves
    assert main(["show", run_id, "--saves", str(folder)]) == 0
    out = capsys.readouterr().out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
            if ln.strip().startswith("R-final-") and " r1: " not in ln}  # table rows, not the reasons
    verbosity = rows["R-final-work-verbosity"]
    assert verbosity[-3:] == ["1", "(floor)", "1"], verbosity  # BRS 1 by the floor rule, PRS 1 by rule
    assert rows["R-final-work-solution_breadth"][-3:] == ["1", "(floor)", "2"]  # PRS as rated
    assert "2 floored repeat(s), scored PSA 0 and BRS 1 by the floor rule of paper Appendix F.2" in out
    assert f"R-final-work-verbosity r1: {NO_REPLY}" in out
    assert f"R-final-work-solution_breadth r1: {IX_TEXT}" in out


def test_one_floored_probe_in_full_prints_brs_1_with_the_rule_and_the_reason(
    saves: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, run_id = saves
    assert main(["show", run_id, "R-final-work-solution_breadth", "--saves", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"floored: {IX_TEXT}\n  (scored PSA 0 and BRS 1 by the floor rule" in out
    assert "BRS: 1  (floored: BRS 1 by rule, not judged)" in out  # no stored reason: the rule is named
    assert "PRS: 2  (user: it listed one option)" in out
    assert "BRS: -" not in out
    assert main(["show", run_id, "R-final-work-verbosity", "--saves", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "BRS: 1  (floored: BRS 1 by rule, not judged)" in out
    assert "PRS: 1  (floored, no final reply: PRS 1 by rule" in out


def test_a_floored_pre_event_probe_gets_no_brs() -> None:
    """Pre-event probes are scored for PSA only (Section 3.5): the floor rule adds no BRS there."""
    from mempa_tui.runner._browse import scored_brs

    assert scored_brs("pre_event", "floored", None) is None
    assert scored_brs("final", "floored", None) == 1
    assert scored_brs("final", "completed", 4) == 4
    assert scored_brs("final", "invalid", None) is None
