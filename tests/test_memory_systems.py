"""Every memory condition under the same checks (SPEC 4.7; paper Table 11, Appendix F.1).

- A probe branch (a fresh store restored from the run's snapshot in its own folder, then written
  to) leaves the run's store exactly as it was: same snapshot, same files.
- User A's slice completes under each condition on the scripted model, and nothing the IX wrapper
  withheld reaches a memory model or a store's files.

Conditions whose library is not installed here (mem0ai 2.0.2, MemOS's environment) are skipped
with the reason.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "mempa-mem0-tests"))

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.memory import (
    CONDITION_SOURCES,
    MEMORY_BUILDERS,
    MemosError,
    SessionInfo,
    TurnRecord,
    make_memory,
    source_notes,
)
from mempa_tui.memory._memos import ensure_memos_env
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import Context
from mempa_tui.tools import default_registry

pytestmark = pytest.mark.timeout(900)

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
START = datetime(2025, 3, 3, 9, 0)
FILLER = "A short note written by the scripted model."
CONDITIONS = ["none", "oracle", "file", "rag", "mem0", "memos", "prefstate", "ours-rag"]


def _needs(condition: str) -> None:
    if condition in ("rag", "mem0"):
        mem0 = pytest.importorskip("mem0", reason='mem0ai is not installed: pip install -e ".[mem0ai]"')
        if mem0.__version__ != "2.0.2":
            pytest.skip(f"mem0ai {mem0.__version__} is installed, the pin is 2.0.2: pip install -e \".[test]\"")
    if condition == "memos":
        try:
            ensure_memos_env(create=False)
        except MemosError as exc:
            pytest.skip(f"MemOS's environment is not there ({exc})")
    if condition == "ours-rag":
        pytest.importorskip("faiss", reason='the memory extra is not installed: pip install -e ".[memory]"')


class Script(RolePlayer):
    """Every role of the slice; each memory system's model gets an answer in its own shape, and
    every string payload the PA sends carries a unique marker so withheld content can be traced."""

    def __init__(self) -> None:
        super().__init__()
        self.markers = 0
        self.memory_prompts: list[str] = []

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if request.model.endswith("-memory"):
            return self._memory(request)
        reply = super().__call__(request)
        if isinstance(reply, ScriptedReply):
            for call in reply.tool_calls:
                call.arguments = self._mark(call.arguments)
        return reply

    def _memory(self, request: ScriptedRequest) -> ScriptedReply | str:
        text = "\n".join(m.content for m in request.messages)
        self.memory_prompts.append(text + json.dumps([c.arguments for m in request.messages for c in m.tool_calls]))
        note = "The user asked the assistant for help with a task."
        if "memory list" in text:  # MemOS's extraction prompt
            return json.dumps({"memory list": [{"key": "help", "memory_type": "UserMemory", "value": note,
                                                "tags": ["task"]}], "summary": note})
        schema = request.json_schema or {}
        if "memory" in schema.get("properties", {}):  # Mem0's extraction
            return json.dumps({"memory": [{"text": note}]})
        return super().__call__(request)

    def _mark(self, value: object) -> Any:
        if value == FILLER:
            self.markers += 1
            return f"<payload marker {self.markers}>"  # delimited: marker 1 is no prefix of marker 10
        if isinstance(value, dict):
            return {k: self._mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._mark(v) for v in value]
        return value


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_condition_has_a_source_and_ours_are_marked() -> None:
    assert set(CONDITION_SOURCES) == set(MEMORY_BUILDERS) == set(CONDITIONS)
    notes = "\n".join(source_notes(CONDITIONS))
    assert "prefstate: taxonomy-aware (ours)" in notes and "ours-rag: ours" in notes
    assert "text-embedding-3-small" in notes and "tree_text" in notes and "mem0ai 2.0.2" in notes


@pytest.mark.parametrize("condition", CONDITIONS)
async def test_a_probe_branch_leaves_the_run_store_as_it_was(condition: str, tmp_path: Path) -> None:
    _needs(condition)
    script = Script()
    async with ScriptedModelServer(script) as server:
        client = LLMClient(server.profile(num_retries=0, context_window=32_768))
        root = tmp_path / f"A-{condition}-scripted-s0"
        memory = make_memory(condition, client=client, folder=root / "run", context_window=32_768)
        for i, message in enumerate(["Please just send the routine team emails.", "Find me a lasagna recipe."]):
            await memory.write(TurnRecord(step_id=f"A-s{i:02d}", context=Context.WORK, at=START + timedelta(days=i),
                                          turn_index=0, user_message=message, reply="Done."))
        await memory.end_session(SessionInfo(step_id="A-s01", context=Context.WORK, at=START))
        before, files = memory.snapshot(), _files(root / "run")
        branch = make_memory(condition, client=client, folder=root / "probes" / "P-1", context_window=32_768)
        branch.restore(before)
        assert branch.snapshot() == before
        probe = SessionInfo(step_id="P-1", context=Context.WORK, at=START + timedelta(days=9), is_probe=True)
        evidence = await branch.retrieve("Send the weekly update to the team.", probe)
        # the same inspection for all: what is stored, and what was handed to the PA with scores
        inspection = branch.inspect()
        assert inspection.system == condition and inspection.last_evidence == evidence
        if condition not in ("none", "oracle"):
            assert inspection.stored, condition
        if condition in ("rag", "mem0", "memos", "ours-rag"):
            assert evidence.items and all(i.score is not None for i in evidence.items), condition
        await branch.write(TurnRecord(step_id="P-1", context=Context.WORK, at=START + timedelta(days=9),
                                      turn_index=0, user_message="From now on ask before sending.", reply="Will do."))
        await branch.end_session(probe)
        assert memory.snapshot() == before
        assert _files(root / "run") == files


@pytest.mark.slow
@pytest.mark.parametrize("condition", ["none", "oracle", "file", "rag", "mem0", "memos", "prefstate"])
async def test_user_a_slice_completes_and_no_withheld_content_reaches_memory(condition: str, tmp_path: Path) -> None:
    _needs(condition)
    bundle = load_user(WORLDS, "A").sliced()
    script = Script()
    async with ScriptedModelServer(script) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user="A", profile="scripted", memory=condition, repeats=1, worlds_dir=WORLDS, slice=True)
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            if condition in ("none", "oracle"):  # they probe from a File memory donor's checkpoints (11.4)
                donor = config.model_copy(update={"memory": "file"})
                assert (await Runner(donor, store, client, default_registry(), memory_root=tmp_path / "donor",
                                     resamples=200).run()).status is RunStatus.COMPLETED
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=tmp_path / "local_memory", resamples=200).run()
            steps = await store.steps(outcome.run_id, with_results=True)
            results = await store.probe_results(outcome.run_id)
    assert outcome.status is RunStatus.COMPLETED
    if condition in ("none", "oracle"):  # probes only (SPEC 4.8): no timeline of their own
        assert steps == []
        assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}
        return
    assert {s.status for s in steps} == {"completed"}
    assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}, [
        (r.probe_id, r.status, r.reason) for r in results if r.status != "completed"
    ]
    withheld = [s for step in steps for trace in json.loads(step.result_json).get("traces", [])
                for s in _strings(trace.get("withheld", {})) if "payload marker" in s]
    assert withheld, "the slice should withhold some payload (a test that cannot fail proves nothing)"
    stored = b"".join(b for folder in [tmp_path / "local_memory"] if folder.is_dir() for b in _files(folder).values())
    for marker in withheld:
        assert all(marker not in prompt for prompt in script.memory_prompts), (condition, marker)
        assert marker.encode() not in stored, (condition, marker)
    if condition in ("mem0", "memos", "prefstate", "file"):
        assert script.memory_prompts or condition == "file"
