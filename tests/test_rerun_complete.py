"""Rerunning ``mempa run`` for runs that are already complete prints their results without
bringing up the model runtime (the embedded llama.cpp servers, the Ollama check): a completed run
has nothing left to play, and starting a server only to find that took minutes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_runner_support import WORLDS, protocol_responder

from mempa_tui.cli import _run
from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedModelServer


class RuntimeStarted(RuntimeError):
    """Raised by the stand-in for ``prepare_runtime``: the rerun tried to start a model."""


@pytest.fixture
def profile_file(tmp_path: Path) -> Iterator[Path]:
    with ScriptedModelServer(protocol_responder) as server:
        path = tmp_path / "scripted.yaml"
        path.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
        yield path


def _args(tmp_path: Path, profile: Path, memory: str, *extra: str) -> list[str]:
    return ["run", "--user", "R", "--memory", memory, "--model", str(profile), "--repeats", "1",
            "--worlds", str(WORLDS), "--saves", str(tmp_path / "saves"),
            "--local-memory", str(tmp_path / "local_memory"), *extra]


def _refuse_runtime(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    async def refuse(profile: Any, *_args: Any, **_kw: Any) -> Any:
        asked.append(profile.name)
        raise RuntimeStarted("prepare_runtime was called")

    monkeypatch.setattr(_run, "prepare_runtime", refuse)
    return asked


@pytest.mark.timeout(600)
def test_a_completed_run_and_batch_rerun_print_results_without_preparing_the_runtime(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(_args(tmp_path, profile_file, "file,none")) == 0
    first = capsys.readouterr().out
    assert "run R-file-scripted-s0 completed" in first and "run R-none-scripted-s0 completed" in first

    asked = _refuse_runtime(monkeypatch)
    # the batch again: both runs stored complete, so no runtime, and the same results table
    assert main(_args(tmp_path, profile_file, "file,none")) == 0
    out = capsys.readouterr().out
    assert asked == []
    assert "runs R-file-scripted-s0, R-none-scripted-s0 are already complete: their results follow" in out
    assert "run R-file-scripted-s0 completed" in out and "run R-none-scripted-s0 completed" in out
    assert "PSA" in out and "step 1/3" not in out and "probe 1/" not in out

    # one run again: its report table, no runtime
    assert main(_args(tmp_path, profile_file, "file")) == 0
    out = capsys.readouterr().out
    assert asked == [] and "run R-file-scripted-s0 is already complete: its results follow (no model started)" in out
    assert "PSA" in out and out.rstrip().endswith("run R-file-scripted-s0 completed")

    # a run with something to play (another seed; or --fresh) still prepares the runtime first
    with pytest.raises(RuntimeStarted):
        main(_args(tmp_path, profile_file, "file", "--seed", "1"))
    with pytest.raises(RuntimeStarted):
        main(_args(tmp_path, profile_file, "file", "--fresh"))
    assert len(asked) == 2
