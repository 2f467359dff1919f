"""The TUI's engine-side pieces without a terminal: the run book, the event rendering, the
launcher's choices and the resume request (mempa_tui/tui/book.py, render.py, engine.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tui_support import WORLDS, make_folders

from mempa_tui.cli._errors import UserError
from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.memory import EvidenceItem
from mempa_tui.runner import RunConfig, RunEvent, RunProgress, StepEvent
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    EvidenceEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from mempa_tui.tui import RunBook, RunEntry, RunRequest
from mempa_tui.tui.engine import (
    _LineSink,
    discover_choices,
    error_line,
    request_from_record,
)
from mempa_tui.tui.render import (
    COLLAPSED_RESULT_CHARS,
    event_lines,
    evidence_renderable,
)

REQUEST = RunRequest(user="R", memory="file", profile="scripted", repeats=1)


def _run_event(kind: str, *, status: str | None = None, errors: list[str] | None = None) -> RunEvent:
    progress = RunProgress(run_id="R-file-scripted-s0", steps_total=3, steps_done=1, errors=errors or [])
    return RunEvent(run_id="R-file-scripted-s0", kind=kind, message=f"{kind} message", status=status,  # type: ignore[arg-type]
                    progress=progress)


def _step(event: object, step: str = "R-s1", repeat: int = 0) -> StepEvent:
    return StepEvent(run_id="R-file-scripted-s0", step_id=step, repeat=repeat, event=event)


def _state(entry: RunEntry) -> str:
    """The entry's state, read fresh (keeps mypy from narrowing it across ``apply`` calls)."""
    return entry.state


def test_entry_follows_the_runner_events() -> None:
    entry = RunBook().add(REQUEST)
    assert entry.state == "preparing" and entry.label == "R-file-scripted-s0"
    entry.apply(_run_event("run_started"))
    assert _state(entry) == "running" and entry.progress is not None and entry.progress.steps_done == 1
    entry.apply(_step(BeatChangeEvent(beat_id="ask_summary", index=1)))
    evidence = EvidenceEvent(system_text="", items=[EvidenceItem(text="likes short replies", score=0.8)])
    entry.apply(_step(evidence, step="R-final-work-verbosity", repeat=2))
    assert entry.beat == "ask_summary"
    assert entry.evidence is evidence
    assert (entry.step, entry.repeat) == ("R-final-work-verbosity", 2)
    assert [e.step_id for e in entry.events] == ["R-s1", "R-final-work-verbosity"]
    entry.apply(_run_event("warning"))
    assert entry.notes == ["warning message"]
    entry.apply(_run_event("run_finished", status="stopped", errors=["R-pre-ev1: no checkpoint"]))
    assert _state(entry) == "stopped" and entry.error == "R-pre-ev1: no checkpoint"


def test_a_failed_run_keeps_its_message_and_can_be_played_again() -> None:
    book = RunBook()
    entry = book.add(REQUEST)
    with pytest.raises(ValueError, match="already running"):
        book.add(REQUEST)
    entry.apply(_run_event("run_failed"))
    assert entry.state == "failed" and entry.error == "run_failed message"
    entry.apply(_step(UserMessageEvent(text="hello")))
    again = book.add(REQUEST.model_copy(update={"repeats": 2}))
    assert again is entry and len(book) == 1
    assert _state(entry) == "preparing" and entry.error is None and entry.events == []
    assert entry.request.repeats == 2
    assert book.get("R-file-scripted-s0") is entry


def test_tool_results_collapse_to_one_line_unless_expanded() -> None:
    long_result = "line one of the result\n" + "x" * 400
    call = ExecutedCall(call_id="c1", tool="email_message_read", arguments={"message_id": "em_0001"},
                        status=CallStatus.BLOCKED, result=long_result)
    collapsed = [line.plain for line in event_lines(_step(ToolCallEvent(call=call)))]
    assert collapsed[0].startswith("  ⚙ tool email_message_read(message_id=\"em_0001\") [blocked]")
    assert len(collapsed) == 2 and collapsed[1].endswith("…")
    assert len(collapsed[1].strip()) <= COLLAPSED_RESULT_CHARS + 2
    expanded = [line.plain for line in event_lines(_step(ToolCallEvent(call=call)), expanded=True)]
    assert expanded[1].strip() == "line one of the result" and expanded[2].strip() == "x" * 400


def test_unknown_events_and_empty_evidence_still_render() -> None:
    class Odd:
        kind = "note"
        text = "from a test double"

    assert [line.plain for line in event_lines(_step(Odd()))] == ["  note: from a test double"]
    assert "handed the PA nothing" in evidence_renderable(EvidenceEvent(system_text="")).plain
    scored = evidence_renderable(EvidenceEvent(system_text="", items=[EvidenceItem(text="a", score=0.5)]))
    assert scored.plain.startswith(" 0.50 a")


def test_launcher_choices_list_users_conditions_and_flag_invalid_profiles(tmp_path: Path) -> None:
    settings = make_folders(tmp_path).settings
    settings.models_dir.mkdir(parents=True)
    (settings.models_dir / "broken.yaml").write_text("name: broken\nruntime: nowhere\n", encoding="utf-8")
    choices = discover_choices(settings)
    assert choices.users == ["R"]
    assert {"none", "oracle", "file"} <= set(choices.memories)
    (broken,) = choices.profiles
    assert broken.name == "broken" and not broken.valid and "runtime" in broken.description


def test_a_stored_config_becomes_the_request_that_resumes_it() -> None:
    config = RunConfig(user="R", profile="scripted", memory="file", repeats=2, seed=4, worlds_dir=WORLDS,
                       memory_options={"consolidate_at_tokens": 900})
    request = request_from_record(config.model_dump_json())
    assert (request.user, request.memory, request.profile, request.repeats, request.seed) == (
        "R", "file", "scripted", 2, 4)
    assert request.memory_options == {"consolidate_at_tokens": 900}
    assert request.key == config.run_id
    with pytest.raises(ValueError, match="not readable"):
        request_from_record('{"user": "lowercase"}')


def test_errors_read_as_one_line_and_runtime_progress_is_split_into_lines() -> None:
    assert error_line(UserError("unknown user 'Z'")) == "unknown user 'Z'"
    assert error_line(RuntimeError("boom")) == "RuntimeError: boom"
    said: list[str] = []
    sink = _LineSink(said.append)
    sink.write("first run: joining weights...\nembedded model: ")
    sink.write("ready\n")
    assert said == ["first run: joining weights...", "embedded model: ready"]
