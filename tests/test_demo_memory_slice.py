"""The demo model on User A's quick-start slice under No Memory, File memory, Simple RAG and
prefstate (issue 16, "the demo model uses memory"): File memory's PSA differs from No Memory's,
and on every probe File memory gets right and No Memory gets wrong, the evidence File memory
handed the PA names the target's behaviour while No Memory handed nothing; prefstate is healthy.

The demo profile as shipped (:func:`mempa_tui.tui.demo.demo_profile`, no memory options): its
small PA window scales File memory's thresholds so that it consolidates on the slice. The change
event A-E01 (work Solution Breadth, Low -> High) is read by the demo's memory role and PA from the
user's own words (:mod:`mempa_tui.llm.scripted_change`): a memory that keeps the newer statement
passes PET, No Memory (always the first setting, Low) cannot.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.llm.scripted_roles import DEMO_WISH_LEAD
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.runner._browse import compare_runs
from mempa_tui.runner._health import run_health
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import attribute
from mempa_tui.tools import default_registry
from mempa_tui.runner._budget import prompt_budget
from mempa_tui.tui.demo import DEMO_PROMPT_ROOM, demo_profile, demo_responder

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
CHANGED = "A-PF-work-solution_breadth"
"""The final probe of the cell A-E01 changes (its pre-event probe is A-PE-work-solution_breadth)."""


def _scores(path: Path) -> dict[str, float | None]:
    with path.open(newline="") as handle:
        row = next(csv.DictReader(handle))
    return {k: (None if row[f"{k}_mean"] == "N/A" else float(row[f"{k}_mean"])) for k in ("psa", "pet")}


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_on_the_demo_model_memories_beat_no_memory_for_a_reason_in_their_evidence(tmp_path: Path) -> None:
    runs: dict[str, str] = {}
    psa: dict[str, float | None] = {}
    pet: dict[str, float | None] = {}
    stats: dict[str, dict[str, float]] = {}
    async with ScriptedModelServer(demo_responder) as server:
        client = LLMClient(demo_profile(server))
        assert prompt_budget(client, default_registry()).room == DEMO_PROMPT_ROOM
        async with RunStore(tmp_path / "mempa.sqlite") as store:
            for memory in ("file", "none", "rag", "prefstate"):  # No Memory probes from File memory's checkpoints
                config = RunConfig(user="A", profile="demo", memory=memory, repeats=1, worlds_dir=WORLDS, slice=True)
                outcome = await Runner(config, store, client, default_registry(),
                                       memory_root=tmp_path / "local_memory", resamples=50).run()
                assert outcome.status is RunStatus.COMPLETED, memory
                assert outcome.report is not None
                scores = _scores(outcome.report.paths.main_csv)
                runs[memory], psa[memory], pet[memory] = outcome.run_id, scores["psa"], scores["pet"]
                stats[memory] = dict(outcome.report.memory_stats)
            rows = await compare_runs(store, [runs["file"], runs["none"], runs["rag"], runs["prefstate"]])
            health = {m: await run_health(store, r) for m, r in
                      [(m, await store.get_run(rid)) for m, rid in runs.items()] if r is not None}
            file_config = RunConfig.model_validate_json((await store.get_run(runs["file"])).config_json)
    # File memory consolidates with the shipped settings: thresholds scaled by the window, no option
    budget = file_config.file_memory_budget
    assert budget["set_by_option"] == 0 and budget["scaled"] == 1
    assert budget["consolidate_at_tokens"] == DEMO_PROMPT_ROOM // 2, budget
    assert stats["file"].get("consolidations", 0) >= 2, stats["file"]
    # PET: No Memory keeps its default (Low) before and after the change; prefstate keeps the newer
    # statement and follows it, and its evidence shows the user's own words
    assert pet["none"] == 0.0 and pet["prefstate"] is not None and pet["prefstate"] > pet["none"], pet
    changed = next(r for r in rows if r.probe_id == CHANGED)
    assert changed.target == "High" and changed.cells[runs["none"]].selection == "Low"
    kept = changed.cells[runs["prefstate"]]
    assert kept.selection == "High" and kept.outcome == "correct"
    assert "from now on" in kept.evidence and "(IX_solution_breadth): High" in kept.evidence
    before = next(r for r in rows if r.probe_id == CHANGED.replace("-PF-", "-PE-"))
    assert before.target == "Low" and before.cells[runs["prefstate"]].outcome == "correct"
    assert not server.errors
    assert psa["file"] is not None and psa["file"] != psa["none"], psa
    won = [r for r in rows if r.cells[runs["file"]].outcome == "correct" and r.cells[runs["none"]].outcome == "wrong"]
    assert won, "File memory got no probe right that No Memory got wrong"
    for row in won:  # the reason: MEMORY.md states the target's behaviour; No Memory handed nothing
        target = attribute(row.attribute).setting(row.target).behaviour
        assert target in " ".join(row.cells[runs["file"]].evidence.split()), row.probe_id
        assert row.cells[runs["none"]].evidence == ""
    rag_evidence = [r.cells[runs["rag"]].evidence for r in rows if r.cells[runs["rag"]] is not None]
    assert any(DEMO_WISH_LEAD in e for e in rag_evidence)  # retrieval hands the PA stated wishes
    assert {r.cells[runs["rag"]].selection for r in rows} != {None}
    for memory in ("file", "rag", "prefstate"):
        assert not health[memory].broken, (memory, health[memory].problems)
    assert health["prefstate"].state == "ok" and (health["prefstate"].stored or 0) > 0
    assert (psa["prefstate"] or 0) > (psa["none"] or 0)  # the taxonomy-aware memory keeps one cell per context
