"""Assembling one public reply from the PA's text and payloads (Appendix E.3, mechanisms 1-3).

Order of the delivered reply: topics released by consent, process opening or per-call notes,
rationale, the PA's reply text, topics, confidence notes, questions, process closing. Every piece
is the PA's own wording (its reply text or an IX payload field): the wrapper writes no sentence of
its own (Section 3.4, E.1, E.5) - no note for a call the PA did not narrate, no request for
approval of a held action, no question before the next deferred topic. Asking is the PA's job.
Whatever a setting does not deliver goes to ``withheld``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from mempa_tui.ix import _render as rd
from mempa_tui.ix.types import ExecutedCall, HeldItem

__all__ = ["Composed", "compose_turn"]


class Composed(BaseModel):
    """The result of composing one turn.

    Attributes:
        reply: the public reply text.
        rendered: attribute -> payload field -> the value as delivered (lists may be cut to the
            delivered part). Only these reach memory.
        withheld: ``"<attribute>.<field>"`` -> content the user did not get (scoring only).
        notes: rendering notes for the scoring trace.
        suppressed: True when the setting delivers nothing this turn (Proactive Outreach Low on
            an event turn): the user is not contacted at all.
    """

    reply: str
    suppressed: bool = False
    rendered: dict[str, dict[str, Any]] = Field(default_factory=dict)
    withheld: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class _Builder:
    def __init__(self, payload: dict[str, dict[str, Any]]) -> None:
        self.payload = payload
        self.rendered: dict[str, dict[str, Any]] = {}
        self.withheld: dict[str, Any] = {}
        self.notes: list[str] = []

    def get(self, attr: str, name: str) -> Any:
        return self.payload.get(attr, {}).get(name)

    def show(self, attr: str, name: str, value: Any) -> None:
        self.rendered.setdefault(attr, {})[name] = value

    def hide(self, attr: str, name: str, why: str) -> None:
        value = self.get(attr, name)
        if value:
            self.withheld[f"{attr}.{name}"] = value
            self.notes.append(f"{attr}.{name} withheld ({why})")

    def hide_all_unshown(self) -> None:
        for attr, fields in self.payload.items():
            for name, value in fields.items():
                key = f"{attr}.{name}"
                if (
                    value
                    and name not in self.rendered.get(attr, {})
                    and key not in self.withheld
                ):
                    self.withheld[key] = value
                    self.notes.append(f"{key} not delivered (no setting delivers it)")


def _supersede(items: list[HeldItem], kind: str, notes: list[str]) -> None:
    for item in items:
        if item.kind == kind and item.status == "pending":
            item.status = "denied"
            notes.append(f"{item.id} superseded by a new {kind} list")


def _process(
    b: _Builder, setting: str | None, executed: list[ExecutedCall]
) -> tuple[list[str], str]:
    """Opening/notes before the reply and the closing after it (Process Visibility)."""
    attr = "process_visibility"
    opening, closing = b.get(attr, "opening") or "", b.get(attr, "closing") or ""
    if setting == "Bookend":
        if opening:
            b.show(attr, "opening", opening)
        if closing:
            b.show(attr, "closing", closing)
        b.hide(attr, "call_notes", "Bookend gives no per-call notes")
        return [opening], closing
    if setting == "Full narration":
        given: list[str] = list(b.get(attr, "call_notes") or [])
        notes: list[str] = []
        for i, call in enumerate(executed):
            if i < len(given) and given[i].strip():
                notes.append(given[i].strip())
            else:  # the PA did not narrate this call: nothing is written in its place
                b.notes.append(
                    f"process_visibility: no note from the PA for call {i + 1} ({call.tool})"
                )
        if len(given) > len(executed):
            b.withheld[f"{attr}.call_notes.unused"] = given[len(executed) :]
            b.notes.append(
                "process_visibility: notes beyond the executed calls not delivered"
            )
        if given:
            b.show(attr, "call_notes", given[: len(executed)])
        if closing:
            b.show(attr, "closing", closing)
        b.hide(attr, "opening", "Full narration opens with the per-call notes")
        return ["\n".join(notes)], closing
    if setting == "Silent":
        for name in ("opening", "call_notes", "closing"):
            b.hide(attr, name, "Silent")
    return [], ""


def _topics(
    b: _Builder, setting: str | None, items: list[HeldItem], new_id: Callable[[], str]
) -> list[str]:
    attr = "topic_management"
    topics: list[dict[str, str]] = list(b.get(attr, "topics") or [])
    parts: list[str] = []
    if setting == "Organize" and topics:
        parts.extend(rd.topic_section(t["label"], t["content"]) for t in topics)
        b.show(attr, "topics", topics)
    elif setting == "One-at-a-time":
        if topics:
            _supersede(items, "topic", b.notes)
            first, rest = topics[0], topics[1:]
            parts.append(rd.topic_section(first["label"], first["content"]))
            b.show(attr, "topics", [first])
            for t in rest:
                items.append(
                    HeldItem(
                        id=new_id(),
                        kind="topic",
                        attribute=attr,
                        text=t["content"],
                        label=t["label"],
                    )
                )
        waiting = [i for i in items if i.kind == "topic" and i.status == "pending"]
        if waiting:  # named to the user only by the PA's own words; listed as held items
            b.notes.append(
                "topic_management: waiting "
                + ", ".join(f"{i.id} '{i.label}'" for i in waiting)
            )
    return parts


def _questions(
    b: _Builder, setting: str | None, items: list[HeldItem], new_id: Callable[[], str]
) -> list[str]:
    attr = "information_elicitation"
    questions: list[str] = [q for q in (b.get(attr, "questions") or []) if q.strip()]
    if setting == "Structured" and questions:
        b.show(attr, "questions", questions)
        return [rd.numbered_questions(questions)]
    if setting == "Iterative":
        if questions:
            _supersede(items, "question", b.notes)
            b.show(attr, "questions", questions[:1])
            for q in questions[1:]:
                items.append(
                    HeldItem(id=new_id(), kind="question", attribute=attr, text=q)
                )
            return [questions[0]]
        waiting = [i for i in items if i.kind == "question" and i.status == "pending"]
        if waiting:
            waiting[0].status = "approved"
            b.notes.append(f"{waiting[0].id} released (one question per turn)")
            return [waiting[0].text]
        return []
    if setting == "Infer":
        b.hide(attr, "questions", "Infer asks nothing")
    return []


def compose_turn(
    *,
    reply_text: str,
    selections: dict[str, str],
    payload: dict[str, dict[str, Any]],
    event: bool,
    executed: list[ExecutedCall],
    released_topics: list[HeldItem],
    items: list[HeldItem],
    new_id: Callable[[], str],
) -> Composed:
    """Compose the public reply of one turn.

    Args:
        reply_text: the PA's final reply text of the turn.
        selections: the session's selections (attribute -> setting).
        payload: this turn's merged IX payloads (attribute -> field -> value).
        event: True on a world-event turn (Proactive Outreach applies).
        executed: calls that ran this turn, in order (released items first).
        released_topics: topics the user approved before this turn.
        items: the wrapper's held items; new topic/question items are appended, superseded and
            released ones are updated in place.
        new_id: makes the next held-item id.

    Returns:
        :class:`Composed`.
    """
    b = _Builder(payload)
    sel = selections.get
    outreach = sel("proactive_outreach")
    if event and outreach == "Low":
        b.hide("proactive_outreach", "message", "Low: nothing is sent on the event")
        if reply_text.strip():
            b.withheld["proactive_outreach.reply_text"] = reply_text
        b.notes.append("proactive_outreach: Low, the event turn delivers nothing")
        b.hide_all_unshown()
        return Composed(
            reply="", rendered=b.rendered, withheld=b.withheld, notes=b.notes, suppressed=True
        )

    body = reply_text
    if outreach == "High" and event:
        message = b.get("proactive_outreach", "message")
        if message:
            b.show("proactive_outreach", "message", message)
            if reply_text.strip():
                b.withheld["proactive_outreach.reply_text"] = reply_text
                b.notes.append(
                    "proactive_outreach: High, the outreach message replaces the reply text"
                )
            body = message
    elif outreach is not None:
        b.hide("proactive_outreach", "message", "not an event turn")

    before: list[str] = [rd.topic_section(t.label, t.text) for t in released_topics]
    after: list[str] = []
    opening, closing = _process(b, sel("process_visibility"), executed)
    before.extend(opening)

    reasoning = sel("reasoning_visibility")
    rationale = b.get("reasoning_visibility", "rationale")
    if reasoning == "Show" and rationale:
        before.append(rationale)
        b.show("reasoning_visibility", "rationale", rationale)
    elif reasoning == "Hide":
        b.hide("reasoning_visibility", "rationale", "Hide")

    after.extend(_topics(b, sel("topic_management"), items, new_id))
    uncertainty = sel("uncertainty_expression")
    notes = b.get("uncertainty_expression", "confidence_notes")
    if uncertainty == "Express" and notes:
        after.append(rd.confidence_block(notes))
        b.show("uncertainty_expression", "confidence_notes", notes)
    elif uncertainty == "Hide":
        b.hide("uncertainty_expression", "confidence_notes", "Hide")
    after.extend(_questions(b, sel("information_elicitation"), items, new_id))
    if closing:
        after.append(closing)

    b.hide_all_unshown()
    reply = rd.join_parts([*before, body, *after])
    return Composed(
        reply=reply, rendered=b.rendered, withheld=b.withheld, notes=b.notes
    )
