"""File memory's consolidation never stores garbage silently (issue 12), against the scripted
MEMORY-role model over loopback HTTP.

Measured on the README's quick start: a MEMORY.md that was one sentence repeated with a counting
hour up to the 768-token cap, a refusal, and the prompt's empty-file placeholder copied back were
all stored, with health ok. Each is now unusable: retried once with the reason, then a failure
counted by reason that keeps the turns pending."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.memory import FileMemory, SessionInfo, TurnRecord
from mempa_tui.memory._consolidation import consolidation_messages
from mempa_tui.memory._consolidation_checks import (
    MAX_REPEATS,
    UnusableReply,
    check_content,
    repeated_sentence,
)
from mempa_tui.runner._health import health_of_stats
from mempa_tui.taxonomy import Context

START = datetime(2026, 5, 19, 10, 0)
GOOD = json.dumps({"history_entry": "Held the Eastbank hall for the info session on 4 June.",
                   "memory": "# Work\n- Ruth Okonjo (council) asked for an evening info session on 4 June."})
# the quick start's A-E01 reply, shortened: one sentence with an hour that counts on
LOOP = "".join(f"Meeting with John is scheduled for 2026-05-12 {14 + i}:{i * 10 % 60:02d}. " for i in range(12))


@dataclass
class Script:
    """Queued MEMORY-role replies; once empty, a good one."""

    queue: list[ScriptedReply | str] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        return self.queue.pop(0) if self.queue else GOOD


@dataclass
class Harness:
    server: ScriptedModelServer
    client: LLMClient
    script: Script


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        yield Harness(server, LLMClient(server.profile(num_retries=0)), script)


def turn(i: int) -> TurnRecord:
    return TurnRecord(
        step_id="A-E01", context=Context.WORK, at=START + timedelta(minutes=i), turn_index=i,
        user_message=f"find a venue for the info session on thu 4 june (turn {i})",
        tool_calls=[ExecutedCall(call_id="c1", tool="calendar_event_create", status=CallStatus.EXECUTED,
                                 arguments={"title": "Info session hold", "date": date(2026, 6, 4),
                                            "start_time": "18:00"},
                                 result='{"event_id": "ev_0049"}', write=True, tag="routine")],
        reply="I've put a hold in your calendar.",
    )


async def written(harness: Harness, tmp_path: Path, replies: list[ScriptedReply | str]) -> FileMemory:
    """A File memory that consolidates at the session's end, after two turns and these replies."""
    mem = FileMemory(harness.client, tmp_path, consolidate_at_tokens=10_000, consolidate_to_tokens=5_000,
                     token_counter=lambda text: len(text.split()), consolidate_at_session_end=True)
    await mem.write(turn(0))
    await mem.write(turn(1))
    harness.script.queue.extend(replies)
    await mem.end_session(_session())
    return mem


def _session() -> SessionInfo:
    return SessionInfo(step_id="A-E01", context=Context.WORK, at=START)


def _failed_keeping_turns(mem: FileMemory, reason: str) -> None:
    stats = mem.stats
    assert stats.consolidation_failures == 1 and stats.consolidations == 0
    assert stats.consolidation_retries == 1  # the reason was named to the model once
    assert stats.failure_reasons == {reason: 1}
    assert stats.last_failure and stats.last_failure.startswith(f"{reason}: ")
    assert mem.memory_md == "" and mem.history_md == ""  # nothing stored
    assert len(mem.pending) == 2  # the turns stay in the PA's view
    inspected = mem.inspect()
    assert inspected.stats[f"consolidation_unusable_{reason}"] == 1.0
    assert inspected.stats["memory_md_chars"] == 0.0
    assert any(s.startswith(f"last consolidation failure: {reason}: ") for s in inspected.stored)


async def test_a_reply_cut_at_the_cap_is_retried_then_a_failure_that_keeps_the_turns(
    harness: Harness, tmp_path: Path
) -> None:
    # valid JSON both times, but cut at the cap: the A-E01 reply parsed because the schema closed it
    cut = ScriptedReply(text=json.dumps({"history_entry": "E", "memory": LOOP[:90]}), finish_reason="length",
                        completion_tokens=768)
    mem = await written(harness, tmp_path, [cut, cut])
    _failed_keeping_turns(mem, "cut_at_cap")
    assert "completion cap (768 tokens" in (mem.stats.last_failure or "")
    retry = harness.server.requests[1].messages[-1].content
    assert "cut off at the completion cap" in retry
    # the next session's end tries again, and a whole reply is stored
    await mem.end_session(_session())
    assert mem.stats.consolidations == 1 and mem.pending == [] and "Ruth Okonjo" in mem.memory_md


async def test_a_cut_reply_then_a_whole_one_is_stored_with_a_retry(harness: Harness, tmp_path: Path) -> None:
    mem = await written(harness, tmp_path, [ScriptedReply(text=GOOD, finish_reason="length")])
    assert mem.stats.consolidations == 1 and mem.stats.consolidation_retries == 1
    assert mem.stats.consolidation_failures == 0 and mem.stats.failure_reasons == {}


async def test_a_looping_memory_is_rejected_with_its_reason(harness: Harness, tmp_path: Path) -> None:
    loop = json.dumps({"history_entry": "Booked a hall.", "memory": LOOP})
    mem = await written(harness, tmp_path, [loop, loop])
    _failed_keeping_turns(mem, "repeats")
    assert "meeting with john is scheduled for #'" in (mem.stats.last_failure or "")
    assert "12 times" in (mem.stats.last_failure or "")


@pytest.mark.parametrize(
    ("memory", "reason"),
    [
        ("(empty - nothing has been remembered yet)", "placeholder"),
        ("empty - nothing has been remembered yet", "placeholder"),
        ("The file is empty.", "placeholder"),
        ("I'm sorry, I can't assist with that.", "refusal"),
        ("I\u2019m sorry, but I can't assist with that.", "refusal"),
        # measured by the benchmark's first run: the 1.5B copied the prompt, the 0.5B a turn's stamp
        ("## Current memory file: none yet (this save writes the first one)\n\n## Turns to fold in (3, oldest first)\n"
         "[2026-04-12 21:00 personal A-S51]\nUser: I'll get to the cottage booking", "prompt_echo"),
        ("Meeting with John is at 14:20. John is scheduled for 2026-05-19 10:00 work A-E01. User: ruth wants",
         "prompt_echo"),
    ],
    ids=["placeholder-copied", "placeholder-unbracketed", "file-is-empty", "refusal", "refusal-curly",
         "prompt-headings", "turn-stamp"],
)
async def test_a_placeholder_or_refusal_memory_is_rejected(
    harness: Harness, tmp_path: Path, memory: str, reason: str
) -> None:
    bad = json.dumps({"history_entry": "Ruth wants an evening info session on 4 June.", "memory": memory})
    mem = await written(harness, tmp_path, [bad, bad])
    _failed_keeping_turns(mem, reason)


async def test_a_good_reply_still_passes_and_a_dated_list_is_no_loop(harness: Harness, tmp_path: Path) -> None:
    dated = "# Work\n" + "".join(f"- Date: 2026-05-{d:02d}\n- Hold at 18:{d:02d}\n" for d in range(10, 16))
    listing = json.dumps({"history_entry": "Held a hall.", "memory": dated})
    mem = await written(harness, tmp_path, [listing])
    assert mem.stats.consolidations == 1 and mem.stats.consolidation_retries == 0
    assert mem.memory_md == dated.strip() + "\n"
    assert mem.inspect().stats["memory_md_chars"] == float(len(dated.strip()))
    # an apology followed by real notes is kept, so is a sentence said twice, and a dated note
    check_content("Held the hall.", "- 2026-06-04 18:00 work event: info session at Eastbank")
    check_content("Sorry for the wait: I held the hall. The hall seats 120.",
                  "I'm sorry the library was full. " + "The Eastbank hall seats 120 people. " * (MAX_REPEATS - 1))


def test_the_repeated_sentence_rule_has_exact_edges() -> None:
    three = "Meeting with John at 14:20. Meeting with John at 15:30.\nMeeting with John at 16:40."
    assert repeated_sentence(three) == ("meeting with john at #", 3)
    # the quick start's loop wrote "for 2026-05-12 29:00." and then "for 30:00.": the same sentence
    assert repeated_sentence("John is scheduled for 2026-05-12 29:00. John is scheduled for 30:00. "
                             "John is scheduled for 31:00.") == ("john is scheduled for #", 3)
    assert repeated_sentence(three.rsplit("\n", 1)[0]) is None  # twice is not a loop
    assert repeated_sentence("- Hall.\n- Hall.\n- Hall.\n- Hall.") is None  # short lines are not counted
    assert repeated_sentence("- Call Nell Garvey back\n* call nell garvey back\n## Call Nell  Garvey back") == (
        "call nell garvey back", 3)  # list and heading marks, case and spacing ignored
    with pytest.raises(UnusableReply) as caught:
        check_content("Booked. " * 2 + three, "# Notes\n- fine")
    assert caught.value.reason == "repeats" and "field history_entry" in str(caught.value)


async def test_tool_arguments_render_as_compact_json(harness: Harness, tmp_path: Path) -> None:
    text = turn(0).as_text()
    assert 'Tool calendar_event_create({"title":"Info session hold","date":"2026-06-04","start_time":"18:00"})' in text
    assert "datetime.date" not in text
    await written(harness, tmp_path, [])
    sent = harness.server.requests[0].messages[1].content
    assert '"date":"2026-06-04"' in sent and "datetime" not in sent


def test_an_empty_memory_is_said_in_the_heading_with_nothing_to_copy() -> None:
    user = consolidation_messages("", [turn(0)])[1].content
    first, rest = user.split("\n", 1)
    assert first.startswith("## Current memory file: ") and "none yet" in first
    assert rest.startswith("\n## Turns to fold in (1, oldest first)\n")  # no text in the file's place
    assert "nothing has been remembered" not in user and "(empty" not in user
    kept = consolidation_messages("- Ruth Okonjo runs the council's consultations.", [turn(0)])[1].content
    assert kept.startswith("## Current memory file\n- Ruth Okonjo runs")


def test_the_prompt_heads_turns_without_step_ids() -> None:
    # the packaged 1.5B copied "2026-05-19 10:00 work A-E01" stamps into its notes (issue 12)
    user = consolidation_messages("", [turn(0)])[1].content
    assert "[2026-05-19 10:00, work]\nUser: find a venue" in user
    assert "A-E01" not in user
    assert turn(0).as_text().startswith("[2026-05-19 10:00 work A-E01]\n")  # other stores keep the id


def test_a_copied_transcript_line_is_an_echo_but_a_labelled_note_is_not() -> None:
    turns = [turn(0)]
    said = "find a venue for the info session on thu 4 june (turn 0)"
    for memory in (f"# Notes\n- User: {said}", "[2026-05-19 10:00, work]\nAssistant: I've put a hold in your calendar.",
                   f"**User**: {said}", f"1. User : {said}", f"[2026-05-19 10:00, work] User: {said}",
                   "- User: find a venue for the info session on thu 4 june"):
        with pytest.raises(UnusableReply) as caught:
            check_content("Held a hall.", memory, turns)
        assert caught.value.reason == "prompt_echo" and "transcript line" in str(caught.value)
    # notes in the model's own words under the same labels, and a dated note, are kept
    check_content("Held a hall.", "- User: wants a venue for an info session\n- Assistant: held a calendar slot", turns)
    check_content("Held a hall.", "- 2026-05-19 10:00, work: asked for a venue for the 4 June session", turns)
    # a note that quotes the person and goes on in its own words is what memory should keep
    check_content("Held a hall.", "- User: find a venue for the info session, somewhere on route 14", turns)


async def test_other_callers_still_take_a_reply_their_reader_accepts_when_cut() -> None:
    # the judge, rater and checker read short objects: a cut one does not parse, so nothing changes there
    async with ScriptedModelServer(lambda _r: ScriptedReply(text='{"n": 3}', finish_reason="length")) as server:
        client = LLMClient(server.profile(num_retries=0))
        messages = [ChatMessage(role="user", content="give n")]
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        plain = await complete_json(client, Role.JUDGE, messages, schema=schema,
                                    read=lambda t: int(json.loads(t)["n"]))
        assert plain.value == 3 and plain.finish_reasons == ["length"]
        strict = await complete_json(client, Role.JUDGE, messages, schema=schema,
                                     read=lambda t: int(json.loads(t)["n"]), on_cut="reject")
        assert strict.value is None and strict.error_reason == "cut_at_cap" and strict.attempts == 2


def test_health_shows_consolidation_failures_by_reason_and_an_empty_memory() -> None:
    stats = {"turns_written": 9, "consolidations": 1, "consolidation_failures": 3, "history_entries": 1,
             "pending_turns": 4, "memory_md_chars": 120.0, "consolidation_unusable_repeats": 2,
             "consolidation_unusable_cut_at_cap": 1}
    most_failed = health_of_stats("A-file", "file", stats)
    assert most_failed.broken  # 3 of 4 rounds: above the 20% rate
    assert ("3/4 consolidation rounds failed (75%; text repeats itself 2, cut at the completion cap 1)"
            in most_failed.problems)
    assert len(most_failed.failures) == 1  # the per-reason counters are not failures of their own
    one = health_of_stats("A-file", "file", {**stats, "consolidations": 9, "consolidation_failures": 1,
                                              "consolidation_unusable_repeats": 0})
    assert one.state == "warning" and "(10%; cut at the completion cap 1)" in one.text()
    # rounds that "worked" but left MEMORY.md empty: probes got nothing
    empty = health_of_stats("A-file", "file", {"turns_written": 9, "consolidations": 3, "consolidation_failures": 0,
                                                "history_entries": 3, "pending_turns": 0, "memory_md_chars": 0})
    assert empty.broken and "MEMORY.md empty after 9 turn(s) written" in empty.text()
    assert health_of_stats("A-file", "file", {"turns_written": 4, "consolidations": 2, "history_entries": 2,
                                               "pending_turns": 0, "memory_md_chars": 0}).state == "ok"
    # runs stored before the counter are not judged by it
    assert health_of_stats("A-file", "file", {"turns_written": 9, "consolidations": 3, "history_entries": 3,
                                               "pending_turns": 0}).state == "ok"
