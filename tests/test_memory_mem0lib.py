"""Mem0 and Simple RAG on the published mem0ai 2.0.2: the scripted MEMORY-role model over loopback
HTTP, the packaged MiniLM and Mem0's FAISS store (paper Section 4 ❷ ❸). Skipped without the extra."""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

# importing mem0 reads these once: telemetry off, and its config folder out of the home directory
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "mempa-mem0-tests"))
_mem0 = pytest.importorskip("mem0", reason='the mem0ai extra is not installed: pip install -e ".[mem0ai]"')
if _mem0.__version__ != "2.0.2":
    pytest.skip(f"mem0ai {_mem0.__version__} is installed but the pin is 2.0.2 (the paper's version); "
                'reinstall: pip install -e ".[test]"', allow_module_level=True)

from mempa_tui.llm import (
    LLMClient,
    Role,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedRequest,
)
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.memory import (
    Mem0aiMemory,
    MemoryConfigError,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._mem0ai_support import check_extraction_reply
from mempa_tui.memory._vectors import DimensionMismatchError
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import Context
from mempa_tui.tools import default_registry

# The first store loads torch and the embedding model: tens of seconds on a busy 2-core machine.
pytestmark = pytest.mark.timeout(600)

START = datetime(2025, 3, 3, 9, 0)
WORLDS = Path(__file__).resolve().parent.parent / "worlds"
RUN = "A-mem0-scripted-s0"
PREFERENCE = "At work the user wants routine emails to the team sent without being asked first."
LASAGNA = "The user likes vegetarian lasagna."


def extraction(*texts: str) -> str:
    return json.dumps({"memory": [{"text": t} for t in texts]})


@dataclass
class Script:
    """Queued replies to mem0's extraction calls; every request is kept."""

    replies: list[ScriptedReply | str] = field(default_factory=list)
    seen: list[ScriptedRequest] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        self.seen.append(request)
        return self.replies.pop(0) if self.replies else extraction()


@dataclass
class Setup:
    script: Script
    client: LLMClient


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        # mem0's extraction prompt alone is about 8,000 tokens
        yield Setup(script, LLMClient(server.profile(num_retries=0, context_window=32_768)))


def build(setup: Setup, folder: Path, condition: str = "mem0", **options: object) -> Mem0aiMemory:
    memory = make_memory(condition, client=setup.client, folder=folder, context_window=16_384, **options)
    assert isinstance(memory, Mem0aiMemory)
    return memory


def turn(i: int, message: str, *, step: str | None = None) -> TurnRecord:
    return TurnRecord(
        step_id=step or f"A-s{i:02d}", context=Context.WORK, at=START + timedelta(days=i),
        turn_index=0, user_message=message, reply="Done.",
    )


def session(probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id="A-s99", context=Context.WORK, at=START + timedelta(days=60), is_probe=probe)


async def test_planted_preference_is_stored_and_handed_back(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached: list[object] = []
    real_connect = socket.socket.connect  # the suite's loopback guard

    def recording_connect(sock: socket.socket, address: object) -> None:
        reached.append(address)
        real_connect(sock, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", recording_connect)
    memory = build(setup, tmp_path / RUN / "run")
    assert memory.user_id == "A"  # from the run folder's name
    setup.script.replies += [extraction(PREFERENCE), extraction(LASAGNA)]
    await memory.write(turn(0, "Stop asking me before you send routine emails to my team, just send them."))
    await memory.write(turn(1, "Find me a vegetarian lasagna recipe."))

    # each call went through the run's profile, role memory, with the turn in the prompt
    assert [r.model for r in setup.script.seen] == ["scripted-memory", "scripted-memory"]
    assert "routine emails to my team" in setup.script.seen[0].messages[-1].content
    assert [c.role for c in setup.client.calls] == [Role.MEMORY, Role.MEMORY]
    assert memory.memories == [PREFERENCE, LASAGNA]

    evidence = await memory.retrieve("Send the weekly update email to the team.", session(probe=True))
    assert evidence.items[0].text == PREFERENCE
    scores = [i.score for i in evidence.items]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert PREFERENCE in evidence.system_text and "score" in evidence.system_text
    assert evidence.prior_messages == []  # probes get no raw conversation
    outside = await memory.retrieve("Send the weekly update email to the team.", session())
    assert [m.role for m in outside.prior_messages] == ["user", "assistant"] * 2

    inspection = memory.inspect()
    assert inspection.system == "mem0" and inspection.last_evidence == outside
    assert any("A-s00" in line and PREFERENCE in line for line in inspection.stored)
    assert inspection.stats["memories_stored"] == 2 and inspection.stats["memories_added"] == 2
    # offline: mem0 reached nothing but the scripted model on loopback (telemetry is off)
    assert reached and all(str(a[0]) in ("127.0.0.1", "::1", "localhost") for a in reached)  # type: ignore[index]


async def test_snapshot_restore_round_trip_leaves_the_store_as_it_was(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / RUN / "run")
    setup.script.replies += [extraction(PREFERENCE), extraction(LASAGNA)]
    await memory.write(turn(0, "just send the routine emails"))
    await memory.write(turn(1, "lasagna please"))
    await memory.end_session(session())
    before = memory.snapshot()
    run_files = {p.relative_to(memory.folder): p.read_bytes() for p in memory.folder.rglob("*") if p.is_file()}

    branch = build(setup, tmp_path / RUN / "probes" / "P-01-r0")
    branch.restore(before)
    assert branch.snapshot() == before and branch.memories == [PREFERENCE, LASAGNA]
    setup.script.replies += [extraction("At work the user now wants to confirm every email first.")]
    await branch.write(turn(5, "From now on show me every email before sending it.", step="P-01"))
    assert len(branch.memories) == 3

    # the run's store is untouched by the branch: same snapshot, same files, same search results
    assert memory.snapshot() == before
    assert {p.relative_to(memory.folder): p.read_bytes() for p in memory.folder.rglob("*") if p.is_file()} == run_files
    assert (await memory.retrieve("emails to the team", session())).items[0].text == PREFERENCE

    # restoring the checkpoint undoes the branch's write, on disk too
    branch.restore(before)
    assert branch.memories == [PREFERENCE, LASAGNA] and branch.snapshot() == before
    found = (await branch.retrieve("confirm every email", session())).items
    assert all("confirm every email" not in i.text for i in found)


async def test_bad_snapshots_are_refused_with_what_is_wrong(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / RUN / "run")
    setup.script.replies += [extraction(PREFERENCE)]
    await memory.write(turn(0, "just send the routine emails"))
    good = json.loads(memory.snapshot())
    with pytest.raises(SnapshotError, match="bad snapshot at system"):
        memory.restore(b"{}")
    with pytest.raises(SnapshotError, match="bad snapshot at user_id"):
        memory.restore(json.dumps({k: v for k, v in good.items() if k != "user_id"}).encode())
    with pytest.raises(SnapshotError, match="the snapshot is of condition 'rag', not 'mem0'"):
        memory.restore(json.dumps({**good, "system": "rag"}).encode())
    broken_index = {**good, "faiss_files": {**good["faiss_files"], "mem0ai.faiss": base64.b64encode(b"nope").decode()}}
    with pytest.raises(SnapshotError, match=r"mem0ai\.faiss is not a FAISS index"):
        memory.restore(json.dumps(broken_index).encode())
    with pytest.raises(SnapshotError, match="history_b64: not mem0's history database"):
        memory.restore(json.dumps({**good, "history_b64": base64.b64encode(b"x" * 64).decode()}).encode())
    with pytest.raises(SnapshotError, match="bad snapshot file name"):
        memory.restore(json.dumps({**good, "faiss_files": {"../escape": ""}}).encode())
    assert memory.memories == [PREFERENCE]  # a refused snapshot changes nothing


async def test_malformed_replies_and_failed_calls_are_counted_not_raised(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / RUN / "run")
    setup.script.replies += [
        "I could not find anything worth keeping.",  # prose, no JSON
        "",  # empty
        '{"memory": "the user likes tea"}',  # wrong type (mem0 itself would iterate the string)
        '{"memory": ["the user likes tea"]}',  # items not objects (mem0 itself would crash)
        ScriptedReply(status=500, error="server exploded"),
        "Here you go:\n```json\n" + extraction(PREFERENCE) + "\n```",  # fenced: mem0 reads it
    ]
    for i in range(6):
        await memory.write(turn(i, f"message {i}"))
    stats = memory.stats
    assert (stats.malformed_replies, stats.model_errors, stats.failed_writes) == (4, 1, 1)
    assert stats.model_calls == 6 and stats.turns_written == 6
    assert memory.memories == [PREFERENCE]
    kinds = [f.kind for f in memory.failures]
    assert kinds == ["malformed_reply"] * 4 + ["model_error"]
    assert "empty reply" in memory.failures[1].error and "model call failed" in memory.failures[4].error
    inspection = memory.inspect()
    assert inspection.stats["malformed_replies"] == 4 and inspection.stats["model_errors"] == 1
    assert sum(line.startswith("FAILED ") for line in inspection.stored) == 5
    await memory.end_session(session())
    assert json.loads((memory.folder / "stats.json").read_text())["malformed_replies"] == 4
    assert len((memory.folder / "failures.jsonl").read_text().splitlines()) == 5
    assert json.loads(memory.snapshot())["stats"]["model_errors"] == 1


async def test_failures_mem0_only_logs_are_counted(setup: Setup, tmp_path: Path) -> None:
    """mem0ai 2.0.2 logs a failed embedding of an extracted memory and goes on without it; the
    adapter counts it (library_errors, failed_writes), keeps the note and shows it in the panel."""
    memory = build(setup, tmp_path / RUN / "run")
    model = memory._memory.embedding_model
    real_embed, real_batch = model.embed, model.embed_batch

    def broken_embed(text: object, memory_action: str | None = None) -> object:
        if memory_action == "add":
            raise RuntimeError("embedding backend gone")
        return real_embed(text, memory_action)

    def broken_batch(texts: object, memory_action: str | None = None) -> object:
        raise RuntimeError("embedding backend gone")

    model.embed, model.embed_batch = broken_embed, broken_batch
    setup.script.replies += [extraction(PREFERENCE)]
    await memory.write(turn(0, "just send the routine emails"))
    model.embed, model.embed_batch = real_embed, real_batch
    stats = memory.stats
    assert memory.memories == []  # Mem0 stored nothing, and said so only in its log
    assert (stats.library_errors, stats.failed_writes, stats.model_errors, stats.malformed_replies) == (1, 1, 0, 0)
    assert memory.failures[0].kind == "library_error" and "embedding backend gone" in memory.failures[0].error
    inspection = memory.inspect()
    assert inspection.stats["failures"] == 1 and any(line.startswith("FAILED library_error") for line in inspection.stored)
    # a failed model call is logged by Mem0 too: counted once, as a model error
    setup.script.replies += [ScriptedReply(status=500, error="server exploded")]
    await memory.write(turn(1, "another message"))
    assert (memory.stats.model_errors, memory.stats.library_errors, memory.stats.failed_writes) == (1, 1, 2)


async def test_rag_stores_raw_messages_through_mem0_without_model_calls(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / "A-rag-scripted-s0" / "run", "rag")
    assert memory.name == "rag" and memory.user_id == "A" and not memory.infer
    await memory.write(turn(0, "Stop asking me before you send routine emails to my team, just send them."))
    await memory.write(turn(1, "Find me a vegetarian lasagna recipe."))
    assert setup.script.seen == [] and setup.client.calls == []  # infer=False: no model call at all
    assert len(memory.memories) == 4  # each turn's user and assistant message, raw
    assert any("routine emails to my team" in m for m in memory.memories)
    evidence = await memory.retrieve("Send the weekly update email to the team.", session(probe=True))
    assert "routine emails to my team" in evidence.items[0].text and evidence.items[0].score is not None
    assert "Earlier messages most similar to this one" in evidence.system_text
    inspection = memory.inspect()
    assert inspection.system == "rag" and any(" user: [2025-03-03" in line for line in inspection.stored)
    before = memory.snapshot()
    branch = build(setup, tmp_path / "A-rag-scripted-s0" / "probes" / "P-1", "rag")
    branch.restore(before)
    assert branch.memories == memory.memories and branch.snapshot() == before
    mem0_store = build(setup, tmp_path / "A-mem0-scripted-s0" / "run")
    with pytest.raises(SnapshotError, match="the snapshot is of condition 'rag', not 'mem0'"):
        mem0_store.restore(before)


async def test_rag_stores_no_empty_assistant_item_for_a_turn_without_a_reply(setup: Setup, tmp_path: Path) -> None:
    # a change event's last turn is the user's new rule, with no assistant reply
    memory = build(setup, tmp_path / "A-rag-scripted-s0" / "run", "rag")
    rule = turn(0, "From now on, just send routine team emails without asking me.")
    await memory.write(rule.model_copy(update={"reply": ""}))
    assert len(memory.memories) == 1 and "routine team emails" in memory.memories[0]
    assert not any(line.rstrip().endswith("assistant:") for line in memory.inspect().stored)
    assert memory.stats.failed_writes == 0


async def test_restore_names_both_embedders_when_they_differ(setup: Setup, tmp_path: Path) -> None:
    """Issue 15.4: a snapshot embedded by another model or dimension is refused on restore (the
    runner's resume, probe branches and the stepper all restore), naming both."""
    memory = build(setup, tmp_path / RUN / "run")
    setup.script.replies += [extraction(PREFERENCE)]
    await memory.write(turn(0, "just send the routine emails"))
    good = json.loads(memory.snapshot())
    other = {**good, "embedder": "text-embedding-3-small", "embedding_dim": 1536}
    with pytest.raises(DimensionMismatchError) as info:
        memory.restore(json.dumps(other).encode())
    message = str(info.value)
    assert "text-embedding-3-small" in message and "1536" in message
    assert "all-MiniLM-L6-v2" in message and "384" in message
    with pytest.raises(DimensionMismatchError, match="'other-minilm' \\(384 dimensions\\)"):
        memory.restore(json.dumps({**good, "embedder": "other-minilm"}).encode())  # same dimension, other model
    assert memory.memories == [PREFERENCE]


async def test_duplicate_write_makes_no_second_call(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / "plain", user_id="u-7")
    assert memory.user_id == "u-7"
    setup.script.replies += [extraction(PREFERENCE)]
    record = turn(0, "just send them")
    await memory.write(record)
    await memory.write(record)
    assert len(setup.script.seen) == 1 and memory.stats.duplicate_writes == 1
    assert (await memory.retrieve("", session())).items == []  # empty query: no search


async def test_factory_refuses_bad_options_and_names_the_missing_extra(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(MemoryConfigError, match="unknown option.*colour"):
        make_memory("mem0", client=setup.client, folder=tmp_path, colour="red")
    with pytest.raises(MemoryConfigError, match="top_k must be an integer"):
        make_memory("rag", client=setup.client, folder=tmp_path, top_k="10")
    with pytest.raises(MemoryConfigError, match="needs a model client"):
        make_memory("mem0", client=None, folder=tmp_path)
    with pytest.raises(MemoryConfigError, match="unknown memory condition 'mem0ai'"):
        make_memory("mem0ai", client=setup.client, folder=tmp_path)  # retired: the paper's names mean the paper's systems
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if the extra were not installed
    for condition in ("mem0", "rag"):
        with pytest.raises(MemoryConfigError, match=r'pip install -e "\.\[mem0ai\]"'):
            make_memory(condition, client=setup.client, folder=tmp_path)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (extraction("a"), None),
        ('{"memory": []}', None),
        ("```json\n" + extraction("a") + "\n```", None),
        ("<think>hm</think>" + extraction("a"), None),
        ("Notes: " + extraction("a") + " done", None),
        ("", "empty reply"),
        ("no json here", "no JSON object"),
        ('{"memory": [{"text": "a"}', "does not parse"),
        ("[1, 2]", "not an object"),
        ('{"facts": []}', "no 'memory' key"),
        ('{"memory": {"text": "a"}}', "not a list"),
        ('{"memory": [{"text": 3}]}', "memory[0] is not an object"),
    ],
)
def test_extraction_reply_check_reads_as_mem0_does(reply: str, problem: str | None) -> None:
    found = check_extraction_reply(reply)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("condition", ["mem0", "rag"])
async def test_user_a_slice_with_the_mem0_library(tmp_path: Path, condition: str) -> None:
    """``mempa run --memory mem0`` / ``rag`` over User A's slice: every step and probe completes
    (probe branches restore snapshots in their own folders), and the store's items reach the PA's
    prompt; Simple RAG makes no memory-model call."""
    bundle = load_user(WORLDS, "A").sliced()
    async with ScriptedModelServer(RolePlayer()) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user="A", profile="scripted", memory=condition, repeats=1, worlds_dir=WORLDS, slice=True)
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
    heading = "What Mem0 remembers about the user" if condition == "mem0" else "Earlier messages most similar"
    assert any(heading in p for p in pa_prompts)
    assert bool(memory_calls) is (condition == "mem0")
    run_folder = tmp_path / "local_memory" / outcome.run_id / "run"
    stats = json.loads((run_folder / "stats.json").read_text())
    assert stats["memories_added"] >= 1
    assert stats["model_errors"] == stats["malformed_replies"] == stats["library_errors"] == 0
    assert (run_folder / "faiss" / "mem0ai.faiss").is_file() and (run_folder / "history.db").is_file()
    assert outcome.report is not None and outcome.report.memory_stats["memories_added"] == stats["memories_added"]
    assert outcome.report.memory_stats["library_errors"] == 0  # the run record carries the failure counters
