"""The pure parts of ``benchmarks/prompt_reuse.py`` (``bench_embedded.py reuse``, issue 12).

The benchmark reads stored runs and tokenizes on the embedded server; what it orders, labels and
sums is tested here with characters standing in for tokens.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pr() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prompt_reuse", ROOT / "benchmarks" / "prompt_reuse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["prompt_reuse"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _call(pr: ModuleType, call_id: int, unit: str, seq: int, role: str, *, prompt: int = 0, reused: int = 0,
          latency: float = 1.0, model: str = "m", repeat: int = 0, completion: int = 0) -> object:
    return pr.StoredCall(call_id=call_id, run_id="r", unit=(unit, repeat), seq=seq, role=role, model=model,
                         prompt_tokens=prompt, reused=reused, latency_s=latency, completion_tokens=completion)


def test_probes_played_side_by_side_are_replayed_call_by_call(pr: ModuleType) -> None:
    # two probes start together; one call at a time, each next call queued when its previous one ends
    calls = [_call(pr, 1, "P1", 0, "pa"), _call(pr, 2, "P1", 1, "pa"), _call(pr, 3, "P2", 0, "pa", latency=5.0),
             _call(pr, 4, "P2", 1, "pa"), _call(pr, 5, "S1", 0, "pa")]
    starts = {("r", "S1", 0): 0.0, ("r", "P1", 0): 100.0, ("r", "P2", 0): 100.0}
    assert [c.call_id for c in pr.time_order(calls, starts)] == [5, 1, 3, 2, 4]
    with pytest.raises(KeyError, match="no start time for P2"):
        pr.time_order(calls, {("r", "S1", 0): 0.0, ("r", "P1", 0): 1.0})


def test_where_names_the_message_the_tools_block_and_the_heading(pr: ModuleType) -> None:
    text = ("<|im_start|>system\nYou help.\n\n# Tools\n\nwithin <tools></tools> XML tags:\n<tools>\n{\"a\": 1}\n"
            "</tools>\nend<|im_end|>\n<|im_start|>user\n# What you care about\nbe brief\n"
            "The conversation so far:\nYou: hi<|im_end|>\n")
    assert pr.where_in_prompt(text, text.index('{"a"')) == "system message 1, tools block"
    assert pr.where_in_prompt(text, text.index("end<|im_end|>")) == "system message 1, # Tools"
    assert pr.where_in_prompt(text, text.index("be brief")) == "user message 2, # What you care about"
    assert pr.where_in_prompt(text, text.index("You: hi")) == "user message 2, The conversation so far:"
    assert pr.where_in_prompt(text, len(text)) == "end"


def test_new_tokens_are_split_into_start_eviction_change_and_appended(pr: ModuleType) -> None:
    base = "<|im_start|>system\nfixed part<|im_end|>\n<|im_start|>user\n"
    texts = {
        1: base + "turn one",            # the unit's first call: nothing cached
        2: base + "turn one and more",   # grows at its end: appended only
        3: "<|im_start|>system\nother role",  # another role takes the slot
        4: base + "turn one and more, again",  # the server kept only 5 tokens: the rest was evicted
        5: base + "turn TWO",            # differs before the previous prompt's end
    }
    calls = [_call(pr, 1, "S", 0, "pa", prompt=len(texts[1]), reused=0),
             _call(pr, 2, "S", 1, "pa", prompt=len(texts[2]), reused=len(texts[1])),
             _call(pr, 3, "S", 2, "judge", prompt=len(texts[3]), reused=13),
             _call(pr, 4, "S", 3, "pa", prompt=len(texts[4]), reused=5),
             _call(pr, 5, "S", 4, "pa", prompt=len(texts[5]), reused=len(base) + len("turn "))]
    tokens = {cid: [ord(ch) for ch in text] for cid, text in texts.items()}
    rows = pr.analyse(calls, tokens, lambda cid, pos: pos, texts)
    assert [r.new for r in rows] == [sum(r.causes.values()) for r in rows]
    assert rows[0].causes == {("unit start", "nothing cached"): len(texts[1])}
    assert rows[1].causes == {("appended", ""): len(texts[2]) - len(texts[1])}
    assert rows[3].previous == 2 and rows[3].last_on_server == 3
    assert rows[3].causes[("evicted", "slot held judge of S")] == len(texts[2]) - 5 - 1
    assert list(rows[4].causes) == [("changed", "user message 2")] and rows[4].where == "user message 2"
    table = {(role, cause): n for role, cause, _, n, _ in pr.breakdown(rows)}
    assert table[("pa", "evicted")] == len(texts[2]) - 6 and ("judge", "unit start") in table


def test_the_slot_cache_model_keeps_a_slot_unless_it_would_lose_half(pr: ModuleType) -> None:
    """llama.cpp's rule: the host cache is consulted only when a request keeps under half of the
    slot; so two conversations that share a long preamble evict each other's tails, while a
    request that shares little with the slot (another role) brings a cached state back."""
    pre = list(range(100))
    x1, y1 = pre + [1000 + i for i in range(40)], pre + [2000 + i for i in range(40)]
    x2 = x1 + [3000 + i for i in range(10)]
    judge = [9000 + i for i in range(50)]
    tokens = {1: x1, 2: y1, 3: x2, 4: judge, 5: x2}
    calls = [_call(pr, i, "U", i, "pa") for i in tokens]
    reused = pr.replay_slot_cache(calls, tokens)
    assert reused[2] == 100  # y1 shares the preamble with x1 in the slot
    assert reused[3] == 100  # x1's tail was lost to y1 (the slot kept 100 of 140, over half)
    assert reused[4] == 0
    assert reused[5] == len(x2) - 1  # the judge kept nothing of x2: x2 was saved, and comes back
    restored = pr.replay_slot_cache(calls[:1], tokens, restored={"m": pre + [-1]})
    assert restored[1] == 100


def test_with_similarity_one_every_request_goes_through_the_host_cache(pr: ModuleType) -> None:
    """Issue 12, the simulator's server: a rating prompt that opens with the persona card holds
    the slot after a probe's turns; the next probe's turn keeps over half of it (the card), so
    with llama.cpp's 0.1 the slot keeps the card alone, while with 1.0 the request saves the slot
    and loads the previous turn from the cache, which shares the card and the rules too."""
    card, rules = list(range(100)), list(range(500, 560))
    turn_a = card + rules + [1000 + i for i in range(30)]
    rating = card + [2000 + i for i in range(40)]
    turn_b = card + rules + [3000 + i for i in range(30)]
    tokens = {1: turn_a, 2: rating, 3: turn_b}
    calls = [_call(pr, i, "U", i, "simulator") for i in tokens]
    assert pr.replay_slot_cache(calls, tokens)[3] == 100
    assert pr.replay_slot_cache(calls, tokens, similarity=1.0)[3] == 160
    assert pr.replay_slot_cache(calls, tokens, similarity={"m": 1.0})[3] == 160
    assert pr.replay_slot_cache(calls, tokens, similarity={"other": 1.0})[3] == 100


def test_the_cache_model_drops_saved_states_the_slot_holds_whole(pr: ModuleType) -> None:
    """llama.cpp saves a slot's state only when no cached state holds all of it, and then drops
    the cached states it holds whole: a conversation saved at each of its calls leaves one state,
    so an older, shorter copy of it cannot win the cache's choice (which takes, oldest first,
    each state that keeps more of itself and covers more of the request than the best so far)."""
    pre = list(range(100))
    x1 = pre + [1000 + i for i in range(20)]
    x2 = x1 + [1100 + i for i in range(20)]
    judge = [9000 + i for i in range(10)]
    tokens = {1: x1, 2: x2, 3: judge, 4: x2 + [1200]}
    calls = [_call(pr, i, "U", i, "pa") for i in tokens]  # no completion: the slot holds the prompt only
    reused = pr.replay_slot_cache(calls, tokens, similarity=1.0)
    assert reused[2] == len(x1) and reused[4] == len(x2)
