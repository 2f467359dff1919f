"""Repeated PA calls reach what a user reads (issue 12): a whole scripted run whose PA repeats one
call in every turn, under ``pa_repeated_call: wrap_up``; the count is stored with each step and
probe repeat and shown by ``mempa show RUN STEP`` per step, and as a warning beside the memory's
health by ``mempa show RUN``, ``mempa runs``, ``mempa results`` and the run's report. Events stored
before the count existed read 0."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_runner_support import CONSOLIDATING_OPTIONS, consolidating, protocol_responder, scripted_cli_run

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedReply, ScriptedRequest, ScriptedToolCall
from mempa_tui.runner._episode_events import PAReplyEvent, StepStatusEvent, episode_event_adapter

RUN = "R-file-scripted-s0"
SEARCH = "mcp_state_contact_search"


def _repeating_pa(request: ScriptedRequest) -> ScriptedReply | str:
    """The protocol model, but its PA looks the same contact up twice at the start of every turn."""
    if request.model != "scripted-pa" or SEARCH not in request.tool_names:
        return protocol_responder(request)  # a forced call (interaction tool or reply) offers no search
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    searches = sum(c.name == SEARCH for m in request.messages[last_user:] for c in m.tool_calls)
    if searches < 2:
        return ScriptedReply(tool_calls=[ScriptedToolCall(name=SEARCH, arguments={"query": "Colm"})])
    return protocol_responder(request)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("repeats")
    out = scripted_cli_run(tmp, consolidating(_repeating_pa), *CONSOLIDATING_OPTIONS,
                           profile_options={"pa_repeated_call": "wrap_up"})
    return tmp / "saves", out


def _counts(text: str) -> tuple[int, int]:
    found = re.search(r"PA repeated an identical call (\d+) times? in (\d+) turns?", text)
    assert found, text
    return int(found[1]), int(found[2])


def test_the_run_report_and_progress_lines_name_the_repeats(played: tuple[Path, str]) -> None:
    _, out = played
    line = next(ln for ln in out.splitlines() if ln.startswith("Run problem: "))
    calls, turns = _counts(line)
    assert calls == turns >= 3  # one repeat in each PA turn of three steps and three probes at least
    assert "(warning;" in line and "R-s1" in out
    # said as each step and probe ends, too
    assert re.search(r"step 1/3 R-s1 completed \(warning: PA repeated an identical call \d+ times? in \d+ turns?[;)]", out)
    assert re.search(r"probe \d/3 R-final-work-verbosity r1 completed .*\(warning: PA repeated an identical call", out)


def test_show_prints_each_steps_repeats_and_the_wrapped_up_turns(
    played: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    saves, _ = played
    assert main(["show", RUN, "R-s1", "--saves", str(saves)]) == 0
    text = capsys.readouterr().out
    head = text.split("transcript:")[0]
    calls, turns = _counts(head)
    assert "run problem (warning): " in head and calls == turns >= 1
    assert text.count("PA (wrapped up after a repeated call; 1 repeated identical call):") == turns
    assert "(the reply was asked for after a repeated call: mcp_state_contact_search" in text
    assert text.count("TOOL contact_search(") == turns  # each repeat ran once, not twice


def test_the_run_listing_and_the_runs_list_warn_beside_the_memory_health(
    played: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    saves, out = played
    total = _counts(next(ln for ln in out.splitlines() if ln.startswith("Run problem: ")))
    assert main(["show", RUN, "--saves", str(saves)]) == 0
    lines = capsys.readouterr().out.splitlines()
    health = next(i for i, ln in enumerate(lines) if ln.startswith("memory health:"))
    # the repeats are a warning line of their own, never the memory's verdict (File memory
    # consolidates here, so nothing else could mark it)
    assert _counts(lines[health + 1]) == total and "BROKEN" not in lines[health]
    assert lines[health].startswith("memory health: ok"), lines[health]
    assert main(["runs", "--saves", str(saves)]) == 0
    listed = capsys.readouterr().out
    assert f"{RUN}: PA repeated an identical call" in listed and _counts(listed) == total


def test_results_note_the_repeats_and_the_setting(
    played: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    saves, _ = played
    assert main(["results", "--saves", str(saves), "--resamples", "100"]) == 0
    text = capsys.readouterr().out
    assert f"  {RUN}: PA repeated an identical call" in text
    assert "a repeated identical PA call wraps the turn up (paper: runs it again)" in text


def test_events_stored_before_the_count_read_zero() -> None:
    status = episode_event_adapter.validate_json('{"type": "step_status", "status": "completed"}')
    assert isinstance(status, StepStatusEvent) and (status.pa_repeated_calls, status.pa_repeat_turns) == (0, 0)
    reply = episode_event_adapter.validate_json('{"type": "pa_reply", "text": "hi", "status": "capped"}')
    assert isinstance(reply, PAReplyEvent) and reply.repeated_calls == 0
    assert reply.note() == " (model-call cap reached)"


def test_a_wrapped_up_replys_reason_stays_out_of_the_public_transcript() -> None:
    from mempa_tui.runner._episode_events import public_transcript

    reason = 'the reply was asked for after a repeated call: IX_verbosity({"setting": "Terse"}) had already been made'
    reply = PAReplyEvent(text="Here it is.", status="wrapped_up", reason=reason, repeated_calls=1)
    (public,) = public_transcript([reply])
    assert isinstance(public, PAReplyEvent) and public.reason is None and "Terse" not in public.model_dump_json()
    assert public.text == "Here it is." and public.note() == " (wrapped up after a repeated call; 1 repeated identical call)"
