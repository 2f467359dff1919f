"""MemOS 2.0.15 through its own environment and loopback server (paper Section 4 ❹, Table 11).

The server runs with the Python of MemOS's virtual environment (``$MEMPA_MEMOS_ENV`` or
``~/.cache/mempa/memos-2.0.15``), created by ``python -m mempa_tui.memory.memos_setup``. Where that
environment does not exist the tests skip and say so: creating it needs the package registry
(MemoryOS, torch and their dependencies, several hundred MB), which a CI machine may not reach.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mempa_tui.llm import LLMClient, Role, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.memory import (
    DimensionMismatchError,
    MemoryConfigError,
    MemosError,
    MemosMemory,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._memos import ensure_memos_env, memos_endpoint, memos_env_dir
from mempa_tui.taxonomy import Context

pytestmark = pytest.mark.timeout(900)

try:
    ensure_memos_env(create=False)
except MemosError as _missing:
    pytest.skip(f"MemOS's environment is not there ({_missing}); creating it needs the package registry",
                allow_module_level=True)

START = datetime(2025, 3, 3, 9, 0)
PREFERENCE = "At work the user wants routine emails to the team sent without being asked first."


def memos_reply(*texts: str) -> str:
    """An answer in the shape of MemOS's extraction prompt."""
    return json.dumps({"memory list": [{"key": f"note {n}", "memory_type": "UserMemory", "value": t, "tags": ["work"]}
                                       for n, t in enumerate(texts)], "summary": "notes"})


@dataclass
class Script:
    replies: list[ScriptedReply | str] = field(default_factory=list)
    seen: list[ScriptedRequest] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        self.seen.append(request)
        return self.replies.pop(0) if self.replies else memos_reply()


@dataclass
class Setup:
    script: Script
    client: LLMClient


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    script = Script()
    async with ScriptedModelServer(script) as server:
        yield Setup(script, LLMClient(server.profile(num_retries=0)))


def build(setup: Setup, folder: Path) -> MemosMemory:
    memory = make_memory("memos", client=setup.client, folder=folder, context_window=16_384)
    assert isinstance(memory, MemosMemory)
    return memory


def turn(i: int, message: str, *, step: str | None = None) -> TurnRecord:
    return TurnRecord(step_id=step or f"A-s{i:02d}", context=Context.WORK, at=START + timedelta(days=i),
                      turn_index=0, user_message=message, reply="Done.")


def session(probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id="A-s99", context=Context.WORK, at=START + timedelta(days=60), is_probe=probe)


async def test_memcube_add_and_search_through_the_memory_role(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / "A-memos-scripted-s0" / "run")
    setup.script.replies += [memos_reply(PREFERENCE), memos_reply("The user likes vegetarian lasagna.")]
    await memory.write(turn(0, "Stop asking me before you send routine emails to my team, just send them."))
    await memory.write(turn(1, "Find me a vegetarian lasagna recipe."))
    # MemOS's own extraction prompt went to the profile's memory role over the OpenAI wire
    assert [(r.model, r.wire) for r in setup.script.seen] == [("scripted-memory", "openai")] * 2
    assert "routine emails to my team" in setup.script.seen[0].messages[-1].content
    assert memory.memories and PREFERENCE in memory.memories
    evidence = await memory.retrieve("Send the weekly update email to the team.", session(probe=True))
    assert evidence.items[0].text == PREFERENCE and evidence.items[0].score is not None
    assert "What MemOS remembers" in evidence.system_text and evidence.prior_messages == []
    outside = await memory.retrieve("Send the weekly update email to the team.", session())
    assert [m.role for m in outside.prior_messages] == ["user", "assistant"] * 2
    inspection = memory.inspect()
    assert inspection.system == "memos" and inspection.last_evidence == outside
    assert inspection.stats["memories_stored"] == 2 and inspection.stats["failures"] == 0
    assert (memory.folder / "qdrant").is_dir()  # the cube's store lives under local_memory/<run>/


async def test_a_probe_branch_leaves_the_run_store_as_it_was(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / "A-memos-scripted-s0" / "run")
    setup.script.replies += [memos_reply(PREFERENCE)]
    await memory.write(turn(0, "just send the routine emails"))
    before = memory.snapshot()
    branch = build(setup, tmp_path / "A-memos-scripted-s0" / "probes" / "P-1")
    branch.restore(before)
    assert branch.memories == memory.memories and branch.snapshot() == before
    setup.script.replies += [memos_reply("At work the user now wants to confirm every email first.")]
    await branch.write(turn(5, "From now on show me every email before sending it.", step="P-1"))
    assert len(branch.memories) == 2
    assert memory.snapshot() == before  # the run's cube did not change
    branch.restore(before)
    assert branch.snapshot() == before


async def test_failed_extractions_are_counted_and_shown(setup: Setup, tmp_path: Path) -> None:
    """An unusable extraction (MemOS reads prose as no JSON and then misses its 'memory list' key)
    and a failed model call both end MemOS's add with an error: counted and shown, never silent."""
    memory = build(setup, tmp_path / "A-memos-scripted-s0" / "run")
    setup.script.replies += ["no json here"] + [ScriptedReply(status=500, error="server exploded")] * 3
    await memory.write(turn(0, "message one"))
    await memory.write(turn(1, "message two"))
    stats = memory.stats
    assert stats.failed_writes == 2 and stats.memories_added == 0 and memory.memories == []
    assert [f.kind for f in memory.failures] == ["extract_failed", "extract_failed"]
    assert "'memory list'" in memory.failures[0].error
    # MemOS's openai backend logs a failed call and returns None; its parser then fails on None
    assert "NoneType" in memory.failures[1].error
    inspection = memory.inspect()
    assert inspection.stats["failures"] == 2 and sum(s.startswith("FAILED extract_failed") for s in inspection.stored) == 2
    await memory.end_session(session())
    assert json.loads((memory.folder / "stats.json").read_text())["failed_writes"] == 2
    assert json.loads(memory.snapshot())["stats"]["failed_writes"] == 2


async def test_snapshots_of_another_embedder_or_shape_are_refused(setup: Setup, tmp_path: Path) -> None:
    memory = build(setup, tmp_path / "A-memos-scripted-s0" / "run")
    setup.script.replies += [memos_reply(PREFERENCE)]
    await memory.write(turn(0, "just send the routine emails"))
    good = json.loads(memory.snapshot())
    with pytest.raises(DimensionMismatchError) as info:
        memory.restore(json.dumps({**good, "embedder": "text-embedding-3-small", "embedding_dim": 1536}).encode())
    assert "text-embedding-3-small" in str(info.value) and "1536" in str(info.value)
    assert "all-MiniLM-L6-v2" in str(info.value) and "384" in str(info.value)
    with pytest.raises(SnapshotError, match="bad snapshot at embedder"):
        memory.restore(json.dumps({k: v for k, v in good.items() if k != "embedder"}).encode())
    short = {**good, "items": [{**good["items"][0], "vector": [0.0, 1.0]}]}
    with pytest.raises(SnapshotError, match=r"items\.0\.vector: expected 384 numbers"):
        memory.restore(json.dumps(short).encode())
    assert memory.memories == [PREFERENCE]


async def test_options_and_endpoints(setup: Setup, tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="unknown option.*colour"):
        make_memory("memos", client=setup.client, folder=tmp_path, colour="red")
    with pytest.raises(MemoryConfigError, match="needs a model client"):
        make_memory("memos", client=None, folder=tmp_path)
    base, model, _key, _temperature, max_tokens = memos_endpoint(setup.client)
    assert max_tokens == setup.client.profile.spec_for(Role.MEMORY).max_tokens
    assert base.startswith("http://127.0.0.1:") and base.endswith("/v1") and model == "scripted-memory"


def test_a_missing_environment_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(MemosError, match=r"does not exist; create it with: python -m mempa_tui\.memory\.memos_setup"):
        ensure_memos_env(tmp_path / "nothing-here", create=False)
    assert memos_env_dir().name.startswith("memos") or memos_env_dir().is_dir()


async def test_a_second_attempt_on_a_dropped_folder_starts_a_fresh_cube(setup: Setup, tmp_path: Path) -> None:
    """The runner drops a probe's folder between attempts and builds a new store on it: the server
    reopens that cube instead of writing into the deleted folder (found by `mempa run --memory
    memos --model demo`, whose probes needed a second attempt)."""
    import shutil

    folder = tmp_path / "A-memos-scripted-s0" / "probes" / "P-1-r1"
    first = build(setup, folder)
    setup.script.replies += [memos_reply(PREFERENCE)]
    await first.write(turn(0, "just send the routine emails"))
    snapshot = first.snapshot()
    shutil.rmtree(folder)
    second = build(setup, folder)
    second.restore(snapshot)
    assert second.memories == [PREFERENCE] and (folder / "qdrant").is_dir()
