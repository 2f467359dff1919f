"""Probe stepper engine (mempa_tui.runner._stepper) without Textual.

A real run of the tiny user R (tests/fixtures_runner) is played once per test against the scripted
model on loopback (protocol_responder plays every role, the judge answers BRS 4 and the rater PRS
5); then probes are stepped one model call at a time from its stored checkpoints.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_runner_support import WORLDS, protocol_responder, runner_config

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.types import Role
from mempa_tui.runner import Runner
from mempa_tui.runner._episode_events import (
    IXSelectionEvent,
    PAReplyEvent,
    UserMessageEvent,
)
from mempa_tui.runner._stepper import ProbeStepper, StepperError, stepper_choices
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStore
from mempa_tui.tools import default_registry

FINAL = "R-final-work-verbosity"
PRE = "R-pre-ev1"


@dataclass
class Stored:
    """A finished run in a store, with the client that played it."""

    store: RunStore
    client: LLMClient
    run_id: str
    root: Path


def _switchable(request: ScriptedRequest) -> ScriptedReply | str:
    if _FAIL_PA and request.model == "scripted-pa":
        return ScriptedReply(status=400, error="bad request from the test")
    return protocol_responder(request)


_FAIL_PA: list[bool] = []


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[Stored]:
    _FAIL_PA.clear()
    async with ScriptedModelServer(_switchable) as server:
        client = LLMClient(server.profile(context_window=131072))
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await Runner(
                runner_config(repeats=1), store, client, default_registry(), None,
                memory_root=tmp_path / "local_memory", resamples=50,
            ).run()
            yield Stored(store, client, outcome.run_id, tmp_path)


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


async def test_choices_list_probes_and_checkpoints(stored: Stored) -> None:
    choices = await stepper_choices(stored.store, stored.run_id)
    bundle = load_user(WORLDS, "R")
    assert [p.probe_id for p in choices.probes] == sorted(bundle.probes)
    assert [c.step_index for c in choices.checkpoints] == list(range(-1, len(bundle.timeline.steps)))
    pre = next(p for p in choices.probes if p.probe_id == PRE)
    assert pre.kind == "pre_event"
    assert pre.default_checkpoint == bundle.timeline.steps.index(bundle.probes[PRE].event) - 1
    final = next(p for p in choices.probes if p.probe_id == FINAL)
    assert final.default_checkpoint == len(bundle.timeline.steps) - 1


async def test_step_a_final_probe_one_call_at_a_time(stored: Stored) -> None:
    stepper = await ProbeStepper.open(stored.store, stored.run_id, FINAL, client=stored.client)
    bundle = load_user(WORLDS, "R")
    probe = bundle.probes[FINAL]
    async with stepper:
        assert stepper.opening.kind == "opened"
        assert stepper.opening.calls == []
        assert stepper.opening.next_role is Role.SIMULATOR  # the user speaks first
        calls = []
        while stepper.stage in ("opened", "model_call"):
            update = await stepper.step()
            assert update.target is None  # hidden until the episode is over
            if update.kind == "model_call":
                assert len(update.calls) == 1
            calls.extend(update.calls)
        end = stepper.updates[-1]
        assert end.kind == "episode_end" and end.status == "completed"
        assert [c.index for c in calls] == list(range(1, len(calls) + 1))
        pa_calls = [c for c in calls if c.role is Role.PA]
        assert pa_calls and any(f"IX_{probe.attribute}" in c.tools for c in pa_calls)
        first_ix = next(c for c in pa_calls if c.tool_calls)
        assert first_ix.tool_calls[0].name == f"IX_{probe.attribute}"
        assert first_ix.messages[0].role == "system"
        events = [e for u in stepper.updates for e in u.events]
        assert any(isinstance(e, UserMessageEvent) for e in events)
        assert any(isinstance(e, PAReplyEvent) for e in events)
        ix = [e for e in events if isinstance(e, IXSelectionEvent) and e.attribute == probe.attribute]
        assert ix and end.selection == ix[0].setting

        target = await stepper.step()
        assert target.kind == "target"
        assert target.target == bundle.targets_at(probe.context, probe.starts_at)[probe.attribute]
        scores = await stepper.step()
        assert scores.kind == "scores"
        assert (scores.brs, scores.brs_reason) == (4, "The reply follows the setting.")
        assert (scores.prs, scores.prs_reason) == (5, "It suited me.")
        assert {c.role for c in scores.calls} >= {Role.JUDGE, Role.SIMULATOR}
        done = await stepper.step()
        assert done.kind == "finished" and stepper.finished
        with pytest.raises(StepperError, match="finished"):
            await stepper.step()
    stored_result = next(r for r in await stored.store.probe_results(stored.run_id) if r.probe_id == FINAL)
    assert stored_result.selection == end.selection  # same branch, same scripted model, same choice


async def test_stepping_leaves_the_stored_run_as_it_was(stored: Stored) -> None:
    db = stored.store.path
    memory = stored.root / "local_memory"
    before, files_before = _dump(db), _tree(memory)
    calls_before = len(stored.client.calls)
    for probe_id in (FINAL, PRE):
        stepper = await ProbeStepper.open(stored.store, stored.run_id, probe_id, client=stored.client)
        async with stepper:
            await stepper.run_to("finished")
            scratch = stepper.client.calls
            assert scratch  # the stepper made model calls of its own
    assert _dump(db) == before
    assert _tree(memory) == files_before
    assert len(stored.client.calls) > calls_before  # delegated to the app's client (shared limits)


async def test_pre_event_probe_gets_no_brs_or_prs(stored: Stored) -> None:
    stepper = await ProbeStepper.open(stored.store, stored.run_id, PRE, client=stored.client)
    async with stepper:
        scores = await stepper.run_to("scores")
    assert scores.kind == "scores" and scores.brs is None and scores.prs is None
    assert "pre-event" in (scores.brs_reason or "")


async def test_leaving_early_cancels_the_episode(stored: Stored) -> None:
    stepper = await ProbeStepper.open(stored.store, stored.run_id, FINAL, client=stored.client)
    async with stepper:
        await stepper.step()
    assert stepper.stage == "model_call"
    with pytest.raises(StepperError, match="not started"):
        await stepper.step()


async def test_failed_model_call_ends_the_episode_failed(stored: Stored) -> None:
    _FAIL_PA.append(True)
    stepper = await ProbeStepper.open(stored.store, stored.run_id, FINAL, client=stored.client)
    async with stepper:
        end = await stepper.run_to("episode_end")
        assert end.kind == "episode_end" and end.status == "failed"
        failed = [c for u in stepper.updates for c in u.calls if c.error]
        assert failed and failed[0].role is Role.PA and "bad request" in (failed[0].error or "")
        scores = await stepper.run_to("scores")
    assert scores.brs is None and "not rated" in (scores.brs_reason or "")


async def test_bad_choices_are_named(stored: Stored) -> None:
    cases: list[tuple[str, int | None, str]] = [
        ("nope", None, "no probe 'nope'"),
        (FINAL, 99, "no checkpoint after step 100"),
        (PRE, 2, "choose an earlier one"),
    ]
    for probe_id, index, message in cases:
        with pytest.raises(StepperError, match=message):
            await ProbeStepper.open(stored.store, stored.run_id, probe_id, client=stored.client,
                                    checkpoint_index=index)
    with pytest.raises(StepperError, match="no run 'X-none'"):
        await stepper_choices(stored.store, "X-none")
