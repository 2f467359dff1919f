"""User A's whole slice through litellm's ``ollama_chat/`` path: scores checked by hand.

The scripted model plays every role over real HTTP on loopback. The scripted simulator speaks the
script's task line, so the scripted PA can tell which probe it is in and select the setting this
test decides for it. PSA, CS and PET are then computed here, directly from those choices and User
A's preference matrix (with the change event applied), and compared with the run's report: the
runner, episode loop, wrapper, store and scoring must together reproduce them exactly.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import UserBundle, load_user
from mempa_tui.scripts.schema import Probe, ProbeKind
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.tools import default_registry

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
BRS, PRS = 4, 5


def _target(bundle: UserBundle, probe: Probe) -> str:
    return bundle.targets_at(probe.context, probe.starts_at)[probe.attribute]


def _choices(bundle: UserBundle) -> dict[str, str]:
    """The scripted PA's selection per probe: a fixed mix of right and wrong cells.

    Wrong for every third attribute in both contexts and for every fourth at work only, so some
    differing pairs pass CS and some fail; right before and after the change event, so PET passes.
    """
    order = {a.key: i for i, a in enumerate(ATTRIBUTES)}
    choices: dict[str, str] = {}
    for probe in bundle.probes.values():
        target = _target(bundle, probe)
        wrong = next(s for s in attribute(probe.attribute).setting_names if s != target)
        index = order[probe.attribute]
        right = index % 3 != 2 and not (probe.context is Context.WORK and index % 4 == 0)
        if probe.probe_kind is ProbeKind.PRE_EVENT:
            right = True
        choices[probe.id] = target if right else wrong
    return choices


def _expected(bundle: UserBundle, choices: dict[str, str]) -> dict[str, float]:
    finals = {(p.context, p.attribute): p for p in bundle.probes.values() if p.probe_kind is ProbeKind.FINAL}
    correct = {cell: choices[p.id] == _target(bundle, p) for cell, p in finals.items()}
    psa = 100 * sum(correct.values()) / len(correct)
    # CS's set D: the pairs the preference matrix sets differently by context (Section 3.5), not
    # the final targets (the change event may make those differ or agree)
    differing = [
        a.key for a in ATTRIBUTES
        if bundle.matrix.setting(Context.WORK, a.key) != bundle.matrix.setting(Context.PERSONAL, a.key)
    ]
    cs = 100 * sum(correct[(Context.WORK, k)] and correct[(Context.PERSONAL, k)] for k in differing) / len(differing)
    pre = [p for p in bundle.probes.values() if p.probe_kind is ProbeKind.PRE_EVENT]
    pet = 100 * sum(
        choices[p.id] == _target(bundle, p) and correct[(p.context, p.attribute)] for p in pre
    ) / len(pre)
    return {"PSA": psa, "CS": cs, "PET": pet}


class _Scripted(RolePlayer):
    def __init__(self, bundle: UserBundle, choices: dict[str, str]) -> None:
        by_task = {p.task: p.id for p in bundle.probes.values()}

        def user_line(request: ScriptedRequest) -> str:
            system = request.messages[0].content if request.messages else ""
            found = re.search(r"^Task: (.+)$", system, re.M)
            return f"{found.group(1)}. Could you handle it?" if found else "Could you handle it?"

        def choose(key: str, request: ScriptedRequest) -> str:
            text = "\n".join(m.content for m in request.messages if m.role == "user")
            for task, probe_id in by_task.items():
                if task in text:
                    return choices[probe_id]
            return attribute(key).setting_names[0]  # accumulation sessions: any setting

        super().__init__(choose=choose, user_line=user_line, brs=BRS, prs=PRS)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_user_a_slice_scores_match_a_hand_computation(tmp_path: Path) -> None:
    bundle = load_user(WORLDS, "A").sliced()
    choices = _choices(bundle)
    expected = _expected(bundle, choices)
    async with ScriptedModelServer(_Scripted(bundle, choices)) as server:
        profile = server.profile(context_window=131072)  # every role on ollama_chat/scripted-<role>
        assert all(spec.model.startswith("ollama_chat/") for spec in profile.all_specs())
        client = LLMClient(profile)
        config = RunConfig(user="A", profile="scripted", memory="file", repeats=1, worlds_dir=WORLDS, slice=True)
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=tmp_path / "local_memory", resamples=200).run()
            steps = await store.steps(outcome.run_id)
            results = await store.probe_results(outcome.run_id)
        paths = list(server.paths)
    assert outcome.status is RunStatus.COMPLETED
    assert [s.step_id for s in steps] == bundle.timeline.steps
    assert {s.status for s in steps} == {"completed"}
    assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}
    assert {r.probe_id: r.selection for r in results} == choices
    assert "/api/chat" in paths and "/v1/chat/completions" not in paths  # Ollama's native API only
    assert outcome.report is not None
    with outcome.report.paths.main_csv.open(newline="") as handle:
        row = next(csv.DictReader(handle))
    for metric, value in expected.items():
        assert float(row[f"{metric.lower()}_mean"]) == pytest.approx(value, abs=0.05), metric
    assert float(row["brs_mean"]) == pytest.approx(BRS) and float(row["prs_mean"]) == pytest.approx(PRS)
    assert row["floored"] == "0" and row["incomplete"] == "0"
