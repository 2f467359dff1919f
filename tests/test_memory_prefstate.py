"""Preference-state memory against a scripted MEMORY-role model over loopback HTTP (SPEC §6)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_runner_support import WORLDS as RUNNER_WORLDS
from test_runner_support import protocol_responder

from mempa_tui.cli.main import main
from mempa_tui.ix.types import CallStatus, ExecutedCall, IXCall
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.memory import (
    MemoryConfigError,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._prefstate import PrefStateMemory
from mempa_tui.memory._prefstate_extract import quote_in
from mempa_tui.memory._prefstate_state import (
    KEEP_HISTORY,
    CellState,
    Observation,
    PrefStateStats,
    apply_observation,
)
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.tools import default_registry

START = datetime(2026, 3, 2, 9, 0)

PHRASES: dict[str, tuple[str, str, float]] = {
    "just give me the times": ("verbosity", "Terse", 0.85),
    "walk me through the background": ("verbosity", "Detailed", 0.8),
    "maybe a bit more would help": ("verbosity", "Detailed", 0.4),
    "just pick one and book it": ("solution_breadth", "Low", 0.8),
    "put the options side by side": ("solution_breadth", "High", 0.95),
}
"""What the scripted extractor 'finds': a phrase in the user's message -> item."""


def person_message(request: ScriptedRequest) -> str:
    """The user message the extraction prompt shows (between its heading and the answer line)."""
    text = request.messages[1].content  # the turn's prompt, also on a retry
    found = re.search(r"## The person's message\n(.*)\n\nAnswer with", text, re.DOTALL)
    assert found, text
    return found.group(1)


@dataclass
class Extractor:
    """Scripted MEMORY-role model: queued raw replies first, then phrase-based items."""

    queue: list[ScriptedReply | str] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if self.queue:
            return self.queue.pop(0)
        message = person_message(request)
        items = [
            {"attribute": attr, "setting": setting, "quote": phrase, "confidence": conf}
            for phrase, (attr, setting, conf) in PHRASES.items()
            if phrase in message
        ]
        return json.dumps({"observations": items})


@dataclass
class Harness:
    server: ScriptedModelServer
    client: LLMClient
    extractor: Extractor

    def memory(self, folder: Path, **options: float) -> PrefStateMemory:
        mem = make_memory("prefstate", client=self.client, folder=folder, **options)
        assert isinstance(mem, PrefStateMemory)
        return mem

    def prompts(self) -> list[str]:
        return [m.content for r in self.server.requests for m in r.messages]


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    extractor = Extractor()
    async with ScriptedModelServer(extractor) as server:
        yield Harness(server, LLMClient(server.profile(num_retries=0)), extractor)


def turn(
    step: str,
    message: str,
    *,
    day: int = 0,
    index: int = 0,
    context: Context = Context.WORK,
    ix: tuple[str, str] | None = None,
    reply: str = "Here is what I found.",
) -> TurnRecord:
    return TurnRecord(
        step_id=step,
        context=context,
        at=START + timedelta(days=day, minutes=index),
        turn_index=index,
        user_message=message,
        tool_calls=[
            ExecutedCall(call_id="c1", tool="calendar_event_list", status=CallStatus.EXECUTED, result="[]")
        ],
        ix_calls=[IXCall(attribute=ix[0], setting=ix[1])] if ix else [],
        reply=reply,
    )


def session(step: str, context: Context = Context.WORK, *, day: int = 30, probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id=step, context=context, at=START + timedelta(days=day), is_probe=probe)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


async def test_planted_preference_reaches_a_later_decision_point(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "what's on for thursday?", ix=("verbosity", "Detailed"), reply="A long answer."))
    await mem.write(turn("A-S01", "too much. just give me the times next time", index=1))
    # the extractor read the message as a reaction to the PA's previous turn
    assert "verbosity = Detailed" in harness.prompts()[-1] and "A long answer." in harness.prompts()[-1]
    assert "too much. just give me the times" in harness.prompts()[-1]

    evidence = await mem.retrieve("book the room for friday", session("A-S05"))
    assert "Verbosity (IX_verbosity): Terse" in evidence.system_text
    assert "just give me the times" in evidence.system_text
    [item] = evidence.items
    assert item.score == pytest.approx(0.85) and item.source == "work/verbosity"
    assert evidence.prior_messages == []
    assert mem.inspect().last_evidence == evidence
    assert mem.client.count_tokens(evidence.system_text) < 200  # compact for a small model
    assert (tmp_path / "state.json").exists() and "Terse" in (tmp_path / "TABLE.md").read_text()


async def test_opening_message_is_read_without_a_previous_turn(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "hi", ix=("verbosity", "Detailed"), reply="Long reply one."))
    await mem.write(turn("A-S02", "just give me the times for monday"))
    last = harness.prompts()[-1]
    assert "this message opens the conversation" in last and "Long reply one." not in last


async def test_work_and_personal_are_kept_apart(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "just give me the times", context=Context.WORK))
    await mem.write(turn("A-S02", "walk me through the background", day=1, context=Context.PERSONAL))
    assert mem.table(Context.WORK) == {"verbosity": "Terse"}
    assert mem.table(Context.PERSONAL) == {"verbosity": "Detailed"}
    work = await mem.retrieve("x", session("A-S09", Context.WORK))
    personal = await mem.retrieve("x", session("A-S10", Context.PERSONAL))
    assert "Terse" in work.system_text and "Detailed" not in work.system_text
    assert "Detailed" in personal.system_text and "Terse" not in personal.system_text
    assert "work matters" in work.system_text and "personal matters" in personal.system_text


async def test_change_event_supersedes_in_its_own_context_only(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "just pick one and book it", context=Context.WORK))
    await mem.write(turn("A-S02", "just pick one and book it", day=1, context=Context.PERSONAL))
    await mem.write(turn("A-E01", "from now on put the options side by side and I decide", day=20))
    assert mem.table(Context.WORK) == {"solution_breadth": "High"}
    assert mem.table(Context.PERSONAL) == {"solution_breadth": "Low"}
    cell = mem.cell(Context.WORK, "solution_breadth")
    assert cell is not None
    assert [(h.kind, h.old_setting, h.new_setting) for h in cell.history] == [
        ("set", None, "Low"),
        ("superseded", "Low", "High"),
    ]
    work = await mem.retrieve("x", session("A-PF-work", Context.WORK, probe=True))
    assert "Solution Breadth (IX_solution_breadth): High" in work.system_text
    assert "changed from Low to High" in work.system_text
    personal = await mem.retrieve("x", session("A-PF-personal", Context.PERSONAL, probe=True))
    assert "Solution Breadth (IX_solution_breadth): Low" in personal.system_text
    assert "changed" not in personal.system_text
    assert mem.stats.superseded == 1


async def test_weak_contrary_signal_needs_repetition(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "just give me the times"))
    await mem.write(turn("A-S02", "hm, maybe a bit more would help", day=1))
    cell = mem.cell(Context.WORK, "verbosity")
    assert cell is not None and cell.setting == "Terse"
    assert cell.challenger is not None and cell.challenger.setting == "Detailed"
    assert "unconfirmed hint: Detailed" in "\n".join(mem.inspect().stored)
    await mem.write(turn("A-S03", "again, maybe a bit more would help", day=2))
    assert mem.table(Context.WORK) == {"verbosity": "Detailed"}
    cell = mem.cell(Context.WORK, "verbosity")
    assert cell is not None and cell.support == 2 and cell.challenger is None
    assert [h.kind for h in cell.history] == ["set", "challenged", "superseded"]


async def test_reinforcement_clears_a_challenger(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "just give me the times"))
    await mem.write(turn("A-S02", "maybe a bit more would help", day=1))
    await mem.write(turn("A-S03", "just give me the times please", day=2))
    await mem.write(turn("A-S04", "maybe a bit more would help", day=3))
    cell = mem.cell(Context.WORK, "verbosity")
    assert cell is not None and cell.setting == "Terse" and cell.support == 2
    assert cell.challenger is not None  # one weak hint since the reinforcement, not two
    assert [h.kind for h in cell.history] == ["set", "challenged", "reinforced", "challenged"]


async def test_lower_threshold_lets_one_weak_signal_through(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path, confident_at=0.3)
    await mem.write(turn("A-S01", "just give me the times"))
    await mem.write(turn("A-S02", "maybe a bit more would help", day=1))
    assert mem.table(Context.WORK) == {"verbosity": "Detailed"}


async def test_invalid_items_are_dropped_and_counted(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    items = [
        {"attribute": "verbosity", "setting": "terse", "quote": "Give me the TIMES", "confidence": 0.9},
        {"attribute": "mood", "setting": "Happy", "quote": "give me", "confidence": 0.5},
        {"attribute": "verbosity", "setting": "Short", "quote": "give me", "confidence": 0.5},
        {"attribute": "Autonomy Level", "setting": "Reactive", "quote": "ask me first", "confidence": 0.5},
        {"attribute": "IX_task_expansion", "setting": "Low", "quote": "the times", "confidence": 1.5},
        {"attribute": "tone_formality", "setting": "Casual", "quote": "the times", "confidence": "high"},
        "verbosity=Terse",
        {"attribute": "verbosity", "setting": "Detailed", "quote": "the times", "confidence": 0.3},
        {"attribute": "guidance_level", "setting": "Assumed", "quote": "give … times", "confidence": 0.7},
    ]
    harness.extractor.queue.append("Sure! Here you go:\n```json\n" + json.dumps({"observations": items}) + "\n```")
    await mem.write(turn("A-S01", "give me the times"))
    assert mem.table(Context.WORK) == {"verbosity": "Terse", "guidance_level": "Assumed"}
    stats = mem.stats
    assert stats.items_accepted == 2
    assert stats.items_dropped == {
        "unknown_attribute": 1,
        "unknown_setting": 1,
        "quote_not_in_turn": 1,
        "confidence_out_of_range": 1,
        "malformed_item": 2,
        "duplicate_attribute": 1,
    }
    shown = mem.inspect().stats
    assert shown["items_dropped"] == 7 and shown["dropped_quote_not_in_turn"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "I found nothing to note.",
        '{"observations": "none"}',
        '{"notes": []}',
        '{"observations": [{"attribute": "verbosity", "setting": "Terse"',
    ],
)
async def test_malformed_reply_is_retried_then_counted(harness: Harness, tmp_path: Path, bad: str) -> None:
    mem = harness.memory(tmp_path)
    harness.extractor.queue += [bad, bad]
    await mem.write(turn("A-S01", "just give me the times"))
    stats = mem.stats
    assert (stats.extraction_retries, stats.extraction_failures, stats.items_accepted) == (1, 1, 0)
    assert stats.last_failure is not None and stats.last_failure.startswith("A-S01#0")
    assert "could not be used" in harness.server.requests[1].messages[-1].content
    assert mem.table(Context.WORK) == {}
    # the next turn is extracted normally
    await mem.write(turn("A-S01", "just give me the times", index=1))
    assert mem.table(Context.WORK) == {"verbosity": "Terse"}
    assert mem.inspect().stats["extraction_failures"] == 1


async def test_malformed_then_repaired_on_retry(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    harness.extractor.queue.append("observations: verbosity Terse")
    await mem.write(turn("A-S01", "just give me the times"))
    assert mem.table(Context.WORK) == {"verbosity": "Terse"}
    assert (mem.stats.extraction_retries, mem.stats.extraction_failures) == (1, 0)


async def test_failed_model_call_is_counted_not_raised(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    harness.extractor.queue.append(ScriptedReply(status=500, error="model crashed"))
    await mem.write(turn("A-S01", "just give me the times"))
    assert mem.stats.call_errors == 1 and "model call failed" in (mem.stats.last_failure or "")
    assert mem.table(Context.WORK) == {}


async def test_turns_with_nothing_to_read_make_no_call(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "[Notification] A new email arrived from Ruth."))
    await mem.write(turn("A-S01", "   ", index=1))
    await mem.retrieve("probe task", session("A-PF-work-verbosity", probe=True))
    await mem.write(turn("A-PF-work-verbosity", "just give me the times"))
    assert harness.server.requests == []
    assert mem.stats.turns_skipped == 3 and mem.table(Context.WORK) == {}
    # after the probe, an ordinary step is read again
    await mem.retrieve("next", session("A-S02"))
    await mem.write(turn("A-S02", "just give me the times"))
    assert len(harness.server.requests) == 1


async def test_snapshot_restore_is_exact(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    await mem.write(turn("A-S01", "just give me the times"))
    await mem.write(turn("A-S02", "maybe a bit more would help", day=1))
    snap = mem.snapshot()
    on_disk = folder_bytes(tmp_path)
    # what a probe branch does: retrieve, write (skipped), and a non-probe write that changes state
    await mem.retrieve("probe", session("A-PF-work-verbosity", probe=True))
    await mem.write(turn("A-PF-work-verbosity", "walk me through the background"))
    await mem.write(turn("A-S03", "walk me through the background", day=2))
    assert mem.snapshot() != snap and mem.table(Context.WORK) == {"verbosity": "Detailed"}
    mem.restore(snap)
    assert mem.snapshot() == snap
    assert folder_bytes(tmp_path) == on_disk
    assert mem.table(Context.WORK) == {"verbosity": "Terse"}
    other = harness.memory(tmp_path / "copy")
    other.restore(snap)
    assert other.snapshot() == snap and other.inspect().stored == mem.inspect().stored


async def test_restore_rejects_foreign_bytes(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    with pytest.raises(SnapshotError, match="prefstate memory: bad snapshot at system"):
        mem.restore(b'{"system": "file"}')
    with pytest.raises(SnapshotError, match="cells"):
        mem.restore(b'{"system": "prefstate", "cells": {"work/verbosity": {"setting": 3}}}')


async def test_target_and_withheld_content_never_reach_it(harness: Harness, tmp_path: Path) -> None:
    mem = harness.memory(tmp_path)
    marker = "TARGET-MARKER-Detailed"
    raw = turn("A-S01", "just give me the times", ix=("verbosity", "Terse")).model_dump()
    record = TurnRecord.model_validate(
        {**raw, "target": marker, "target_setting": marker, "withheld": {"rationale": marker}}
    )
    await mem.write(record)
    await mem.write(turn("A-S01", "ok", index=1))
    await mem.retrieve("x", session("A-S02"))
    assert harness.server.requests
    written = harness.prompts() + [json.dumps(r.body) for r in harness.server.requests]
    written += [p.read_text() for p in tmp_path.iterdir()]
    written += [mem.snapshot().decode(), *mem.inspect().stored]
    assert all(marker not in text for text in written)


def test_quote_matching() -> None:
    message = "Honestly — it’s  too long.\nJust give me the times, OK?"
    assert quote_in('"just give me the times"', message)
    assert quote_in("it's too long", message)
    assert quote_in("too long ... the times", message)
    assert not quote_in("the times ... too long", message)  # parts out of order
    assert not quote_in("give me the dates", message)
    assert not quote_in("OK", message)  # too short to be evidence


def test_factory_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="needs a model client"):
        make_memory("prefstate", client=None, folder=tmp_path)
    with pytest.raises(MemoryConfigError, match="unknown option.*valid: confident_at, recent_changes"):
        make_memory("prefstate", client=_Unused(), folder=tmp_path, threshold=0.5)
    with pytest.raises(MemoryConfigError, match="confident_at must be in"):
        make_memory("prefstate", client=_Unused(), folder=tmp_path, confident_at=0.0)
    with pytest.raises(MemoryConfigError, match="recent_changes must be an integer"):
        make_memory("prefstate", client=_Unused(), folder=tmp_path, recent_changes=1.5)
    built = make_memory("prefstate", client=_Unused(), folder=tmp_path / "run", recent_changes=0)
    assert isinstance(built, PrefStateMemory) and not (tmp_path / "run").exists()


class _Unused:
    async def complete(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("no model call expected")

    def count_tokens(self, text: str) -> int:
        return len(text.split())


# ---- User A's slice end to end with --memory prefstate ------------------------------------------

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
_CELL = re.compile(r"^- [^(\n]+\((IX_\w+)\): ([^(\n]+?) \(confidence", re.MULTILINE)
_FILLER = "A short note written by the scripted model."


class _SliceScript(RolePlayer):
    """Every role of the slice; the memory role reads reactions, the PA follows its memory table.

    The simulator ends each request with "Could you handle it?"; the scripted extractor reads that
    as Terse at work and Detailed in personal life, and as Low solution breadth in both contexts.
    The change event's rule ("side by side") reads as High. The PA selects whatever its memory
    table says for the offered attribute (the first setting when the table is silent), so each
    probe's selection shows what memory handed it. String payloads carry unique markers, so
    withheld content can be traced.
    """

    def __init__(self) -> None:
        def user_line(request: ScriptedRequest) -> str:
            system = request.messages[0].content if request.messages else ""
            found = re.search(r"^Task: (.+)$", system, re.MULTILINE)
            return f"{found.group(1)}. Could you handle it?" if found else "Could you handle it?"

        def choose(key: str, request: ScriptedRequest) -> str:
            system = "\n".join(m.content for m in request.messages if m.role == "system")
            table = dict(_CELL.findall(system))
            return table.get(f"IX_{key}", attribute(key).setting_names[0])

        super().__init__(choose=choose, user_line=user_line)
        self.markers = 0

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if request.model.endswith("-memory"):
            return self._extract(request)
        reply = super().__call__(request)
        if isinstance(reply, ScriptedReply):
            for call in reply.tool_calls:
                call.arguments = self._mark(call.arguments)
        return reply

    def _mark(self, value: object) -> Any:
        if value == _FILLER:
            self.markers += 1
            return f"payload marker {self.markers}"
        if isinstance(value, dict):
            return {k: self._mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._mark(v) for v in value]
        return value

    @staticmethod
    def _extract(request: ScriptedRequest) -> str:
        prompt = request.messages[1].content
        message = person_message(request)
        work = "Context of this conversation: work" in prompt
        items: list[dict[str, object]] = []
        if "side by side" in message:
            items.append({"attribute": "solution_breadth", "setting": "High", "quote": "side by side", "confidence": 0.95})
        elif "Could you handle it?" in message:
            items += [
                {"attribute": "verbosity", "setting": "Terse" if work else "Detailed",
                 "quote": "Could you handle it?", "confidence": 0.7},
                {"attribute": "solution_breadth", "setting": "Low", "quote": "Could you handle it?", "confidence": 0.7},
            ]
        return json.dumps({"observations": items})


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_user_a_slice_with_prefstate(tmp_path: Path) -> None:
    bundle = load_user(WORLDS, "A").sliced()
    script = _SliceScript()
    async with ScriptedModelServer(script) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user="A", profile="scripted", memory="prefstate", repeats=1, worlds_dir=WORLDS, slice=True)
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=tmp_path / "local_memory", resamples=200).run()
            steps = await store.steps(outcome.run_id, with_results=True)
            results = await store.probe_results(outcome.run_id)
        memory_prompts = [m.content for r in server.requests if r.model.endswith("-memory") for m in r.messages]
    assert outcome.status is RunStatus.COMPLETED
    assert [s.step_id for s in steps] == bundle.timeline.steps
    assert {s.status for s in steps} == {"completed"}
    assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}
    chosen = {r.probe_id: r.selection for r in results}
    # planted in accumulation, handed to the PA at the probes' decision points, per context
    assert chosen["A-PF-work-verbosity"] == "Terse"
    assert chosen["A-PF-personal-verbosity"] == "Detailed"
    # the change event's rule supersedes at work only; the pre-event probe still saw the old value
    assert chosen["A-PE-work-solution_breadth"] == "Low"
    assert chosen["A-PF-work-solution_breadth"] == "High"
    assert chosen["A-PF-personal-solution_breadth"] == "Low"
    # an attribute memory knows nothing about falls back to the first setting
    assert chosen["A-PF-work-tone_formality"] == "Casual"
    # the store lives under local_memory/<run>/ and records the change
    table = (tmp_path / "local_memory" / outcome.run_id / "run" / "TABLE.md").read_text()
    assert "superseded: Low -> High" in table
    # nothing the wrapper withheld ever reached the memory model
    withheld = [
        s
        for step in steps
        for trace in json.loads(step.result_json).get("traces", [])
        for s in _strings(trace.get("withheld", {}))
        if "payload marker" in s
    ]
    assert withheld, "the slice should withhold some payload (a test that cannot fail proves nothing)"
    assert memory_prompts
    assert all(marker not in text for marker in withheld for text in memory_prompts)
    assert outcome.report is not None


# ---- the command line: mempa run --memory prefstate ---------------------------------------------


def _cli_responder(request: ScriptedRequest) -> ScriptedReply | str:
    """The runner tests' protocol responder; the memory role reads "sort this out" as Terse."""
    if request.model == "scripted-memory":
        found = "sort this out" in person_message(request)
        item = {"attribute": "verbosity", "setting": "Terse", "quote": "sort this out", "confidence": 0.8}
        return json.dumps({"observations": [item] if found else []})
    return protocol_responder(request)


def test_mempa_run_with_prefstate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedModelServer(_cli_responder) as server:
        profile = tmp_path / "scripted.yaml"
        profile.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
        code = main([
            "run", "--user", "R", "--memory", "prefstate", "--memory-option", "confident_at=0.7",
            "--model", str(profile), "--repeats", "1", "--worlds", str(RUNNER_WORLDS),
            "--saves", str(tmp_path / "saves"), "--local-memory", str(tmp_path / "local_memory"),
        ])
        memory_calls = [r for r in server.requests if r.model == "scripted-memory"]
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PSA" in out and "Preference-state memory" in out
    assert memory_calls
    state = json.loads((tmp_path / "local_memory" / "R-prefstate-scripted-s0" / "run" / "state.json").read_text())
    assert state["stats"]["turns_extracted"] > 0 and state["stats"]["extraction_failures"] == 0
    assert any(cell["setting"] == "Terse" for cell in state["cells"].values())


async def test_full_table_and_prompt_fit_a_small_model(harness: Harness, tmp_path: Path) -> None:
    long_message = "please " + " ".join(f"word{i}" for i in range(400))
    items = [
        {"attribute": a.key, "setting": a.setting_names[0], "quote": long_message[:300], "confidence": 0.9}
        for a in ATTRIBUTES
    ]
    flipped = [{**i, "setting": attribute(str(i["attribute"])).setting_names[1]} for i in items]
    harness.extractor.queue += [json.dumps({"observations": items[:6]}), json.dumps({"observations": items[6:12]}),
                                json.dumps({"observations": items[12:]}), json.dumps({"observations": flipped[:6]})]
    mem = harness.memory(tmp_path)
    for i in range(4):
        await mem.write(turn(f"A-S0{i}", long_message, day=i, reply="x " * 3000))
    assert len(mem.table(Context.WORK)) == 14 and mem.stats.superseded == 6
    evidence = await mem.retrieve("x", session("A-S09"))
    assert len(evidence.items) == 14 + 3  # every cell, the three latest changes
    assert mem.client.count_tokens(evidence.system_text) <= 1_200
    prompt = "\n".join(m.content for m in harness.server.requests[-1].messages)
    assert mem.client.count_tokens(prompt) <= 4_000  # extraction fits a 16k window with room to answer


def test_history_is_bounded_and_changes_stay_in_their_cell() -> None:
    cells: dict[str, CellState] = {}
    stats = PrefStateStats()
    for i in range(KEEP_HISTORY + 25):
        obs = Observation(
            context=Context.WORK, attribute="verbosity", setting=("Terse", "Detailed")[i % 2],
            quote=f"reaction {i}", at=START + timedelta(hours=i), confidence=0.9, step_id=f"S{i}", turn_index=0,
        )
        assert apply_observation(cells, obs, stats) == ("set" if i == 0 else "superseded")
    cell = cells["work/verbosity"]
    assert len(cell.history) == KEEP_HISTORY and stats.history_trimmed == 25
    assert cell.history[-1].quote == f"reaction {KEEP_HISTORY + 24}" and cell.setting == "Terse"
    assert list(cells) == ["work/verbosity"]  # the personal cell was never created
