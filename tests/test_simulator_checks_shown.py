"""The simulated user's messages sent back for a rewrite are counted and shown (issue 12).

On the packaged 1.5B simulator the quick start's user said "I'll get to it in a moment." in every
beat; such a message is sent back (``stalled_messages``), and a run where that happened must not
look clean. Two whole scripted runs: in the first, the simulator's first attempt of every turn
stalls and its rewrite says something new; the count is stored on each step's ``step_status``
event and shown on the step's progress line, in the run's problems (run end, ``report.md``,
``mempa results``, ``mempa show RUN``) and in ``mempa show RUN STEP``. In the second, every
message is new and fine, and none of that appears.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from test_runner_support import SIM_ENTRY, protocol_responder, scripted_cli_run

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedReply, ScriptedRequest
from mempa_tui.runner._browse import StepDetail
from mempa_tui.runner._episode_events import StepStatusEvent, episode_event_adapter
from mempa_tui.runner._health import (
    PARepeats,
    pa_problem_phrases,
    repeats_note,
    simulator_counts,
    simulator_phrase,
)

RUN = "R-file-scripted-s0"
STALL = "I'll get to it in a moment."
SENT_BACK = re.compile(r"simulated user's message sent back (\d+) times? \((\d+) stalled\)")


class Simulator:
    """The protocol model, except that the simulator says something new each turn (so no message
    repeats an earlier one) and, with ``stall``, first stalls with :data:`STALL` on every turn
    until it is sent back once. ``stalls`` counts the rewrites asked of it: the stalls that were
    checked and sent back (a draft that moves on without answering the PA is dropped unchecked)."""

    def __init__(self, stall: bool) -> None:
        self.stall = stall
        self.numbers = itertools.count(1)
        self.stalls = 0

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        answer = protocol_responder(request)
        if request.model != "scripted-simulator" or answer == SIM_ENTRY or '"score"' in str(answer):
            return answer
        sent_back = any(m.role == "user" and "That turn was not sent" in m.content
                        for m in request.messages)
        self.stalls += sent_back
        if self.stall and not sent_back:
            message = STALL
        else:
            message = f"Could you sort out errand number {next(self.numbers)} for me, please?"
        return ("<factual_check>none</factual_check>\n<turn_assessment>advance</turn_assessment>\n"
                f"<message>{message}</message>")


def _play(tmp: Path, stall: bool) -> tuple[Path, str, Simulator]:
    sim = Simulator(stall)
    return tmp, scripted_cli_run(tmp, sim), sim


@pytest.fixture(scope="module")
def stalling(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Simulator]:
    return _play(tmp_path_factory.mktemp("sim_stalls"), stall=True)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Simulator]:
    return _play(tmp_path_factory.mktemp("sim_clean"), stall=False)


def test_each_steps_progress_line_warns_of_the_stalled_messages(stalling: tuple[Path, str, Simulator]) -> None:
    _, out, sim = stalling
    lines = [ln for ln in out.splitlines() if re.match(r"(step|probe) \d+/\d+ ", ln)]
    warned = [ln for ln in lines if "simulated user's message sent back" in ln]
    assert re.search(r"^step 1/3 R-s1 completed \(warning: simulated user's message sent back \d+ times? "
                     r"\(\d+ stalled\)\)", out, re.M), out
    # every sent-back attempt is counted once on its step's line: they add up to the stalls played
    assert sum(int(SENT_BACK.search(ln)[1]) for ln in warned) == sim.stalls > 0  # type: ignore[index]
    assert all(m[1] == m[2] for m in (SENT_BACK.search(ln) for ln in warned) if m)  # all of them stalled
    assert "turn invalid" not in out and "turns invalid" not in out  # each rewrite passed
    assert not any("sent back" in ln for ln in lines if "R-ev1" in ln)  # a change event has no user


def test_the_run_end_and_its_report_name_the_steps(stalling: tuple[Path, str, Simulator]) -> None:
    tmp, out, sim = stalling
    line = next(ln for ln in out.splitlines() if ln.startswith("Run problem: "))
    assert f"simulated user's message sent back {sim.stalls} times ({sim.stalls} stalled) (warning; " in line
    assert "R-s1 " in line and "BROKEN" not in line
    report = (tmp / "saves" / RUN / "report.md").read_text()
    problems = report.split("## Run problems", 1)[1]
    assert f"simulated user's message sent back {sim.stalls} times ({sim.stalls} stalled) (warning; " in problems


def test_results_runs_and_show_carry_the_warning(
    stalling: tuple[Path, str, Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, _, sim = stalling
    saves = str(tmp / "saves")
    phrase = f"simulated user's message sent back {sim.stalls} times ({sim.stalls} stalled)"
    assert main(["results", "--saves", saves, "--resamples", "100"]) == 0
    assert f"  {RUN}: {phrase} (warning; " in capsys.readouterr().out
    assert main(["runs", "--saves", saves]) == 0
    assert phrase in capsys.readouterr().out
    assert main(["show", RUN, "--saves", saves]) == 0
    lines = capsys.readouterr().out.splitlines()
    health = next(i for i, ln in enumerate(lines) if ln.startswith("memory health:"))
    assert phrase in lines[health + 1]
    assert main(["show", RUN, "R-s1", "--saves", saves]) == 0
    head = capsys.readouterr().out.split("transcript:")[0]
    found = re.search(r"^run problem \(warning\): simulated user's message sent back (\d+) times? \((\d+) stalled\)$",
                      head, re.M)
    assert found and int(found[1]) == int(found[2]) >= 1, head


def test_a_run_whose_user_never_was_sent_back_shows_nothing(
    clean: tuple[Path, str, Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, out, sim = clean
    assert sim.stalls == 0
    # ("rated by the simulated user" in the judges line is not a problem line)
    assert "simulated user's message" not in out and not re.search(r"turns? invalid", out) and "Run problem" not in out
    assert re.search(r"^step 1/3 R-s1 completed  \[tokens", out, re.M), out
    assert main(["show", RUN, "R-s1", "--saves", str(tmp / "saves")]) == 0
    assert "run problem" not in capsys.readouterr().out
    assert "Run problems" not in (tmp / "saves" / RUN / "report.md").read_text()


def test_the_phrase_counts_the_reasons_and_invalid_turns() -> None:
    checks = {"rejected_attempts": 4, "stalled_messages": 2, "repeated_messages": 1, "invalid_turns": 0}
    assert pa_problem_phrases(0, 0, 0, 0, checks) == [
        "simulated user's message sent back 4 times (2 stalled, 1 repeated, 1 other)"]
    assert simulator_phrase(4, 4, 3, 1) == ("simulated user's message sent back 4 times (4 stalled, 3 repeated), "
                                            "1 turn invalid")
    assert simulator_phrase(1) == "simulated user's message sent back 1 time (1 other)"
    assert simulator_phrase(0, invalid=2) == "simulated user: 2 turns invalid"
    assert simulator_phrase(0) == "" and pa_problem_phrases(0, 0, 0, 0, {k: 0 for k in checks}) == []

    class Step:
        simulator_checks = {"rejected_attempts": 3, "stalled_messages": 3, "invalid_turns": 0}

    assert repeats_note(Step()) == " (warning: simulated user's message sent back 3 times (3 stalled))"
    problems = PARepeats(run_id=RUN, sim_sent_back=8, sim_stalled=2, sim_repeated=6, sim_invalid=2,
                         sim_where={"R-s1": 4, "R-s2": 4})
    assert problems.any and problems.state == "warning"
    assert problems.text() == ("simulated user's message sent back 8 times (2 stalled, 6 repeated), 2 turns invalid "
                               "(warning; R-s1 4, R-s2 4)")
    assert not PARepeats(run_id=RUN).any


def test_the_phrase_names_replies_cut_at_their_cap_and_messages_written_as_the_assistant() -> None:
    checks = {"rejected_attempts": 4, "cut_replies": 1, "assistant_voice": 1, "invalid_turns": 0}
    assert simulator_counts(checks) == (4, 0, 0, 0, 1, 1, 0)
    assert pa_problem_phrases(0, 0, 0, 0, checks) == [
        "simulated user's message sent back 4 times (1 cut at its cap, 1 as the assistant, 2 other)"]
    assert simulator_phrase(6, 2, 1, 1, cut=1, assistant=1) == (
        "simulated user's message sent back 6 times (2 stalled, 1 repeated, 1 cut at its cap, 1 as the assistant, "
        "1 other), 1 turn invalid")
    assert simulator_phrase(4, cut=4, invalid=1) == (
        "simulated user's message sent back 4 times (4 cut at its cap), 1 turn invalid")
    assert simulator_phrase(2, 2, 1, cut=1) == (  # reasons overlap: "other" never goes below 0
        "simulated user's message sent back 2 times (2 stalled, 1 repeated, 1 cut at its cap)")
    # a step stored before these counts were kept reads 0 for them
    assert simulator_counts({"rejected_attempts": 3, "stalled_messages": 3}) == (3, 3, 0, 0, 0, 0, 0)
    # trimmed messages are shown even when nothing was sent back (a deviation from Appendix D.4)
    assert simulator_phrase(0, trimmed=2) == (
        "simulated user: 2 messages trimmed of words copied from earlier ones or a greeting to a contact")
    assert simulator_phrase(1, repeated=1, trimmed=1) == (
        "simulated user's message sent back 1 time (1 repeated), 1 message trimmed of words copied from earlier "
        "ones or a greeting to a contact")

    class Step:
        simulator_checks = {"rejected_attempts": 2, "assistant_voice": 2, "invalid_turns": 0}

    assert repeats_note(Step()) == " (warning: simulated user's message sent back 2 times (2 as the assistant))"
    problems = PARepeats(run_id=RUN, sim_sent_back=5, sim_cut=3, sim_assistant=1, sim_where={"R-s1": 5})
    assert problems.text() == ("simulated user's message sent back 5 times (3 cut at its cap, 1 as the assistant, "
                               "1 other) (warning; R-s1 5)")


def test_status_events_stored_before_the_counts_read_none() -> None:
    status = episode_event_adapter.validate_json('{"type": "step_status", "status": "completed"}')
    assert isinstance(status, StepStatusEvent) and status.simulator_checks == {}
    assert status.simulator_count("stalled_messages") == 0
    detail = StepDetail(run_id=RUN, step_id="R-s1", repeat=0, kind="accumulation", status="completed",
                        reason=None, selection=None, events=[status], calls=[])
    assert detail.simulator_checks == {}


def test_the_apps_step_summary_warns_of_the_sent_back_messages() -> None:
    from mempa_tui.tui.screens.browser import summary_text

    status = StepStatusEvent(status="invalid", simulator_checks={"rejected_attempts": 4, "repeated_messages": 4,
                                                                 "invalid_turns": 1})
    detail = StepDetail(run_id=RUN, step_id="R-s1", repeat=0, kind="accumulation", status="invalid",
                        reason=None, selection=None, events=[status], calls=[])
    text = summary_text(detail).plain
    assert "run problem (warning): simulated user's message sent back 4 times (4 repeated), 1 turn invalid\n" in text


async def test_the_runs_problems_add_up_the_new_counts_from_stored_events() -> None:
    from types import SimpleNamespace

    from mempa_tui.runner._health import run_pa_repeats

    events = [
        StepStatusEvent(status="completed", simulator_checks={"rejected_attempts": 3, "cut_replies": 2,
                                                              "assistant_voice": 1}),
        StepStatusEvent(status="invalid", simulator_checks={"rejected_attempts": 4, "cut_replies": 4,
                                                            "invalid_turns": 1}),
        StepStatusEvent(status="completed", simulator_checks={"rejected_attempts": 1, "stalled_messages": 1}),
    ]

    class Store:
        async def events_of_kind(self, run_id: str, kind: str) -> list[tuple[str, int, object]]:
            return [(f"R-s{i}", 0, SimpleNamespace(event_json=e.model_dump_json())) for i, e in enumerate(events, 1)]

        async def probe_results(self, run_id: str) -> list[object]:
            return []

    problems = await run_pa_repeats(Store(), SimpleNamespace(id=RUN))  # type: ignore[arg-type]
    assert (problems.sim_sent_back, problems.sim_cut, problems.sim_assistant, problems.sim_stalled) == (8, 6, 1, 1)
    assert problems.text() == ("simulated user's message sent back 8 times (1 stalled, 6 cut at its cap, "
                               "1 as the assistant), 1 turn invalid (warning; R-s2 4, R-s1 3, R-s3 1)")
