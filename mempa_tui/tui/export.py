"""A session's transcript as Markdown (SPEC section 4.11: "a session can be exported").

Imports nothing from Textual. One section per step or probe repeat; user turns and PA replies as
paragraphs, tool calls with their status and result in a list, IX selections, held items, consent,
notices and step outcomes each on a line. Evidence is listed with its retrieval scores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from mempa_tui.ix.types import ExecutedCall
from mempa_tui.runner import StepEvent
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

__all__ = ["session_markdown", "write_session_markdown"]


def _call(call: ExecutedCall, prefix: str = "tool") -> list[str]:
    args = json.dumps(call.arguments, ensure_ascii=False, default=str)
    status = call.status.value + (" (error)" if call.error else "")
    held = f" `{call.held_id}`" if call.held_id else ""
    lines = [f"- {prefix} `{call.tool}` {args} — **{status}**{held}"]
    if call.result:
        lines.append("  ```")
        lines.extend(f"  {row}" for row in call.result.splitlines())
        lines.append("  ```")
    return lines


def _event(item: StepEvent) -> list[str]:
    e = item.event
    if isinstance(e, UserMessageEvent):
        return ["", f"**User:** {e.text}", ""]
    if isinstance(e, PAReplyEvent):
        note = f" _{e.note().strip()}_" if e.note() else ""
        return ["", f"**PA:** {e.text or '(no reply delivered)'}{note}", ""]
    if isinstance(e, ToolCallEvent):
        return _call(e.call)
    if isinstance(e, IXSelectionEvent):
        if e.ok:
            return [f"- IX `{e.attribute}` = **{e.setting}**"]
        return [f"- IX `{e.attribute}` refused: {e.message}"]
    if isinstance(e, HeldItemsEvent):
        return [f"- held `{h.id}` ({h.kind}): {h.text or h.label or h.tool or ''}" for h in e.items]
    if isinstance(e, ConsentEvent):
        out = [f"- consent `{k}`: {'approved' if ok else 'denied'}" for k, ok in e.decisions.items()]
        for call in e.executed:
            out.extend(_call(call, "released"))
        return out
    if isinstance(e, EvidenceEvent):
        out = [f"- evidence: {len(e.items)} item(s), {e.prior_messages} prior message(s)"]
        out.extend(
            f"  - {'—' if i.score is None else f'{i.score:.2f}'} {' '.join(i.text.split())} ({i.source})"
            for i in e.items
        )
        return out
    if isinstance(e, BeatChangeEvent):
        return [f"- _beat {e.shown_beat}_"]
    if isinstance(e, NoticeEvent):
        return ["", f"> **Notice** {e.at:%Y-%m-%d %H:%M}: {e.text}", ""]
    if isinstance(e, StepStatusEvent):
        return ["", f"**Step {e.status}**" + (f": {e.reason}" if e.reason else ""), ""]
    text = getattr(e, "text", None)
    kind = getattr(e, "type", None) or type(e).__name__
    return [f"- {kind}" + (f": {text}" if text else "")]


def session_markdown(title: str, items: Iterable[StepEvent]) -> str:
    """The transcript of ``items`` as a Markdown document.

    Args:
        title: the document's heading (e.g. the run id).
        items: episode events with their step and repeat, in order.

    Returns:
        Markdown text; a new ``##`` section starts whenever the step or repeat changes.
    """
    out = [f"# Session transcript: {title}", ""]
    place: tuple[str, int] | None = None
    for item in items:
        here = (item.step_id, item.repeat)
        if here != place:
            place = here
            out += ["", f"## {item.step_id}" + (f" · repeat {item.repeat}" if item.repeat else ""), ""]
        out.extend(_event(item))
    text = "\n".join(out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip() + "\n"


def write_session_markdown(
    title: str, items: Iterable[StepEvent], saves_dir: Path, *, stamp: datetime | None = None
) -> Path:
    """Write :func:`session_markdown` to ``<saves_dir>/<title>/session-<UTC stamp>.md``.

    Raises:
        OSError: the file cannot be written.
    """
    when = stamp or datetime.now(UTC)
    folder = Path(saves_dir) / title
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{when:%Y%m%d-%H%M%S}.md"
    path.write_text(session_markdown(title, items), encoding="utf-8")
    return path
