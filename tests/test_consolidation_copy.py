"""A MEMORY.md that copies the assistant's replies and draws on none of the user's messages is
refused (``copies_assistant``), and Health says so (fresh-user finding on the quick start).

The real shape: A-E01's turns as the world scripts them, and a MEMORY.md that is the PA's venue
reply ("Use the Eastbank Community Centre main hall, ..."), not the rule the user stated ("put
the realistic ones side by side ... and i'll make the call"). It passed every form check and its
Health read ok."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.memory import FileMemory, SessionInfo, TurnRecord
from mempa_tui.memory._consolidation_checks import UnusableReply, check_content
from mempa_tui.memory._consolidation_copy import COPY_SHARE, copy_measure
from mempa_tui.runner._health import health_of_stats
from mempa_tui.taxonomy import Context

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 5, 19, 10, 0)


def a_e01() -> list[TurnRecord]:
    """A-E01's three turns from the world (the last, the user's rule, has no reply)."""
    event = yaml.safe_load((ROOT / "worlds/users/A/events/A-E01.yaml").read_text(encoding="utf-8"))
    return [TurnRecord(step_id="A-E01", context=Context.WORK, at=START + timedelta(minutes=i), turn_index=i,
                       user_message=t["user"], reply=(t.get("pa") or {}).get("reply", ""))
            for i, t in enumerate(event["transcript"])]


TURNS = a_e01()
VENUE_REPLY = TURNS[0].reply
RULE = ("- At work, when there is a choice to make, Ingrid wants the realistic options side by side with "
        "what separates them (cost and catch); she makes the call.")
PARAPHRASE = ("# Work\n" + RULE + "\n- Route 14 info session for Ruth, Thursday 4 June, evening; Eastbank hall "
              "on hold, the booking parked until finance sees the alternatives.")
COPIES = {
    "the reply": VENUE_REPLY,
    "as a list": "# Venue\n" + "\n".join(f"- {s.strip()}" for s in VENUE_REPLY.split(". ")),
    "with a task heading": "## Route 14 info session (Ruth)\n" + VENUE_REPLY,
    "both replies": VENUE_REPLY + "\n" + TURNS[1].reply,
}


def test_the_real_failure_shape_is_a_copy_and_its_fixes_are_not() -> None:
    for name, memory in COPIES.items():
        m = copy_measure(memory, TURNS)
        assert m.copies_assistant, name
        assert m.share >= 0.9 and m.user_words < 4, name
    # a paraphrase of the user's wishes: nothing copied, the user's words kept
    para = copy_measure(PARAPHRASE, TURNS)
    assert para.share == 0.0 and para.user_words >= 4 and not para.copies_assistant
    # mixed: the reply copied, then the user's rule in a line of its own: it drew on the user
    mixed = copy_measure(VENUE_REPLY + "\n" + RULE, TURNS)
    assert mixed.share >= COPY_SHARE and mixed.draws_on_user and not mixed.copies_assistant
    # notes quoting a few words of the reply among their own
    notes = ("# Work\n- Ruth asked for an info session on route 14, Thu 4 June.\n- Held Eastbank Community "
             "Centre main hall 18:00-20:00, it seats 120, has step-free access and a hearing loop.\n"
             "- The library room is free but seats 40.")
    assert copy_measure(notes, TURNS).share < COPY_SHARE


def test_a_pa_that_parrots_the_user_does_not_hide_a_copy_of_its_other_reply() -> None:
    # fresh quick start of 4 December, A-S14: the PA's second reply was the user's message word for
    # word, so every user word also stood in a reply and the rule was not applied; the stored
    # MEMORY.md was the PA's first (invented) reply
    asked = "I need to find out when the summer leaflets are going to be printed. Can you please send me the email address?"
    again = ("Thank you for your assistance. Can you please send me the email address so I can find out when the "
             "summer leaflets are going to be printed?")
    invented = ("I have a new calendar event due to the summer leaflets. The event will start on 2026-05-12 and end "
                "on 2026-05-01. If you have any other questions or need further assistance, please feel free to ask.")
    at = datetime(2026, 4, 30, 9, 0)
    turns = [TurnRecord(step_id="A-S14", context=Context.WORK, at=at, turn_index=0, user_message=asked, reply=invented),
             TurnRecord(step_id="A-S14", context=Context.WORK, at=at, turn_index=1, user_message=again, reply=again)]
    measure = copy_measure(invented, turns)
    assert measure.user_words_available >= 4 and measure.copies_assistant
    # notes that keep what the person asked for still pass
    assert not copy_measure("- Wants to know when the summer leaflets will be printed and who to email about it.",
                            turns).copies_assistant


def test_what_the_rule_does_not_judge() -> None:
    # the user said nothing of their own: nothing to draw on, so a copy of the reply is not judged
    thin = [t.model_copy(update={"user_message": "ok thanks"}) for t in TURNS[:1]]
    assert not copy_measure(VENUE_REPLY, thin).judged
    # too short to tell a copy from a note
    assert not copy_measure("Eastbank seats 120, hire is 45 pounds an hour.", TURNS).judged
    # text carried over from the old MEMORY.md is not new, so it is not counted as copied
    old = "# Notes\n" + VENUE_REPLY
    assert copy_measure(old + "\n" + RULE, TURNS, old_memory=old).copied == 0
    # without the turns (another caller) the rule is not applied
    check_content("Held the hall.", VENUE_REPLY)
    with pytest.raises(UnusableReply) as caught:
        check_content("Held the hall.", VENUE_REPLY, TURNS)
    assert caught.value.reason == "copies_assistant"
    assert "copies the assistant's replies word for word" in str(caught.value)


@dataclass
class Script:
    """Queued MEMORY-role memories (each sent as a whole reply); once empty, the paraphrase."""

    queue: list[str] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> str:
        memory = self.queue.pop(0) if self.queue else PARAPHRASE
        return json.dumps({"history_entry": "Held the Eastbank hall; finance parked the booking.", "memory": memory})


Scripted = tuple[ScriptedModelServer, LLMClient, Script]


@pytest.fixture
async def scripted() -> AsyncIterator[Scripted]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        yield server, LLMClient(server.profile(num_retries=0)), script


def _memory(client: LLMClient, folder: Path) -> FileMemory:
    return FileMemory(client, folder, consolidate_at_tokens=10_000, consolidate_to_tokens=5_000,
                      token_counter=lambda text: len(text.split()), consolidate_at_session_end=True)


async def _session_of(mem: FileMemory, turns: list[TurnRecord]) -> None:
    for t in turns:
        await mem.write(t)
    await mem.end_session(SessionInfo(step_id=turns[0].step_id, context=Context.WORK, at=turns[0].at))


async def test_a_copied_reply_is_retried_then_counted_keeping_the_turns(scripted: Scripted, tmp_path: Path) -> None:
    server, client, script = scripted
    mem = _memory(client, tmp_path)
    script.queue.extend([VENUE_REPLY, COPIES["as a list"]])
    await _session_of(mem, TURNS)
    stats = mem.stats
    assert stats.consolidation_failures == 1 and stats.consolidations == 0 and stats.consolidation_retries == 1
    assert stats.failure_reasons == {"copies_assistant": 1}
    assert mem.memory_md == "" and len(mem.pending) == 3  # nothing stored, the turns stay in view
    retry = server.requests[1].messages[-1].content
    assert "copies the assistant's replies" in retry and "what the person said" in retry
    inspected = mem.inspect().stats
    assert inspected["consolidation_unusable_copies_assistant"] == 1.0
    assert "memory_md_ngrams" not in inspected  # nothing stored, nothing measured
    # every round of the run failed this way: Health is broken and names the reason
    health = health_of_stats("A-file", "file", inspected)
    assert health.broken
    assert "1/1 consolidation rounds failed (100%; memory copies the assistant's replies 1)" in health.text()
    # the next save's paraphrase is stored and Health reads ok
    await mem.end_session(SessionInfo(step_id="A-E01", context=Context.WORK, at=START))
    assert mem.stats.consolidations == 1 and mem.pending == [] and "side by side" in mem.memory_md
    after = mem.inspect().stats
    assert after["memory_md_copied_ngrams"] == 0.0 and after["memory_md_user_words"] >= 4


async def test_a_copy_then_a_paraphrase_is_stored_on_the_retry(scripted: Scripted, tmp_path: Path) -> None:
    _server, client, script = scripted
    mem = _memory(client, tmp_path)
    script.queue.append(VENUE_REPLY)
    await _session_of(mem, TURNS)
    assert mem.stats.consolidations == 1 and mem.stats.consolidation_retries == 1
    assert mem.stats.consolidation_failures == 0
    assert health_of_stats("A-file", "file", mem.inspect().stats).state == "ok"


async def test_health_is_broken_when_the_final_file_draws_only_on_the_assistant(scripted: Scripted, tmp_path: Path) -> None:
    _server, client, script = scripted
    mem = _memory(client, tmp_path)
    # a save whose user said nothing of their own passes the round's rule (nothing to draw on)...
    thin = [t.model_copy(update={"user_message": "ok thanks", "step_id": "A-S14"}) for t in TURNS[:1]]
    script.queue.append(VENUE_REPLY)
    await _session_of(mem, thin)
    assert mem.stats.consolidations == 1 and mem.memory_md.strip() == VENUE_REPLY
    # ...but the file it leaves is the PA's reply: Health says so in one line
    stats = mem.inspect().stats
    health = health_of_stats("A-file", "file", stats)
    assert health.broken
    line = next(p for p in health.problems if p.startswith("MEMORY.md draws only on the assistant's replies"))
    assert "67 of its 67 8-word spans (100%)" in line and "\n" not in health.text()
    # the next save keeps the copy and adds the user's rule: the file now draws on the user too
    script.queue.append(VENUE_REPLY + "\n" + RULE)
    await _session_of(mem, TURNS)
    after = mem.inspect().stats
    assert after["memory_md_copied_ngrams"] >= 60  # the copy is still counted as copied
    assert health_of_stats("A-file", "file", after).state == "ok"
    # a restored snapshot keeps the measure
    again = _memory(client, tmp_path / "again")
    again.restore(mem.snapshot())
    assert again.inspect().stats["memory_md_user_words"] == after["memory_md_user_words"]


def test_health_judges_the_final_file_only_with_its_counters() -> None:
    base = {"turns_written": 3, "consolidations": 1, "consolidation_failures": 0, "history_entries": 1,
            "pending_turns": 0, "memory_md_chars": 400.0}
    assert health_of_stats("A-file", "file", base).state == "ok"  # stored before the counters
    copied = {**base, "memory_md_ngrams": 40.0, "memory_md_copied_ngrams": 30.0, "memory_md_user_words": 1.0}
    assert health_of_stats("A-file", "file", copied).broken
    assert health_of_stats("A-file", "file", {**copied, "memory_md_user_words": 4.0}).state == "ok"
    assert health_of_stats("A-file", "file", {**copied, "memory_md_copied_ngrams": 19.0}).state == "ok"


@pytest.fixture(scope="module")
def replay_module() -> ModuleType:
    path = ROOT / "benchmarks" / "consolidation_replay.py"
    spec = importlib.util.spec_from_file_location("consolidation_replay", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["consolidation_replay"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def test_the_replay_benchmark_counts_the_new_reason(replay_module: ModuleType, tmp_path: Path) -> None:
    script = Script([VENUE_REPLY, VENUE_REPLY])  # round 1 copies twice; round 2 gets the paraphrase
    async with ScriptedModelServer(script) as server:
        rounds = [replay_module.Round(step_id="A-E01", turns=TURNS),
                  replay_module.Round(step_id="A-S14", turns=[TURNS[0].model_copy(update={"step_id": "A-S14"})])]
        results = await replay_module.replay(server.profile(num_retries=0), "scripted-memory", rounds, tmp_path)
    assert [r.verdict for r in results] == ["copies_assistant", "usable"]
    text = replay_module.table({"scripted": results})
    assert "| copies_assistant |" in text
    assert "scripted: 1/2 rounds usable (50%)" in text and "; unusable: copies_assistant 1" in text
