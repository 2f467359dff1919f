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

``slots``
    Throughput of the server's parallel slots (issue 12, item 3): for each slot count (``--slots
    1,2,4``) a server with that many slots, then ``--requests`` PA-like calls, at most one per slot
    at a time. Each is a first PA turn of a quick-start conversation (the PA's instructions and
    the quick start's tools, a session-start date and memory message, a distinct user message),
    under the grammar the client sends with constrained calling. Per slot count: wall seconds,
    generated tokens, aggregate and per-request generation tok/s, prompt tokens read vs cached.

``run``
    One run of mempa (``--memory none,file --quick`` by default) on the embedded model; then, per
    role, the calls, prompt tokens, reused tokens (the server's own counts), completion tokens and
    seconds; the measured prompt and generation rates; the floor (new prompt tokens / prompt rate
    + completion tokens / generation rate), the observed wall time over the floor, and how many
    calls ran at once (slots run together, so per-role seconds can add up past the wall).

    python benchmarks/bench_embedded.py rates --sizes 500,4000
    python benchmarks/bench_embedded.py prefix
    python benchmarks/bench_embedded.py validity --prompts 6 --modes auto,constrained
    python benchmarks/bench_embedded.py slots --user A --slots 1,2,4 --requests 8
    python benchmarks/bench_embedded.py run --user A --memory none,file --quick
    python benchmarks/bench_embedded.py tokens --user A
    python benchmarks/bench_embedded.py stored --saves saves --runs A-none-embedded-s0-quick,A-file-embedded-s0-quick
    python benchmarks/bench_embedded.py reuse --saves saves --runs A-file-embedded-s0-quick,A-none-embedded-s0-quick

``tokens``
    The first PA prompt of the user's quick start (only the tool domains its scripts use) and of
    its slice (every tool), counted by the model's own tokenizer.

``stored``
    The ``run`` table for runs already played and stored (``mempa run``), read from the store.

``reuse``
    Why stored runs read prompt tokens anew: per call its prompt, the server's reused count, the
    new tokens, and where its first differing token sits against the previous call of its role;
    then the new tokens summed by cause (``benchmarks/prompt_reuse.py``; docs/prompt-reuse.md).
    Tokenizes on the embedded server (started here, or ``--tokenizer-url`` of a running one).

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
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mempa_tui.llm import LLMCallRecord, ModelProfile, load_profile  # noqa: E402
from mempa_tui.llm._wire import tools_for, wire_messages  # noqa: E402
from mempa_tui.llm.embedded import EmbeddedServer, ensure_weights  # noqa: E402
from mempa_tui.llm.runtime import prepare_runtime  # noqa: E402
from mempa_tui.llm.types import Role  # noqa: E402

if TYPE_CHECKING:
    from mempa_tui.scripts.loader import UserBundle

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


def slot_openings(quick: UserBundle, whole: UserBundle, count: int) -> list[tuple[datetime, str]]:
    """``count`` distinct first turns of PA conversations: a start date and the user's task.

    The quick start's sessions and probes come first (what a quick-start run plays, probes side by
    side on the slots), then the user's other sessions in timeline order; a task seen before is
    skipped, and past the last one the tasks come round again marked ``(request N)``, so no two
    requests share more than the cached prefix and the date message.

    Raises:
        ValueError: ``count`` is below 1, or the user has no session with a task.
    """
    if count < 1:
        raise ValueError(f"--requests must be at least 1, not {count}")
    scripts = [*(quick.step(s) for s in quick.timeline.steps if s in quick.sessions), *quick.probes.values(),
               *(whole.sessions[s] for s in whole.timeline.steps if s in whole.sessions)]
    seen: dict[str, datetime] = {}
    for script in scripts:
        if script.task and script.task not in seen:
            seen[script.task] = script.starts_at
    if not seen:
        raise ValueError(f"user {whole.label} has no session with a task to open a conversation with")
    tasks = list(seen.items())
    out = []
    for index in range(count):
        task, when = tasks[index % len(tasks)]
        out.append((when, task if index < len(tasks) else f"{task} (request {index + 1})"))
    return out


def pa_request_body(alias: str, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], *,
                    seed: int, max_tokens: int = 128, temperature: float = 0.7) -> dict[str, Any]:
    """One PA call as the client sends it under ``tool_calling: constrained`` (llama.cpp wire).

    The offered ``tools`` plus the client's reply tool, and a JSON-schema grammar under which the
    reply is one call of one of them (:func:`~mempa_tui.llm.client.constrained_call_schema`).
    ``ignore_eos`` is not set: under a grammar llama.cpp then fails the request ("Unexpected
    empty grammar stack") once the call is complete.

    Args:
        alias: the server's model name.
        messages: wire-format messages (the PA's prefix, the date/memory message, the user's).
        tools: wire-format tool dicts offered with them, without the reply tool.
        seed: sampling seed (give each request its own).
        max_tokens: completion cap.
        temperature: sampling temperature (the PA's, paper Section 4).
    """
    from mempa_tui.llm.client import _REPLY_TOOL_DICT, constrained_call_schema

    sent = [*tools, _REPLY_TOOL_DICT]  # the client appends the same reply tool
    return {"model": alias, "messages": list(messages), "tools": sent, "temperature": temperature, "seed": seed,
            "max_tokens": max_tokens, "response_format": {"type": "json_object", "schema": constrained_call_schema(sent)}}


@dataclass(frozen=True)
class SlotRequest:
    """One request of the ``slots`` part: the server's own timings, or why it failed.

    Attributes:
        seconds: wall seconds from sending to the reply (waiting for a slot excluded).
        prompt_n: prompt tokens the server read (``timings.prompt_n``).
        cache_n: prompt tokens it took from its cache (``timings.cache_n``).
        predicted_n: tokens generated (``timings.predicted_n``).
        predicted_per_second: this request's generation speed (``timings.predicted_per_second``).
        call: the name the reply called (under the grammar: an offered tool or the reply tool),
            ``(cut at max_tokens)`` when the call was not finished, else the reply's first words.
        error: why the request failed (HTTP status and body), None when it did not.
    """

    seconds: float
    prompt_n: int = 0
    cache_n: int = 0
    predicted_n: int = 0
    predicted_per_second: float = 0.0
    call: str = ""
    error: str | None = None

    @classmethod
    def from_reply(cls, seconds: float, status: int, body: dict[str, Any], text: str) -> SlotRequest:
        """Read a ``/v1/chat/completions`` reply (``text``: the raw body, for errors)."""
        if status != 200 or "choices" not in body:
            return cls(seconds=seconds, error=f"HTTP {status}: {text[:200]}")
        timings = body.get("timings") or {}
        choice = body["choices"][0]
        content = (choice.get("message") or {}).get("content") or ""
        try:
            call = str(json.loads(content).get("name", ""))
        except (ValueError, AttributeError):
            words = " ".join(content.split())[:40]
            call = "(cut at max_tokens)" if choice.get("finish_reason") == "length" else f"(not a call: {words})"
        return cls(seconds=seconds, prompt_n=int(timings.get("prompt_n", 0)), cache_n=int(timings.get("cache_n", 0)),
                   predicted_n=int(timings.get("predicted_n", 0)),
                   predicted_per_second=float(timings.get("predicted_per_second", 0.0)), call=call)


@dataclass(frozen=True)
class SlotFigures:
    """What one slot count did with its requests.

    Attributes:
        slots: the server's slots (and the most requests in flight).
        wall_s: from the first request sent to the last reply.
        requests: requests sent; ``failed``: of them, how many failed.
        generated: tokens generated, all requests.
        aggregate_tps: generated / wall.
        per_request_tps: mean of the requests' own generation speed (failed ones left out).
        prompt_read: prompt tokens read, all requests; ``prompt_cached``: taken from the cache.
    """

    slots: int
    wall_s: float
    requests: int
    failed: int
    generated: int
    aggregate_tps: float
    per_request_tps: float
    prompt_read: int
    prompt_cached: int


def slot_figures(slots: int, wall_s: float, results: Sequence[SlotRequest]) -> SlotFigures:
    """Sum one slot count's requests (a failed one counts as failed and adds no tokens)."""
    done = [r for r in results if r.error is None]
    generated = sum(r.predicted_n for r in done)
    speeds = [r.predicted_per_second for r in done if r.predicted_n]
    return SlotFigures(slots=slots, wall_s=wall_s, requests=len(results), failed=len(results) - len(done),
                       generated=generated, aggregate_tps=generated / wall_s if wall_s > 0 else 0.0,
                       per_request_tps=sum(speeds) / len(speeds) if speeds else 0.0,
                       prompt_read=sum(r.prompt_n for r in done), prompt_cached=sum(r.cache_n for r in done))


def with_slots(profile: ModelProfile, slots: int, threads: int) -> ModelProfile:
    """``profile`` with a server of ``slots`` slots and ``threads`` threads, and every spec's
    ``max_concurrency`` equal to the slots (as the shipped profile keeps them)."""
    options = profile.options.embedded.model_copy(update={"n_parallel": slots, "n_threads": threads})
    return profile.model_copy(update={
        "options": profile.options.model_copy(update={"embedded": options}),
        "default": profile.default.model_copy(update={"max_concurrency": slots}),
        "roles": {role: spec.model_copy(update={"max_concurrency": slots}) for role, spec in profile.roles.items()},
    })


async def slots(args: argparse.Namespace) -> None:
    """Aggregate and per-request generation speed of 1, 2, 4... server slots on PA-like calls.

    Per slot count: a server with that many slots (the quick start's PA prefix restored into each,
    or read once and saved under its own key), then ``--requests`` first PA turns of distinct
    quick-start conversations (:func:`slot_openings`, :func:`pa_request_body`), at most one per
    slot at a time, each with its own seed. The threads are fixed once for every slot count (the
    idle CPUs when the part starts, or ``--threads``) so the counts compare on equal terms.
    """
    from mempa_tui.agent.prompt import context_prompt
    from mempa_tui.llm.embedded import default_threads
    from mempa_tui.llm.types import ChatMessage
    from mempa_tui.memory.base import Evidence
    from mempa_tui.runner.setup import pa_prefix, quick_tool_domains
    from mempa_tui.scripts.loader import load_user

    counts = [int(n) for n in args.slots.split(",")]
    if not counts or min(counts) < 1:
        raise SystemExit(f"--slots takes slot counts of 1 or more, like 1,2,4 (got {args.slots!r})")
    base = load_profile(args.model)
    if base.runtime != "embedded" or base.options.embedded.server != "llama_cpp":
        raise SystemExit(f"profile {base.name!r} is not the embedded llama.cpp server: it has no slots to measure")
    bundle = load_user(args.worlds, args.user)
    domains = quick_tool_domains(bundle)
    fixed = pa_prefix(domains)
    tools = tools_for(list(fixed.tools), None, "llama_cpp") or []
    alias = base.default.model.split("/", 1)[-1]
    bodies = []
    for index, (when, task) in enumerate(slot_openings(bundle.quick_start(), bundle, args.requests)):
        context = ChatMessage(role="system", content=context_prompt(when, Evidence()))
        messages = wire_messages([*fixed.messages, context, ChatMessage(role="user", content=task)])
        bodies.append(pa_request_body(alias, messages, tools, seed=args.seed + index, max_tokens=args.max_tokens))
    threads = args.threads or default_threads()
    print(f"user {args.user}'s quick start: {len(tools)} tools of {', '.join(domains)} plus the reply tool; "
          f"{len(bodies)} requests, max_tokens {args.max_tokens}, temperature 0.7; {threads} threads; {load()}")
    table: list[tuple[SlotFigures, str, str]] = []
    for count in counts:
        before = load()
        print(f"\n{count} slot(s); before: {before}")
        async with AsyncExitStack() as stack:
            ready = await prepare_runtime(with_slots(base, count, threads), stack, sys.stdout, prefix=fixed)
            url = f"{ready.spec_for(Role.PA).api_base}/chat/completions"
            results: list[SlotRequest | None] = [None] * len(bodies)
            limiter = anyio.Semaphore(count)
            async with httpx.AsyncClient(timeout=ready.spec_for(Role.PA).timeout_s) as http:

                async def send(index: int) -> None:
                    async with limiter:
                        sent = time.perf_counter()
                        try:
                            reply = await http.post(url, json=bodies[index])
                        except httpx.HTTPError as exc:
                            results[index] = SlotRequest(seconds=time.perf_counter() - sent, error=str(exc)[:200])
                            return
                        try:
                            payload = reply.json()
                        except ValueError:
                            payload = {}
                        results[index] = SlotRequest.from_reply(time.perf_counter() - sent, reply.status_code,
                                                                payload if isinstance(payload, dict) else {}, reply.text)

                started = time.perf_counter()
                async with anyio.create_task_group() as group:
                    for index in range(len(bodies)):
                        group.start_soon(send, index)
                wall = time.perf_counter() - started
        after = load()
        done = [r for r in results if r is not None]
        print(f"{'request':>7} {'seconds':>8} {'read':>6} {'cached':>7} {'gen tok':>7} {'gen tok/s':>9}  call")
        for index, result in enumerate(done, 1):
            print(f"{index:>7} {result.seconds:>8.1f} {result.prompt_n:>6} {result.cache_n:>7} {result.predicted_n:>7} "
                  f"{result.predicted_per_second:>9.1f}  {result.error or result.call}")
        figures = slot_figures(count, wall, done)
        table.append((figures, before, after))
        print(f"{count} slot(s): {wall:.1f} s, {figures.generated} tokens generated, {figures.aggregate_tps:.1f} tok/s "
              f"aggregate; after: {after}")
    print(f"\n{'slots':>5} {'wall s':>7} {'failed':>6} {'gen tok':>7} {'aggregate tok/s':>15} {'per-request tok/s':>17} "
          f"{'prompt read':>11} {'cached':>8}  load before -> after (1 min)")
    for figures, before, after in table:
        print(f"{figures.slots:>5} {figures.wall_s:>7.1f} {figures.failed:>6} {figures.generated:>7} "
              f"{figures.aggregate_tps:>15.1f} {figures.per_request_tps:>17.1f} {figures.prompt_read:>11,} "
              f"{figures.prompt_cached:>8,}  {before.split()[2]} -> {after.split()[2]}")
    print("aggregate: all tokens generated / wall; per-request: the mean of the server's own "
          "timings.predicted_per_second; more slots pay off where aggregate rises with them.")


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


@dataclass(frozen=True)
class Floor:
    """A run's wall time against the model work its calls did (issue 12, "Measure").

    Attributes:
        floor_s: new prompt tokens / prompt rate + completion tokens / generation rate, summed
            over the calls (0.0 when a rate is unknown): the model's work done one call after
            another at the rates measured per request.
        wall_s: observed wall seconds.
        call_s: the calls' own seconds, summed (several slots at once: more than the wall).
    """

    floor_s: float
    wall_s: float
    call_s: float

    @property
    def ratio(self) -> float:
        """Observed wall / floor (0.0 without a floor)."""
        return self.wall_s / self.floor_s if self.floor_s else 0.0

    @property
    def overlap(self) -> float:
        """Calls in flight on average over the wall: call seconds / wall (0.0 without a wall)."""
        return self.call_s / self.wall_s if self.wall_s else 0.0


def run_floor(calls: Sequence[LLMCallRecord], wall_s: float, prompt_rate: float, gen_rate: float) -> Floor:
    """The floor of ``calls`` at the given rates (tokens/s), their summed seconds, and the wall.

    Every call counts, as in the per-role table (a failed call's prompt was still sent).
    """
    new = sum(c.prompt_tokens - c.reused_prefix_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    floor = new / prompt_rate + completion / gen_rate if prompt_rate and gen_rate else 0.0
    return Floor(floor_s=floor, wall_s=wall_s, call_s=sum(c.latency_s for c in calls))


def profile_concurrency(profile: ModelProfile | None) -> tuple[int | None, int | None]:
    """The slots a profile asks for and the most calls its client sends at once.

    Returns:
        ``(n_parallel, max_concurrency)``: the embedded server's slots (None for another runtime)
        and the smallest ``max_concurrency`` of the profile's specs (the embedded specs share one
        limit, and a shared limit takes the smallest value); ``(None, None)`` without a profile.
    """
    if profile is None:
        return None, None
    slots = profile.options.embedded.n_parallel if profile.runtime == "embedded" else None
    return slots, min(spec.max_concurrency for spec in profile.all_specs())


def floor_lines(floor: Floor, n_parallel: int | None, max_concurrency: int | None) -> list[str]:
    """What :func:`print_run_table` prints about the floor: the figures and how to read them.

    ``observed wall / floor`` alone misleads when slots run together: the rates are per request
    (each measured while other calls shared the CPU), so the floor adds up the calls' model work
    one after another, and with calls overlapping the wall can fall below it. The lines give the
    overlap beside it, and the ratio times the overlap (call seconds / floor).
    """
    if not floor.floor_s:
        return [f"no floor (a rate is unknown); observed wall {floor.wall_s:.0f} s; measured overlap "
                f"{floor.overlap:.2f} calls at once"]

    def shown(value: int | None) -> str:
        return "-" if value is None else str(value)

    lines = [
        f"floor {floor.floor_s:.0f} s; observed wall {floor.wall_s:.0f} s; observed wall / floor {floor.ratio:.2f}",
        f"concurrency: profile n_parallel {shown(n_parallel)}, max_concurrency {shown(max_concurrency)}; measured "
        f"overlap {floor.overlap:.2f} calls at once (call seconds {floor.call_s:.0f} / wall {floor.wall_s:.0f}); "
        f"observed wall / floor x overlap {floor.ratio * floor.overlap:.2f}",
    ]
    if floor.overlap:
        lines.append(
            "how to read: the floor prices each call at per-request rates measured while calls shared the CPU, "
            "one call after another, so with calls overlapping the wall can fall below it: observed wall / floor "
            f"goes down to about 1 / overlap ({1 / floor.overlap:.2f} here). Times the overlap it is call seconds "
            "/ floor: about 1.00 when the calls took only their model work at these rates (rates fitted to the "
            "calls' seconds make it about 1 by construction). An overlap below the slots is time with a slot idle "
            "(the harness's own work, or fewer calls ready than slots). With idle one-slot rates given as "
            "--prompt-rate / --gen-rate the floor is the CPU's own and 1.00 is the target."
        )
    return lines


def print_run_table(calls: list[LLMCallRecord], wall_s: float, prompt_rate: float, gen_rate: float,
                    *, live: bool = True, profile: ModelProfile | None = None) -> None:
    """The per-role table, the floor, observed wall / floor and the concurrency used (``live``:
    calls logged as they ran, with the server's own reuse flag; stored calls do not keep it;
    ``profile``: whose slots and concurrency limit to print beside the measured overlap)."""
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
    print(f"rates: prompt {prompt_rate:.1f} tok/s, generation {gen_rate:.1f} tok/s (from the run's own calls)")
    for line in floor_lines(run_floor(calls, wall_s, prompt_rate, gen_rate), *profile_concurrency(profile)):
        print(line)


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
    argv = ["run", "--user", args.user, "--model", args.model, "--memory", args.memory, "--repeats", str(args.repeats),
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
    print_run_table(calls, wall, prompt_rate or args.prompt_rate, gen_rate or args.gen_rate,
                    profile=load_profile(args.model))


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
    starts, ends, profiles = [], [], set()
    async with RunStore(path) as store:
        for run_id in args.runs.split(","):
            record = await store.get_run(run_id)
            if record is None:
                raise SystemExit(f"no run {run_id!r} in {path}")
            starts.append(record.created_at)
            ends.append(record.updated_at)
            profiles.add(record.profile)
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
    profile = None
    if len(profiles) == 1:  # the profile as it reads now (runs do not store their slots)
        from mempa_tui.llm.profile import ProfileError

        try:
            profile = load_profile(next(iter(profiles)))
        except ProfileError as exc:
            print(f"profile {next(iter(profiles))!r} not loaded ({exc}): its slots are not shown")
    else:
        print(f"runs of several profiles ({', '.join(sorted(profiles))}): slots not shown")
    print_run_table(calls, wall, prompt_rate, gen_rate, live=False, profile=profile)


def stored_tool_dicts(names: Sequence[str]) -> list[dict[str, Any]]:
    """The wire tool dicts of a stored call's offered tool names, as the client sent them: world
    tools (``mcp_state_<name>``), interaction tools (``IX_<attribute>``) and the reply tool.

    Raises:
        KeyError: a name that is none of these (names it).
    """
    from mempa_tui.ix.spec import ix_tool_spec
    from mempa_tui.llm.client import _REPLY_TOOL_DICT, REPLY_TOOL
    from mempa_tui.tools import default_registry

    registry = default_registry()
    out: list[dict[str, Any]] = []
    for name in names:
        if name == REPLY_TOOL:
            out.append(_REPLY_TOOL_DICT)
            continue
        if name.startswith("IX_"):
            spec = ix_tool_spec(name.removeprefix("IX_"))
        else:
            tool = registry.get(name.removeprefix("mcp_state_")) or registry.get(name)
            if tool is None:
                raise KeyError(f"stored call offers tool {name!r}, which the registry does not have")
            spec = tool.spec()
        out.extend(tools_for([spec], None, "llama_cpp") or [])
    return out


def _prompt_reuse() -> Any:
    """The ``benchmarks/prompt_reuse.py`` module (the benchmarks folder is not a package)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import prompt_reuse

    return prompt_reuse


async def load_stored_calls(saves: str | Path, runs: str = "") -> tuple[list[Any], dict[tuple[str, str, int], float], list[str]]:
    """The stored calls (with prompts) of ``runs`` (comma-separated; empty: every run, oldest first)
    and each step's and probe repeat's start time, read from ``<saves>/mempa.sqlite`` read-only.

    Returns:
        ``(calls, starts, run ids)``: :class:`prompt_reuse.StoredCall` of every successful call
        whose prompt is stored; ``(run, step or probe, repeat) -> POSIX seconds``.

    Raises:
        SystemExit: a run id the store does not have.
    """
    from mempa_tui.store import RunStore

    pr = _prompt_reuse()
    path = Path(saves) / "mempa.sqlite"
    calls: list[Any] = []
    starts: dict[tuple[str, str, int], float] = {}
    async with RunStore(path, read_only=True) as store:
        ids = runs.split(",") if runs else [r.id for r in sorted(await store.list_runs(), key=lambda r: r.created_at)]
        for run_id in ids:
            if await store.get_run(run_id) is None:
                raise SystemExit(f"no run {run_id!r} in {path}")
            for step in await store.steps(run_id):
                starts[(run_id, step.step_id, 0)] = step.started_at.timestamp()
            for probe in await store.probe_results(run_id):
                starts[(run_id, probe.probe_id, probe.repeat)] = probe.started_at.timestamp()
            for row in await store.llm_calls(run_id):
                if not row.call.ok or not row.prompt_stored or row.call_id is None:
                    continue
                full = (await store.llm_call(run_id, row.call_id)).call
                assert full.prompt is not None
                calls.append(pr.StoredCall(
                    call_id=row.call_id, run_id=run_id, unit=(row.step_id, row.repeat), seq=row.seq,
                    role=full.role.value, model=full.model, prompt_tokens=full.prompt_tokens,
                    reused=full.reused_prefix_tokens, latency_s=full.latency_s,
                    completion_tokens=full.completion_tokens,
                    messages=list(full.prompt.messages), tools=list(full.prompt.tools)))
    return calls, starts, ids


async def tokenize_calls(calls: Sequence[Any], root_of: Any) -> tuple[dict[int, list[int]], dict[int, str]]:
    """Each call's prompt rendered by the server's chat template (``/apply-template``, the tools
    rebuilt from their stored names) and tokenized (``/tokenize``); ``root_of(role)`` is the server
    root URL for the role. Returns ``(call id -> tokens, call id -> rendered text)``."""
    tokens: dict[int, list[int]] = {}
    texts: dict[int, str] = {}
    async with httpx.AsyncClient(timeout=600) as http:
        for call in calls:
            root = root_of(call.role)
            body: dict[str, Any] = {"messages": wire_messages(list(call.messages))}
            if call.tools:
                body["tools"] = stored_tool_dicts(call.tools)
            text = (await http.post(f"{root}/apply-template", json=body)).json()["prompt"]
            texts[call.call_id] = text
            tokens[call.call_id] = (await http.post(f"{root}/tokenize", json={
                "content": text, "add_special": False, "parse_special": True})).json()["tokens"]
    return tokens, texts


def tokenizer_server(model: str) -> EmbeddedServer:
    """The profile's embedded servers with nothing cached or saved (only their templates and
    tokenizers are used); use as ``async with``."""
    profile = load_profile(model)
    options = profile.options.embedded.model_copy(update={"prefix_cache_dir": None, "n_parallel": 1, "cache_ram_mib": 0})
    return EmbeddedServer(profile.model_copy(update={"options": profile.options.model_copy(update={"embedded": options})}))


async def reuse(args: argparse.Namespace) -> None:
    """Per stored call, why its prompt tokens were read anew (``benchmarks/prompt_reuse.py``)."""
    pr = _prompt_reuse()
    calls, starts, runs = await load_stored_calls(args.saves, args.runs)
    ordered = pr.time_order(calls, starts)
    print(f"{len(ordered)} stored calls of {', '.join(runs)} in {args.saves}, replayed in the order they ran; {load()}")
    if args.tokenizer_url:
        url = args.tokenizer_url.rstrip("/").removesuffix("/v1")

        def root_of(role: str) -> str:
            return url

        tokens, texts = await tokenize_calls(ordered, root_of)
        rows = await _analyse_with(pr, ordered, tokens, texts, root_of)
    else:  # the profile's own servers (both models where roles name two)
        server = tokenizer_server(args.model)
        async with server:
            def served(role: str) -> str:
                return server.base_for(Role(role)).removesuffix("/v1")

            tokens, texts = await tokenize_calls(ordered, served)
            rows = await _analyse_with(pr, ordered, tokens, texts, served)
    pr.print_report(rows)
    modelled = pr.replay_slot_cache(ordered, tokens)
    matched = sum(1 for c in ordered if abs(modelled[c.call_id] - c.reused) <= 1)
    print(f"the one-slot cache model (prompt_reuse.replay_slot_cache) gives the server's count (within a token) "
          f"for {matched} of {len(ordered)} calls (no saved prefix state assumed)")


async def _analyse_with(pr: Any, ordered: Sequence[Any], tokens: dict[int, list[int]], texts: dict[int, str],
                        roots: Any) -> Any:
    """Run :func:`prompt_reuse.analyse`, mapping token positions to characters on the server."""
    by_id = {c.call_id: c for c in ordered}
    needed: dict[tuple[int, int], int] = {}
    # two passes: find the positions analyse asks for, detokenize them, then analyse for real
    pr.analyse(ordered, tokens, lambda cid, pos: needed.setdefault((cid, pos), 0), texts)
    async with httpx.AsyncClient(timeout=600) as http:
        for cid, pos in needed:
            root = roots(by_id[cid].role)
            needed[(cid, pos)] = len((await http.post(f"{root}/detokenize",
                                                      json={"tokens": tokens[cid][:pos]})).json()["content"])
    return pr.analyse(ordered, tokens, lambda cid, pos: needed[(cid, pos)], texts)


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
    sl = sub.add_parser("slots")
    sl.add_argument("--user", default="A")
    sl.add_argument("--worlds", default="worlds")
    sl.add_argument("--slots", default="1,2,4", help="slot counts to measure, comma-separated")
    sl.add_argument("--requests", type=int, default=8, help="requests per slot count")
    sl.add_argument("--max-tokens", type=int, default=128)
    sl.add_argument("--seed", type=int, default=1, help="seed of the first request (the others count on)")
    sl.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the idle CPUs, once)")
    t = sub.add_parser("tokens")
    t.add_argument("--user", default="A")
    t.add_argument("--worlds", default="worlds")
    s = sub.add_parser("stored")
    s.add_argument("--runs", default="A-none-embedded-s0-quick,A-file-embedded-s0-quick")
    s.add_argument("--saves", default="saves")
    s.add_argument("--wall", type=float, default=0.0, help="observed wall seconds (default: from the run records)")
    s.add_argument("--prompt-rate", type=float, default=0.0)
    s.add_argument("--gen-rate", type=float, default=0.0)
    ru = sub.add_parser("reuse")
    ru.add_argument("--saves", default="saves")
    ru.add_argument("--runs", default="", help="run ids, comma-separated (default: every run, oldest first)")
    ru.add_argument("--tokenizer-url", default="", help="a running llama.cpp server of the model (default: start one)")
    args = parser.parse_args()
    parts = {"rates": rates, "prefix": prefix, "validity": validity, "slots": slots, "run": run, "tokens": tokens,
             "stored": stored, "reuse": reuse}
    asyncio.run(parts[args.part](args))


if __name__ == "__main__":
    main()
