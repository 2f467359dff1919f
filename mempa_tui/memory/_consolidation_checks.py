"""Content checks on a consolidation reply that parsed: garbage is refused, never stored (issue 12).

Measured on the README's quick start with the packaged 0.5B and 1.5B models: replies that were
valid JSON under the schema but whose MEMORY.md was one sentence repeated with a counting hour up
to the completion cap, a refusal ("I'm sorry, I can't assist with that."), or the prompt's own
empty-file wording copied back as the file. Each was stored and the memory's health read ok. The
rules here make such a reply unusable, with a short reason code that File memory counts
(:class:`~mempa_tui.memory._file.FileMemoryStats`) and the health rule shows:

``repeats`` (the *repeated-sentence rule*)
    The text is cut into sentences at line breaks and at ``.``, ``!`` or ``?`` followed by a space.
    Each sentence is compared with numbers ignored (a number, date or time, or several in a row,
    all count as the same number), case, spacing, end punctuation and Markdown list and heading
    marks ignored. A sentence of at
    least :data:`MIN_REPEAT_WORDS` words that occurs :data:`MAX_REPEATS` times or more makes the
    field repeat itself. Short lines (``- Date: 2026-05-12``) are never counted, so a list of
    dated entries is not a loop. Applied to ``memory`` and ``history_entry``.
``placeholder``
    ``memory`` says only that the file is empty (a short list of fixed phrases such as "empty",
    "nothing has been remembered yet", "(no notes yet)"): a heuristic.
``prompt_echo``
    ``memory`` copies the prompt instead of writing notes: it holds one of the prompt's section
    headings ("## Current memory file", "## Turns to fold in"), a turn's header as the prompt
    rendered it before the step ids left it (a ``YYYY-MM-DD HH:MM work|personal <step id>`` stamp,
    brackets optional), or a transcript line: a ``User:`` or ``Assistant:`` line that writes one of
    the turns' messages or replies out again (:data:`TRANSCRIPT_SHARE` of it, from its start). Measured on the
    first run of ``bench_memory.py consolidation``: the 1.5B model's MEMORY.md was the prompt's own
    headings and turns, and the 0.5B model's held ``2026-05-19 10:00 work A-E01. User: ...``.
    A dated note (``2026-05-19 10:00, work: ...``, the prompt's turn header since then) is kept.
``refusal``
    ``memory`` or ``history_entry`` is a refusal or a bare apology: a text under
    :data:`REFUSAL_MAX_CHARS` characters holding one of a few fixed refusal phrases ("can't
    assist", "unable to help", "as an AI"...), or only "Sorry" / "I'm sorry" / "I apologize". A
    heuristic: "I'm sorry the library was full. The hall seats 120." is kept, and so is a long
    file that somewhere says the assistant could not help with something.
``copies_assistant``
    ``memory`` is mostly the assistant's replies copied word for word (half or more of its new
    word 8-grams) and draws on none of the user's messages (rule and thresholds in
    :mod:`mempa_tui.memory._consolidation_copy`). Found by a fresh user: the quick start's one
    consolidation stored the PA's venue reply of A-E01 as MEMORY.md, not the rule the user stated.

The other reason codes of a failed round: ``cut_at_cap`` (the reply hit the completion cap,
:func:`~mempa_tui.llm.structured.complete_json`'s ``on_cut="reject"``), ``unreadable`` (no JSON object,
wrong fields), ``erases`` (a blank memory that would wipe a non-empty file) and ``call_failed``
(the model call itself failed).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from mempa_tui.memory._consolidation_copy import COPY_SHARE, copy_measure
from mempa_tui.memory.base import TurnRecord

__all__ = [
    "MAX_REPEATS",
    "MIN_REPEAT_WORDS",
    "REASON_TEXT",
    "REFUSAL_MAX_CHARS",
    "UnusableReply",
    "check_content",
    "repeated_sentence",
]

MAX_REPEATS = 3
"""A sentence (numbers ignored) that occurs this many times or more makes a field repeat itself."""

MIN_REPEAT_WORDS = 4
"""Sentences with fewer words than this are not counted by the repeated-sentence rule."""

REFUSAL_MAX_CHARS = 200
"""A refusal or apology opening is taken as the whole content only in a text shorter than this."""

REASON_TEXT: dict[str, str] = {
    "cut_at_cap": "cut at the completion cap",
    "repeats": "text repeats itself",
    "placeholder": "memory is an empty-file placeholder",
    "refusal": "refusal instead of notes",
    "prompt_echo": "memory copies the prompt",
    "copies_assistant": "memory copies the assistant's replies",
    "erases": "blank memory would erase the file",
    "unreadable": "no usable JSON object",
    "call_failed": "model call failed",
}
"""Reason code -> words, for stats lines and the health rule (every code a failed round can have)."""

_SPLIT = re.compile(r"\n+|(?<=[.!?])\s+")
_NUMBER = re.compile(r"\d+(?:[-:/.,]\d+)*")
_NUMBERS = re.compile(r"#(?:\s+#)+")
_MARKS = re.compile(r"^[\s#>*+\-\u2022]+|[\s*_`]+$")
_WORD = re.compile(r"[^\W\d_]+")

_PROMPT_HEADINGS = ("## current memory file", "## turns to fold in")
_TURN_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} (?:work|personal) [A-Z]+-[A-Za-z0-9-]+")
_SPEAKER_LINE = re.compile(
    r"(?im)^[\s#>*+\-\u2022\d.)]*(?:\[[^\]\n]*\][ \t]*)?[*_]*(user|assistant)[*_]*[ \t]*:[*_]*[ \t]*(.+)$")
TRANSCRIPT_SHARE = 0.8
"""A ``User:`` / ``Assistant:`` line of the memory is a copied transcript line when its words are
the opening words of one of the turns' messages (or replies) and cover at least this share of
them: the turn written out again, not a note that quotes the person."""
_PLACEHOLDERS = frozenset({
    "empty", "none", "n/a", "na", "nothing", "no notes", "no notes yet", "no memory", "no memories",
    "nothing yet", "nothing to remember", "nothing has been remembered", "nothing has been remembered yet",
    "empty - nothing has been remembered yet", "empty nothing has been remembered yet", "the file is empty",
    "file is empty", "memory is empty", "the memory file is empty", "empty so far", "no notes have been saved yet",
    "nothing has been saved yet", "nothing new", "nothing new to remember",
})
_REFUSALS = (
    "can't assist", "cannot assist", "can not assist", "can't help with", "cannot help with", "unable to assist",
    "unable to help", "not able to assist", "not able to help", "can't do that", "cannot do that",
    "can't comply", "cannot comply", "as an ai",
)
_APOLOGIES = frozenset({"sorry", "i'm sorry", "i am sorry", "i apologize", "i apologise", "my apologies"})


class UnusableReply(ValueError):
    """A consolidation reply that parsed but cannot be stored.

    Attributes:
        reason: the reason code (a key of :data:`REASON_TEXT`).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _normal(sentence: str) -> str:
    """A sentence as the repeated-sentence rule compares it: list and heading marks and end
    punctuation stripped, lower case, single spaces, each number (a date, a time, digits with
    ``-:/.,`` between them) and each run of numbers as one ``#``."""
    text = _MARKS.sub("", sentence).lower().rstrip(".!?;:, ")
    return _NUMBERS.sub("#", " ".join(_NUMBER.sub("#", text).split()))


def repeated_sentence(text: str) -> tuple[str, int] | None:
    """The most frequent sentence of ``text`` when the repeated-sentence rule is met (module doc).

    Args:
        text: a memory file or history entry.

    Returns:
        ``(sentence as compared, occurrences)`` for the most frequent counted sentence occurring at
        least :data:`MAX_REPEATS` times; None when no sentence does.
    """
    counts = Counter(
        norm for part in _SPLIT.split(text)
        if (norm := _normal(part)) and len(_WORD.findall(norm)) >= MIN_REPEAT_WORDS
    )
    if not counts:
        return None
    sentence, times = counts.most_common(1)[0]
    return (sentence, times) if times >= MAX_REPEATS else None


def _bare(text: str) -> str:
    """``text`` lower-cased without surrounding brackets, quotes, marks and end punctuation."""
    return " ".join(text.strip().strip("()[]\"'`*_#-. \n").lower().split())


def _is_refusal(text: str) -> bool:
    bare = _bare(text).replace("\u2019", "'")
    return bare in _APOLOGIES or (len(bare) < REFUSAL_MAX_CHARS and any(p in bare for p in _REFUSALS))


def _words_of(text: str) -> list[str]:
    """``text`` as the transcript rule compares it: :func:`_normal`, curly apostrophes straight."""
    return _normal(text.replace("\u2019", "'").replace("\u2018", "'")).split()


def _transcript_line(memory: str, turns: Sequence[TurnRecord]) -> str | None:
    """The first ``User:`` / ``Assistant:`` line of ``memory`` that writes out one of the turns'
    messages or replies again (:data:`TRANSCRIPT_SHARE`; list marks, bold labels and the turn's
    ``[date time, context]`` header before the label allowed), or None. A labelled note in the
    model's own words ("User: prefers short answers") or one that quotes the person and goes on in
    its own words ("User: from now on, when there's a choice, wants the options side by side") is
    not a copy."""
    if not turns:
        return None
    said = {
        "user": [w for t in turns if (w := _words_of(t.user_message))],
        "assistant": [w for t in turns if (w := _words_of(t.reply))],
    }
    for match in _SPEAKER_LINE.finditer(memory):
        line = _words_of(match.group(2))
        if len(line) < 3:
            continue
        for text in said[match.group(1).lower()]:
            if text[:len(line)] == line and len(line) >= TRANSCRIPT_SHARE * len(text):
                return match.group(0).strip()
    return None


def check_content(history_entry: str, memory: str, turns: Sequence[TurnRecord] = (), old_memory: str = "") -> None:
    """Refuse a parsed consolidation reply whose content is garbage (rules in the module doc).

    Args:
        history_entry: the reply's log entry.
        memory: the reply's whole new MEMORY.md.
        turns: the turns the reply folds in (the copies-the-assistant rule; none: not applied).
        old_memory: the MEMORY.md the reply replaces (its text is not counted as copied).

    Raises:
        UnusableReply: with reason ``repeats``, ``placeholder``, ``prompt_echo``, ``refusal`` or
            ``copies_assistant`` and a message that names the field and what is wrong (shown to the
            model on the retry).
    """
    for field, text in (("memory", memory), ("history_entry", history_entry)):
        found = repeated_sentence(text)
        if found is not None:
            sentence, times = found
            raise UnusableReply(
                "repeats",
                f"field {field} repeats itself: the sentence {sentence[:80]!r} comes {times} times "
                "(numbers ignored); say each thing once")
    if memory.strip() and _bare(memory) in _PLACEHOLDERS:
        raise UnusableReply(
            "placeholder",
            f"field memory is {memory.strip()[:60]!r}, a note that the file is empty, not the file itself; "
            "write the notes file itself from what the turns hold")
    lowered = memory.lower()
    echoed = next((h for h in _PROMPT_HEADINGS if h in lowered), None)
    stamp = _TURN_STAMP.search(memory)
    line = _transcript_line(memory, turns) if echoed is None and stamp is None else None
    if echoed is not None or stamp is not None or line is not None:
        what = (repr(echoed) if echoed is not None else f"the turn stamp {stamp.group(0)!r}" if stamp is not None
                else f"the transcript line {line[:60]!r}")
        raise UnusableReply(
            "prompt_echo",
            f"field memory copies the prompt ({what}) instead of notes; write the notes themselves, "
            "without the prompt's headings or the turns' stamps")
    for field, text in (("memory", memory), ("history_entry", history_entry)):
        if _is_refusal(text):
            raise UnusableReply(
                "refusal",
                f"field {field} is a refusal or apology ({text.strip()[:60]!r}), not notes; "
                "summarise the turns as asked")
    if turns:
        measure = copy_measure(memory, turns, old_memory)
        if measure.copies_assistant:
            raise UnusableReply(
                "copies_assistant",
                f"field memory copies the assistant's replies word for word ({measure.copied} of its "
                f"{measure.new_ngrams} new 8-word spans, {100 * measure.share:.0f}%; at {100 * COPY_SHARE:.0f}% "
                "or more it is a copy) and uses nothing of what the person wrote; write notes in your own "
                "words, from what the person said as well as what was done")
