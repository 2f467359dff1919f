"""The demo model on User A's quick-start slice under No Memory, File memory, Simple RAG and
prefstate (issue 16, "the demo model uses memory"): File memory's PSA differs from No Memory's,
and on every probe File memory gets right and No Memory gets wrong, the evidence File memory
handed the PA names the target's behaviour while No Memory handed nothing; prefstate is healthy.

File memory runs with lower consolidation thresholds than the paper's 20k -> 10k tokens: the demo's
short turns fill about 3k tokens over the whole slice, so at the paper's thresholds nothing would
ever be consolidated and MEMORY.md, the only thing File memory hands the PA in a probe (paper
Section 3.5), would stay empty.
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
from mempa_tui.tui.demo import demo_responder

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
DEMO_FILE_OPTIONS = {"consolidate_at_tokens": 1200, "consolidate_to_tokens": 700}
"""File memory thresholds for the demo slice (see the module docstring)."""


def _psa(path: Path) -> float:
    with path.open(newline="") as handle:
        return float(next(csv.DictReader(handle))["psa_mean"])


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_on_the_demo_model_file_memory_beats_no_memory_for_a_reason_in_its_evidence(tmp_path: Path) -> None:
    runs: dict[str, str] = {}
    psa: dict[str, float] = {}
    async with ScriptedModelServer(demo_responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        async with RunStore(tmp_path / "mempa.sqlite") as store:
            for memory in ("file", "none", "rag", "prefstate"):  # No Memory probes from File memory's checkpoints
                options = DEMO_FILE_OPTIONS if memory == "file" else {}
                config = RunConfig(user="A", profile="demo", memory=memory, repeats=1, worlds_dir=WORLDS,
                                   slice=True, memory_options=options)
                outcome = await Runner(config, store, client, default_registry(),
                                       memory_root=tmp_path / "local_memory", resamples=50).run()
                assert outcome.status is RunStatus.COMPLETED, memory
                assert outcome.report is not None
                runs[memory], psa[memory] = outcome.run_id, _psa(outcome.report.paths.main_csv)
            rows = await compare_runs(store, [runs["file"], runs["none"], runs["rag"]])
            health = {m: await run_health(store, r) for m, r in
                      [(m, await store.get_run(rid)) for m, rid in runs.items()] if r is not None}
    assert not server.errors
    assert psa["file"] != psa["none"], psa
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
    assert psa["prefstate"] > psa["none"]  # the taxonomy-aware memory keeps one cell per context
