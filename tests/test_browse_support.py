"""A hand-made run store for the run browser and memory-health tests (no tests here).

User R, profile ``scripted``, two final probes x two repeats per run:

* ``R-file-scripted-s0``: one accumulation step (healthy counters); selects every target; its
  evidence names the setting ("prefers terse replies").
* ``R-none-scripted-s0``: probes only; right on ``verbosity``, wrong on ``solution_breadth``
  (repeat 2 of it is floored); its evidence is empty.
* ``R-mem0-scripted-s0``: one step whose counters say 66 of 66 memory replies were malformed
  and nothing was stored; wrong everywhere.
* ``play-user-R-s1-20261201`` : a play (a person in the user's seat) with one probe result.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from test_runner_support import WORLDS

from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.llm.types import LLMCallRecord, Role
from mempa_tui.memory._file import FileMemoryState
from mempa_tui.memory.base import EvidenceItem
from mempa_tui.runner import RunConfig
from mempa_tui.runner._episode_events import (
    EvidenceEvent,
    IXSelectionEvent,
    PAReplyEvent,
    ToolCallEvent,
    UserMessageEvent,
    episode_event_adapter,
)
from mempa_tui.store import (
    CheckpointData,
    LLMCallRow,
    ProbeResultRecord,
    RunRecord,
    RunStatus,
    RunStore,
    StepRecord,
    TranscriptEventRecord,
    utc_now,
)

PROBES = {  # probe id -> (attribute, target, wrong setting)
    "R-final-work-solution_breadth": ("solution_breadth", "Low", "High"),
    "R-final-work-verbosity": ("verbosity", "Terse", "Detailed"),
}
FILE_RUN, NONE_RUN, MEM0AI_RUN, PLAY_RUN = (
    "R-file-scripted-s0", "R-none-scripted-s0", "R-mem0-scripted-s0", "play-user-R-s1-20261201")
HEALTHY = {"turns_written": 12.0, "consolidations": 1.0, "consolidation_failures": 0.0, "history_entries": 1.0,
           "pending_turns": 3.0, "turns_archived_raw": 0.0}
BROKEN = {"turns_written": 66.0, "model_calls": 66.0, "malformed_replies": 66.0, "model_errors": 0.0,
          "failed_writes": 0.0, "memories_stored": 0.0}
SNAPSHOTS = {  # the memory after step R-s1: File memory's consolidated note; mem0: a snapshot that is not its own
    "file": FileMemoryState(memory_md="- The user prefers terse replies at work.").model_dump_json().encode(),
    "mem0": b"not a mem0 snapshot",
}
EVIDENCE = {"file": "MEMORY.md\n- The user prefers terse replies at work.", "none": "", "mem0": ""}


def _events(memory: str, attribute: str, selection: str) -> list[TranscriptEventRecord]:
    events = [
        UserMessageEvent(turn_index=0, text="Can you sort out the quarterly note?", beat_id="b1"),
        EvidenceEvent(turn_index=0, system_text=EVIDENCE[memory],
                      items=[EvidenceItem(text="prefers terse replies", score=0.91)] if memory == "file" else []),
        ToolCallEvent(turn_index=0, call=ExecutedCall(call_id="c1", tool="documents_search",
                                                      arguments={"query": "quarterly"}, status=CallStatus.EXECUTED,
                                                      result='{"hits": ["doc-7"]}')),
        IXSelectionEvent(turn_index=0, attribute=attribute, setting=selection, ok=True, newly_selected=True),
        PAReplyEvent(turn_index=0, text="Done: the note is in doc-7."),
    ]
    return [TranscriptEventRecord(seq=i, kind=e.kind, event_json=episode_event_adapter.dump_json(e).decode())
            for i, e in enumerate(events)]


def _call(step_id: str, repeat: int, seq: int, role: Role = Role.PA) -> LLMCallRow:
    return LLMCallRow(step_id=step_id, repeat=repeat, seq=seq, call=LLMCallRecord(
        role=role, model="scripted-pa", prompt_tokens=120 + seq, completion_tokens=9, reused_prefix_tokens=100,
        latency_s=0.25, ok=True))


async def seed(db: Path) -> None:
    """Store the runs of the module docstring in ``db``."""
    async with RunStore(db) as store:
        for memory in ("file", "none", "mem0", "play"):
            run_memory = "file" if memory == "play" else memory
            config = RunConfig(user="R", profile="scripted", memory=run_memory, repeats=2, worlds_dir=WORLDS)
            run_id = PLAY_RUN if memory == "play" else config.run_id
            await store.create_run(RunRecord(
                id=run_id, user="R", profile="scripted", memory=run_memory, seed=0, repeats=2,
                config_json=config.model_dump_json(), config_hash=config.config_hash(),
                status=RunStatus.COMPLETED, total_probes=4, total_steps=0 if memory in ("none", "play") else 1,
            ))
            if memory in ("file", "mem0"):
                now = utc_now()
                await store.commit_step(run_id, StepRecord(
                    index=0, step_id="R-s1", kind="accumulation", status="completed", started_at=now,
                    finished_at=now, result_json=json.dumps({"memory_stats": HEALTHY if memory == "file" else BROKEN}),
                ), _events(memory, "verbosity", "Terse"), CheckpointData(
                    step_index=0, step_id="R-s1", story_time=datetime(2026, 3, 2, 9, 0), world_files={},
                    world_manifest={}, memory_snapshot=SNAPSHOTS[memory]),
                    [_call("R-s1", 0, 0), _call("R-s1", 0, 1, Role.MEMORY)])
            for probe_id, (attribute, target, wrong) in PROBES.items():
                for repeat in (1, 2):
                    if memory == "play" and (repeat == 2 or attribute != "verbosity"):
                        continue
                    right = memory in ("file", "play") or (memory == "none" and attribute == "verbosity")
                    floored = memory == "none" and attribute == "solution_breadth" and repeat == 2
                    selection = target if right else wrong
                    await store.save_probe_result(run_id, ProbeResultRecord(
                        probe_id=probe_id, repeat=repeat, kind="final", context="work", attribute=attribute,
                        target=target, selection=selection, status="floored" if floored else "completed",
                        reason="no IX call after the reminder" if floored else None,
                        checkpoint_run=None if memory == "play" else (FILE_RUN if memory == "none" else run_id),
                        checkpoint_index=None if memory == "play" else 0,
                        brs=4 if right else (1 if floored else 2), brs_reason="judge: matches" if right else "judge: no",
                        prs=5 if right else 3, prs_reason="user: fine" if right else "user: too long",
                        started_at=utc_now(), finished_at=utc_now(),
                    ), _events(run_memory, attribute, selection), [_call(probe_id, repeat, 0)])
