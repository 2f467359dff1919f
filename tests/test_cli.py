"""The ``mempa`` command line: user errors as one line with exit code 2, a whole run with its
progress lines and report, listing and reprinting runs, refusing a changed config, and a run
killed with SIGKILL that the same command resumes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import yaml
from filelock import FileLock
from test_runner_support import WORLDS, protocol_responder

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedModelServer
from mempa_tui.runner import lease_path


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(protocol_responder) as srv:
        yield srv


@pytest.fixture
def profile_file(server: ScriptedModelServer, tmp_path: Path) -> Path:
    path = tmp_path / "scripted.yaml"
    path.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
    return path


def _run_args(tmp_path: Path, profile: Path, *extra: str) -> list[str]:
    return [
        "run", "--user", "R", "--memory", "file", "--model", str(profile), "--repeats", "1",
        "--worlds", str(WORLDS), "--saves", str(tmp_path / "saves"),
        "--local-memory", str(tmp_path / "local_memory"), *extra,
    ]


def _steps(saves: Path, run_id: str) -> list[str]:
    with sqlite3.connect(saves / "mempa.sqlite") as db:
        return [r[0] for r in db.execute("SELECT step_id FROM steps WHERE run_id = ? ORDER BY idx", (run_id,))]


def _calls(saves: Path, run_id: str, step_id: str) -> int:
    with sqlite3.connect(saves / "mempa.sqlite") as db:
        row = db.execute("SELECT COUNT(*) FROM llm_calls WHERE run_id = ? AND step_id = ?", (run_id, step_id))
        return int(row.fetchone()[0])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run"], "the following arguments are required: --user"),
        (["run", "--user", "A", "--repeats", "zero"], "--repeats: 'zero' is not a whole number"),
        (["run", "--user", "Z", "--worlds", str(WORLDS), "--model", "embedded"], "unknown user 'Z'"),
        (["run", "--user", "R", "--worlds", str(WORLDS), "--model", "no-such-profile"], "no-such-profile"),
        (["run", "--user", "R", "--worlds", str(WORLDS), "--memory", "bogus", "--model", "embedded"],
         "unknown memory condition 'bogus'"),
        (["report", "X", "--saves", "/nonexistent-folder"], "no run database"),
        (["runs", "--saves", "/etc/hostname"], "/etc/hostname: the saves folder is a file, not a folder"),
        (["results", "--resamples", "99999999999"], "--resamples: 99999999999 is more than 100,000"),
        (["run", "--user", "A", "--worlds", "/nonexistent-worlds", "--model", "embedded"],
         "no worlds folder at /nonexistent-worlds (run mempa from the repository root, or pass --worlds DIR)"),
        (["frobnicate"], "invalid choice"),
        (["mcp", "--user", "A", "--at", "nonsense"], "error: mcp: argument --at: 'nonsense' is not an ISO date-time"),
        (["run", "--user", "R", "--seed", "-5", "--worlds", str(WORLDS), "--model", "embedded"], "run: argument --seed: -5 is negative; a seed is 0 or more"),
    ],
)
def test_user_errors_are_one_line_with_exit_code_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mempa: error:") and expected in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "error: mempa:" not in err and "Value error," not in err  # no doubled or leaked prefixes


def test_broken_world_file_names_path_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    worlds = tmp_path / "worlds"
    shutil.copytree(WORLDS, worlds)
    session = worlds / "users" / "R" / "sessions" / "R-s1.yaml"
    session.write_text(session.read_text().replace("context: work", "context: wrok"))
    assert main(["run", "--user", "R", "--worlds", str(worlds), "--model", "embedded"]) == 2
    err = capsys.readouterr().err
    assert f"{session}:2:" in err and "Traceback" not in err
    assert main(["worlds", "check", str(worlds)]) == 1
    out = capsys.readouterr().out
    assert f"{session}:2:" in out


def test_worlds_check_exit_codes_and_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # user R is a slice: the checker's one complaint is the missing final probes, as path:line
    assert main(["worlds", "check", str(WORLDS)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [l for l in lines if l.startswith(f"{WORLDS / 'users' / 'R' / 'timeline.yaml'}:1: ")]
    assert len(lines) == 1 and "have no final probe" in lines[0]
    assert main(["worlds", "check", str(tmp_path / "nowhere")]) == 2
    assert "not a worlds folder" in capsys.readouterr().err
    # no violation: exit 0 and a one-line summary (a full 28-probe user is too big for a fixture)
    from mempa_tui.scripts import check

    monkeypatch.setattr(check, "check_worlds", lambda folder: [])
    assert main(["worlds", "check", str(WORLDS)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{WORLDS}: 1 user(s) (R) checked, no problems"]


@pytest.mark.timeout(400)
def test_run_prints_progress_and_scores_then_runs_and_report(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run_args(tmp_path, profile_file)) == 0
    out = capsys.readouterr().out
    for line in ("step 1/3 R-s1 completed", "step 3/3 R-ev1 completed", "probe 3/3"):
        assert line in out
    assert "PSA" in out and "File memory" in out
    # the header and the run's table say which thresholds and decoding produced the scores (11.4)
    header = "  settings: File memory consolidates at 20,000 -> 10,000 tokens of PA prompt (the paper's values)"
    assert header in out
    assert "Run settings: File memory consolidates at 20,000 -> 10,000" in out and "decoding: pa t=" in out
    # the memory's counters judged (issue 16): three scripted sessions stay far below the 20,000-token
    # threshold, so MEMORY.md was never written and the probes saw an empty memory (issue 12)
    assert "memory health: BROKEN," in out and "MEMORY.md never written" in out
    report = tmp_path / "saves" / "R-file-scripted-s0" / "report.md"
    assert f"report: {report}" in out and report.is_file()

    assert main(["runs", "--saves", str(tmp_path / "saves")]) == 0
    listing = capsys.readouterr().out
    assert "R-file-scripted-s0" in listing and "completed" in listing and "3/3" in listing

    report.unlink()
    assert main(["report", "R-file-scripted-s0", "--saves", str(tmp_path / "saves")]) == 0
    printed = capsys.readouterr().out
    assert "PSA" in printed and report.is_file()
    assert "Carry-over is N/A in a one-run report" in printed  # no No Memory run yet: the table says why
    assert main(["report", "R-nope", "--saves", str(tmp_path / "saves")]) == 2
    assert "R-file-scripted-s0" in capsys.readouterr().err
    # --out: the report elsewhere (a read-only saves folder); a target that cannot be written is named
    assert main(["report", "R-file-scripted-s0", "--saves", str(tmp_path / "saves"), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "R-file-scripted-s0" / "report.md").is_file()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["report", "R-file-scripted-s0", "--saves", str(tmp_path / "saves"), "--out", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "cannot write the report of R-file-scripted-s0" in err and "--out DIR" in err
    assert main(["results", "--saves", str(tmp_path / "saves"), "--out", str(blocker), "--resamples", "100"]) == 2
    assert "cannot write the exported tables" in capsys.readouterr().err
    assert main(["results", "--saves", str(tmp_path / "saves"), "--out", str(tmp_path / "x"), "--resamples", "100"]) == 0
    assert "exported: " + str(tmp_path / "x" / "results-") in capsys.readouterr().out

    # the same run with another repeat count is refused, naming the field and --fresh
    assert main(_run_args(tmp_path, profile_file)[:-6] + ["--repeats", "2", *_run_args(tmp_path, profile_file)[-6:]]) == 2
    err = capsys.readouterr().err
    assert "repeats: 1 -> 2" in err and "--fresh" in err and len(err.strip().splitlines()) == 1


def _run_until_step_2_then(sig: signal.Signals, args: list[str], times: int = 1) -> tuple[int, str]:
    """Start ``mempa run`` in a subprocess, send ``sig`` (``times`` times, at once) once step 2
    starts; (exit code, output)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mempa_tui.cli.main", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    seen: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("step 2/3 R-s2"):  # the second session has started
            for _ in range(times):
                os.kill(proc.pid, sig)
    proc.wait()
    proc.stdout.close()
    return proc.returncode, "".join(seen)


def _status(saves: Path, run_id: str) -> str:
    with sqlite3.connect(saves / "mempa.sqlite") as db:
        return str(db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


@pytest.mark.timeout(400)
def test_run_stopped_with_sigterm_records_stopped_and_exits_143(tmp_path: Path, profile_file: Path) -> None:
    code, output = _run_until_step_2_then(signal.SIGTERM, _run_args(tmp_path, profile_file))
    assert code == 128 + signal.SIGTERM, output
    assert "stopped by SIGTERM; run the same command again to resume" in output
    assert _status(tmp_path / "saves", "R-file-scripted-s0") == "stopped"
    assert _steps(tmp_path / "saves", "R-file-scripted-s0") == ["R-s1"]


@pytest.mark.timeout(400)
def test_ctrl_c_twice_still_stops_cleanly_and_records_stopped(tmp_path: Path, profile_file: Path) -> None:
    # The second Ctrl-C used to interrupt the clean-up: a traceback, and the run left "running".
    code, output = _run_until_step_2_then(signal.SIGINT, _run_args(tmp_path, profile_file), times=3)
    assert code == 128 + signal.SIGINT, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert "stopped by SIGINT; run the same command again to resume" in output
    assert _status(tmp_path / "saves", "R-file-scripted-s0") == "stopped"
    assert _steps(tmp_path / "saves", "R-file-scripted-s0") == ["R-s1"]


@pytest.mark.timeout(400)
def test_run_killed_with_sigkill_resumes_with_each_step_once(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _run_args(tmp_path, profile_file)
    code, output = _run_until_step_2_then(signal.SIGKILL, args)
    assert code == -signal.SIGKILL, output
    saves = tmp_path / "saves"
    run_id = "R-file-scripted-s0"
    assert _steps(saves, run_id) == ["R-s1"]
    calls_s1 = _calls(saves, run_id, "R-s1")
    assert _status(saves, run_id) == "running"  # nothing could record the kill ...
    assert main(["runs", "--saves", str(saves)]) == 0
    listing = capsys.readouterr().out  # ... but nobody holds its lease, so it shows as interrupted
    assert "interrupted" in listing and "rerun its `mempa run` command to resume" in listing

    assert main(args) == 0  # the same command resumes
    assert _steps(saves, run_id) == ["R-s1", "R-s2", "R-ev1"]
    assert _calls(saves, run_id, "R-s1") == calls_s1
    with sqlite3.connect(saves / "mempa.sqlite") as db:
        probes = db.execute("SELECT COUNT(*) FROM probe_results WHERE run_id = ?", (run_id,)).fetchone()[0]
        checkpoints = [r[0] for r in db.execute(
            "SELECT step_idx FROM checkpoints WHERE run_id = ? ORDER BY step_idx", (run_id,))]
    assert probes == 3 and checkpoints == [-1, 0, 1, 2]


def test_a_run_another_process_is_playing_is_refused_and_left_alone(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saves = tmp_path / "saves"
    saves.mkdir()
    held = FileLock(lease_path(saves / "mempa.sqlite", "R-file-scripted-s0"), timeout=0, thread_local=False)
    with held:  # stands in for a second `mempa run` of the same run, still playing
        assert main(_run_args(tmp_path, profile_file)) == 2
        err = capsys.readouterr().err
        assert "run R-file-scripted-s0 is being played by another mempa process" in err
        assert len(err.strip().splitlines()) == 1
        assert not (saves / "mempa.sqlite").exists() or _steps(saves, "R-file-scripted-s0") == []
        assert main(["runs", "--saves", str(saves)]) in (0, 2)
        capsys.readouterr()
    assert main(_run_args(tmp_path, profile_file)) == 0  # the lease is free again: the run plays
    assert _steps(saves, "R-file-scripted-s0") == ["R-s1", "R-s2", "R-ev1"]


def test_models_list_and_check(profile_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert "embedded" in listing and "ollama" in listing
    assert main(["models", "check", str(profile_file)]) == 0
    out = capsys.readouterr().out
    assert "scripted-pa" in out and "all 5 endpoint(s) answered" in out  # one request per chat role's endpoint
    assert "ok    pa " in out


def test_models_check_sends_a_request_and_reports_a_dead_port(
    profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = yaml.safe_load(profile_file.read_text())
    data["roles"]["judge"]["api_base"] = f"http://127.0.0.1:{port}"
    dead = tmp_path / "dead.yaml"
    dead.write_text(yaml.safe_dump(data))
    assert main(["models", "check", str(dead)]) == 1
    out = capsys.readouterr().out
    assert "DOWN  judge" in out and f"127.0.0.1:{port}" in out
    assert "ok    pa " in out and "1 of 5 endpoint(s) of profile" in out and "did not answer" in out


def test_output_cut_short_by_a_closed_pipe_ends_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mempa_tui.cli.main", "tools", "list", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the catalog is written, like `| head -c 0`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_bad_memory_option_is_refused_before_the_run_is_stored(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mempa_tui.cli._run as run_cli

    def no_runtime(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the model runtime was prepared for a refused option")

    # finding 10: refused before any runtime preparation (weights, servers) and before the store opens
    monkeypatch.setattr(run_cli, "prepare_runtime", no_runtime)
    bad = _run_args(tmp_path, profile_file, "--memory-option", "consolidate_at_tokens=-5")
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert "consolidate_at_tokens must be a positive number of tokens, got -5" in err
    assert "without the option the run would use" in err
    assert not (tmp_path / "saves" / "mempa.sqlite").exists()
    for memories in ("file", "none,file"):  # one condition, and several at once
        args = _run_args(tmp_path, profile_file, "--memory-option", "consolidate_to_tokens=999999")
        args[args.index("--memory") + 1] = memories
        assert main(args) == 2
        err = capsys.readouterr().err
        # the message names the value the run would use for the option not given, not the paper's only
        assert "consolidate_to_tokens must be below consolidate_at_tokens; the run would use" in err
        assert "consolidate_to_tokens 999,999 (given)" in err
        assert not (tmp_path / "saves" / "mempa.sqlite").exists()
    assert main(["runs", "--saves", str(tmp_path / "saves")]) == 0
    assert "no runs yet" in capsys.readouterr().out


def test_a_saves_path_that_is_a_file_is_one_error_line(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "saves"
    blocker.write_text("not a folder")
    assert main(_run_args(tmp_path, profile_file)) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"mempa: error: {blocker}: the saves folder is a file, not a folder"
    assert blocker.read_text() == "not a folder"


@pytest.mark.timeout(400)
def test_several_conditions_run_side_by_side_then_results_compares_stored_runs(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saves = tmp_path / "saves"
    args = _run_args(tmp_path, profile_file)
    args[args.index("--memory") + 1] = "none,file,prefstate"
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "3 runs side by side: R-none-scripted-s0, R-file-scripted-s0, R-prefstate-scripted-s0" in out
    assert "[R-file-scripted-s0] step 1/3 R-s1 completed" in out  # interleaved lines name their run
    assert "[R-none-scripted-s0] probe 3/3" in out
    assert "[R-none-scripted-s0] note: probing from the checkpoints of donor run R-file-scripted-s0" in out
    table = out[out.index("run R-prefstate-scripted-s0 completed"):]
    for label, rows in (("File memory", 2), ("Preference-state memory", 2), ("No Memory", 1)):
        assert sum(line.startswith(label) for line in table.splitlines()) == rows, label  # table + differences
    assert "Difference from No Memory" in table and "ΔPSA" in table
    # every results table names the donor, the thresholds and the decoding (issue 11.4)
    assert "  R-none-scripted-s0: donor R-file-scripted-s0; donor's File memory consolidates at" in table
    assert "  R-file-scripted-s0: File memory consolidates at " in table and "decoding: pa t=" in table
    report = (saves / "R-file-scripted-s0" / "report.md").read_text()
    assert "## Run settings" in report and "File memory consolidates at" in report
    assert "Preference-state memory (taxonomy-aware, ours)" in table  # ours, marked apart from the paper's
    assert "  prefstate: taxonomy-aware (ours)" in table.split("Conditions (source;", 1)[1]

    assert main(["results", "--saves", str(saves)]) == 0
    again = capsys.readouterr().out
    assert again.splitlines()[0].split()[:3] == ["Memory", "Model", "PSA"]
    assert "Difference from No Memory" in again and "prefstate: taxonomy-aware (ours)" in again
    assert main(["results", "R-file-scripted-s0", "R-prefstate-scripted-s0", "--saves", str(saves)]) == 0
    two = capsys.readouterr().out
    assert "No Memory" not in two.split("(no No Memory", 1)[0] and "add one with `mempa run --memory none" in two
    assert main(["results", "--saves", str(saves), "--by", "user", "--export", "--resamples", "200"]) == 0
    exported = capsys.readouterr().out
    folder = next(saves.glob("results-*"))
    assert f"exported: {folder / 'report.md'}" in exported and (folder / "by_user.csv").is_file()
    for name in ("screen.md", "report.md"):  # exported tables name the donor too (issue 11.4)
        assert "- R-none-scripted-s0: donor R-file-scripted-s0;" in (folder / name).read_text()
    assert main(["results", "R-nope", "--saves", str(saves)]) == 2
    err = capsys.readouterr().err
    assert "no run 'R-nope'" in err and "R-file-scripted-s0" in err
    assert main(["results", "--saves", str(saves), "--user", "Q"]) == 2
    assert "unknown user 'Q': no stored run" in capsys.readouterr().err

    # another seed of File memory: all runs together keep the newest of the two, named ones refuse
    seed1 = _run_args(tmp_path, profile_file, "--seed", "1")
    assert main(seed1) == 0
    capsys.readouterr()
    assert main(["results", "--saves", str(saves)]) == 0
    out = capsys.readouterr().out
    assert "name runs to choose): R-file-scripted-s1" in out  # both completed: the lower seed is kept
    assert main([*seed1, "--fresh"]) == 0
    capsys.readouterr()
    assert main(["results", "--saves", str(saves)]) == 0
    assert ("not shown: 1 archived run(s) (moved aside by --fresh; name one, without the run that replaced it, "
            "to see its scores): R-file-scripted-s1~1") in capsys.readouterr().out
    assert main(["results", "R-file-scripted-s0", "R-file-scripted-s1", "--saves", str(saves)]) == 2
    assert "runs R-file-scripted-s0 and R-file-scripted-s1 both hold user R's file probes" in capsys.readouterr().err

    # a donor that does not exist is refused before any run plays
    donor_args = [*args, "--donor", "R-nope"]
    donor_args[donor_args.index("--memory") + 1] = "none,prefstate"
    assert main(donor_args) == 2
    captured = capsys.readouterr()
    assert "donor run 'R-nope' not found" in captured.err and "step 1/3" not in captured.out

    args[args.index("--memory") + 1] = "file,rag,file"
    assert main(args) == 2
    assert "names file more than once" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--memory", "file,none", "--memory-option", "top_k=3"],
         "no listed condition (file, none) takes memory option 'top_k'; rag, mem0, memos, ours-rag would"),
        (["--memory", "file,rag", "--memory-option", "rag.top_k=many"], "'rag': top_k must be an integer, got 'many'"),
        (["--memory", "file,none", "--memory-option", "none.x=1"], "'none' has no option 'x'; it takes no options"),
        (["--memory", "file", "--memory-option", "rag.top_k=3"], "is for 'rag', which is not among"),
        (["--memory", "file,rag", "--memory-option", ".x=1"], "memory option '.x': write CONDITION.KEY"),
        (["--fresh", "--probes-only"], "--fresh with --probes-only would set the stored file run aside"),
        (["--donor", "R-file-scripted-s0"], "--donor is for --memory none or oracle"),
        (["--probes-only"], "--probes-only: run R-file-scripted-s0 has not played its timeline yet"),
    ],
)
def test_run_arguments_that_would_waste_a_run_are_refused_before_anything_plays(
    tmp_path: Path, profile_file: Path, server: ScriptedModelServer, extra: list[str],
    expected: str, capsys: pytest.CaptureFixture[str],
) -> None:
    args = _run_args(tmp_path, profile_file)
    if "--memory" in extra:  # replace the default condition
        i = args.index("--memory")
        del args[i : i + 2]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert not server.requests
    database = tmp_path / "saves" / "mempa.sqlite"
    if database.exists():
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_a_local_memory_path_that_is_a_file_is_refused_and_a_stored_run_keeps_its_status(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run_args(tmp_path, profile_file)) == 0
    capsys.readouterr()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    args = _run_args(tmp_path, profile_file)
    args[args.index("--local-memory") + 1] = str(blocker)
    assert main(args) == 2
    assert f"--local-memory {blocker}: a file, not a folder" in capsys.readouterr().err
    args[args.index("--local-memory") + 1] = str(blocker / "below")
    assert main(args) == 2
    assert f"--local-memory {blocker / 'below'}: cannot create the folder (Not a directory)" in capsys.readouterr().err
    with sqlite3.connect(tmp_path / "saves" / "mempa.sqlite") as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("completed",)]


def test_options_go_to_the_conditions_that_take_them() -> None:
    from mempa_tui.memory import options_per_condition

    shares = options_per_condition(["file", "rag", "mem0", "none"],
                                   {"top_k": 3, "rag.evidence_tokens": 500, "consolidate_at_tokens": 9000})
    assert shares == {
        "file": {"consolidate_at_tokens": 9000},
        "rag": {"top_k": 3, "evidence_tokens": 500},
        "mem0": {"top_k": 3},
        "none": {},
    }
    # one condition: everything goes to it, and its builder names what it does not know
    assert options_per_condition(["file"], {"bogus": 1}) == {"file": {"bogus": 1}}


def test_several_conditions_refuse_a_stored_run_with_other_options_before_anything_plays(
    tmp_path: Path, profile_file: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run_args(tmp_path, profile_file)) == 0  # File memory with its default options
    capsys.readouterr()
    played = len(server.requests)
    args = _run_args(tmp_path, profile_file, "--memory-option", "consolidate_at_tokens=30000")
    args[args.index("--memory") + 1] = "none,file"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "run R-file-scripted-s0 was started with a different configuration" in err
    assert "memory_options.consolidate_at_tokens" in err
    assert len(server.requests) == played  # the No Memory run did not probe from the old run
    with sqlite3.connect(tmp_path / "saves" / "mempa.sqlite") as db:
        assert [r[0] for r in db.execute("SELECT id FROM runs")] == ["R-file-scripted-s0"]


def test_probes_only_is_refused_for_a_memory_run_stopped_before_its_first_step(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mempa_tui.store import RunRecord, RunStore

    async def store_an_empty_run() -> None:  # as a run stopped before its first step ended
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            await store.create_run(RunRecord(
                id="R-file-scripted-s0", user="R", profile="scripted", memory="file", seed=0, repeats=1,
                config_json="{}", config_hash="0" * 64, total_steps=3,
            ))

    anyio.run(store_an_empty_run)
    assert main(_run_args(tmp_path, profile_file, "--probes-only")) == 2
    assert "--probes-only: run R-file-scripted-s0 has not played its timeline yet" in capsys.readouterr().err


def test_a_reference_run_without_a_file_memory_donor_is_refused_with_the_run_to_play(
    tmp_path: Path, profile_file: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 11.4: never the fixture world; the message names the File memory run to play first.
    args = _run_args(tmp_path, profile_file)
    args[args.index("--memory") + 1] = "none"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no completed File memory run of user R" in err
    assert "play `mempa run --user R --memory file --model scripted --seed 0` (run R-file-scripted-s0) first" in err
    args[args.index("--memory") + 1] = "none,prefstate"  # a batch without File memory
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "R-none-scripted-s0: no completed File memory run" in captured.err and "add file to --memory" in captured.err
    assert "step 1/3" not in captured.out and server.requests == []  # refused before anything played


def test_a_profile_whose_window_cannot_hold_the_tools_is_refused_before_the_run(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 15.6: said before the run starts, with the window that is needed.
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump(server.profile(context_window=8192).model_dump(mode="json")))
    assert main(_run_args(tmp_path, small)) == 2
    err = capsys.readouterr().err
    assert "the PA's context_window of 8,192 tokens cannot hold the world tools" in err
    assert "Set context_window to at least" in err
    assert server.requests == [] and not (tmp_path / "saves" / "mempa.sqlite").exists()


def test_a_refused_run_leaves_no_empty_database_and_results_names_an_unknown_user(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 13: a refused run (No Memory with no File memory donor) left a new empty
    mempa.sqlite behind, and `mempa results --user Q` read as "no runs to compare" (exit 1)."""
    args = _run_args(tmp_path, profile_file)
    args[args.index("--memory") + 1] = "none"
    assert main(args) == 2
    assert "no completed File memory run of user R" in capsys.readouterr().err
    assert not (tmp_path / "saves").exists()
    # a saves folder that was there is kept (only the database this command made goes)
    (tmp_path / "saves").mkdir()
    assert main(args) == 2
    capsys.readouterr()
    assert (tmp_path / "saves").is_dir() and not (tmp_path / "saves" / "mempa.sqlite").exists()

    import asyncio

    from test_browse_support import seed

    asyncio.run(seed(tmp_path / "saves" / "mempa.sqlite"))
    assert main(["results", "--saves", str(tmp_path / "saves"), "--user", "Q", "--resamples", "100"]) == 2
    err = capsys.readouterr().err
    assert "unknown user 'Q': no stored run in" in err and "(users with stored runs: R)" in err
    assert main(["results", "--saves", str(tmp_path / "saves"), "--user", "r", "--resamples", "100"]) == 0
    # a refused run on a database that holds runs keeps it
    assert main(args) == 2
    capsys.readouterr()
    assert (tmp_path / "saves" / "mempa.sqlite").is_file()
