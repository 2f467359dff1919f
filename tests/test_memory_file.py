"""File memory against a scripted MEMORY-role model over loopback HTTP (paper Section 4 ❶)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.ix.types import CallStatus, ExecutedCall, IXCall
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.memory import FileMemory, FileMemoryState, SessionInfo, SnapshotError, TurnRecord
from mempa_tui.taxonomy import Context

START = datetime(2025, 3, 3, 9, 0)


def words(text: str) -> int:
    """Deterministic token counter for threshold arithmetic: one token per word."""
    return len(text.split())


@dataclass
class Script:
    """Queued replies for the MEMORY-role model; once empty, a valid default reply."""

    queue: list[ScriptedReply | str] = field(default_factory=list)
    memory_text: str = "# About the user\n- Prefers short answers at work."

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if self.queue:
            return self.queue.pop(0)
        return json.dumps({"history_entry": "Filed invoices and booked rooms.", "memory": self.memory_text})


@dataclass
class Harness:
    server: ScriptedModelServer
    client: LLMClient
    script: Script

    def memory(self, folder: Path, at: int = 100, to: int = 50, counter: Callable[[str], int] | None = words) -> FileMemory:
        return FileMemory(self.client, folder, consolidate_at_tokens=at, consolidate_to_tokens=to, token_counter=counter)


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        yield Harness(server, LLMClient(server.profile(num_retries=0)), script)


def turn(i: int, *, n_words: int = 10, context: Context = Context.WORK) -> TurnRecord:
    filler = " ".join(f"w{i}x{k}" for k in range(n_words))
    return TurnRecord(
        step_id=f"A-s{i:02d}",
        context=context,
        at=START + timedelta(days=i),
        turn_index=0,
        user_message=f"msg{i} {filler}",
        tool_calls=[
            ExecutedCall(call_id="c1", tool="calendar_event_create", status=CallStatus.EXECUTED, result='{"id": "ev1"}', write=True, tag="routine")
        ],
        ix_calls=[IXCall(attribute="verbosity", setting="Detailed")],
        reply=f"reply{i} done",
    )


def session(probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id="A-s99", context=Context.WORK, at=START + timedelta(days=60), is_probe=probe)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


async def test_write_retrieve_round_trip(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=10_000, to=5_000)
    for i in range(3):
        await mem.write(turn(i))
    evidence = await mem.retrieve("next", session())
    assert evidence.system_text == ""  # nothing consolidated yet
    assert [m.role for m in evidence.prior_messages] == ["user", "assistant"] * 3
    assert evidence.prior_messages[0].content.startswith("[2025-03-03 09:00, work] msg0")
    assert "reply0 done" in evidence.prior_messages[1].content
    assert "calendar_event_create (ok)" in evidence.prior_messages[1].content
    assert "verbosity = Detailed" in evidence.prior_messages[1].content
    probe = await mem.retrieve("next", session(probe=True))
    assert probe.prior_messages == []  # no raw conversation in probes
    assert harness.server.requests == []
    assert (tmp_path / "pending.jsonl").read_text().count("\n") == 3
    inspection = mem.inspect()
    assert inspection.stats["pending_turns"] == 3
    assert inspection.last_evidence == probe


async def test_current_session_turns_are_not_handed_back(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=10_000, to=5_000)
    await mem.write(turn(1))
    await mem.write(turn(2))
    here = SessionInfo(step_id="A-s02", context=Context.WORK, at=START + timedelta(days=2))
    evidence = await mem.retrieve("next", here)
    text = " ".join(m.content for m in evidence.prior_messages)
    assert "msg1" in text and "msg2" not in text  # the PA already holds this session's turns


async def test_consolidation_triggers_at_threshold(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=100, to=60)
    await mem.write(turn(0, n_words=20))
    per_turn = mem.prompt_tokens()
    assert per_turn > 0
    written = 1
    while mem.prompt_tokens() + per_turn <= 100:  # stay at or below the threshold
        await mem.write(turn(written, n_words=20))
        written += 1
    assert harness.server.requests == []  # not yet past 100
    await mem.write(turn(written, n_words=20))  # passes the threshold
    assert len(harness.server.requests) == 1
    request = harness.server.requests[0]
    assert request.model == "scripted-memory"
    sent = "\n".join(m.content for m in request.messages)
    assert "msg0 " in sent  # the oldest turn is consolidated
    assert f"msg{written} " not in sent  # the newest stays raw
    assert mem.prompt_tokens() < 60
    assert mem.memory_md.startswith("# About the user")
    assert "Filed invoices" in mem.history_md and mem.history_md.startswith("[2025-03-03 09:00]")
    assert mem.pending[-1].user_message.startswith(f"msg{written} ")
    assert (tmp_path / "MEMORY.md").read_text() == mem.memory_md
    assert mem.stats.consolidations == 1 and mem.stats.consolidation_failures == 0
    evidence = await mem.retrieve("x", session(probe=True))
    assert evidence.system_text == mem.memory_md and evidence.prior_messages == []


async def test_default_counter_from_the_client(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=200, to=80, counter=None)
    for i in range(12):
        await mem.write(turn(i, n_words=15))
    assert mem.stats.consolidations >= 1
    assert mem.prompt_tokens() <= 200


@pytest.mark.parametrize(
    ("replies", "retries"),
    [
        (['```json\n{"history_entry": "E", "memory": "M"}\n```'], 0),
        (['Here you go: {"history_entry": "E", "memory": "M"} hope it helps'], 0),
        (['{"history_entry": "E", "memo', '{"history_entry": "E", "memory": "M"}'], 1),
        (['{"history_entry": 3, "memory": ["x"]}', '{"history_entry": "E", "memory": "M"}'], 1),
        (["", '{"history_entry": "E", "memory": "M"}'], 1),
    ],
    ids=["fenced", "prose", "cut-off-then-ok", "wrong-types-then-ok", "empty-then-ok"],
)
async def test_malformed_reply_repaired_or_retried(
    harness: Harness, tmp_path: Path, replies: list[str], retries: int
) -> None:
    harness.script.queue.extend(replies)
    mem = harness.memory(tmp_path, at=40, to=20)
    for i in range(3):
        await mem.write(turn(i, n_words=12))
    assert mem.memory_md == "M\n"
    assert mem.stats.consolidations >= 1
    assert mem.stats.consolidation_retries == retries
    assert mem.stats.consolidation_failures == 0


@pytest.mark.parametrize(
    "replies",
    [
        ['{"history_entry": "E", "memo', "Sorry, I cannot do that."],
        ["", '{"history_entry": "", "memory": "M"}'],
        [ScriptedReply(status=500, error="boom")],
    ],
    ids=["cut-off-twice", "empty-then-blank-entry", "server-error"],
)
async def test_failed_consolidation_keeps_the_turns_in_the_pas_view(
    harness: Harness, tmp_path: Path, replies: list[ScriptedReply | str]
) -> None:
    # Issue 15.2: a failed save must not trim the conversation; the turns stay pending, the PA
    # still gets them, HISTORY.md gets nothing, and the failure is counted with its reason.
    mem = harness.memory(tmp_path, at=80, to=40)  # about 33 tokens per turn
    await mem.write(turn(0, n_words=12))
    await mem.write(turn(1, n_words=12))
    assert harness.server.requests == []
    harness.script.queue.extend(replies)
    await mem.write(turn(2, n_words=12))
    assert mem.stats.consolidation_failures == 1
    assert mem.memory_md == ""  # unchanged
    assert mem.history_md == ""  # nothing went to a file the PA never reads
    assert [t.user_message.split()[0] for t in mem.pending] == ["msg0", "msg1", "msg2"]
    assert mem.inspect().stats["consolidation_failures"] == 1.0
    assert mem.inspect().stats["turns_kept_after_failure"] == 3.0
    assert mem.stats.last_failure
    evidence = await mem.retrieve("next", session())
    seen = " ".join(m.content for m in evidence.prior_messages)
    assert all(f"msg{i} " in seen for i in range(3))
    # the next write tries again; once a save succeeds the turns it holds leave the view
    await mem.write(turn(3, n_words=12))
    assert mem.stats.consolidations >= 1
    assert "msg0" not in " ".join(t.user_message for t in mem.pending)
    assert mem.memory_md.startswith("# About the user")


async def test_consolidation_prompt_is_general_purpose(harness: Harness, tmp_path: Path) -> None:
    # Issue 13.1: the baseline is not told what the benchmark looks for.
    mem = harness.memory(tmp_path, at=40, to=20)
    for i in range(3):
        await mem.write(turn(i, n_words=12))
    assert harness.server.requests
    system = harness.server.requests[0].messages[0].content.lower()
    assert "memory" in system and "history_entry" in system  # still a save of both files
    for cue in ("prefer", "style", "how the user wants", "wants to be helped", "personal", "private",
                "work and", "context", "since when", "explain", "how much it should", "react", "interact"):
        assert cue not in system, cue


async def test_threshold_counts_the_pas_system_prompt(harness: Harness, tmp_path: Path) -> None:
    # Issue 11.4: the 20k -> 10k rule counts the PA's prompt, not only MEMORY.md plus the turns.
    plain = harness.memory(tmp_path / "plain", at=200, to=100)
    with_prompt = FileMemory(harness.client, tmp_path / "prompt", consolidate_at_tokens=200,
                             consolidate_to_tokens=100, token_counter=words, base_prompt_tokens=150)
    for mem in (plain, with_prompt):
        await mem.write(turn(0, n_words=12))
    assert with_prompt.prompt_tokens() == plain.prompt_tokens() + 150
    for mem in (plain, with_prompt):
        for i in (1, 2):
            await mem.write(turn(i, n_words=12))
    assert plain.stats.consolidations == 0  # about 100 tokens of turns: below 200
    assert with_prompt.stats.consolidations >= 1  # 150 of prompt + the turns: past 200
    assert with_prompt.inspect().stats["base_prompt_tokens"] == 150.0


async def test_a_memory_that_outgrows_the_window_is_cut_to_fit(harness: Harness, tmp_path: Path) -> None:
    # Issue 15.6: a huge MEMORY.md (here restored) must not make every later PA prompt too long.
    mem = FileMemory(harness.client, tmp_path, consolidate_at_tokens=2_000, consolidate_to_tokens=1_000,
                     token_counter=words, base_prompt_tokens=500)
    huge = "\n".join(f"- fact {i} " + "word " * 20 for i in range(3_000))  # about 66k tokens
    mem.restore(FileMemoryState(memory_md=huge).model_dump_json().encode())
    evidence = await mem.retrieve("next", session())
    assert words(evidence.system_text) <= 2_000 - 500
    assert evidence.system_text.startswith("- fact 0 ")
    assert "more tokens were left out" in evidence.system_text
    assert mem.inspect().stats["memory_cuts"] == 1.0
    assert mem.memory_md == huge  # the store keeps the whole file
    small = harness.memory(tmp_path / "small", at=2_000, to=1_000)
    small.restore(FileMemoryState(memory_md="- one fact\n").model_dump_json().encode())
    assert (await small.retrieve("next", session())).system_text == "- one fact\n"
    assert small.stats.memory_cuts == 0


async def test_failure_keeps_existing_memory(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=40, to=20)
    for i in range(3):
        await mem.write(turn(i, n_words=12))
    first = mem.memory_md
    assert first.startswith("# About the user")
    # blank memory would erase the file: rejected twice -> archived, memory unchanged
    harness.script.queue.extend(['{"history_entry": "E", "memory": ""}'] * 2)
    await mem.write(turn(3, n_words=12))
    assert mem.stats.consolidation_failures == 1
    assert mem.memory_md == first
    assert (tmp_path / "MEMORY.md").read_text() == first


async def test_snapshot_restore_exact(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path / "a", at=100, to=50)  # about 31 tokens per turn
    for i in range(6):
        await mem.write(turn(i, n_words=10))
    assert mem.stats.consolidations >= 1 and mem.pending
    snap = mem.snapshot()
    other = harness.memory(tmp_path / "b", at=100, to=50)
    other.restore(snap)
    assert other.snapshot() == snap
    assert folder_bytes(tmp_path / "a") == folder_bytes(tmp_path / "b")
    assert other.memory_md == mem.memory_md and other.history_md == mem.history_md
    with pytest.raises(SnapshotError, match="pending"):
        other.restore(b'{"system": "file", "pending": [{"step_id": 1}]}')
    assert other.snapshot() == snap  # a bad snapshot changes nothing


async def test_probe_changes_are_discarded_by_restore(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, at=60, to=30)
    for i in range(4):
        await mem.write(turn(i, n_words=10))
    snap = mem.snapshot()
    on_disk = folder_bytes(tmp_path)
    # the probe: retrieve, then writes that even trigger a consolidation
    await mem.retrieve("probe message", session(probe=True))
    harness.script.memory_text = "# Changed during the probe"
    for i in range(10, 14):
        await mem.write(turn(i, n_words=10))
    assert mem.snapshot() != snap
    mem.restore(snap)
    assert mem.snapshot() == snap
    assert folder_bytes(tmp_path) == on_disk
    assert "Changed during the probe" not in mem.memory_md


async def test_target_never_reaches_the_memory(harness: Harness, tmp_path: Path) -> None:
    target = "Terse"  # the cell's target; the PA selected Detailed in every turn
    mem = harness.memory(tmp_path, at=60, to=30)
    for i in range(8):
        raw = turn(i, n_words=10).model_dump()
        record = TurnRecord.model_validate({**raw, "target": target, "target_setting": target})
        await mem.write(record)
    await mem.retrieve("x", session())
    assert harness.server.requests, "the scripted run should consolidate"
    written = [m.content for r in harness.server.requests for m in r.messages]
    written += [json.dumps(r.body) for r in harness.server.requests]
    written += [p.read_text() for p in tmp_path.iterdir()]
    written.append(mem.snapshot().decode())
    written.extend(mem.inspect().stored)
    assert all(target not in text for text in written)


async def test_a_60k_memory_no_longer_floors_the_pas_call(tmp_path: Path) -> None:
    # Issue 15.6 end to end: File memory built as the runner builds it (thresholds scaled to a
    # 32k window beside the 83 tools, the PA's prompt counted) hands a 60k-token MEMORY.md to a
    # real PA call, which fits instead of flooring the step.
    from test_agent_support import START as AGENT_START
    from test_agent_support import PAQueue, tiny_world

    from mempa_tui.agent import AgentSessionStart, AgentTurnInput, PersonalAgent, TurnActions
    from mempa_tui.ix import IXWrapper
    from mempa_tui.memory import default_thresholds
    from mempa_tui.runner._budget import prompt_budget
    from mempa_tui.tools import default_registry
    from mempa_tui.world import WorkingCopy

    queue = PAQueue()
    async with ScriptedModelServer(queue) as server:
        client = LLMClient(server.profile(context_window=32768, max_tokens=1024))
        registry = default_registry()
        budget = prompt_budget(client, registry)
        at, to = default_thresholds(budget.room)
        mem = FileMemory(client, tmp_path, consolidate_at_tokens=at, consolidate_to_tokens=to,
                         base_prompt_tokens=budget.base_prompt_tokens)
        huge = "\n".join(f"- note {i}: the user mentioned item {i} of the quarterly inventory" for i in range(4_000))
        assert client.count_tokens(huge) > 50_000
        mem.restore(FileMemoryState(memory_md=huge).model_dump_json().encode())
        evidence = await mem.retrieve("next", session())
        assert mem.stats.memory_cuts == 1
        agent = PersonalAgent(client)
        agent.begin_session(AgentSessionStart(step_id="A-w-01", context=Context.WORK, starts_at=AGENT_START))
        wc = WorkingCopy(tiny_world(), AGENT_START)
        queue.push("Done.")
        result = await agent.respond(AgentTurnInput(user_message="hello", now=AGENT_START, evidence=evidence),
                                     TurnActions(registry, IXWrapper(registry, wc), []))
        assert result.status != "floored", result.reason
        assert "- note 0:" in queue.pa_requests[-1].messages[1].content


async def test_session_end_consolidates_every_pending_turn_when_asked(harness: Harness, tmp_path: Path) -> None:
    # Issue 12: the quick start never reaches the threshold, and probes get no raw turns (paper
    # 3.5); with consolidate_at_session_end a session's end consolidates what is pending.
    plain = harness.memory(tmp_path / "plain", at=10_000, to=5_000)
    asked = FileMemory(harness.client, tmp_path / "asked", consolidate_at_tokens=10_000,
                       consolidate_to_tokens=5_000, token_counter=words, consolidate_at_session_end=True)
    for mem in (plain, asked):
        await mem.write(turn(1))
        await mem.write(turn(2))
        await mem.end_session(SessionInfo(step_id="A-s02", context=Context.WORK, at=START + timedelta(days=2)))
    assert len(harness.server.requests) == 1  # only the asking memory consolidated
    sent = "\n".join(m.content for m in harness.server.requests[0].messages)
    assert "msg1 " in sent and "msg2 " in sent  # every pending turn, in one round
    assert plain.memory_md == "" and len(plain.pending) == 2
    assert asked.pending == [] and asked.memory_md.startswith("# About the user")
    assert asked.stats.consolidations == 1 and asked.stats.turns_consolidated == 2
    assert (tmp_path / "asked" / "MEMORY.md").read_text() == asked.memory_md
    assert asked.inspect().stats["consolidate_at_session_end"] == 1.0
    assert "consolidate_at_session_end" not in plain.inspect().stats
    evidence = await asked.retrieve("x", session(probe=True))
    assert evidence.system_text == asked.memory_md  # what a probe is handed


async def test_session_end_consolidation_skips_probes_and_keeps_turns_on_failure(
    harness: Harness, tmp_path: Path
) -> None:
    mem = FileMemory(harness.client, tmp_path, consolidate_at_tokens=10_000, consolidate_to_tokens=5_000,
                     token_counter=words, consolidate_at_session_end=True)
    await mem.write(turn(1))
    await mem.end_session(session(probe=True))
    assert harness.server.requests == [] and len(mem.pending) == 1  # a probe's end is not a session's
    harness.script.queue.extend(["not json", "still not json"])
    await mem.end_session(session())
    assert mem.stats.consolidation_failures == 1 and mem.stats.last_failure
    assert len(mem.pending) == 1 and mem.memory_md == ""  # the turn stays in the PA's view
    await mem.end_session(session())  # the next session's end tries again
    assert mem.pending == [] and mem.stats.consolidations == 1
