"""How the demo model reads a change of mind (issue 16: PET on the demo model).

The demo's simulated user states a wish by quoting a setting's public behaviour text (see
:mod:`mempa_tui.llm.scripted_roles`), but a change event's user speaks in a person's own words:
after the assistant carried out one way of helping, the user objects and gives a rule for the
future ("from now on, ..."). A language model understands that rule; the scripted demo reads it
with two plain rules, both from what the reader is handed and nothing else (never the world
files or the target):

1. *A change statement* is a user message that says how to act from here on: it contains one of
   :data:`CHANGE_CUES` ("from now on", "next time", "if I want ...", "I'll ask" ...).
2. *What it asks for*:
   - where the same conversation shows the assistant's interaction choice for an attribute
     before the statement (File memory's consolidation sees the turns with their choices), the
     statement rejects that choice: the new setting is the other setting of that attribute, or,
     among several others, the one :data:`SETTING_CUES` points to;
   - where no choice is in view (a retrieved message on its own), the statement asks for the
     setting whose cue words (:data:`SETTING_CUES`, written for the demo in our own words) it
     contains, if exactly one attribute's cues match.

Paper Section 3.3 (timeline and preference change) and Section 3.5 (PET pairs the pre-event and
final probes of a changed cell): a memory that keeps the newer statement lets the demo PA follow
the change; one that keeps only the older wish, or nothing, does not.
"""

from __future__ import annotations

import re

from mempa_tui.taxonomy import attribute

__all__ = ["CHANGE_CUES", "SETTING_CUES", "change_cue", "read_change"]

CHANGE_CUES = (
    "from now on", "from here on", "in future", "in the future", "going forward", "next time",
    "if i want", "i'll ask", "i will ask", "i'll make the call", "i'll fix it", "i'll sort it",
    "i'll check", "i'll pick", "i know how i feel", "i'll start that", "new rule", "when i ", "when you ",
    "for work stuff", "for errands like this", "for family and home things", "in the shop, please",
    "until i have seen", "show me before",
)
"""Phrases (lower case) that make a user message a rule for the future."""

SETTING_CUES: dict[str, dict[str, tuple[str, ...]]] = {
    "solution_breadth": {
        "Low": ("just one option", "one option", "pick one for me", "just pick"),
        "High": ("side by side", "the options", "the choices", "alternatives", "what separates", "compare them"),
    },
    "reasoning_visibility": {
        "Show": ("what you looked at", "what decided", "tell me why", "show your working"),
        "Hide": ("just the answer", "nothing in front of it", "the answer and nothing", "i'll ask for it"),
    },
    "verbosity": {
        "Terse": ("in a line", "just give me the answer", "keep it short", "one line"),
        "Detailed": ("the background", "more detail", "the full picture"),
    },
    "emotional_engagement": {
        "Task-focused": ("leave the feelings out", "what i asked for first", "fastest way first", "no sympathy"),
        "Relationship-focused": ("how i feel first", "ask how i am"),
    },
    "guidance_level": {
        "Assumed": ("no explanations", "the proper terms", "no numbered", "no lesson"),
        "Guided": ("walk me through", "in order", "what the bits are called", "step by step"),
    },
    "uncertainty_expression": {
        "Express": ("how sure you are", "confidence"),
        "Hide": ("without the maybes", "leave it out", "how-sure-i-am"),
    },
    "process_visibility": {
        "Silent": ("just the result", "don't tell me what you're doing"),
        "Bookend": ("at the end what you did", "can stay with you", "then at the end"),
        "Full narration": ("every step", "each thing you do"),
    },
    "autonomy_level": {
        "Reactive": ("ask me before anything", "nothing at all without me"),
        "Self-directed": ("show me before it goes", "until i have seen it", "before it goes"),
        "Autonomous": ("just do it", "tell me afterwards"),
    },
    "information_elicitation": {
        "Infer": ("work out what you can", "go off what we had", "just get it in", "pick something sensible"),
        "Structured": ("questions to me together", "at the start", "all at once"),
        "Iterative": ("one question at a time",),
    },
    "topic_management": {
        "Organize": ("all together", "under headings"),
        "One-at-a-time": ("the first one with me", "settle the first", "before you go on", "before you turn to the next"),
    },
    "task_expansion": {
        "Low": ("precisely what i ask", "nothing besides", "leave the doing of it to me", "only what i ask"),
        "High": ("anything else that needs doing", "go ahead and do the rest"),
    },
    "tone_formality": {
        "Casual": ("keep it casual", "chatty"),
        "Consultative": ("proper sentences", "no slang", "no jokes"),
        "Formal": ("formal letter", "properly formal"),
    },
}
"""Per attribute, per setting: phrases (lower case) by which a change statement asks for it."""

_SPACES = re.compile(r"\s+")


def change_cue(text: str) -> str | None:
    """The first :data:`CHANGE_CUES` phrase in ``text`` (case and spacing ignored), or None."""
    flat = _SPACES.sub(" ", text.replace("\u2019", "'")).lower()
    return next((cue for cue in CHANGE_CUES if cue in flat), None)


def _cued(text: str, key: str, names: list[str]) -> list[str]:
    flat = _SPACES.sub(" ", text.replace("\u2019", "'")).lower()
    cues = SETTING_CUES.get(key, {})
    return [name for name in names if any(c in flat for c in cues.get(name, ()))]


def read_change(text: str, choices: list[tuple[str, str]] | None = None) -> tuple[str, str] | None:
    """What a change statement asks for (module docstring), or None when it is not one.

    Args:
        text: one user message.
        choices: ``(attribute key, setting)`` of the assistant's interaction choices earlier in
            the same conversation, oldest first (the latest one is the choice rejected).

    Returns:
        ``(attribute key, new setting name)``, or None: no change cue, or nothing it can name.

    Raises:
        KeyError: a choice names an attribute outside Table 4.
    """
    if change_cue(text) is None:
        return None
    for key, old in reversed(choices or []):
        others = [s.name for s in attribute(key).settings if s.name != old]
        if len(others) == 1:
            return key, others[0]
        cued = _cued(text, key, others)
        if cued:
            return key, cued[0]
    hits = [(key, names) for key in SETTING_CUES
            if (names := _cued(text, key, [s.name for s in attribute(key).settings]))]
    if len(hits) == 1 and len(hits[0][1]) == 1:
        return hits[0][0], hits[0][1][0]
    return None
