"""What ``mempa run`` and ``mempa runs`` print for a quick start and its reference run must not
mislead (issue 12, found by a fresh user): a single-condition run's table names the tools it
offered, its outcome is said once, a reference run's steps read ``-`` (it plays none), and a
rerun of a completed run that changes nothing keeps its UPDATED time. User R of
tests/fixtures_runner with a quick start, scripted model over loopback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_runner_support import protocol_responder, quick_worlds

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedModelServer


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(protocol_responder) as srv:
        yield srv




def _updated_at(saves: Path, run_id: str) -> str:
    with sqlite3.connect(saves / "mempa.sqlite") as db:
        return str(db.execute("SELECT updated_at FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


@pytest.mark.timeout(400)
def test_a_quick_reference_run_prints_its_offer_once_completed_and_a_rerun_keeps_its_time(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "scripted.yaml"
    profile.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
    worlds, saves = quick_worlds(tmp_path), tmp_path / "saves"

    def run(memory: str) -> str:
        argv = ["run", "--user", "R", "--quick", "--memory", memory, "--model", str(profile), "--repeats", "1",
                "--worlds", str(worlds), "--saves", str(saves), "--local-memory", str(tmp_path / "lm")]
        assert main(argv) == 0
        return capsys.readouterr().out

    run("file")
    out = run("oracle")
    oracle = "R-oracle-scripted-s0-quick"
    assert f"run {oracle}: no steps of its own (probes from its donor), 3 probe repeats" in out
    # 12.2: the single-run table names the smaller tool offer, as `mempa results` does
    assert "Run settings: tools offered: " in out and "(quick start: the domains its sessions" in out
    # 12.2: the outcome is said once, under the table (the progress stream no longer says it too)
    assert out.count(f"run {oracle} completed") == 1
    assert out.rstrip().endswith(f"run {oracle} completed")

    # 12.4: the same command again stores nothing new, so the run keeps its time
    before, calls = _updated_at(saves, oracle), len(server.requests)
    again = run("oracle")
    assert again.count(f"run {oracle} completed") == 1
    assert "Run settings: tools offered: " in again  # the stored run's table again, without a model call
    assert len(server.requests) == calls
    assert _updated_at(saves, oracle) == before

    # 12.3: a reference run plays no steps: '-' (explained), never 0/0
    assert main(["runs", "--saves", str(saves)]) == 0
    listing = capsys.readouterr().out
    row = next(line for line in listing.splitlines() if line.startswith(oracle))
    assert row.split()[2] == "-" and "0/0" not in listing
    assert "STEPS -: a No Memory or Oracle run plays no steps" in listing
    file_row = next(line for line in listing.splitlines() if line.startswith("R-file-"))
    assert file_row.split()[2] == "3/3"
