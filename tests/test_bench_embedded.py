"""The pure parts of ``benchmarks/bench_embedded.py`` (issue 12, "Measure" and item 3).

The benchmark itself needs the embedded model and prints timings (never asserted here); what it
builds and sums is tested: the ``slots`` part's requests and figures, and the floor the ``run``
and ``stored`` parts print beside the concurrency the calls ran with.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pytest

from mempa_tui.llm import LLMCallRecord, Role
from mempa_tui.llm.client import REPLY_TOOL
from mempa_tui.llm.profile import load_profile
from mempa_tui.scripts.loader import load_user

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_embedded", ROOT / "benchmarks" / "bench_embedded.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_embedded"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _call(role: Role, prompt: int, reused: int, completion: int, seconds: float, ok: bool = True) -> LLMCallRecord:
    return LLMCallRecord(role=role, model="m", prompt_tokens=prompt, completion_tokens=completion,
                         reused_prefix_tokens=reused, latency_s=seconds, ok=ok)


TOOLS = [{"type": "function", "function": {"name": "mcp_state_calendar_event_search", "description": "d",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def test_a_slot_request_is_a_constrained_pa_call_with_its_own_seed(bench: ModuleType) -> None:
    messages = [{"role": "system", "content": "instructions"}, {"role": "system", "content": "It is Monday."},
                {"role": "user", "content": "Plan my trip"}]
    body = bench.pa_request_body("qwen", messages, TOOLS, seed=5)
    assert body["messages"] == messages and body["seed"] == 5 and body["temperature"] == 0.7
    assert body["max_tokens"] == 128
    assert [t["function"]["name"] for t in body["tools"]] == ["mcp_state_calendar_event_search", REPLY_TOOL]
    assert body["response_format"]["type"] == "json_object"
    names = [option["properties"]["name"]["const"] for option in body["response_format"]["schema"]["anyOf"]]
    assert names == ["mcp_state_calendar_event_search", REPLY_TOOL]
    assert "ignore_eos" not in body  # under a grammar llama.cpp fails the request with it
    assert bench.pa_request_body("qwen", messages, TOOLS, seed=6)["seed"] == 6


def test_slot_openings_are_distinct_conversations_starting_with_the_quick_start(bench: ModuleType) -> None:
    bundle = load_user(ROOT / "worlds", "A")
    quick = bundle.quick_start()
    openings = bench.slot_openings(quick, bundle, 8)
    tasks = [task for _, task in openings]
    assert len(openings) == 8 and len(set(tasks)) == 8
    assert all(isinstance(when, datetime) for when, _ in openings)
    first = [quick.sessions[s].task for s in quick.timeline.steps if s in quick.sessions]
    assert tasks[: len(first)] == first
    assert set(tasks[len(first): len(first) + len(quick.probes)]) <= {p.task for p in quick.probes.values()}
    many = [task for _, task in bench.slot_openings(quick, bundle, 3 * len(bundle.sessions))]
    assert len(set(many)) == len(many)  # past the last task they come round again, marked
    with pytest.raises(ValueError, match="--requests"):
        bench.slot_openings(quick, bundle, 0)


def test_a_slot_reply_is_read_from_the_servers_timings(bench: ModuleType) -> None:
    reply = {"choices": [{"message": {"content": json.dumps({"name": REPLY_TOOL, "arguments": {"text": "hi"}})},
                          "finish_reason": "stop"}],
             "timings": {"prompt_n": 204, "cache_n": 4699, "predicted_n": 74, "predicted_per_second": 7.5}}
    read = bench.SlotRequest.from_reply(19.3, 200, reply, json.dumps(reply))
    assert (read.prompt_n, read.cache_n, read.predicted_n, read.predicted_per_second) == (204, 4699, 74, 7.5)
    assert read.call == REPLY_TOOL and read.error is None
    cut = {"choices": [{"message": {"content": '{\n "name": "mcp_state_cal'}, "finish_reason": "length"}],
           "timings": {"predicted_n": 128}}
    assert bench.SlotRequest.from_reply(1.0, 200, cut, "").call == "(cut at max_tokens)"
    failed = bench.SlotRequest.from_reply(1.0, 500, {}, "Unexpected empty grammar stack")
    assert failed.error == "HTTP 500: Unexpected empty grammar stack"


def test_slot_figures_sum_tokens_over_the_wall_and_count_failures(bench: ModuleType) -> None:
    results = [bench.SlotRequest(seconds=20.0, prompt_n=200, cache_n=4700, predicted_n=100, predicted_per_second=8.0),
               bench.SlotRequest(seconds=30.0, prompt_n=60, cache_n=4840, predicted_n=60, predicted_per_second=4.0),
               bench.SlotRequest(seconds=1.0, error="HTTP 500: x")]
    figures = bench.slot_figures(2, 40.0, results)
    assert (figures.slots, figures.requests, figures.failed, figures.generated) == (2, 3, 1, 160)
    assert figures.aggregate_tps == pytest.approx(4.0)
    assert figures.per_request_tps == pytest.approx(6.0)
    assert (figures.prompt_read, figures.prompt_cached) == (260, 9540)


def test_with_slots_sets_the_servers_slots_threads_and_every_specs_limit(bench: ModuleType) -> None:
    profile = bench.with_slots(load_profile("embedded", models_dir=ROOT / "models"), 4, 1)
    assert profile.options.embedded.n_parallel == 4 and profile.options.embedded.n_threads == 1
    assert {spec.max_concurrency for spec in profile.all_specs()} == {4}
    assert bench.profile_concurrency(profile) == (4, 4)
    assert bench.profile_concurrency(None) == (None, None)


def test_the_floor_is_priced_per_call_and_the_overlap_is_call_seconds_over_wall(bench: ModuleType) -> None:
    # two slots together: 100 s of calls in 60 s of wall
    calls = [_call(Role.PA, 1000, 800, 50, 60.0), _call(Role.SIMULATOR, 500, 400, 50, 40.0)]
    floor = bench.run_floor(calls, 60.0, prompt_rate=100.0, gen_rate=10.0)
    assert floor.floor_s == pytest.approx(300 / 100 + 100 / 10)
    assert floor.call_s == pytest.approx(100.0) and floor.overlap == pytest.approx(100 / 60)
    assert floor.ratio == pytest.approx(60 / 13)
    assert bench.run_floor(calls, 60.0, prompt_rate=0.0, gen_rate=10.0).floor_s == 0.0
    lines = bench.floor_lines(bench.run_floor(calls, 60.0, 10.0, 5.0), 2, 2)  # floor 50 s
    assert lines[0] == "floor 50 s; observed wall 60 s; observed wall / floor 1.20"
    assert "profile n_parallel 2, max_concurrency 2" in lines[1] and "overlap 1.67 calls at once" in lines[1]
    assert "observed wall / floor x overlap 2.00" in lines[1]
    assert "how to read" in lines[2] and "about 1 / overlap (0.60 here)" in lines[2]
    assert bench.floor_lines(bench.run_floor(calls, 60.0, 0.0, 0.0), None, None)[0].startswith("no floor")


def test_the_run_table_prints_the_floor_beside_the_concurrency(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    calls = [_call(Role.PA, 1000, 800, 50, 60.0), _call(Role.SIMULATOR, 500, 400, 50, 40.0, ok=False)]
    profile = load_profile("embedded", models_dir=ROOT / "models")
    bench.print_run_table(calls, 60.0, 10.0, 5.0, live=False, profile=profile)
    out = capsys.readouterr().out
    assert "observed wall / floor 1.20" in out
    slots = profile.options.embedded.n_parallel  # the shipped profile's own (one slot since issue 12's slot measurement)
    assert f"profile n_parallel {slots}, max_concurrency {slots}; measured overlap 1.67" in out
