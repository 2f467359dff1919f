"""What the prompt-reuse fixes of issue 12 would have saved on a stored run (a one-off estimate).

Replays the stored calls of runs played before the fixes on
:func:`prompt_reuse.replay_slot_cache` (llama.cpp's one-slot server with a host prompt cache, as
its source reads; first checked against the server's own counts of the same calls), then again
with each fix applied to the stored prompts, cumulatively:

1. ``forced calls keep the tool block``: a PA call whose offer lacks the reply tool gets it (the
   client now offers it on forced calls too; only the grammar narrows);
2. ``probes one at a time``: each probe's calls run as one block, in order of start (probes are
   no longer played two at a time on one slot);
3. ``simulator layout``: each simulator turn prompt in the new order (system: persona and
   no-tools rule, output format, rules, memory, session; user: the beat's part, the dialogue,
   then waiting items and the turn count), rebuilt from the stored text by moving its sections.

The model calls themselves are not replayed: every reply stays as stored, so the estimate
assumes the same conversations (sampling on a different cached share can change words).
Needs a running llama.cpp server of the model for its template and tokenizer::

    python benchmarks/reuse_estimate.py --saves saves --runs A-file-embedded-s0-quick,A-none-embedded-s0-quick \\
        --tokenizer-url http://127.0.0.1:8080
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


async def main(args: argparse.Namespace) -> None:
    """Check the cache model on the stored run, then price the fixes one after another."""
    calls, starts, runs = await bench.load_stored_calls(args.saves, args.runs)
    root = args.tokenizer_url.rstrip("/").removesuffix("/v1")
    as_ran = pr.time_order(calls, starts)
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
    steps: list[tuple[str, Any]] = [
        ("forced calls keep the tool block", lambda cs: [keep_tool_block(c) for c in cs]),
        ("probes one at a time", lambda cs: one_probe_at_a_time(cs, starts)),
        ("simulator layout", lambda cs: [new_simulator_layout(c) for c in cs]),
    ]
    current = as_ran
    for name, fix in steps:
        current = fix(current)
        tokens, _ = await bench.tokenize_calls(current, lambda role: root)
        reused = pr.replay_slot_cache(current, tokens, restored=restored)
        prompt = sum(len(tokens[c.call_id]) for c in current)
        new = sum(len(tokens[c.call_id]) - reused[c.call_id] for c in current)
        by_role: dict[str, int] = {}
        for c in current:
            by_role[c.role] = by_role.get(c.role, 0) + len(tokens[c.call_id]) - reused[c.call_id]
        roles = ", ".join(f"{r} {n:,}" for r, n in sorted(by_role.items()))
        print(f"+ {name}: {prompt:,} prompt tokens, {new:,} new ({1 - new / prompt:.1%} reused); new by role: {roles}")


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", default="saves")
    parser.add_argument("--runs", default="A-file-embedded-s0-quick,A-none-embedded-s0-quick")
    parser.add_argument("--tokenizer-url", required=True, help="a running llama.cpp server of the model")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(_parse()))
