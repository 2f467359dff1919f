"""What the prompt-reuse fixes of issue 12 would have saved on a stored run (a one-off estimate).

Replays the stored calls of runs played before the fixes on
:func:`prompt_reuse.replay_slot_cache` (llama.cpp's one-slot server with a host prompt cache, as
its source reads; first checked against the server's own counts of the same calls), then again
with each fix applied, cumulatively. Two sets (``--fixes``):

``first`` (runs played before them, e.g. the quick run stored in ``/tmp/q20``):

1. ``forced calls keep the tool block``: a PA call whose offer lacks the reply tool gets it (the
   client now offers it on forced calls too; only the grammar narrows);
2. ``probes one at a time``: each probe's calls run as one block, in order of start (probes are
   no longer played two at a time on one slot);
3. ``simulator layout``: each simulator turn prompt in the new order (system: persona and
   no-tools rule, output format, rules, memory, session; user: the beat's part, the dialogue,
   then waiting items and the turn count), rebuilt from the stored text by moving its sections.

``second`` (runs played with the first set, e.g. ``/tmp/q23``; their probes already ran one at a
time on each server, so the calls are replayed in that order):

1. ``simulator server through the host cache``: the simulator's server with llama.cpp's
   ``slot_prompt_similarity`` at 1.0 (``options.embedded.slot_prompt_similarity``), the PA's at
   0.1;

2. ``PA memory before the date``: the PA's second system message with the memory (or Oracle)
   section first and the story date last (``agent/prompt.context_prompt``), rebuilt from the
   stored text by swapping its two sections;

then, priced but not made (levers left, each on top of the above, not of each other):

- ``PA calls written as rendered``: each PA tool call generated exactly as the chat template
  writes it back into the next prompt (``<tool_call>`` tags, the template's JSON spacing), so
  the slot's generated tokens are the next prompt's;
- ``simulator prefix restored``: the simulator's persona, no-tools rule, output format and
  session rules saved to disk and restored at server start, like the PA's prefix.

The model calls themselves are not replayed: every reply stays as stored, so the estimate
assumes the same conversations (sampling on a different cached share can change words).
Needs a running llama.cpp server of the model for its template and tokenizer (the 0.5B and
1.5B Qwen2.5-Coder models share both)::

    python benchmarks/reuse_estimate.py --saves saves --runs A-file-embedded-s0-quick,A-none-embedded-s0-quick \\
        --tokenizer-url http://127.0.0.1:8080 [--fixes second]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_embedded as bench  # noqa: E402
import prompt_reuse as pr  # noqa: E402

from mempa_tui.llm._wire import tools_for, wire_messages  # noqa: E402
from mempa_tui.llm.client import REPLY_TOOL  # noqa: E402
from mempa_tui.llm.types import ChatMessage  # noqa: E402


def keep_tool_block(call: pr.StoredCall) -> pr.StoredCall:
    """Fix 1: a PA call offered tools without the reply tool (a forced call) gets it."""
    if call.role != "pa" or not call.tools or REPLY_TOOL in call.tools:
        return call
    return replace(call, tools=[*call.tools, REPLY_TOOL])


def one_probe_at_a_time(calls: Sequence[pr.StoredCall], starts: dict[tuple[str, str, int], float]) -> list[pr.StoredCall]:
    """Fix 2: each unit's calls as one block, units in order of their start."""
    units: dict[tuple[str, str, int], list[pr.StoredCall]] = {}
    for call in calls:
        units.setdefault((call.run_id, *call.unit), []).append(call)
    out: list[pr.StoredCall] = []
    for key in sorted(units, key=lambda k: starts[k]):
        out.extend(sorted(units[key], key=lambda c: c.seq))
    return out


_USER_PARTS = re.compile(
    r"\A(?P<head>The conversation so far:\n)(?P<dialogue>.*?)\n\n"
    r"(?P<beat>(?:# What you care about in this step|# How you write in this step|Already behind you|Where you are now:).*?)"
    r"(?P<pending>\n\nItems waiting for your decision:.*?)?\n\n(?P<count>\((?:This is your first message|You have sent).*)\Z",
    re.S,
)


def new_simulator_layout(call: pr.StoredCall) -> pr.StoredCall:
    """Fix 3: a simulator turn prompt's sections in the new order (other simulator calls as they are)."""
    if call.role != "simulator" or len(call.messages) < 2 or not call.messages[1].content.startswith("The conversation so far:"):
        return call
    system, user = call.messages[0].content, call.messages[1].content
    parts = re.split(r"\n\n(?=# )", system)
    head, sections = parts[0], {p.split("\n", 1)[0]: p for p in parts[1:]}
    order = ["# How to write your turn", "# How you show what you want", "# Ground rules", "# Your memory",
             "# Today's conversation"]
    assert set(sections) <= set(order), sorted(sections)
    system = "\n\n".join([head, *(sections[k] for k in order if k in sections)])
    m = _USER_PARTS.match(user)
    assert m is not None, user[:200]
    user = "\n\n".join([m["beat"], m["head"] + m["dialogue"]]) + (m["pending"] or "") + "\n\n" + m["count"]
    messages = [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user),
                *call.messages[2:]]
    return replace(call, messages=messages)


def memory_before_date(call: pr.StoredCall) -> pr.StoredCall:
    """Fix 2 of ``second``: a PA call's second system message as memory section, then date."""
    if call.role != "pa" or len(call.messages) < 2 or call.messages[1].role != "system":
        return call
    text = call.messages[1].content
    if not text.startswith("Current date and time\n"):
        return call
    date, rest = text.split("\n\n", 1)
    moved = ChatMessage(role="system", content=f"{rest}\n\n{date}")
    return replace(call, messages=[call.messages[0], moved, *call.messages[2:]])


async def restored_prefix(root: str, calls: Sequence[pr.StoredCall]) -> list[int]:
    """The tokens the saved PA prefix state holds: instructions and the first PA call's world tools
    with a one-character user message (as :meth:`EmbeddedServer.warm_prefix` reads it)."""
    first = next(c for c in calls if c.role == "pa")
    tools = [t for t in first.tools if t != REPLY_TOOL and not t.startswith("IX_")]
    body = {"messages": [*wire_messages([first.messages[0]]), {"role": "user", "content": "."}],
            "tools": bench.stored_tool_dicts(tools)}
    async with httpx.AsyncClient(timeout=600) as http:
        text = (await http.post(f"{root}/apply-template", json=body)).json()["prompt"]
        return list((await http.post(f"{root}/tokenize", json={"content": text, "parse_special": True})).json()["tokens"]) + [-1]


IM_END = 151645
"""``<|im_end|>`` in the Qwen2.5 vocabulary (the end of a rendered message)."""


def rendered_replies(calls: Sequence[pr.StoredCall], tokens: dict[int, list[int]]) -> dict[int, list[int]]:
    """Lever ``PA calls written as rendered``: for each PA call whose next PA call of the same
    unit re-sends its tool call, the tokens of that call as the next prompt renders it (up to
    the message's end), as if the model had generated exactly them."""
    out: dict[int, list[int]] = {}
    last: dict[tuple[str, tuple[str, int]], pr.StoredCall] = {}
    for call in calls:
        if call.role != "pa":
            continue
        key = (call.run_id, call.unit)
        previous = last.get(key)
        last[key] = call
        if previous is None:
            continue
        mine, theirs = tokens[call.call_id], tokens[previous.call_id]
        if mine[: len(theirs)] != theirs or IM_END not in mine[len(theirs):]:
            continue
        reply = mine[len(theirs): mine.index(IM_END, len(theirs))]
        out[previous.call_id] = reply
    return out


def priced(current: Sequence[pr.StoredCall], tokens: dict[int, list[int]], **replay: Any) -> tuple[int, int, str]:
    """``(prompt tokens, new tokens, new by role)`` of ``current`` on the cache model."""
    reused = pr.replay_slot_cache(current, tokens, **replay)
    prompt = sum(len(tokens[c.call_id]) for c in current)
    by_role: dict[str, int] = {}
    for c in current:
        by_role[c.role] = by_role.get(c.role, 0) + len(tokens[c.call_id]) - reused[c.call_id]
    return prompt, sum(by_role.values()), ", ".join(f"{r} {n:,}" for r, n in sorted(by_role.items()))


async def main(args: argparse.Namespace) -> None:
    """Check the cache model on the stored run, then price the fixes one after another."""
    calls, starts, runs = await bench.load_stored_calls(args.saves, args.runs)
    root = args.tokenizer_url.rstrip("/").removesuffix("/v1")
    as_ran = pr.time_order(calls, starts) if args.fixes == "first" else one_probe_at_a_time(calls, starts)
    tokens, _ = await bench.tokenize_calls(as_ran, lambda role: root)
    pa_model = next(c.model for c in as_ran if c.role == "pa")
    restored = {pa_model: await restored_prefix(root, as_ran)}
    modelled = pr.replay_slot_cache(as_ran, tokens, restored=restored)
    total = sum(c.prompt_tokens for c in as_ran)
    off = [(c.call_id, c.role, c.reused, modelled[c.call_id]) for c in as_ran if abs(modelled[c.call_id] - c.reused) > 1]
    server_new = sum(c.prompt_tokens - c.reused for c in as_ran)
    model_new = sum(len(tokens[c.call_id]) - modelled[c.call_id] for c in as_ran)
    print(f"runs {', '.join(runs)}: {len(as_ran)} calls, {total:,} prompt tokens")
    print(f"as run: server {server_new:,} new ({1 - server_new / total:.1%} reused); cache model {model_new:,} new; "
          f"model off by more than a token on {len(off)} calls: {off}")
    if args.fixes == "first":
        steps: list[tuple[str, Any]] = [
            ("forced calls keep the tool block", lambda cs: [keep_tool_block(c) for c in cs]),
            ("probes one at a time", lambda cs: one_probe_at_a_time(cs, starts)),
            ("simulator layout", lambda cs: [new_simulator_layout(c) for c in cs]),
        ]
        current = as_ran
        for name, fix in steps:
            current = fix(current)
            tokens, _ = await bench.tokenize_calls(current, lambda role: root)
            prompt, new, roles = priced(current, tokens, restored=restored)
            print(f"+ {name}: {prompt:,} prompt tokens, {new:,} new ({1 - new / prompt:.1%} reused); new by role: {roles}")
        return
    sim_model = next(c.model for c in as_ran if c.role == "simulator")
    similarity = {pa_model: 0.1, sim_model: 1.0}
    prompt, new, roles = priced(as_ran, tokens, restored=restored, similarity=similarity)
    print(f"+ simulator server through the host cache: {prompt:,} prompt tokens, {new:,} new "
          f"({1 - new / prompt:.1%} reused); new by role: {roles}")
    as_ran = [memory_before_date(c) for c in as_ran]
    tokens, _ = await bench.tokenize_calls(as_ran, lambda role: root)
    prompt, new, roles = priced(as_ran, tokens, restored=restored, similarity=similarity)
    print(f"+ PA memory before the date: {prompt:,} prompt tokens, {new:,} new ({1 - new / prompt:.1%} reused); "
          f"new by role: {roles}")
    levers: list[tuple[str, dict[str, Any]]] = [
        ("PA calls written as rendered", {"generated": rendered_replies(as_ran, tokens)}),
    ]
    first_turns = [c for c in as_ran if c.role == "simulator" and "# Your memory" in c.messages[0].content]
    if first_turns:
        system = first_turns[0].messages[0].content
        fixed = system[: system.index("\n\n# Your memory")]
        text = (await _post(root, "/apply-template", {"messages": [{"role": "system", "content": fixed}]}))["prompt"]
        head = text[: text.index(fixed) + len(fixed)]
        prefix = (await _post(root, "/tokenize", {"content": head, "add_special": False, "parse_special": True}))["tokens"]
        levers.append(("simulator prefix restored", {"restored": {**restored, sim_model: list(prefix)}}))
    for name, change in levers:
        replay: dict[str, Any] = {"restored": restored, "similarity": similarity, **change}
        prompt, lever_new, roles = priced(as_ran, tokens, **replay)
        print(f"  lever {name}: {lever_new:,} new ({1 - lever_new / prompt:.1%} reused, {new - lever_new:,} fewer); "
              f"new by role: {roles}")


async def _post(root: str, path: str, body: dict[str, Any]) -> Any:
    """One JSON POST to the tokenizer server."""
    async with httpx.AsyncClient(timeout=600) as http:
        return (await http.post(f"{root}{path}", json=body)).json()


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", default="saves")
    parser.add_argument("--runs", default="A-file-embedded-s0-quick,A-none-embedded-s0-quick")
    parser.add_argument("--tokenizer-url", required=True, help="a running llama.cpp server of the model")
    parser.add_argument("--fixes", choices=["first", "second"], default="second",
                        help="which set of fixes to price (see above)")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(_parse()))
