"""Mem0-style extraction memory: the scripted MEMORY-role model over loopback HTTP and the real
packaged MiniLM embedder with FAISS (paper Section 4 ❸)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.memory import (
    MemoryConfigError,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._mem0 import Mem0Memory
from mempa_tui.memory._mem0_prompts import read_decision, read_extraction
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import Context
from mempa_tui.tools import default_registry

START = datetime(2025, 3, 3, 9, 0)
WORLDS = Path(__file__).resolve().parent.parent / "worlds"

# Loading torch and the embedding model the first time takes tens of seconds on a busy 2-core
# machine; the per-test default of 120 s is too tight for the test that loads it.
pytestmark = pytest.mark.timeout(600)
PREFERENCE = "At work the user wants routine emails to the team sent without being asked first."
CHANGED = "At work the user now wants to confirm every email before it is sent."


def extraction(*notes: str) -> str:
    return json.dumps({"memories": list(notes)})


def decision(event: str, ident: int | None = None, text: str = "") -> str:
    return json.dumps({"event": event, "id": ident, "text": text})


@dataclass
class Script:
    """Queued replies per stage; every request is recorded with its stage."""

    extract: list[ScriptedReply | str] = field(default_factory=list)
    decide: list[ScriptedReply | str] = field(default_factory=list)
    seen: list[tuple[str, ScriptedRequest]] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        assert request.model == "scripted-memory", request.model
        first_user = next(m.content for m in request.messages if m.role == "user")
        stage = "decide" if "New note:" in first_user else "extract"
        self.seen.append((stage, request))
        queue = self.decide if stage == "decide" else self.extract
        if not queue:
            return extraction() if stage == "extract" else decision("NONE")
        return queue.pop(0)

    def count(self, stage: str) -> int:
        return sum(1 for s, _ in self.seen if s == stage)


@dataclass
class Setup:
    script: Script
    client: LLMClient


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        yield Setup(script, LLMClient(server.profile(num_retries=0)))


def mem0(setup: Setup, folder: Path, **options: object) -> Mem0Memory:
    memory = make_memory("mem0", client=setup.client, folder=folder, context_window=16_384, **options)
    assert isinstance(memory, Mem0Memory)
    return memory


def turn(i: int, message: str, *, reply: str = "Done.", step: str | None = None) -> TurnRecord:
    return TurnRecord(
        step_id=step or f"A-s{i:02d}", context=Context.WORK, at=START + timedelta(days=i),
        turn_index=0, user_message=message, reply=reply,
    )


def session(probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id="A-s99", context=Context.WORK, at=START + timedelta(days=60), is_probe=probe)


async def test_planted_preference_is_extracted_and_handed_back(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    setup.script.extract += [
        extraction("The user is planning a design review on Thursday."),
        extraction(PREFERENCE),
        extraction("The user likes vegetarian lasagna."),
    ]
    setup.script.decide += [decision("ADD", text=PREFERENCE), decision("ADD")]
    await memory.write(turn(0, "Book a room for the design review on Thursday."))
    await memory.write(turn(1, "Stop asking me before you send routine emails to my team, just send them."))
    await memory.write(turn(2, "Find me a vegetarian lasagna recipe."))

    # the extractor saw the turn and nothing else
    extract_prompt = setup.script.seen[0][1].messages[-1].content
    assert "Book a room for the design review" in extract_prompt
    # the candidate was compared with the stored memories shown under small ids
    decide_prompt = next(r for s, r in setup.script.seen if s == "decide").messages[-1].content
    assert "0: The user is planning a design review on Thursday." in decide_prompt
    assert memory.memories == [
        "The user is planning a design review on Thursday.", PREFERENCE, "The user likes vegetarian lasagna.",
    ]

    evidence = await memory.retrieve("Send the weekly update email to the team.", session(probe=True))
    assert evidence.items[0].text == PREFERENCE
    assert evidence.items[0].score is not None and evidence.items[0].score > evidence.items[-1].score  # type: ignore[operator]
    assert PREFERENCE in evidence.system_text
    assert evidence.prior_messages == []
    assert memory.inspect().last_evidence == evidence


async def test_update_replaces_the_shown_memory_and_keeps_its_history(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    setup.script.extract += [extraction(PREFERENCE), extraction(CHANGED)]
    setup.script.decide += [decision("UPDATE", 0, CHANGED)]
    await memory.write(turn(0, "Just send the routine emails."))
    await memory.write(turn(1, "From now on, show me every email before you send it."))
    assert memory.memories == [CHANGED]
    assert memory.stats.updates == 1 and memory.stats.adds == 1
    assert any("(was: " + PREFERENCE in line for line in memory.inspect().stored)
    evidence = await memory.retrieve("Send the email to the team.", session())
    assert [i.text for i in evidence.items] == [CHANGED]


async def test_delete_and_none(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    setup.script.extract += [extraction(PREFERENCE), extraction("The user said thanks."), extraction("Emails rule is gone.")]
    setup.script.decide += [decision("NONE"), decision("DELETE", 0)]
    for i in range(3):
        await memory.write(turn(i, f"message {i}"))
    assert memory.memories == []
    s = memory.stats
    assert (s.adds, s.nones, s.deletes) == (1, 1, 1)
    assert (await memory.retrieve("emails", session())).items == []


async def test_malformed_replies_are_repaired_or_retried_and_counted(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    script = setup.script
    script.extract += [
        "Sure! Here are the notes:\n```json\n" + extraction(PREFERENCE) + "\n```",  # fence + prose: repaired
        '{"memories": ["The user works in',  # cut off -> retried
        extraction("The user works in logistics."),
        "",  # empty, twice -> failure
        "",
        '{"memories": [1, 2]}',  # wrong types, twice -> failure
        '{"memories": {"a": 1}}',
    ]
    await memory.write(turn(0, "just send the routine emails"))
    script.decide += [decision("UPDATE", 7, "x"), decision("ADD")]  # id not shown -> retried
    await memory.write(turn(1, "I work in logistics"))
    await memory.write(turn(2, "hello"))
    await memory.write(turn(3, "hi again"))
    stats = memory.stats
    assert memory.memories == [PREFERENCE, "The user works in logistics."]
    assert stats.extraction_retries == 3 and stats.extraction_failures == 2
    assert stats.decision_retries == 1 and stats.decision_failures == 0
    failures = memory.failures
    assert [f.stage for f in failures] == ["extraction", "extraction"]
    assert "empty" in failures[0].error
    inspection = memory.inspect()
    assert inspection.stats["extraction_failures"] == 2
    assert sum(1 for line in inspection.stored if line.startswith("FAILED extraction")) == 2
    # the retry named the problem to the model
    retry_prompt = [r for s, r in script.seen if s == "extract"][2].messages[-1].content
    assert "could not be used" in retry_prompt


async def test_decision_failure_and_model_error_are_counted_not_raised(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    setup.script.extract += [
        extraction(PREFERENCE), extraction(CHANGED), ScriptedReply(status=500, error="server exploded"),
    ]
    setup.script.decide += ['{"event": "MERGE"}', '{"event": "UPDATE", "id": null, "text": "x"}']
    await memory.write(turn(0, "a"))
    await memory.write(turn(1, "b"))
    await memory.write(turn(2, "c"))
    stats = memory.stats
    assert memory.memories == [PREFERENCE]
    assert stats.decision_failures == 1 and stats.model_errors == 1 and stats.extraction_failures == 1
    assert [f.stage for f in memory.failures] == ["decision", "extraction"]
    assert "model call failed" in memory.failures[1].error
    snapshot = json.loads(memory.snapshot())
    assert snapshot["stats"]["decision_failures"] == 1 and len(snapshot["failures"]) == 2


async def test_probe_leaves_the_store_exactly_as_it_was(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "run")
    setup.script.extract += [extraction(PREFERENCE), extraction("The user likes lasagna.")]
    setup.script.decide += [decision("ADD")]
    await memory.write(turn(0, "a"))
    await memory.write(turn(1, "b"))
    await memory.end_session(session())
    before = memory.snapshot()
    files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}

    branch = mem0(setup, tmp_path / "probe")
    branch.restore(before)
    assert branch.snapshot() == before
    setup.script.extract += [extraction(CHANGED)]
    setup.script.decide += [decision("UPDATE", 0, CHANGED)]
    await branch.write(turn(5, "probe turn", step="P-01"))
    assert CHANGED in branch.memories

    assert memory.snapshot() == before
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == files
    assert memory.memories == [PREFERENCE, "The user likes lasagna."]
    with pytest.raises(SnapshotError, match="Mem0-style memory: bad snapshot"):
        branch.restore(b"{}")


async def test_duplicate_write_makes_no_second_extraction(setup: Setup, tmp_path: Path) -> None:
    memory = mem0(setup, tmp_path / "m")
    setup.script.extract += [extraction(PREFERENCE)]
    record = turn(0, "a")
    await memory.write(record)
    await memory.write(record)
    assert setup.script.count("extract") == 1 and memory.stats.duplicate_writes == 1
    assert len((await memory.retrieve("emails", session())).items) == 1


async def test_factory_needs_a_client(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="needs a model client"):
        make_memory("mem0", client=None, folder=tmp_path)


def test_readers_name_the_problem() -> None:
    assert read_extraction('["a", " b  c "]') == ["a", "b c"]
    assert read_extraction('{"memories": "one note"}') == ["one note"]
    with pytest.raises(ValueError, match=r"'memories'\[1\] must be a string"):
        read_extraction('{"memories": ["ok", {"x": 1}]}')
    with pytest.raises(ValueError, match="no 'memories' field"):
        read_extraction('{"notes": []}')
    assert read_decision('{"event": "update", "id": "1", "text": "new"}', 2, "c").shown_id == 1
    assert read_decision('{"event": "ADD", "id": null, "text": ""}', 0, "cand").text == "cand"
    with pytest.raises(ValueError, match=r"needs 'id' from the list \(0..1\)"):
        read_decision('{"event": "DELETE", "id": 5, "text": ""}', 2, "c")
    with pytest.raises(ValueError, match="'text' must be a string"):
        read_decision('{"event": "ADD", "id": null, "text": 3}', 0, "c")


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_user_a_slice_with_mem0(tmp_path: Path) -> None:
    """``mempa run --memory mem0`` over User A's slice: every step and probe completes, the memory
    model is asked to extract, and extracted memories reach the PA's prompt at the probes."""
    bundle = load_user(WORLDS, "A").sliced()
    async with ScriptedModelServer(RolePlayer()) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user="A", profile="scripted", memory="mem0", repeats=1, worlds_dir=WORLDS, slice=True)
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=tmp_path / "local_memory", resamples=200).run()
            steps = await store.steps(outcome.run_id)
            results = await store.probe_results(outcome.run_id)
        pa_prompts = [m.content for r in server.requests if r.model.endswith("-pa") for m in r.messages if m.role == "system"]
        memory_calls = [r for r in server.requests if r.model.endswith("-memory")]
    assert outcome.status is RunStatus.COMPLETED
    assert [s.step_id for s in steps] == bundle.timeline.steps
    assert {s.status for s in steps} == {"completed"}
    assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}, [
        (r.probe_id, r.status, r.reason) for r in results if r.status != "completed"
    ]
    assert memory_calls
    assert any("Memories about the user related to the message" in p for p in pa_prompts)
    stats = json.loads(next((tmp_path / "local_memory" / outcome.run_id).rglob("stats.json")).read_text())
    assert stats["adds"] >= 1 and stats["extraction_failures"] == 0
    assert outcome.report is not None
    # The counters travel in the run record (each step's result) and reach the report.
    assert outcome.report.memory_stats["adds"] == stats["adds"]
    assert outcome.report.memory_stats["extraction_failures"] == 0
