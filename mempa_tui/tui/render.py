"""Turning episode events and memory inspections into Rich text for the session view.

One function per shape; no widget code here. Tool results are collapsed to one line unless the
caller asks for them in full (SPEC section 4.11: tool calls "and results", held items, the IX
selection). The operator sees IX selections and evidence; those never reach the user seat.
"""

from __future__ import annotations

import json

from rich.text import Text

from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.memory import EvidenceItem, MemoryInspection
from mempa_tui.runner import RunProgress, StepEvent
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    ConsentEvent,
    EvidenceEvent,
    HeldItemsEvent,
    IXSelectionEvent,
    NoticeEvent,
    PAReplyEvent,
    StepStatusEvent,
    ToolCallEvent,
    UserMessageEvent,
)

__all__ = [
    "COLLAPSED_RESULT_CHARS",
    "call_title",
    "event_lines",
    "evidence_renderable",
    "memory_renderable",
    "place_text",
    "problems",
    "progress_line",
    "step_header",
]

COLLAPSED_RESULT_CHARS = 96
"""Characters of a tool result shown when results are collapsed."""

_STATUS_STYLE = {
    CallStatus.EXECUTED: "green",
    CallStatus.HELD: "yellow",
    CallStatus.BLOCKED: "red",
    CallStatus.REJECTED: "red",
}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arguments(arguments: dict[str, object]) -> str:
    parts = [f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in arguments.items()]
    return _one_line(", ".join(parts), 80)


def place_text(step_id: str, repeat: int) -> str:
    """A step or probe repeat as the runner's lines name it: ``R-s1``, ``R-final-work-verbosity r2``
    (repeats count from 1, paper Section 3.5; 0 is a timeline step)."""
    return f"{step_id} r{repeat}" if repeat else step_id


def step_header(step_id: str, repeat: int) -> Text:
    """The rule that opens a step's (or a probe repeat's) part of the transcript."""
    label = step_id if repeat == 0 else f"{step_id} · repeat {repeat}"
    return Text(f"── {label} " + "─" * max(4, 60 - len(label)), style="bold cyan")


def call_title(call: ExecutedCall, *, prefix: str = "tool", lead: str = "") -> Text:
    """One line for a tool call: ``⚙ tool name(arguments) [status] held-id``.

    Args:
        call: the call as the IX wrapper settled it.
        prefix: ``tool``, or ``released`` for a call run after the user's consent.
        lead: text before the gear (indent, fold marker), in the same span.
    """
    status = call.status.value + (" (error)" if call.error else "")
    line = Text.assemble(
        (f"{lead}⚙ {prefix} ", "dim"), (call.tool, "bold"), (f"({_arguments(call.arguments)}) ", "dim"),
        (f"[{status}]", _STATUS_STYLE.get(call.status, "")),
    )
    if call.held_id:
        line.append(f" {call.held_id}", style="yellow")
    return line


def _call_line(call: ExecutedCall, *, expanded: bool, prefix: str = "tool") -> list[Text]:
    lines = [call_title(call, prefix=prefix, lead="  ")]
    if call.result:
        if expanded:
            lines.extend(Text(f"      {row}", style="dim") for row in call.result.splitlines())
        else:
            lines.append(Text(f"      → {_one_line(call.result, COLLAPSED_RESULT_CHARS)}", style="dim"))
    return lines


def event_lines(item: StepEvent, *, expanded: bool = False) -> list[Text]:
    """The transcript lines of one live event.

    Args:
        item: the event with where it happened.
        expanded: show tool results in full instead of one collapsed line.

    Returns:
        Zero or more lines (evidence goes to the side panel, so it shows as one short note).
    """
    event = item.event
    if isinstance(event, UserMessageEvent):
        return [Text.assemble(("USER ", "bold magenta"), event.text)]
    if isinstance(event, PAReplyEvent):
        note = event.note()
        text = event.text or "(no reply delivered)"
        return [Text.assemble(("PA   ", "bold green"), text, (note, "yellow"))]
    if isinstance(event, ToolCallEvent):
        return _call_line(event.call, expanded=expanded)
    if isinstance(event, IXSelectionEvent):
        if event.ok:
            return [Text(f"  ◆ IX {event.attribute} = {event.setting}", style="bold blue")]
        return [Text(f"  ◆ IX {event.attribute} refused: {_one_line(event.message, 100)}", style="red")]
    if isinstance(event, HeldItemsEvent):
        return [
            Text(f"  ⏸ held {h.id} ({h.kind}): {_one_line(h.text or h.label or h.tool or '', 90)}",
                 style="yellow")
            for h in event.items
        ]
    if isinstance(event, ConsentEvent):
        lines = [
            Text(f"  ✔ consent {key}: {'approved' if ok else 'denied'}", style="green" if ok else "red")
            for key, ok in event.decisions.items()
        ]
        for call in event.executed:
            lines.extend(_call_line(call, expanded=expanded, prefix="released"))
        if event.unknown:
            lines.append(Text(f"  ? unknown held ids: {', '.join(event.unknown)}", style="red"))
        return lines
    if isinstance(event, EvidenceEvent):
        return [Text(f"  ≡ evidence: {len(event.items)} item(s), {event.prior_messages} prior message(s)",
                     style="dim")]
    if isinstance(event, BeatChangeEvent):
        return [Text(f"  · beat {event.shown_beat}", style="dim italic")]
    if isinstance(event, NoticeEvent):
        return [Text.assemble(("NOTICE ", "bold yellow"), f"{event.at:%Y-%m-%d %H:%M} {event.text}")]
    if isinstance(event, StepStatusEvent):
        style = "bold green" if event.status == "completed" else "bold red"
        reason = f": {event.reason}" if event.reason else ""
        return [Text(f"  ■ step {event.status}{reason}", style=style)]
    inspection = getattr(event, "inspection", None)
    if isinstance(inspection, MemoryInspection):
        return [Text(f"  ≡ memory now holds {len(inspection.stored)} entr(ies)", style="dim")]
    shown = getattr(event, "text", None)
    kind = getattr(event, "type", None) or getattr(event, "kind", None) or type(event).__name__
    return [Text(f"  {kind}: {shown if shown is not None else event}", style="dim")]


def _evidence_item(item: EvidenceItem) -> Text:
    score = "  —  " if item.score is None else f"{item.score:5.2f}"
    return Text.assemble((f"{score} ", "bold"), _one_line(item.text, 200), (f"  {item.source}", "dim"))


def evidence_renderable(evidence: EvidenceEvent | None) -> Text:
    """The evidence handed to the PA in the latest turn, items with their retrieval scores."""
    if evidence is None:
        return Text("No turn played yet.", style="dim")
    parts: list[Text] = []
    if evidence.items:
        parts.extend(_evidence_item(i) for i in evidence.items)
    elif evidence.system_text.strip():
        parts.append(Text(evidence.system_text.strip()))
    else:
        parts.append(Text("(empty: the memory handed the PA nothing)", style="dim"))
    if evidence.prior_messages:
        parts.append(Text(f"+ {evidence.prior_messages} prior message(s) carried in", style="dim"))
    return Text("\n").join(parts)


def memory_renderable(inspection: MemoryInspection | None, origin: str, thresholds: str = "") -> Text:
    """What the memory holds: its entries and counters, under the thresholds the run uses
    (``thresholds``: :func:`mempa_tui.tui.engine.memory_thresholds`'s line, shown when given)."""
    head = [Text(thresholds, style="dim italic")] if thresholds else []
    if inspection is None:
        return Text("\n").join([*head, Text("Nothing inspected yet.", style="dim")])
    parts: list[Text] = [*head, Text(f"{inspection.system} · {origin}", style="dim")]
    if inspection.stored:
        parts.extend(Text(entry) for entry in inspection.stored)
    else:
        parts.append(Text("(nothing stored)", style="dim"))
    counters = [f"{k}={v:g}" for k, v in inspection.stats.items() if v]
    if counters:
        parts.append(Text(" ".join(counters), style="dim"))
    return Text("\n").join(parts)


def progress_line(progress: RunProgress | None) -> str:
    """``steps 2/3 · probes 4/6 · 1,234 tokens · 0 problem(s)`` for a run's row (problems: discarded
    steps and probes, and warnings). A pause is not a problem: the runner notes its stop as the last
    error with phase ``stopped``, and that note is not counted (issue 6.5)."""
    if progress is None:
        return "waiting for the run to start"
    steps = (
        f"steps {progress.steps_done}/{progress.steps_total}" if progress.steps_total
        else "no timeline (probes only)"
    )
    return (
        f"{steps} · probes {progress.probes_done}/{progress.probes_total} · "
        f"{progress.tokens.total:,} tokens · {len(problems(progress))} problem(s)"
    )


def problems(progress: RunProgress) -> list[str]:
    """The run's problems: its progress errors less the runner's own note of a pause (the last
    error when the phase is ``stopped``)."""
    if progress.phase == "stopped" and progress.errors:
        return progress.errors[:-1]
    return list(progress.errors)
