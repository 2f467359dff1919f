"""``mempa show``: a stored run's steps and probes, one step or probe in full, or runs compared
probe by probe (issue 16). The logic is in :mod:`mempa_tui.runner._browse`; this module prints."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mempa_tui.cli._commands import _need_database
from mempa_tui.cli._errors import UserError, unwritable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mempa_tui.runner._browse import CompareRow, MemoryView, ProbeFilter, ProbeLine, RunListing, StepDetail
    from mempa_tui.runner._episode_events import EpisodeEvent, EvidenceEvent

__all__ = ["cmd_show", "detail_text", "event_lines", "listing_text"]


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _score(value: int | None) -> str:
    return "-" if value is None else str(value)


def _brs_cell(probe: ProbeLine) -> str:
    """A probe repeat's BRS as scored; a floored final probe's reads ``1 (floor)`` (Appendix F.2)."""
    value = _score(probe.brs_scored)
    return f"{value} (floor)" if probe.floored and probe.brs_scored is not None else value


def listing_text(listing: RunListing, probe_filter: ProbeFilter | None = None) -> str:
    """The run's header, its steps, and its probe repeats (filtered by ``probe_filter``, a
    :class:`~mempa_tui.runner._browse.ProbeFilter`, when given)."""
    run = listing.run
    lines = [f"run {run.id}: user {run.user}, memory {run.memory}, profile {run.profile}, seed {run.seed}, "
             f"{run.repeats} repeat(s), {run.status.value}", listing.health.text()]
    if listing.repeats is not None and listing.repeats.any:
        lines.append(listing.repeats.text())
    if run.donor_run:
        lines.append(f"probes start from the checkpoints of {run.donor_run}")
    if listing.steps:
        lines += ["", f"steps ({len(listing.steps)} of {run.total_steps}):"]
        rows = [["#", "STEP", "KIND", "STATUS", "TRIES", "SELECTION", "REASON"]]
        rows += [[str(s.index + 1), s.step_id, s.kind, s.status, str(s.attempts), s.selection or "-", s.reason or ""]
                 for s in listing.steps]
        lines += ["  " + ln for ln in _aligned(rows)]
    probes = listing.probes
    if probe_filter is not None:
        probes = [p for p in probes if probe_filter.keeps(p)]
    shown = f"{len(probes)} shown by the filter, " if probe_filter is not None else ""
    lines += ["", f"probes ({shown}{len(listing.probes)} repeat(s) stored of {run.total_probes} planned):"]
    if probes:
        rows = [["PROBE", "REP", "KIND", "CONTEXT", "ATTRIBUTE", "STATUS", "SELECTION", "TARGET", "OUTCOME", "BRS", "PRS"]]
        rows += [[p.probe_id, str(p.repeat), p.kind, p.context, p.attribute, p.status, p.selection or "-", p.target,
                  p.outcome, _brs_cell(p), _score(p.prs)] for p in probes]
        lines += ["  " + ln for ln in _aligned(rows)]
    floored = [p for p in probes if p.floored]
    if floored:
        from mempa_tui.runner._browse import FLOOR_RULE

        lines += ["", f"{len(floored)} floored repeat(s), scored {FLOOR_RULE}:"]
        lines += _hanging_rows([(f"{p.probe_id} r{p.repeat}: ", p.reason or "(no reason stored)") for p in floored])
    lines += ["", f"`mempa show {run.id} STEP|PROBE` prints one in full."]
    return "\n".join(lines)


def _hanging_rows(rows: list[tuple[str, str]], prefix: str = "  ") -> list[str]:
    """Each (head, text) as :func:`_hanging` lines behind ``prefix``."""
    return [ln for head, text in rows for ln in _hanging(head, text, prefix)]


def _indent(text: str, prefix: str = "    ") -> list[str]:
    """Every line of ``text`` behind ``prefix`` (a line's own leading spaces are kept)."""
    return [prefix + ln for ln in (text.splitlines() or [""])]


def _hanging(head: str, text: str, prefix: str = "") -> list[str]:
    """``head`` + the first line of ``text``; later lines indented under the first line's start
    (``prefix`` + as many spaces as ``head`` is long), so multi-line text keeps its shape."""
    lines = text.splitlines() or [""]
    pad = " " * len(prefix + head)
    return [prefix + head + lines[0], *(pad + ln if ln.strip() else "" for ln in lines[1:])]


def _preview(text: str, width: int = 60) -> str:
    """The first non-empty line of ``text``, cut to ``width`` characters (``...`` when cut or when
    more lines follow)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    more = len(lines) > 1 or len(first) > width
    return first[:width].rstrip() + ("..." if more else "")


def _evidence_lines(event: EvidenceEvent) -> list[str]:
    """The memory section as the PA got it (once), then each item's score. An item whose text is in
    the section is named by its source or first line only; one that is not is printed in full."""
    head = f"EVIDENCE handed to the PA: {len(event.items)} item(s), {event.prior_messages} prior message(s)"
    section: str = event.system_text
    lines = [head, *(_indent(section) if section.strip() else ["    (empty memory section)"])]
    if event.items:
        lines.append("    item scores:")
    for n, item in enumerate(event.items, 1):
        score = f"[{'-' if item.score is None else f'{item.score:.3f}'}] "
        if item.text.strip() and item.text.strip() in section:
            name = item.source if item.source and "\n" in item.text.strip() else _preview(item.text)
            lines.append(f"    - {score}{name}  (item {n}, in the section above)")
        else:
            lines += _hanging(f"- {score}", item.text, "    ")
    return lines


def event_lines(event: EpisodeEvent) -> list[str]:
    """One stored episode event as text lines (the full content: messages, tool arguments and
    results, the memory section the PA was handed, with every item's score)."""
    from mempa_tui.runner import _episode_events as ev

    if isinstance(event, ev.UserMessageEvent):
        return [f"USER{f' [{event.beat_id}]' if event.beat_id else ''}:", *_indent(event.text)]
    if isinstance(event, ev.PAReplyEvent):
        why = [f"    ({event.reason})"] if event.reason else []
        return [f"PA{event.note()}:", *_indent(event.text), *why]
    if isinstance(event, ev.ToolCallEvent):
        c = event.call
        args = json.dumps(c.arguments, ensure_ascii=False)
        tag = f" {c.tag}" if c.tag else ""
        head = f"TOOL {c.tool}({args}) -> {c.status.value}{tag}{' ERROR' if c.error else ''}"
        return [head + (f" held as {c.held_id}" if c.held_id else ""), *(_indent(c.result) if c.result else [])]
    if isinstance(event, ev.IXSelectionEvent):
        head = f"IX SELECTION {event.attribute} = {event.setting or '(none)'}"
        return [head] if event.ok else _hanging(f"{head} REJECTED: ", event.message or "")
    if isinstance(event, ev.HeldItemsEvent):
        return ["HELD " + ", ".join(f"{h.id} ({h.kind}: {h.tool or h.label or _preview(h.text)})" for h in event.items)]
    if isinstance(event, ev.ConsentEvent):
        decisions = ", ".join(f"{k} {'approved' if v else 'denied'}" for k, v in event.decisions.items())
        return [f"CONSENT {decisions or '(none)'}" + (f"; unknown ids {', '.join(event.unknown)}" if event.unknown else "")]
    if isinstance(event, ev.EvidenceEvent):
        return _evidence_lines(event)
    if isinstance(event, ev.BeatChangeEvent):
        return [f"-- beat {event.shown_beat}"]
    if isinstance(event, ev.NoticeEvent):
        return [f"NOTICE {event.at:%Y-%m-%d %H:%M}:", *_indent(event.text)]
    if isinstance(event, ev.StepStatusEvent):
        return _hanging(f"STATUS {event.status}: ", event.reason) if event.reason else [f"STATUS {event.status}"]
    return [f"{event.kind}"]  # pragma: no cover - every kind is handled above


def detail_text(detail: StepDetail) -> str:
    """One step or probe repeat in full: header, transcript, model calls, and for a probe its
    selection, target and scores with reasons (paper Section 3.5)."""
    where = f"{detail.step_id}" + (f" repeat {detail.repeat}" if detail.repeat else "")
    head = f"== {detail.run_id} {where} ({detail.kind}) {detail.status}"
    lines = _hanging(f"{head}: ", f"{detail.reason} ==") if detail.reason else [f"{head} =="]
    if detail.context:
        lines.append(f"cell: {detail.context} / {detail.attribute}")
    from mempa_tui.runner._health import pa_problem_phrases

    phrases = pa_problem_phrases(*detail.pa_repeats, detail.pa_echoes, detail.pa_ix_withheld,
                                 detail.simulator_checks)
    lines += [f"run problem (warning): {p}" for p in phrases]
    lines += ["", "transcript:"]
    for event in detail.events:
        lines += ["  " + ln for ln in event_lines(event)]
    if not detail.events:
        lines.append("  (no stored events)")
    if detail.unreadable_events:
        lines.append(f"  ({detail.unreadable_events} stored event(s) could not be read and are not shown)")
    lines += ["", f"model calls ({len(detail.calls)}):"]
    if detail.calls:
        rows = [["#", "ROLE", "MODEL", "PROMPT", "REUSED", "COMPLETION", "SECONDS", "OK"]]
        rows += [[str(i), c.role, c.model, str(c.prompt_tokens), str(c.reused_prefix_tokens), str(c.completion_tokens),
                  f"{c.latency_s:.2f}", "ok" if c.ok else f"FAILED {c.error or ''}".strip()]
                 for i, c in enumerate(detail.calls, 1)]
        lines += ["  " + ln for ln in _aligned(rows)]
    lines += ["", f"IX selection: {detail.selection or '(none)'}"]
    if detail.target is not None:
        lines.append(f"target: {detail.target}  -> {detail.outcome}")
        brs_reason = detail.brs_reason
        if detail.status == "floored":
            from mempa_tui.runner._browse import FLOOR_RULE

            lines += [*_hanging("floored: ", detail.reason or "(no reason stored)"), f"  (scored {FLOOR_RULE})"]
            if detail.brs_scored is not None and not brs_reason:
                brs_reason = "floored: BRS 1 by rule, not judged"
        for name, score, reason in (("BRS", detail.brs_scored, brs_reason), ("PRS", detail.prs, detail.prs_reason)):
            lines += _hanging(f"{name}: {_score(score)}  (", f"{reason})") if reason else [f"{name}: {_score(score)}"]
    if detail.memory_stats:
        lines.append("memory counters after the step: "
                     + ", ".join(f"{k} {v:g}" for k, v in sorted(detail.memory_stats.items())))
    return "\n".join(lines)


def _compare_text(rows: Sequence[CompareRow], run_ids: list[str], health: dict[str, str]) -> str:
    lines = ["runs: " + ", ".join(f"#{i} {r} (memory {health.get(r, 'n/a')})" for i, r in enumerate(run_ids, 1)), ""]
    table = [["PROBE", "REP", "TARGET", *(f"#{i}" for i in range(1, len(run_ids) + 1))]]
    for row in rows:
        cells = []
        for rid in run_ids:
            c = row.cells.get(rid)
            cells.append("-" if c is None else f"{c.selection or '(none)'} {c.outcome} BRS {_score(c.brs)} PRS {_score(c.prs)}")
        table.append([row.probe_id, str(row.repeat), row.target, *cells])
    lines += _aligned(table) if rows else ["(no probe repeat matches)"]
    for row in rows:
        lines += ["", f"{row.probe_id} repeat {row.repeat}: target {row.target}"]
        for i, rid in enumerate(run_ids, 1):
            c = row.cells.get(rid)
            if c is None:
                lines.append(f"  #{i} {rid}: not stored")
                continue
            lines.append(f"  #{i} {rid}: selected {c.selection or '(none)'} ({c.outcome}); evidence, "
                         f"{c.evidence_items} item(s):")
            shown = c.evidence.strip("\n") if c.evidence.strip() else "(the memory handed the PA nothing)"
            lines += _indent(shown, "      ")  # strip only blank lines: a first line keeps its indent
    return "\n".join(lines)


async def cmd_show(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``mempa show RUN [STEP|PROBE]`` and ``mempa show --compare RUN1 RUN2 ...``.

    Returns:
        0, or 1 when a filter leaves nothing to show.

    Raises:
        UserError: an unknown run, step, probe or filter (from :class:`BrowseError`), or an
            unwritable ``--out`` file.
    """
    from mempa_tui.runner._browse import (
        BrowseError,
        ProbeFilter,
        checkpoint_memory,
        compare_markdown,
        compare_runs,
        filter_compare,
        model_call,
        parse_where,
        run_listing,
        step_details,
    )
    from mempa_tui.store import RunStore

    out = out or sys.stdout
    names = list(args.targets)
    probe_filter = None
    if any(getattr(args, k) for k in ("context", "attribute", "dimension", "outcome")):
        probe_filter = ProbeFilter(context=args.context, attribute=args.attribute, dimension=args.dimension,
                                   outcome=args.outcome)
    async with RunStore(_need_database(args.saves)) as store:
        try:
            if args.compare:
                rows = await compare_runs(store, names)
                if probe_filter is not None:
                    f = probe_filter.check()
                    rows = [r for r in rows if (f.context is None or r.context == f.context.lower())
                            and (f.attribute is None or r.attribute == f.attribute)
                            and (f.dimension is None or _dim(r.attribute) == f.dimension)
                            and (f.outcome is None or any(c and c.outcome == f.outcome for c in r.cells.values()))]
                if args.repeat is not None:
                    rows = [r for r in rows if r.repeat == args.repeat]
                if args.where:
                    rows = filter_compare(rows, parse_where(args.where, names))
                from mempa_tui.runner._health import runs_health

                health = {k: h.short() for k, h in (await runs_health(
                    store, [r for r in await store.list_runs() if r.id in names])).items()}
                print(_compare_text(rows, names, health), file=out)
                for rid, state in health.items():
                    if state == "BROKEN":
                        print(f"\n{rid}: its memory is BROKEN (see `mempa show {rid}`); its outcomes are a "
                              "broken memory's, not the condition's", file=out)
                if args.out:
                    title = "Probe-by-probe comparison" + (f" where {args.where}" if args.where else "")
                    try:
                        Path(args.out).write_text(compare_markdown(rows, names, title=title), encoding="utf-8")
                    except OSError as exc:
                        raise unwritable(exc, "the comparison") from exc
                    print(f"\nwritten: {args.out}", file=out)
                return 0 if rows else 1
            if args.memory_store and len(names) != 2:
                raise UserError("--memory-store needs RUN STEP|PROBE")
            if getattr(args, "call", None) is not None and len(names) != 2:
                raise UserError("--call needs RUN STEP|PROBE")
            if args.where or args.out:
                raise UserError("--where and --out are for --compare RUN1 RUN2 ...")
            if len(names) > 2:
                raise UserError("show takes RUN [STEP|PROBE]; to compare runs use --compare RUN1 RUN2 ...")
            if len(names) == 1:
                listing = await run_listing(store, names[0])
                print(listing_text(listing, probe_filter.check() if probe_filter else None), file=out)
                return 0
            details = await step_details(store, names[0], names[1], args.repeat)
            view = await checkpoint_memory(store, names[0], names[1], args.repeat) if args.memory_store else None
            calls = await _full_calls(store, names[0], details, getattr(args, "call", None), model_call)
        except BrowseError as exc:
            raise UserError(str(exc)) from None
    print("\n\n".join(detail_text(d) for d in details), file=out)
    for title, text in calls:
        print(f"\n== {title} ==", *_indent(text, "  "), sep="\n", file=out)
    if view is not None:
        when = "after the step" if details[0].repeat == 0 else "where the probe started"
        where = (f"checkpoint {view.checkpoint_index} of {view.checkpoint_run}"
                 if view.checkpoint_run is not None else "no checkpoint")
        print(f"\nmemory store {when} ({where}): {_store_count_text(view)}", file=out)
        for item in view.stored:
            print(*_indent(item, "  "), sep="\n", file=out)
        if view.note:
            print(f"  ({view.note})", file=out)
    return 0


def _store_count_text(view: MemoryView) -> str:
    """``0 history entries and 9 pending turns (MEMORY.md empty) stored, as Health counts them;
    10 entries listed below: the count leaves out MEMORY.md and the last consolidation failure``."""
    listed = f"{len(view.stored)} {'entry' if len(view.stored) == 1 else 'entries'} listed below"
    if view.counted_words is None:
        return listed
    text = f"{view.counted_words} stored, as Health counts them; {listed}"
    if view.counted != len(view.stored) and view.not_counted:
        text += f": the count leaves out {view.not_counted}"
    return text


async def _full_calls(store: object, run_id: str, details: Sequence[StepDetail], which: str | None,
                      model_call: Any) -> list[tuple[str, str]]:
    """The model calls ``--call N|all`` asks for, each as (title, full text), in listing order.

    ``N`` counts from 1 in each shown step's or repeat's "model calls" table.

    Raises:
        UserError: ``N`` is not a number or ``all``, or no shown step has an N-th call.
    """
    if which is None:
        return []
    if which != "all" and not (which.isdigit() and int(which) >= 1):
        raise UserError(f"--call {which!r}: give a call number from the 'model calls' table (1, 2, ...) or all")
    out: list[tuple[str, str]] = []
    for d in details:
        where = d.step_id + (f" repeat {d.repeat}" if d.repeat else "")
        picks = list(enumerate(d.calls, 1)) if which == "all" else (
            [(int(which), d.calls[int(which) - 1])] if int(which) <= len(d.calls) else [])
        for i, line in picks:
            detail = await model_call(store, run_id, line.call_id)
            out.append((f"{where}: model call {i}", detail.text()))
    if not out:
        counts = ", ".join(f"{d.step_id}{f' repeat {d.repeat}' if d.repeat else ''}: {len(d.calls)}" for d in details)
        raise UserError(f"--call {which}: no such model call (calls stored: {counts or 'none'})")
    return out


def _dim(key: str) -> str:
    from mempa_tui.taxonomy import attribute

    try:
        return attribute(key).dimension.value
    except KeyError:
        return "?"
