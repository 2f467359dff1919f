"""How good each packaged model is at File memory's consolidation (issue 12; a benchmark, not a test).

``python benchmarks/bench_memory.py consolidation --saves DIR --run RUN [--models 0.5b,1.5b]``

Replays a stored run's consolidation chain on each packaged embedded model. The rounds are the
run's first-attempt MEMORY-role prompts (a retry's prompt is the first one plus the exchange); the
turns each round folded in are read back from the prompt's turn section (the text
:meth:`~mempa_tui.memory.base.TurnRecord.as_text` wrote) into turn records. Each model gets its own
:class:`~mempa_tui.memory.FileMemory`, consolidating at each session's end as the quick start
does: its turns are written and the session is ended, so each round's prompt is rebuilt by today's
code with that model's own MEMORY.md from its previous round, a failed round's turns stay pending
into the next one, and the reply checks, the retry and the counted reasons are the real ones.

Prints per model and round: seconds, prompt and completion tokens and finish reason of each call
(``+`` between a first try and its retry), usable or the rejection reason (a refused round's
replies whole, with the reason), and MEMORY.md's size
after the round; then per model the share of usable rounds with the failed rounds counted per
reason code (``copies_assistant``, ``repeats``... as in Health), and each round's MEMORY.md opening.
Needs the ``embedded`` extra and both models' weights under ``models/weights`` of ``--root``
(default: the current folder). Timings on a shared machine are noisy: printed with the load average.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import chdir
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mempa_tui.ix.types import CallStatus, ExecutedCall, IXCall  # noqa: E402
from mempa_tui.llm import LLMClient, ModelProfile, load_profile  # noqa: E402
from mempa_tui.llm.embedded import EmbeddedServer  # noqa: E402
from mempa_tui.llm.types import Role  # noqa: E402
from mempa_tui.memory import FileMemory, SessionInfo, TurnRecord  # noqa: E402
from mempa_tui.store import RunStore  # noqa: E402
from mempa_tui.taxonomy import Context  # noqa: E402

MODELS = {"0.5b": "qwen2.5-coder-0.5b-instruct", "1.5b": "qwen2.5-coder-1.5b-instruct"}
"""``--models`` names -> the embedded server's model aliases."""

_HEAD = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}),? (work|personal)(?: (\S+))?\]$", re.M)
"""A rendered turn's header: ``[date time context step_id]`` (before issue 12's change) or
``[date time, context]`` (the consolidation prompt since: no step id)."""
_TOOL = re.compile(r"^Tool (\S+?)\((.*)\) -> (.*)$", re.S)
_IX = re.compile(r"^Interaction choice (\S+) = (.*)$")
_DATES = re.compile(r"datetime\.(date|datetime|time)\(([\d, ]+)\)")


@dataclass
class Round:
    """One stored consolidation round: its step and the turns it folded in."""

    step_id: str
    turns: list[TurnRecord]


@dataclass
class RoundResult:
    """What one model made of one round."""

    step_id: str
    seconds: float
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    finish: list[str] = field(default_factory=list)
    verdict: str = ""
    memory_chars: int = 0
    memory_head: str = ""

    @property
    def usable(self) -> bool:
        """Whether the round's reply was stored."""
        return self.verdict == "usable"


def _arguments(text: str) -> dict[str, object]:
    """A stored prompt's tool arguments (a Python repr before issue 12, JSON after) as a dict;
    ``datetime.date(2026, 6, 4)`` in a repr becomes ``"2026-06-04"``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        def iso(m: re.Match[str]) -> str:
            parts = [int(p) for p in m.group(2).split(",")]
            return repr(getattr(dt, m.group(1))(*parts).isoformat())

        value = ast.literal_eval(_DATES.sub(iso, text))
    if not isinstance(value, dict):
        raise ValueError(f"tool arguments are not an object: {text[:80]}")
    return value


def parse_turns(section: str, step_id: str = "") -> list[TurnRecord]:
    """Turn records back from a consolidation prompt's turn section (the ``as_text`` renderings).

    ``step_id`` is the turns' step where their headers name none (the prompt since issue 12).

    Raises:
        ValueError: a block does not read as a rendered turn (the message quotes it).
    """
    heads = list(_HEAD.finditer(section))
    turns: list[TurnRecord] = []
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(section)
        body = section[head.end():end].strip("\n")
        user: list[str] = []
        reply: list[str] = []
        calls: list[ExecutedCall] = []
        ix: list[IXCall] = []
        current: list[str] | None = None
        for line in body.split("\n"):
            if line.startswith("User: ") and not user:
                current = user
                user.append(line.removeprefix("User: "))
            elif line.startswith("Tool ") and (m := _TOOL.match(line)):
                calls.append(ExecutedCall(call_id=f"c{len(calls)}", tool=m.group(1), arguments=_arguments(m.group(2)),
                                          status=CallStatus.EXECUTED, result=m.group(3)))
                current = None
            elif m := _IX.match(line):
                ix.append(IXCall(attribute=m.group(1), setting=m.group(2)))
                current = None
            elif line.startswith("Assistant: ") and not reply:
                current = reply
                reply.append(line.removeprefix("Assistant: "))
            elif current is not None:
                current.append(line)
            elif line.strip():
                raise ValueError(f"unreadable line in a stored turn: {line[:100]!r}")
        turns.append(TurnRecord(
            step_id=head.group(3) or step_id, context=Context(head.group(2)), at=dt.datetime.fromisoformat(head.group(1)),
            turn_index=index, user_message="\n".join(user).strip(), tool_calls=calls, ix_calls=ix,
            reply="\n".join(reply).strip()))
    return turns


async def stored_rounds(saves: Path, run_id: str) -> list[Round]:
    """The run's consolidation rounds in order: each first-attempt MEMORY-role prompt's turns.

    Raises:
        SystemExit: the run has no stored consolidation prompt.
    """
    rounds: list[Round] = []
    previous: list[str] = []  # the last round's turns as rendered, all of them
    async with RunStore(saves / "mempa.sqlite") as store:
        for row in await store.llm_calls(run_id):
            if row.call.role != Role.MEMORY or row.call_id is None:
                continue
            full = await store.llm_call(run_id, row.call_id)
            messages = full.call.prompt.messages if full.call.prompt else []
            if len(messages) != 2:  # a retry: the first prompt plus the rejected exchange
                continue
            section = messages[1].content.split("## Turns to fold in", 1)[-1]
            section = section.split("\n", 1)[-1].rsplit("\n\nAnswer with", 1)[0]
            turns = parse_turns(section, row.step_id or "")
            rendered = [t.as_text(with_step=False) for t in turns]
            # a round that failed in the stored run left its turns pending: the next round's prompt
            # starts with them again, and the replay's own File memory carries them itself
            carried = len(previous) if previous and rendered[:len(previous)] == previous else 0
            previous = rendered
            rounds.append(Round(step_id=row.step_id, turns=turns[carried:]))
    if not rounds:
        raise SystemExit(f"run {run_id} in {saves} has no stored consolidation prompt")
    return rounds


def memory_profile(ready: ModelProfile, alias: str) -> ModelProfile:
    """``ready`` with the memory role served by the role that serves ``alias`` (its base and window)."""
    memory = ready.spec_for(Role.MEMORY)
    for spec in ready.all_specs():
        if spec.model.endswith("/" + alias):
            role = memory.model_copy(update={"model": spec.model, "api_base": spec.api_base,
                                             "context_window": spec.context_window})
            return ready.model_copy(update={"roles": {**ready.roles, Role.MEMORY: role}})
    raise SystemExit(f"the profile serves no role on {alias}")


async def replay(ready: ModelProfile, alias: str, rounds: Sequence[Round], folder: Path) -> list[RoundResult]:
    """One model's chain: a File memory fed each round's turns, consolidating at each session's end."""
    client = LLMClient(memory_profile(ready, alias))
    mem = FileMemory(client, folder, consolidate_at_tokens=10**9, consolidate_to_tokens=10**9 - 1,
                     consolidate_at_session_end=True)
    results = []
    for rnd in rounds:
        for turn in rnd.turns:
            await mem.write(turn)
        before = len(client.calls)
        failures = mem.stats.consolidation_failures
        started = time.perf_counter()
        at = rnd.turns[-1].at if rnd.turns else dt.datetime(2026, 1, 1)
        context = rnd.turns[-1].context if rnd.turns else Context.WORK
        await mem.end_session(SessionInfo(step_id=rnd.step_id, context=context, at=at))
        calls = client.calls[before:]
        stats = mem.stats
        verdict = "usable"
        if stats.consolidation_failures > failures:
            verdict = (stats.last_failure or "unusable").split(":", 1)[0]
        results.append(RoundResult(
            step_id=rnd.step_id, seconds=time.perf_counter() - started,
            prompt_tokens=[c.prompt_tokens for c in calls], completion_tokens=[c.completion_tokens for c in calls],
            finish=[(c.reply.finish_reason if c.reply else None) or ("error" if not c.ok else "?") for c in calls],
            verdict=verdict, memory_chars=len(mem.memory_md.strip()),
            memory_head=" ".join(mem.memory_md.split())[:160]))
        print(f"  {alias} {rnd.step_id}: {results[-1].verdict} ({results[-1].seconds:.0f} s)", flush=True)
        if verdict != "usable":  # what was refused, whole, and why (the reason is the last attempt's)
            print(f"    why: {stats.last_failure}")
            for number, call in enumerate(calls, 1):
                text = call.reply.text if call.reply else ""
                print(f"    reply {number}: {text}", flush=True)
    return results


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def reason_counts(results: Sequence[RoundResult]) -> str:
    """``; unusable: copies_assistant 2, repeats 1`` (failed rounds per reason code, most first),
    or ``""`` when every round was usable."""
    counts = Counter(r.verdict for r in results if not r.usable)
    if not counts:
        return ""
    return "; unusable: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def table(by_model: dict[str, list[RoundResult]]) -> str:
    """The printed table, the usable share per model, and each round's MEMORY.md opening."""
    lines = ["| model | round | seconds | prompt tokens | completion tokens | finish | verdict | MEMORY.md chars |",
             "|---|---|--:|--:|--:|---|---|--:|"]
    for model, results in by_model.items():
        for r in results:
            lines.append(f"| {model} | {r.step_id} | {r.seconds:.1f} | {'+'.join(map(str, r.prompt_tokens))} | "
                         f"{'+'.join(map(str, r.completion_tokens))} | {'+'.join(r.finish)} | {r.verdict} | "
                         f"{r.memory_chars} |")
    lines.append("")
    for model, results in by_model.items():
        usable = sum(r.usable for r in results)
        lines.append(f"{model}: {usable}/{len(results)} rounds usable ({100 * usable / max(1, len(results)):.0f}%), "
                     f"{sum(r.seconds for r in results):.0f} s in all{reason_counts(results)}")
    lines.append("")
    for model, results in by_model.items():
        for r in results:
            lines.append(f"{model} {r.step_id} MEMORY.md: {r.memory_head or '(empty)'}")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    """Read the rounds, start the embedded server, replay each model's chain, print the table."""
    saves = Path(args.saves).resolve()
    rounds = await stored_rounds(saves, args.run)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise SystemExit(f"--models: unknown {unknown}; known {sorted(MODELS)}")
    print(f"{args.run}: {len(rounds)} consolidation round(s) "
          f"({', '.join(f'{r.step_id} {len(r.turns)} turn(s)' for r in rounds)}); {_load()}", flush=True)
    by_model: dict[str, list[RoundResult]] = {}
    with chdir(args.root), tempfile.TemporaryDirectory(prefix="mempa-consolidation-") as tmp:
        async with EmbeddedServer(load_profile(args.model)) as ready:
            for name in names:
                by_model[name] = await replay(ready, MODELS[name], rounds, Path(tmp) / name)
    print()
    print(table(by_model))
    print(f"after: {_load()}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``consolidation`` part's options."""
    parser.add_argument("--saves", required=True, help="folder holding mempa.sqlite (copy a live one first)")
    parser.add_argument("--run", required=True, help="a stored File memory run")
    parser.add_argument("--models", default="0.5b,1.5b", help="packaged models, comma-separated")
    parser.add_argument("--model", default="embedded", help="profile to start (default embedded)")
    parser.add_argument("--root", default=".", help="folder whose models/weights holds the GGUFs (default: here)")
