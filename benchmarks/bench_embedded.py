"""Where the embedded model's time goes (a benchmark, not a test; needs the ``embedded`` extra).

Three parts, each printing a table:

``rates``
    Prompt-reading and generation speed of the embedded server at several prompt lengths (fresh
    prompts, nothing cached): the server's own timings where it reports them (llama.cpp), else
    wall time. ``--server llama_cpp_python`` measures the previous server (``pip install -e
    ".[llama-cpp-python]"``) on the same prompts.

``prefix``
    The PA's fixed prefix (instructions and every world tool): its size in tokens and per tool,
    and what bringing it up costs on a server start: read and saved on the first start, restored
    from ``models/kv-cache`` on later ones.

``validity``
    The PA's first turn of several sessions under each calling mode (``auto``, ``constrained``):
    the share of tool calls that name an offered tool with schema-valid arguments, fragments, and
    non-empty replies.

``run``
    One run of mempa (``--memory none,file --quick`` by default) on the embedded model; then, per
    role, the calls, prompt tokens, reused tokens (the server's own counts), completion tokens and
    seconds; the measured prompt and generation rates; the floor (new prompt tokens / prompt rate
    + completion tokens / generation rate) and the observed wall time over the floor.

    python benchmarks/bench_embedded.py rates --sizes 500,4000
    python benchmarks/bench_embedded.py prefix
    python benchmarks/bench_embedded.py validity --prompts 6 --modes auto,constrained
    python benchmarks/bench_embedded.py run --user A --memory none,file --quick
    python benchmarks/bench_embedded.py tokens --user A
    python benchmarks/bench_embedded.py stored --saves saves --runs A-none-embedded-s0-quick,A-file-embedded-s0-quick

``tokens``
    The first PA prompt of the user's quick start (only the tool domains its scripts use) and of
    its slice (every tool), counted by the model's own tokenizer.

``stored``
    The ``run`` table for runs already played and stored (``mempa run``), read from the store.

Timings on a shared machine are noisy: every table is printed with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mempa_tui.llm import LLMCallRecord, load_profile  # noqa: E402
from mempa_tui.llm._wire import tools_for, wire_messages  # noqa: E402
from mempa_tui.llm.embedded import EmbeddedServer, ensure_weights  # noqa: E402
from mempa_tui.llm.runtime import prepare_runtime  # noqa: E402
from mempa_tui.llm.types import Role  # noqa: E402

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu calendar email meeting invoice").split()


def load() -> str:
    """The 1/5/15-minute load average, for printing beside timings."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def filler(tokens: int, seed: int) -> str:
    """About ``tokens`` tokens of words (one word is about one token for Qwen's vocabulary)."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(tokens))


async def rates(args: argparse.Namespace) -> None:
    """Prompt and generation speed at each size, nothing cached (a fresh nonce starts each prompt)."""
    profile = load_profile(args.model)
    options = profile.options.embedded.model_copy(update={"server": args.server, "prefix_cache_dir": None,
                                                           "n_parallel": 1, "n_threads": args.threads})
    profile = profile.model_copy(update={"options": profile.options.model_copy(update={"embedded": options})})
    weights = ensure_weights(profile.options.embedded.weights_dir)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"server {args.server}, threads {options.n_threads or os.cpu_count()}, {load()}")
    started = time.perf_counter()
    async with EmbeddedServer(profile, weights=weights, python=args.python or sys.executable) as ready:
        print(f"server up in {time.perf_counter() - started:.1f} s")
        base = ready.default.api_base
        alias = profile.default.model.split("/", 1)[-1]
        print(f"{'prompt tok':>10} {'read s':>8} {'prompt tok/s':>12} {'gen tok':>8} {'gen tok/s':>10}  source")
        async with httpx.AsyncClient(timeout=3600) as http:
            for index, size in enumerate(sizes):
                body = {"model": alias, "temperature": 0.0, "max_tokens": args.generate, "seed": 1,
                        "messages": [{"role": "user", "content": f"[{time.time_ns()}] " + filler(size, index)
                                      + "\nWrite a long story about these words."}]}
                sent = time.perf_counter()
                reply = (await http.post(f"{base}/chat/completions", json=body)).json()
                wall = time.perf_counter() - sent
                usage, timings = reply.get("usage", {}), reply.get("timings")
                if timings:
                    print(f"{timings['prompt_n']:>10} {timings['prompt_ms'] / 1000:>8.1f} "
                          f"{timings['prompt_per_second']:>12.1f} {timings['predicted_n']:>8} "
                          f"{timings['predicted_per_second']:>10.1f}  server timings")
                else:
                    print(f"{usage.get('prompt_tokens', 0):>10} {wall:>8.1f} "
                          f"{usage.get('prompt_tokens', 0) / wall:>12.1f} {usage.get('completion_tokens', 0):>8} "
                          f"{'-':>10}  wall time (prompt and generation together)")
    print(f"after: {load()}")


async def prefix(args: argparse.Namespace) -> None:
    """The PA prefix's size per tool, and its cost on a server start (read and saved, or restored)."""
    from mempa_tui.runner.setup import pa_prefix

    profile = load_profile(args.model)
    fixed = pa_prefix()
    tools = tools_for(list(fixed.tools), None, "llama_cpp") or []
    per_tool = sorted(len(json.dumps(t, ensure_ascii=False)) for t in tools)
    print(f"{len(tools)} tools; JSON characters per tool: min {per_tool[0]}, median {per_tool[len(per_tool) // 2]}, "
          f"max {per_tool[-1]}, total {sum(per_tool):,}")
    print(load())
    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        ready = await prepare_runtime(profile, stack, sys.stdout, prefix=fixed)
        print(f"server and prefix ready in {time.perf_counter() - started:.1f} s")
        base = ready.spec_for(Role.PA).api_base
        async with httpx.AsyncClient(timeout=3600) as http:
            alias = profile.default.model.split("/", 1)[-1]
            messages = [*wire_messages(list(fixed.messages)), {"role": "system", "content": "It is Monday."},
                        {"role": "user", "content": "What is on my calendar today?"}]
            tokenized = (await http.post(f"{str(base).removesuffix('/v1')}/apply-template",
                                         json={"messages": messages, "tools": tools})).json()
            prompt = tokenized.get("prompt", "")
            count = (await http.post(f"{str(base).removesuffix('/v1')}/tokenize", json={"content": prompt})).json()
            total = len(count.get("tokens", []))
            print(f"a first PA prompt: {total:,} tokens, about {total / max(1, len(tools)):.0f} per tool")
            sent = time.perf_counter()
            reply = (await http.post(f"{base}/chat/completions", json={
                "model": alias, "messages": messages, "tools": tools, "max_tokens": args.generate, "temperature": 0.2,
            })).json()
            timings = reply.get("timings", {})
            print(f"first PA call: {time.perf_counter() - sent:.1f} s; server: cached {timings.get('cache_n')}, "
                  f"read {timings.get('prompt_n')} at {timings.get('prompt_per_second', 0):.1f} tok/s, "
                  f"generated {timings.get('predicted_n')} at {timings.get('predicted_per_second', 0):.1f} tok/s")
            print("reply:", json.dumps(reply["choices"][0]["message"])[:400])
    print(f"after: {load()}")


async def validity(args: argparse.Namespace) -> None:
    """Tool-call and reply validity of the PA's first turn of several sessions, per calling mode.

    Each prompt is what the PA sees at a session's start (instructions, date, an empty memory, the
    session's task as the user's message) with all 83 world tools. A call is valid when it names an
    offered tool and its arguments meet that tool's schema; a reply is valid when it is non-empty
    text and no fragment of a call (the client turns fragments into failed calls).
    """
    from datetime import datetime

    import jsonschema

    from mempa_tui.agent.prompt import context_prompt, instructions
    from mempa_tui.llm import ChatMessage, LLMClient
    from mempa_tui.memory.base import Evidence
    from mempa_tui.runner.setup import pa_prefix
    from mempa_tui.scripts.loader import load_user

    bundle = load_user("worlds", args.user)
    sessions = list(bundle.sessions.values())[: args.prompts]
    fixed = pa_prefix()
    tools = list(fixed.tools)
    by_name = {t.name: t for t in tools}
    modes = args.modes.split(",")
    print(f"{len(sessions)} session openings of user {args.user}, modes {modes}; {load()}")
    async with AsyncExitStack() as stack:
        ready = await prepare_runtime(load_profile(args.model), stack, sys.stdout, prefix=fixed)
        for mode in modes:
            pa = ready.spec_for(Role.PA).model_copy(update={"tool_calling": mode})
            client = LLMClient(ready.model_copy(update={"roles": {**ready.roles, Role.PA: pa}}))
            counts = {"turns": 0, "calls": 0, "valid_calls": 0, "replies": 0, "valid_replies": 0, "fragments": 0}
            started = time.perf_counter()
            for session in sessions:
                messages = [
                    ChatMessage(role="system", content=instructions()),
                    ChatMessage(role="system", content=context_prompt(datetime.fromisoformat(str(session.starts_at)),
                                                                      Evidence())),
                    ChatMessage(role="user", content=session.task),
                ]
                reply = await client.complete(Role.PA, messages, tools=tools)
                counts["turns"] += 1
                for call in reply.tool_calls:
                    counts["calls"] += 1
                    counts["fragments"] += int(call.arguments_error is not None)
                    spec = by_name.get(call.name)
                    ok = spec is not None and call.arguments_error is None
                    if ok:
                        try:
                            jsonschema.validate(call.arguments, spec.parameters)
                        except jsonschema.ValidationError:
                            ok = False
                    counts["valid_calls"] += int(ok)
                    print(f"  [{mode}] {session.id}: call {call.name or '(no name)'} {'valid' if ok else 'INVALID'}"
                          f" {json.dumps(call.arguments)[:120]}")
                if not reply.tool_calls:
                    counts["replies"] += 1
                    counts["valid_replies"] += int(bool(reply.text.strip()))
                    print(f"  [{mode}] {session.id}: reply {reply.text[:120]!r}")
            seconds = time.perf_counter() - started
            calls, replies = counts["calls"], counts["replies"]
            print(f"mode {mode}: {counts['turns']} turns in {seconds:.0f} s; tool calls {calls}, valid "
                  f"{counts['valid_calls']} ({counts['valid_calls'] / calls:.0%} of calls)" if calls else
                  f"mode {mode}: {counts['turns']} turns in {seconds:.0f} s; no tool calls", end="")
            print(f"; fragments {counts['fragments']}; replies {replies}, non-empty {counts['valid_replies']}")
    print(f"after: {load()}")


def per_role(calls: list[LLMCallRecord]) -> dict[str, dict[str, float]]:
    """Calls, prompt, reused, completion tokens and seconds per role."""
    table: dict[str, dict[str, float]] = {}
    for call in calls:
        row = table.setdefault(call.role.value, {"calls": 0, "prompt": 0, "reused": 0, "completion": 0, "seconds": 0.0,
                                                 "server_counted": 0})
        row["calls"] += 1
        row["prompt"] += call.prompt_tokens
        row["reused"] += call.reused_prefix_tokens
        row["completion"] += call.completion_tokens
        row["seconds"] += call.latency_s
        row["server_counted"] += int(call.reused_by_server)
    return table


def print_run_table(calls: list[LLMCallRecord], wall_s: float, prompt_rate: float, gen_rate: float,
                    *, live: bool = True) -> None:
    """The per-role table, the floor and observed / floor (``live``: calls logged as they ran, with
    the server's own reuse flag; stored calls do not keep it)."""
    table = per_role(calls)
    print(f"{'role':<10} {'calls':>6} {'prompt':>9} {'reused':>9} {'new':>8} {'completion':>10} {'seconds':>9}")
    total = {"calls": 0.0, "prompt": 0.0, "reused": 0.0, "completion": 0.0, "seconds": 0.0}
    for role, row in sorted(table.items()):
        new = row["prompt"] - row["reused"]
        print(f"{role:<10} {row['calls']:>6.0f} {row['prompt']:>9,.0f} {row['reused']:>9,.0f} {new:>8,.0f} "
              f"{row['completion']:>10,.0f} {row['seconds']:>9.1f}")
        for key in total:
            total[key] += row[key]
    new_total = total["prompt"] - total["reused"]
    print(f"{'all':<10} {total['calls']:>6.0f} {total['prompt']:>9,.0f} {total['reused']:>9,.0f} {new_total:>8,.0f} "
          f"{total['completion']:>10,.0f} {total['seconds']:>9.1f}")
    share = total["reused"] / total["prompt"] if total["prompt"] else 0.0
    counted = sum(int(c.reused_by_server) for c in calls)
    counted_text = f"{counted} of {len(calls)} calls counted by the server" if live else "as stored per call"
    print(f"reused {share:.1%} of prompt tokens ({counted_text})")
    floor = new_total / prompt_rate + total["completion"] / gen_rate if prompt_rate and gen_rate else 0.0
    print(f"rates: prompt {prompt_rate:.1f} tok/s, generation {gen_rate:.1f} tok/s (from the run's own calls)")
    if floor:
        print(f"floor {floor:.0f} s; observed wall {wall_s:.0f} s; observed / floor {wall_s / floor:.2f}")


async def run(args: argparse.Namespace) -> None:
    """One mempa run on the embedded model, then where its seconds went."""
    from mempa_tui.cli._parser import build_parser
    from mempa_tui.llm import client as client_module

    calls: list[LLMCallRecord] = []
    timings: list[dict[str, Any]] = []
    original_record = client_module.LLMClient._record
    original_completion = client_module.LLMClient._completion

    def record(self: Any, *a: Any, **k: Any) -> None:
        original_record(self, *a, **k)
        calls.append(self.calls[-1])

    def completion(self: Any, role: Any, spec: Any, response: Any, *a: Any, **k: Any) -> Any:
        extra = getattr(response, "timings", None) or (getattr(response, "_hidden_params", {}) or {}).get("timings")
        if isinstance(extra, dict):
            timings.append(extra)
        return original_completion(self, role, spec, response, *a, **k)

    client_module.LLMClient._record = record  # type: ignore[method-assign]
    client_module.LLMClient._completion = completion  # type: ignore[method-assign]
    metrics: dict[str, float] = {}
    original_stop = EmbeddedServer._stop

    async def stop(self: EmbeddedServer) -> None:
        # the server's own counters, read before it goes (prompt and generation tokens and seconds)
        for base in self.bases.values():
            try:
                text = httpx.get(f"{base.removesuffix('/v1')}/metrics", timeout=10).text
            except httpx.HTTPError:
                continue
            for line in text.splitlines():
                if line.startswith("llamacpp:") and " " in line:
                    name, value = line.split(" ", 1)
                    metrics[name.removeprefix("llamacpp:")] = metrics.get(name.removeprefix("llamacpp:"), 0.0) + float(value)
        await original_stop(self)

    EmbeddedServer._stop = stop  # type: ignore[method-assign]
    argv = ["run", "--user", args.user, "--memory", args.memory, "--repeats", str(args.repeats),
            "--saves", args.saves, "--local-memory", str(Path(args.saves) / "local_memory")]
    if args.quick:
        argv.append("--quick")
    if args.fresh:
        argv.append("--fresh")
    print(f"mempa {' '.join(argv)}; {load()}")
    from mempa_tui.cli._run import cmd_run

    parsed = build_parser().parse_args(argv)
    started = time.perf_counter()
    code = await cmd_run(parsed)
    wall = time.perf_counter() - started
    print(f"\nexit code {code}; {load()}")
    prompt_rate = gen_rate = 0.0
    if metrics.get("prompt_seconds_total"):
        prompt_rate = metrics["prompt_tokens_total"] / metrics["prompt_seconds_total"]
    if metrics.get("tokens_predicted_seconds_total"):
        gen_rate = metrics["tokens_predicted_total"] / metrics["tokens_predicted_seconds_total"]
    if metrics:
        print(f"server counters: {metrics.get('prompt_tokens_total', 0):,.0f} prompt tokens read in "
              f"{metrics.get('prompt_seconds_total', 0):.0f} s, {metrics.get('tokens_predicted_total', 0):,.0f} "
              f"generated in {metrics.get('tokens_predicted_seconds_total', 0):.0f} s")
    elif timings:
        read = [t for t in timings if t.get("prompt_n", 0) > 50]
        prompt_rate = sum(t["prompt_n"] for t in read) / (sum(t["prompt_ms"] for t in read) / 1000) if read else 0.0
        gen = [t for t in timings if t.get("predicted_n", 0) > 5]
        gen_rate = sum(t["predicted_n"] for t in gen) / (sum(t["predicted_ms"] for t in gen) / 1000) if gen else 0.0
    print_run_table(calls, wall, prompt_rate or args.prompt_rate, gen_rate or args.gen_rate)


async def tokens(args: argparse.Namespace) -> None:
    """The first PA prompt of a user's quick start and of its slice, counted by the model's own
    tokenizer (the server's ``/apply-template`` and ``/tokenize``; nothing is generated).

    The prompt is the one the PA sends at its first step: instructions, the offered tools, the
    step's date with an empty memory, and a short fixed user message (the simulator's real
    opening differs by a few dozen tokens). The quick start offers the domains of
    :func:`~mempa_tui.runner.setup.quick_tool_domains`; the slice offers every tool (issue 12).
    """
    from mempa_tui.agent.prompt import context_prompt
    from mempa_tui.llm.types import ChatMessage
    from mempa_tui.memory.base import Evidence
    from mempa_tui.runner.setup import pa_prefix, quick_tool_domains
    from mempa_tui.scripts.loader import load_user

    profile = load_profile(args.model)
    options = profile.options.embedded.model_copy(update={"prefix_cache_dir": None, "n_parallel": 1})
    profile = profile.model_copy(update={"options": profile.options.model_copy(update={"embedded": options})})
    weights = ensure_weights(profile.options.embedded.weights_dir)
    bundle = load_user(args.worlds, args.user)
    kinds = {"quick start": (bundle.quick_start(), quick_tool_domains(bundle)), "slice": (bundle.sliced(), None)}
    print(load())
    async with EmbeddedServer(profile, weights=weights) as ready:
        root = str(ready.default.api_base).removesuffix("/v1")
        async with httpx.AsyncClient(timeout=600) as http:
            print(f"{'timeline':<12} {'first step':<10} {'tools':>5} {'prefix tok':>10} {'first PA prompt tok':>20}")
            for kind, (part, domains) in kinds.items():
                fixed = pa_prefix(domains)
                tools = tools_for(list(fixed.tools), None, "llama_cpp") or []
                first = part.script(part.timeline.steps[0])
                context = ChatMessage(role="system", content=context_prompt(first.starts_at, Evidence(system_text="")))
                user = {"role": "user", "content": "Could you help me with this, please?"}
                counts = []
                for messages in (wire_messages(list(fixed.messages)),
                                 [*wire_messages([*fixed.messages, context]), user]):
                    prompt = (await http.post(f"{root}/apply-template",
                                              json={"messages": messages, "tools": tools})).json().get("prompt", "")
                    counts.append(len((await http.post(f"{root}/tokenize", json={"content": prompt})).json()["tokens"]))
                print(f"{kind:<12} {first.id:<10} {len(tools):>5} {counts[0]:>10,} {counts[1]:>20,}")
    print(f"after: {load()}")


async def stored(args: argparse.Namespace) -> None:
    """The per-role table of runs already stored (``mempa run`` played them), read from the store.

    Stored calls keep tokens and seconds but not the server's timings, so the prompt and
    generation rates are fitted to the run's own calls: least squares of each call's seconds on
    its new prompt tokens and its completion tokens (``--prompt-rate`` / ``--gen-rate`` override).
    Wall time is from the first run's creation to the last one's last update unless ``--wall``.
    """
    from mempa_tui.store import RunStore

    path = Path(args.saves) / "mempa.sqlite"
    calls: list[LLMCallRecord] = []
    starts, ends = [], []
    async with RunStore(path) as store:
        for run_id in args.runs.split(","):
            record = await store.get_run(run_id)
            if record is None:
                raise SystemExit(f"no run {run_id!r} in {path}")
            starts.append(record.created_at)
            ends.append(record.updated_at)
            calls.extend(row.call for row in await store.llm_calls(run_id))
    wall = args.wall or (max(ends) - min(starts)).total_seconds()
    # seconds ~ new / prompt_rate + completion / gen_rate, fitted through the origin (2x2 normal equations)
    xs = [(c.prompt_tokens - c.reused_prefix_tokens, c.completion_tokens, c.latency_s) for c in calls if c.ok]
    a = sum(n * n for n, _, _ in xs); b = sum(n * g for n, g, _ in xs); d = sum(g * g for _, g, _ in xs)  # noqa: E702
    e = sum(n * t for n, _, t in xs); f = sum(g * t for _, g, t in xs)  # noqa: E702
    det = a * d - b * b
    per_new, per_gen = ((e * d - b * f) / det, (a * f - b * e) / det) if det else (0.0, 0.0)
    prompt_rate = args.prompt_rate or (1 / per_new if per_new > 0 else 0.0)
    gen_rate = args.gen_rate or (1 / per_gen if per_gen > 0 else 0.0)
    print(f"stored runs {args.runs} in {path}; {len(calls)} calls; rates fitted to the calls' seconds; now {load()}")
    print_run_table(calls, wall, prompt_rate, gen_rate, live=False)


def main() -> None:
    """Parse the command line and run one part."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded", help="profile (default embedded)")
    sub = parser.add_subparsers(dest="part", required=True)
    r = sub.add_parser("rates")
    r.add_argument("--sizes", default="500,4000")
    r.add_argument("--generate", type=int, default=64)
    r.add_argument("--server", default="llama_cpp", choices=["llama_cpp", "llama_cpp_python"])
    r.add_argument("--python", default=None, help="interpreter that has the server package")
    r.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the profile's)")
    p = sub.add_parser("prefix")
    p.add_argument("--generate", type=int, default=48)
    v = sub.add_parser("validity")
    v.add_argument("--user", default="A")
    v.add_argument("--prompts", type=int, default=6)
    v.add_argument("--modes", default="auto,constrained")
    u = sub.add_parser("run")
    u.add_argument("--user", default="A")
    u.add_argument("--memory", default="none,file")
    u.add_argument("--repeats", type=int, default=1)
    u.add_argument("--quick", action=argparse.BooleanOptionalAction, default=True)
    u.add_argument("--fresh", action="store_true")
    u.add_argument("--saves", default="saves/bench-embedded")
    u.add_argument("--prompt-rate", type=float, default=0.0, help="fallback when the server reports no timings")
    u.add_argument("--gen-rate", type=float, default=0.0)
    t = sub.add_parser("tokens")
    t.add_argument("--user", default="A")
    t.add_argument("--worlds", default="worlds")
    s = sub.add_parser("stored")
    s.add_argument("--runs", default="A-none-embedded-s0-quick,A-file-embedded-s0-quick")
    s.add_argument("--saves", default="saves")
    s.add_argument("--wall", type=float, default=0.0, help="observed wall seconds (default: from the run records)")
    s.add_argument("--prompt-rate", type=float, default=0.0)
    s.add_argument("--gen-rate", type=float, default=0.0)
    args = parser.parse_args()
    parts = {"rates": rates, "prefix": prefix, "validity": validity, "run": run, "tokens": tokens, "stored": stored}
    asyncio.run(parts[args.part](args))


if __name__ == "__main__":
    main()
