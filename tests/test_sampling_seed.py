"""The sampling seed each model call sends (mempa_tui.llm.sampling; paper Section 3.5 repeats).

Before: every call sent the profile's fixed ``seed`` (7 in models/embedded.yaml), so on llama.cpp
and Ollama the repeats of a probe drew the same random numbers and every call of a PA turn started
from the same draws. Now the seed is derived per call from the base seed, the runner's sampling
scope (run seed, step or probe, repeat, attempt) and the prompt; these tests read the request
bodies the scripted model received over loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_runner_support import protocol_responder, runner_config

from mempa_tui.llm import ChatMessage, LLMClient, Role, ScriptedModelServer, ScriptedReply, ScriptedRequest, ToolCall
from mempa_tui.llm.sampling import call_seed, current_scope, prompt_texts, sampling_scope
from mempa_tui.runner import Runner
from mempa_tui.runner._browse import model_call
from mempa_tui.runner._stepper import ProbeStepper
from mempa_tui.store import RunStore
from mempa_tui.tools import default_registry

WIRES = {"ollama": "ollama_chat/scripted-pa", "openai": "openai/scripted-pa"}
SYSTEM = ChatMessage(role="system", content="You are a careful assistant.")


def sent_seed(request: ScriptedRequest) -> int | None:
    """The seed as it went over the wire (Ollama: ``options.seed``; OpenAI: the body's ``seed``)."""
    value = request.options.get("seed", request.body.get("seed"))
    return None if value is None else int(value)


class Keeper:
    """Answers ``ok`` and keeps every request."""

    def __init__(self) -> None:
        self.seen: list[ScriptedRequest] = []

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        self.seen.append(request)
        return ScriptedReply(text="ok")


@pytest.fixture
async def keeper() -> AsyncIterator[tuple[ScriptedModelServer, Keeper]]:
    keep = Keeper()
    async with ScriptedModelServer(keep) as server:
        yield server, keep
    assert server.errors == []


# -- the rule --------------------------------------------------------------------------------------

def test_tool_call_ids_do_not_change_the_prompt_texts_the_seed_reads() -> None:
    def turn(call_id: str) -> list[ChatMessage]:
        return [SYSTEM, ChatMessage(role="assistant", tool_calls=[ToolCall(id=call_id, name="lookup", arguments={"q": "x"})]),
                ChatMessage(role="tool", content="found", tool_call_id=call_id, name="lookup")]

    assert prompt_texts(turn("srv_1")) == prompt_texts(turn("call_ab12"))
    other = turn("srv_1")
    other[2] = other[2].model_copy(update={"content": "not found"})
    assert prompt_texts(other) != prompt_texts(turn("srv_1"))


def test_call_seed_depends_on_base_scope_prompt_and_tools_and_nothing_else() -> None:
    seed = call_seed(7, ['{"a":1}'], ["t"], scope="s")
    assert seed is not None and 0 <= seed < 2**31
    assert call_seed(7, ['{"a":1}'], ["t"], scope="s") == seed  # deterministic
    others = {call_seed(8, ['{"a":1}'], ["t"], scope="s"), call_seed(7, ['{"a":2}'], ["t"], scope="s"),
              call_seed(7, ['{"a":1}'], ["u"], scope="s"), call_seed(7, ['{"a":1}'], ["t"], scope="r"),
              call_seed(7, ['{"a":1}', '{"b":2}'], ["t"], scope="s")}
    assert seed not in others and len(others) == 5
    assert call_seed(None, ['{"a":1}'], ["t"], scope="s") is None  # no base: no seed


def test_call_seed_is_the_same_in_another_process_whatever_its_hash_salt() -> None:
    """Python's ``hash()`` of a str changes per process; the seed must not (resume, replay)."""
    code = "from mempa_tui.llm.sampling import call_seed; print(call_seed(7, ['m'], ['t'], scope='k'))"
    root = Path(__file__).resolve().parents[1]
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                       env={**os.environ, "PYTHONHASHSEED": salt}).stdout.strip()
        for salt in ("1", "2")
    }
    assert outs == {str(call_seed(7, ["m"], ["t"], scope="k"))}


def test_sampling_scope_sets_and_restores_and_refuses_an_empty_key() -> None:
    assert current_scope() == ""
    with sampling_scope("outer"):
        assert current_scope() == "outer"
        with sampling_scope("inner"):
            assert current_scope() == "inner"
        assert current_scope() == "outer"
    assert current_scope() == ""
    with pytest.raises(ValueError, match="must not be empty"), sampling_scope(""):
        pass


# -- the client over loopback ----------------------------------------------------------------------

@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_client_sends_a_seed_per_prompt_and_scope(keeper: tuple[ScriptedModelServer, Keeper], wire: str) -> None:
    server, keep = keeper
    client = LLMClient(server.profile({Role.PA: WIRES[wire]}, seed=7))
    first = [SYSTEM, ChatMessage(role="user", content="Find the meeting.")]
    grown = [*first, ChatMessage(role="assistant", content="Looking."), ChatMessage(role="user", content="And?")]
    await client.complete(Role.PA, first)            # no scope (tests, free play): base and prompt alone
    await client.complete(Role.PA, first)            # the same prompt again: the same seed
    await client.complete(Role.PA, grown)            # the next call of a turn: its prompt grew
    with sampling_scope("run-seed=0 probe=P repeat=1 attempt=1"):
        await client.complete(Role.PA, first)
    with sampling_scope("run-seed=0 probe=P repeat=2 attempt=1"):
        await client.complete(Role.PA, first)
    seeds = [sent_seed(r) for r in keep.seen]
    assert all(isinstance(s, int) and 0 <= s < 2**31 for s in seeds), seeds
    assert seeds[0] == seeds[1]
    assert len({seeds[0], seeds[2], seeds[3], seeds[4]}) == 4, seeds
    assert 7 not in seeds  # the base seed itself is no longer what is sent
    # the call record keeps the seed that was sent
    assert [c.prompt.seed for c in client.calls if c.prompt is not None] == seeds


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_spec_without_a_seed_sends_none(keeper: tuple[ScriptedModelServer, Keeper], wire: str) -> None:
    server, keep = keeper
    client = LLMClient(server.profile({Role.PA: WIRES[wire]}))  # seed None
    with sampling_scope("run-seed=0 step=S1 attempt=1"):
        await client.complete(Role.PA, [SYSTEM, ChatMessage(role="user", content="Hello.")])
    (request,) = keep.seen
    assert sent_seed(request) is None and "seed" not in request.body
    assert client.calls[-1].prompt is not None and client.calls[-1].prompt.seed is None


# -- the runner ------------------------------------------------------------------------------------

async def _run(server: ScriptedModelServer, root: Path, **overrides: Any) -> dict[tuple[str, int], list[tuple[str, int | None, str]]]:
    """Play user R's run; per (step or probe, repeat), the stored calls as (role, seed, prompt digest)."""
    client = LLMClient(server.profile(context_window=131072, seed=7))
    async with RunStore(root / "saves" / "mempa.sqlite") as store:
        runner = Runner(runner_config(**overrides), store, client, default_registry(), None,
                        memory_root=root / "local_memory", resamples=200)
        run_id = (await runner.run()).run_id
        out: dict[tuple[str, int], list[tuple[str, int | None, str]]] = defaultdict(list)
        for row in await store.llm_calls(run_id):
            assert row.call_id is not None
            full = (await store.llm_call(run_id, row.call_id)).call
            assert full.prompt is not None
            # the prompt without its tool-call ids: the scripted server numbers them across the
            # runs it serves (srv_1, srv_9...), as real servers may make them up at random
            digest = repr([(m.role, m.content, m.name, [(c.name, sorted(c.arguments.items())) for c in m.tool_calls])
                           for m in full.prompt.messages] + full.prompt.tools)
            out[(row.step_id, row.repeat)].append((full.role.value, full.prompt.seed, digest))
        # `mempa show RUN STEP --call N` (the browser's text) prints the seed that was sent
        pa = next(c for c in await store.llm_calls(run_id) if c.call.role is Role.PA and c.call_id is not None)
        assert pa.call_id is not None
        assert "sampling seed: " in (await model_call(store, run_id, pa.call_id)).text()
    return dict(out)


@pytest.fixture
async def protocol() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer(protocol_responder) as server:
        yield server
    assert server.errors == []


async def test_probe_repeats_send_different_seeds_for_the_same_prompt(protocol: ScriptedModelServer, tmp_path: Path) -> None:
    calls = await _run(protocol, tmp_path)
    sent = {seed for r in protocol.requests if (seed := sent_seed(r)) is not None}
    stored = {seed for rows in calls.values() for _, seed, _ in rows}
    assert stored <= sent and None not in stored  # every stored seed went over the wire
    probes = {step for step, repeat in calls if repeat == 2}
    assert probes, "the run has no second probe repeat"
    compared = 0
    for probe in probes:
        first, second = calls[(probe, 1)], calls[(probe, 2)]
        by_prompt = {(role, digest): seed for role, seed, digest in first}
        for role, seed, digest in second:
            if (role, digest) in by_prompt:  # the same prompt in both repeats (the scripted model repeats itself)
                compared += 1
                assert seed != by_prompt[(role, digest)], (probe, role)
    assert compared, "no probe call had the same prompt in both repeats"


async def test_the_same_run_played_again_sends_the_same_seeds(protocol: ScriptedModelServer, tmp_path: Path) -> None:
    once = await _run(protocol, tmp_path / "one")
    again = await _run(protocol, tmp_path / "two")
    steps = sorted(key for key in once if key[1] == 0)  # timeline steps (repeat 0)
    assert steps
    for key in steps:
        assert sorted(once[key]) == sorted(again[key]), key
    # within one step, calls whose prompt grew send another seed
    for key in steps:
        pa = [(seed, digest) for role, seed, digest in once[key] if role == "pa"]
        assert len({d for _, d in pa}) == len({s for s, _ in pa}), key
    assert any(len([1 for role, _, _ in once[key] if role == "pa"]) > 1 for key in steps)


async def test_another_run_seed_sends_other_seeds(protocol: ScriptedModelServer, tmp_path: Path) -> None:
    zero = await _run(protocol, tmp_path / "s0", repeats=1)
    one = await _run(protocol, tmp_path / "s1", repeats=1, seed=1)
    key = sorted(k for k in zero if k[1] == 0)[0]
    first0, first1 = zero[key][0], one[key][0]
    assert first0[2] == first1[2] and first0[1] != first1[1]  # the same first prompt, another seed


async def test_the_probe_stepper_replays_the_seeds_of_the_runs_first_repeat(protocol: ScriptedModelServer, tmp_path: Path) -> None:
    client = LLMClient(protocol.profile(context_window=131072, seed=7))
    probe = "R-final-work-verbosity"
    async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        run_id = (await Runner(runner_config(repeats=2), store, client, default_registry(), None,
                               memory_root=tmp_path / "local_memory", resamples=50).run()).run_id
        stored: dict[int, list[int | None]] = defaultdict(list)
        for row in await store.llm_calls(run_id):
            if row.step_id == probe and row.call.role is Role.PA and row.call_id is not None:
                full = (await store.llm_call(run_id, row.call_id)).call
                assert full.prompt is not None
                stored[row.repeat].append(full.prompt.seed)
        stepper = await ProbeStepper.open(store, run_id, probe, client=client)
        async with stepper:
            await stepper.run_to("finished")
        stepped = [c.prompt.seed for c in stepper.client.calls if c.role is Role.PA and c.prompt is not None]
    assert stored[1] and stepped == stored[1]  # the same prompts, so the same seeds as repeat 1
    assert stored[2] != stored[1]
