"""Echoed harness notes never pass for the PA's words, and their count is shown (issue 12).

Two whole scripted runs. In the first, the PA's first reply of every turn only repeats a sentence
of its instructions, and it answers properly when asked once more: every step completes, the
echo reaches neither the simulated user, nor memory, nor the judge or the PRS rater, and its count
is stored with each step and probe repeat and shown where repeated calls are (``mempa show RUN
STEP``, ``mempa show RUN``, ``mempa runs``, ``mempa results``, the run's report). In the second,
the PA echoes every time: its turns fail, so its steps are discarded and its probes are kept out
of the scores as incomplete, the way a reply that is empty twice already is (Appendix F.2).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_runner_support import protocol_responder, scripted_cli_run

from mempa_tui.agent.prompt import ECHO_REASK
from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedReply, ScriptedRequest
from mempa_tui.runner._episode_events import PAReplyEvent, StepStatusEvent, episode_event_adapter

RUN = "R-file-scripted-s0"
ECHO = "Messages that begin with [Harness note come from the system running you, not from the person."
"""A sentence of the PA's instructions, which the scripted PA hands back as its reply."""


class EchoingPA:
    """The protocol model, except that the PA's replies echo :data:`ECHO` (``always``: every one;
    else only until it is asked again). Keeps every non-PA request to check what others saw."""

    def __init__(self, always: bool) -> None:
        self.always = always
        self.others: list[ScriptedRequest] = []

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        answer = protocol_responder(request)
        if request.model != "scripted-pa":
            self.others.append(request)
            return answer
        if not isinstance(answer, str):
            return answer  # an interaction-tool call
        reasked = next(m for m in reversed(request.messages) if m.role == "user").content == ECHO_REASK
        return answer if reasked and not self.always else ECHO


def _play(tmp: Path, always: bool) -> tuple[Path, str, EchoingPA]:
    pa = EchoingPA(always)
    return tmp, scripted_cli_run(tmp, pa), pa


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, EchoingPA]:
    return _play(tmp_path_factory.mktemp("echo_once"), always=False)


@pytest.fixture(scope="module")
def always(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, EchoingPA]:
    return _play(tmp_path_factory.mktemp("echo_always"), always=True)


def _echoes(text: str) -> int:
    found = re.search(r"PA echoed a harness note as its reply (\d+) times? \(withheld: never shown to the user or judged\)", text)
    assert found, text
    return int(found[1])


def test_an_echo_reaches_no_user_memory_or_judge(once: tuple[Path, str, EchoingPA]) -> None:
    tmp, out, pa = once
    line = next(ln for ln in out.splitlines() if ln.startswith("Run problem: "))
    assert _echoes(line) >= 6 and "(warning; R-s1" in line  # each PA turn of two sessions and three probes
    seen = [r for r in pa.others if r.model in ("scripted-simulator", "scripted-judge")]
    assert any(r.model == "scripted-judge" for r in seen) and seen
    assert all("come from the system running you" not in m.content for r in seen for m in r.messages)
    stored = [p.read_text(errors="replace") for p in (tmp / "local_memory").rglob("*") if p.is_file()]
    assert stored and all("come from the system running you" not in text for text in stored)
    assert re.search(r"step 1/3 R-s1 completed \(warning: PA echoed a harness note as its reply \d+ times?", out)


def test_show_counts_each_steps_echoes_and_never_prints_one_as_the_reply(
    once: tuple[Path, str, EchoingPA], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, _, _ = once
    assert main(["show", RUN, "R-s1", "--saves", str(tmp / "saves")]) == 0
    text = capsys.readouterr().out
    head, transcript = text.split("transcript:")
    echoes = _echoes(head)
    assert "run problem (warning): PA echoed" in head and echoes >= 1
    assert text.count("(1 echoed harness note re-asked)") == echoes
    assert "come from the system running you" not in transcript


def test_the_listing_the_runs_list_and_the_results_warn(
    once: tuple[Path, str, EchoingPA], capsys: pytest.CaptureFixture[str]
) -> None:
    saves = once[0] / "saves"
    total = _echoes(next(ln for ln in once[1].splitlines() if ln.startswith("Run problem: ")))
    assert main(["show", RUN, "--saves", str(saves)]) == 0
    lines = capsys.readouterr().out.splitlines()
    health = next(i for i, ln in enumerate(lines) if ln.startswith("memory health:"))
    assert _echoes(lines[health + 1]) == total
    assert main(["runs", "--saves", str(saves)]) == 0
    assert _echoes(capsys.readouterr().out) == total
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    assert f"  {RUN}: PA echoed a harness note as its reply {total} times" in capsys.readouterr().out


def test_a_pa_that_only_echoes_has_its_steps_discarded_and_its_probes_kept_out(
    always: tuple[Path, str, EchoingPA], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, out, pa = always
    assert all("come from the system running you" not in m.content for r in pa.others for m in r.messages)
    assert not any(r.model == "scripted-judge" for r in pa.others)  # nothing to judge
    assert re.search(r"step 1/3 R-s1 failed \(the PA's reply echoed the harness's own text again after a re-ask", out)
    assert main(["results", "--saves", str(tmp / "saves"), "--resamples", "100"]) == 0
    table = capsys.readouterr().out
    # PSA CS PET BRS PRS N/A; 3 probes, none floored (no zero), all 3 incomplete
    assert re.search(r"File memory .*(N/A\s+){5}3\s+0\s+3\s", table), table
    assert main(["show", RUN, "R-final-work-verbosity", "--saves", str(tmp / "saves")]) == 0
    probe = capsys.readouterr().out
    assert "echoed the harness's own text again after a re-ask" in probe and "failed" in probe.splitlines()[0]
    transcript = probe.split("transcript:")[1].split("model calls")[0]
    assert "-> incomplete" in probe and not re.search(r"^\s+PA[ :(]", transcript, re.M)  # no reply delivered


def test_events_stored_before_the_echo_count_read_zero() -> None:
    status = episode_event_adapter.validate_json('{"type": "step_status", "status": "completed"}')
    assert isinstance(status, StepStatusEvent) and status.pa_echoed_replies == 0
    reply = episode_event_adapter.validate_json('{"type": "pa_reply", "text": "hi"}')
    assert isinstance(reply, PAReplyEvent) and reply.echoed_replies == 0 and reply.note() == ""


def test_the_apps_step_summary_names_both_problems_of_the_pa() -> None:
    from mempa_tui.runner._browse import StepDetail
    from mempa_tui.tui.screens.browser import summary_text

    status = StepStatusEvent(status="completed", pa_repeated_calls=2, pa_repeat_turns=1, pa_echoed_replies=3)
    detail = StepDetail(run_id=RUN, step_id="R-s1", repeat=0, kind="accumulation", status="completed",
                        reason=None, selection=None, events=[status], calls=[])
    text = summary_text(detail).plain
    assert "run problem (warning): PA repeated an identical call 2 times in 1 turn\n" in text
    assert "run problem (warning): PA echoed a harness note as its reply 3 times (withheld: never shown to the user or judged)" in text
