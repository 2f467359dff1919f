"""Which probes are floored, rerun, rated and counted (paper Section 3.5, Appendix F.2, F.3).

* Only the floors the paper reruns (missing required IX call, action held without asking) are
  played again; the two it scores as they happen are kept at the first run.
* A prompt that does not fit the window is no floor: a failed, incomplete probe with its reason.
* A floored final probe is rated for PRS (BRS 1 by rule), so PRS averages the same final probes
  as BRS.
* CS's set D comes from the preference matrix: 18 pairs over the four shipped users.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_runner_support import FakeContext, FakeEpisodes, FakeResult, ok_responder, runner_config

from mempa_tui.ix.floors import FloorKind, floor_reason
from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.llm.types import LLMCallRecord, Role
from mempa_tui.runner import Runner, outcome_of
from mempa_tui.runner._probes import run_again
from mempa_tui.runner._scoring import RealizationScores, matrix_differing
from mempa_tui.scoring import score_conditions
from mempa_tui.scripts import load_user
from mempa_tui.scripts.schema import Probe, ProbeKind
from mempa_tui.store import RunStore
from mempa_tui.taxonomy import ATTRIBUTES, Context
from mempa_tui.tools import default_registry
from mempa_tui.world import WorldState

WINDOW = LLMCallRecord(
    role=Role.PA, model="m", prompt_tokens=1, completion_tokens=0, reused_prefix_tokens=0,
    latency_s=0.0, ok=False, error="too long", error_kind="ContextWindowError",
)


@dataclass
class ScriptedProbes(FakeEpisodes):
    """FakeEpisodes whose probes end as scripted: probe id -> (status, reason) at every run."""

    endings: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)

    async def _probe(self, probe: Probe, ctx: FakeContext) -> FakeResult:
        result = await super()._probe(probe, ctx)
        self.runs[probe.id] = self.runs.get(probe.id, 0) + 1
        if probe.id not in self.endings:
            return result
        status, reason = self.endings[probe.id]
        if reason == "window":
            ctx.client.calls.append(WINDOW)  # what the client logs when the prompt cannot fit
            reason = "model call failed: pa: prompt exceeds the context window"
        return result.model_copy(update={"status": status, "reason": reason})


@dataclass
class Scored:
    probes: list[str] = field(default_factory=list)

    async def __call__(self, run: Any, probe: Probe, target: str, result: Any, world: WorldState) -> RealizationScores:
        self.probes.append(probe.id)
        return RealizationScores(brs=4, brs_reason="judged", prs=2, prs_reason="it did not ask me")


@pytest.fixture
async def client() -> AsyncIterator[LLMClient]:
    async with ScriptedModelServer(ok_responder) as server:
        yield LLMClient(server.profile())


async def test_reruns_floors_window_failures_and_prs_of_floored_probes(client: LLMClient, tmp_path: Path) -> None:
    episodes = ScriptedProbes(endings={
        "R-final-work-verbosity": ("floored", floor_reason(FloorKind.IX_TEXT_IN_TASK_ARGUMENTS, "x")),
        "R-final-work-solution_breadth": ("floored", floor_reason(FloorKind.MISSING_IX_CALL, "y")),
        "R-pre-ev1": ("failed", "window"),
    })
    scorer = Scored()
    async with RunStore(tmp_path / "mempa.sqlite") as store:
        runner = Runner(
            runner_config(repeats=1), store, client, default_registry(), None,
            memory_root=tmp_path / "mem", episodes=episodes.functions(), scorer=scorer, resamples=50,
        )
        outcome = await runner.run()
        rows = {r.probe_id: r for r in await store.probe_results(outcome.run_id)}
        run = await store.get_run(outcome.run_id)
    assert run is not None
    # not rerun: interaction text in a task tool's arguments (scored as it happened)
    assert episodes.runs["R-final-work-verbosity"] == 1 and rows["R-final-work-verbosity"].attempts == 1
    # rerun: a missing required IX call, three runs in all
    assert episodes.runs["R-final-work-solution_breadth"] == 3
    # a prompt over the window: failed once, with its reason, never a floor
    pre = rows["R-pre-ev1"]
    assert (pre.status, pre.attempts, episodes.runs["R-pre-ev1"]) == ("failed", 1, 1)
    assert (pre.reason or "").startswith("context window: ")
    # floored final probes are rated by the user (PRS) but never judged (BRS 1 by rule)
    assert sorted(scorer.probes) == ["R-final-work-solution_breadth", "R-final-work-verbosity"]
    for pid in scorer.probes:
        assert (rows[pid].brs, rows[pid].prs) == (None, 2)
    (scores,) = score_conditions([outcome_of(r, run) for r in rows.values()], intervals=False)
    assert (scores.brs.mean, scores.brs.eligible) == (1.0, 2)
    assert (scores.prs.mean, scores.prs.eligible) == (2.0, 2)  # same final probes as BRS
    assert (scores.floored, scores.incomplete) == (2, 1)


def test_run_again_rules() -> None:
    assert not run_again("completed", None, [])
    assert run_again("floored", floor_reason(FloorKind.HELD_WITHOUT_ASKING, "held_0001"), [])
    assert not run_again("floored", floor_reason(FloorKind.NO_OUTREACH_DECISION, "event"), [])
    assert run_again("invalid", "leak", [])
    assert not run_again("failed", "model call failed", [WINDOW])


def test_cs_set_d_is_the_matrix_pairs_of_the_shipped_users() -> None:
    """Section 3.5, F.3: 18 user-attribute pairs differ by context in the preference matrices
    (the final targets give 20, only 9 of them the matrix's)."""
    per_user = {u: matrix_differing("worlds", u) for u in "ABCD"}
    assert sum(len(v) for v in per_user.values()) == 18
    from_targets = 0
    for u in "ABCD":
        bundle = load_user("worlds", u)
        final = {
            (p.context, p.attribute): bundle.targets_at(p.context, p.starts_at)[p.attribute]
            for p in bundle.probes.values() if p.probe_kind is ProbeKind.FINAL
        }
        from_targets += sum(final[(Context.WORK, a.key)] != final[(Context.PERSONAL, a.key)] for a in ATTRIBUTES)
    assert from_targets != 18  # the old rule would have scored a different set


async def test_outcomes_carry_the_matrix_of_the_runs_worlds(client: LLMClient, tmp_path: Path) -> None:
    async with RunStore(tmp_path / "mempa.sqlite") as store:
        runner = Runner(
            runner_config(repeats=1), store, client, default_registry(), None,
            memory_root=tmp_path / "mem", episodes=FakeEpisodes().functions(), scorer=Scored(), resamples=50,
        )
        outcome = await runner.run()
        run = await store.get_run(outcome.run_id)
        assert run is not None
        outcomes = [outcome_of(r, run) for r in await store.probe_results(outcome.run_id)]
    differing = matrix_differing(runner_config().worlds_dir, "R")
    assert outcomes and all(o.differs_in_matrix is (o.attribute in differing) for o in outcomes)


async def test_outcomes_of_a_run_whose_worlds_moved_leave_cs_unknown(client: LLMClient, tmp_path: Path) -> None:
    """Results read where the run's worlds folder is not (a copied saves folder) still score the
    run; CS's set D is unknown for it (None) instead of raising for every score."""
    async with RunStore(tmp_path / "mempa.sqlite") as store:
        runner = Runner(
            runner_config(repeats=1), store, client, default_registry(), None,
            memory_root=tmp_path / "mem", episodes=FakeEpisodes().functions(), scorer=Scored(), resamples=50,
        )
        outcome = await runner.run()
        run = await store.get_run(outcome.run_id)
        assert run is not None
        cfg = json.loads(run.config_json)
        cfg["worlds_dir"] = str(tmp_path / "moved-away")
        moved = run.model_copy(update={"config_json": json.dumps(cfg)})
        outcomes = [outcome_of(r, moved) for r in await store.probe_results(outcome.run_id)]
    assert outcomes and all(o.differs_in_matrix is None for o in outcomes)
