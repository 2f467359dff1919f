"""Why stored model calls read prompt tokens anew: the ``reuse`` part of ``bench_embedded.py``.

For runs already played on the embedded model (``mempa run``, stored with each call's prompt and
the server's own count of reused prompt tokens), this puts the calls back in the order they ran,
renders and tokenizes each prompt as the server did (its ``/apply-template`` and ``/tokenize``),
and prints per call: its prompt, the reused tokens the server reported, the new ones, the common
prefix with the previous call of the same role in the same step or probe and where the first
differing token sits (message, tools block or section heading), and the longest common prefix
with any earlier prompt on the same model server. Then it sums the new tokens by cause:

``unit start``
    the first call of a role in a step or probe (new date, memory, task), by where it differs
    from the best earlier prompt;
``evicted``
    tokens the previous call of the same role and unit shared with this one that the server no
    longer held (another conversation had taken its slot: llama.cpp's host cache keeps a slot's
    state only when a request keeps under half of it);
``changed``
    the prompt differs from the previous call of its role before that prompt's end (a tool
    offer that changed, a part that moves every turn placed before a stable one), by where;
``appended``
    only new content at the end (tool results, the user's next message): what a cache cannot save.

Order: each step's or probe's calls in their logged order, the first when the unit started and
each next one when the previous ended, one call at a time across all units (the embedded profile
serves every role from one CPU group). Probes that ran side by side interleave call by call.

    python benchmarks/bench_embedded.py reuse --saves saves --runs A-file-embedded-s0-quick,A-none-embedded-s0-quick
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mempa_tui.llm.types import ChatMessage

__all__ = [
    "CallReuse",
    "StoredCall",
    "analyse",
    "breakdown",
    "common_prefix",
    "print_report",
    "replay_slot_cache",
    "time_order",
    "where_in_prompt",
]


@dataclass(frozen=True)
class StoredCall:
    """One stored model call as the analysis needs it.

    Attributes:
        call_id: the store's id of the call.
        run_id: its run.
        unit: ``(step or probe id, repeat)`` that made it.
        seq: its place among the unit's calls.
        role: the role's value (``pa``, ``simulator``...).
        model: the model string (one server per model on the embedded profile).
        prompt_tokens: prompt tokens the server counted.
        reused: prompt tokens the server reported as taken from its cache.
        latency_s: seconds the call took.
        completion_tokens: tokens it generated.
        messages: the messages sent.
        tools: names of the offered tools, in order.
    """

    call_id: int
    run_id: str
    unit: tuple[str, int]
    seq: int
    role: str
    model: str
    prompt_tokens: int
    reused: int
    latency_s: float
    completion_tokens: int = 0
    messages: Sequence[ChatMessage] = ()
    tools: Sequence[str] = ()


@dataclass
class CallReuse:
    """What the analysis found for one call (token counts are the server's tokens).

    Attributes:
        call: the call.
        tokens: its prompt's length as rendered and tokenized here.
        previous: the id of the previous call of the same run, unit and role (None: the first).
        previous_common: common prefix with that call's prompt, in tokens (0 without one).
        where: where the first differing token sits (vs the previous call; vs the best earlier
            prompt for a unit's first call): ``<role> message N`` and a tools-block or heading note.
        best_common: the longest common prefix with any earlier prompt on the same model server.
        best_from: the call id that gives it (None: nothing earlier).
        last_on_server: the call id the server ran just before this one (what its slot held).
        causes: new tokens split by cause, ``(cause, detail) -> tokens``.
    """

    call: StoredCall
    tokens: int
    previous: int | None = None
    previous_common: int = 0
    where: str = ""
    best_common: int = 0
    best_from: int | None = None
    last_on_server: int | None = None
    causes: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def new(self) -> int:
        """Prompt tokens read anew (the server's counts)."""
        return max(0, self.call.prompt_tokens - self.call.reused)


def time_order(calls: Sequence[StoredCall], starts: Mapping[tuple[str, str, int], float],
               gap_s: float = 0.05) -> list[StoredCall]:
    """The calls in the order they ran, replayed on one server that serves one call at a time.

    Args:
        calls: stored calls of one or more runs.
        starts: ``(run id, step or probe id, repeat) -> start time`` in seconds (any epoch).
        gap_s: harness time between a unit's calls (only breaks ties between units).

    Returns:
        The calls in replayed order (each unit's in ``seq`` order).

    Raises:
        KeyError: a call's unit has no start time (names it).
    """
    units: dict[tuple[str, str, int], list[StoredCall]] = {}
    for call in calls:
        units.setdefault((call.run_id, *call.unit), []).append(call)
    ready: list[tuple[float, int, tuple[str, str, int], int]] = []
    for n, (key, items) in enumerate(units.items()):
        items.sort(key=lambda c: c.seq)
        if key not in starts:
            raise KeyError(f"no start time for {key[1]} repeat {key[2]} of run {key[0]}")
        heapq.heappush(ready, (starts[key], n, key, 0))
    clock, out = 0.0, []
    while ready:
        at, n, key, index = heapq.heappop(ready)
        clock = max(clock, at)
        call = units[key][index]
        out.append(call)
        clock += call.latency_s
        if index + 1 < len(units[key]):
            heapq.heappush(ready, (clock + gap_s, n, key, index + 1))
    return out


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


_HEADING = re.compile(r"(?m)^(#{1,3} [^\n]{1,60}|[A-Z][^\n]{0,58}:)$")
"""A Markdown heading, or a short line that ends in a colon and labels what follows
(``The conversation so far:``)."""


def where_in_prompt(text: str, offset: int) -> str:
    """Where character ``offset`` of a prompt rendered in ChatML (Qwen's template) falls.

    Returns:
        ``<role> message N`` (N counts the template's blocks from 1), then ``tools block`` when the
        offset is inside the tool schemas, else the last heading before it in that block (a
        Markdown heading such as ``# Today's conversation`` or a labelling line such as ``The
        conversation so far:``), if any; ``end`` at the prompt's end.
    """
    if offset >= len(text):
        return "end"
    head = text[:offset]
    start = head.rfind("<|im_start|>")
    if start < 0:
        return "before the first message"
    role = head[start + len("<|im_start|>"):].split("\n", 1)[0] or "?"
    label = f"{role} message {head.count('<|im_start|>')}"
    block = head[start:]
    if block.rfind("\n<tools>") > block.rfind("\n</tools>"):  # the intro names the tags inline, not after a newline
        return f"{label}, tools block"
    headings = _HEADING.findall(block)
    return f"{label}, {headings[-1]}" if headings else label


def analyse(ordered: Sequence[StoredCall], tokens: Mapping[int, Sequence[int]],
            offset_of: Callable[[int, int], int], texts: Mapping[int, str]) -> list[CallReuse]:
    """Explain each call's new prompt tokens (see the module docstring for the causes).

    Args:
        ordered: calls in the order they ran (:func:`time_order`).
        tokens: call id -> its prompt's tokens as the server reads them.
        offset_of: ``(call id, token position) -> character offset`` in that call's rendered text.
        texts: call id -> its rendered prompt text.

    Returns:
        One :class:`CallReuse` per call, in order; each one's causes add up to its new tokens.
    """
    seen: dict[str, list[int]] = {}  # model server -> earlier call ids, in order
    last_of: dict[tuple[str, tuple[str, int], str], int] = {}
    by_id = {c.call_id: c for c in ordered}
    out = []
    for call in ordered:
        mine = tokens[call.call_id]
        earlier = seen.setdefault(call.model, [])
        row = CallReuse(call=call, tokens=len(mine), last_on_server=earlier[-1] if earlier else None)
        for other in earlier:
            common = common_prefix(tokens[other], mine)
            if common > row.best_common:
                row.best_common, row.best_from = common, other
        key = (call.run_id, call.unit, call.role)
        previous = last_of.get(key)
        new = row.new
        if previous is None:
            row.where = where_in_prompt(texts[call.call_id], offset_of(call.call_id, call.reused)) if new else "end"
            row.causes[("unit start", row.where if row.best_common else "nothing cached")] = new
        else:
            row.previous = previous
            row.previous_common = common_prefix(tokens[previous], mine)
            evicted = min(new, max(0, row.previous_common - call.reused - 1))  # llama.cpp re-reads the last token
            if evicted:
                held = by_id[row.last_on_server] if row.last_on_server is not None else None
                detail = f"slot held {held.role} of {held.unit[0]}" if held is not None else "slot empty"
                row.causes[("evicted", detail)] = evicted
            rest = new - evicted
            if row.previous_common < len(tokens[previous]):
                row.where = where_in_prompt(texts[call.call_id], offset_of(call.call_id, row.previous_common))
                if rest:
                    row.causes[("changed", row.where)] = rest
            elif rest:
                row.where = "end"
                row.causes[("appended", "")] = rest
        last_of[key] = call.call_id
        earlier.append(call.call_id)
        out.append(row)
    return out


def breakdown(rows: Sequence[CallReuse]) -> list[tuple[str, str, str, int, int]]:
    """New tokens summed by ``(role, cause, detail)``, largest first, with the calls counted.

    Returns:
        ``(role, cause, detail, tokens, calls)`` tuples.
    """
    tokens: Counter[tuple[str, str, str]] = Counter()
    calls: Counter[tuple[str, str, str]] = Counter()
    for row in rows:
        for (cause, detail), n in row.causes.items():
            tokens[(row.call.role, cause, detail)] += n
            calls[(row.call.role, cause, detail)] += 1
    return [(*key, n, calls[key]) for key, n in tokens.most_common()]


def print_report(rows: Sequence[CallReuse], *, print_: Callable[[str], None] = print) -> None:
    """The per-call table, then the breakdown by cause and the totals."""
    print_(f"{'#':>3} {'id':>5} {'run':<22} {'step or probe':<31} {'seq':>3} {'role':<9} {'prompt':>6} "
           f"{'reused':>6} {'new':>5} {'prev':>5} {'common':>6}  first difference vs the previous call of "
           "the role (best earlier prompt: common from call)")
    for n, row in enumerate(rows, 1):
        c = row.call
        check = "" if row.tokens == c.prompt_tokens else f"  [rendered {row.tokens} tokens here]"
        previous = "-" if row.previous is None else str(row.previous)
        print_(f"{n:>3} {c.call_id:>5} {c.run_id[:22]:<22} {c.unit[0][:31]:<31} {c.seq:>3} {c.role:<9} "
               f"{c.prompt_tokens:>6} {c.reused:>6} {row.new:>5} {previous:>5} {row.previous_common:>6}  "
               f"{row.where} (best {row.best_common} from {row.best_from}){check}")
    total_new = sum(r.new for r in rows)
    total = sum(r.call.prompt_tokens for r in rows)
    print_("")
    print_(f"{'new tokens':>10} {'share':>6} {'calls':>5}  role / cause / where")
    for role, cause, detail, n, calls in breakdown(rows):
        print_(f"{n:>10,} {n / max(1, total_new):>6.1%} {calls:>5}  {role} / {cause}" + (f" / {detail}" if detail else ""))
    share = 1 - total_new / total if total else 0.0
    print_(f"all: {len(rows)} calls, {total:,} prompt tokens, {total - total_new:,} reused ({share:.1%}), "
           f"{total_new:,} new")


def replay_slot_cache(ordered: Sequence[StoredCall], tokens: Mapping[int, Sequence[int]], *,
                      restored: Mapping[str, Sequence[int]] | None = None,
                      similarity: Mapping[str, float] | float = 0.1,
                      generated: Mapping[int, Sequence[int]] | None = None) -> dict[int, int]:
    """The reused tokens of each call on one-slot llama.cpp servers with a host prompt cache.

    A model of what the server does (its ``get_available_slot`` and ``server_prompt_cache``), to
    price prompt layouts, call orders and settings that were not run (checked against the stored
    counts of real runs: docs/prompt-reuse.md). One server per model, one slot each. A request
    first looks at the slot: when the common prefix covers more than ``similarity`` of the request
    (llama.cpp's ``slot_prompt_similarity``, 0.1 by default) and at least half of what the slot
    holds, the slot keeps that prefix and reads the rest, and the host cache is not consulted.
    Otherwise (and so on every request when ``similarity`` is 1.0 or more: no prefix covers more
    than all of a request) the slot's state is saved to the cache, unless a cached state already
    holds all of it, and cached states that the slot's holds whole are dropped; then the cached
    state that keeps a larger share of itself and covers a larger share of the request than the
    slot does (skipping any that would keep under a quarter of itself; oldest first, each next
    one must beat the best so far on both) is moved into the slot. The last prompt token is
    always read. After a call the slot holds its prompt and as many tokens again as it generated
    (never matched: a reply is not re-sent verbatim in these prompts, except a judge retry, which
    this undercounts). The cache's size limit is not modelled (4 GiB holds every state of a quick
    start).

    Args:
        ordered: calls in the order they ran.
        tokens: call id -> prompt tokens.
        restored: model -> the tokens a saved prefix state puts into the slot at server start.
        similarity: the servers' ``slot_prompt_similarity``, one for all or per model (missing
            models: 0.1).
        generated: call id -> the tokens its reply left in the slot where they are known (to price
            a reply written exactly as the next prompt renders it); others never match.

    Returns:
        call id -> reused prompt tokens.
    """
    slots: dict[str, list[int]] = {m: list(t) for m, t in (restored or {}).items()}
    caches: dict[str, list[list[int]]] = {}
    out: dict[int, int] = {}
    for call in ordered:
        want = list(tokens[call.call_id])
        slot = slots.get(call.model, [])
        cache = caches.setdefault(call.model, [])
        threshold = similarity if isinstance(similarity, (int, float)) else similarity.get(call.model, 0.1)
        common = common_prefix(slot, want)
        keep = common / len(slot) if slot else 0.0
        cover = common / len(want) if want else 0.0
        if not slot or cover <= threshold or keep < 0.5:
            if slot and not any(common_prefix(state, slot) == len(slot) for state in cache):
                cache[:] = [state for state in cache if common_prefix(state, slot) < len(state)]
                cache.append(slot)
            best: list[int] | None = None
            for state in cache:
                shared = common_prefix(state, want)
                state_keep, state_cover = shared / len(state), shared / len(want)
                if state_keep < 0.25:
                    continue
                if state_keep > keep and state_cover > cover:
                    best, keep, cover = state, state_keep, state_cover
            if best is not None:
                cache.remove(best)
                slot = best
        out[call.call_id] = min(common_prefix(slot, want), max(0, len(want) - 1))
        reply = list((generated or {}).get(call.call_id, ()))
        slots[call.model] = want + reply + [-1] * max(0, call.completion_tokens - len(reply))
    return out
