"""The simulator's own memory across sessions (paper Appendix D.3, Section 3.4).

After each accumulation session the simulator writes a dated first-person entry of two to four
sentences: how the PA treated it, what it decided and what is still open. The entry leaves out the
subject matter, file paths, exact numbers and dates, so the simulator remembers how it was
treated while each session's task content comes from its own script. It also keeps a short list
of lasting impressions of the PA ('it tends to over-explain'). A change event adds a first-person
note. Probes neither read nor write this memory.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from mempa_tui.llm import JSONReplyError, parse_json_reply
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.scripts.schema import Persona
from mempa_tui.simulator._checker import ModelClient
from mempa_tui.simulator._dialogue import DialogueEntry, render_dialogue

__all__ = ["MemoryEntry", "SessionEntryResult", "SimulatorMemory", "entry_problems", "write_session_entry"]

log = logging.getLogger(__name__)

MAX_IMPRESSIONS = 6
_IMPRESSION_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PATH = re.compile(
    r"[\w.-]+(?:/[\w.-]+){2,}|[\w.-]+/[\w-]+\.\w{1,5}\b|\\\\"
    r"|\b[\w-]+\.(?:pdf|docx?|xlsx?|csv|txt|md|json|ya?ml|png|jpe?g|ics)\b",
    re.I,
)
_EMAIL = re.compile(r"\b\S+@\S+\.\w+\b")


class MemoryEntry(BaseModel):
    """One dated memory entry.

    Attributes:
        on: story date of the session or change event.
        kind: ``session`` (written after an accumulation session) or ``change_note`` (the
            first-person note of a preference-change event).
        text: first person, no subject matter details, paths, exact numbers or dates.
    """

    on: date
    kind: Literal["session", "change_note"] = "session"
    text: str = Field(min_length=1)


class SimulatorMemory(BaseModel):
    """The simulator's memory: dated entries and lasting impressions (serialisable for checkpoints).

    Use ``model_dump_json()`` / ``SimulatorMemory.model_validate_json(...)`` to save and restore.

    Attributes:
        entries: entries in the order written.
        impressions: short lasting impressions of the PA, at most :data:`MAX_IMPRESSIONS`.
    """

    entries: list[MemoryEntry] = Field(default_factory=list)
    impressions: list[str] = Field(default_factory=list)

    def add_note(self, on: date, text: str) -> MemoryEntry:
        """Add a change-event note (Appendix C.4) and return it.

        Raises:
            ValueError: ``text`` is empty.
        """
        if not text.strip():
            raise ValueError("add_note: the note text is empty")
        entry = MemoryEntry(on=on, kind="change_note", text=text.strip())
        self.entries.append(entry)
        return entry

    def render(self) -> str:
        """The memory as prompt text, oldest entry first."""
        if not self.entries and not self.impressions:
            return "You have no memories of this assistant yet: this is your first conversation with it."
        lines = ["What you remember of earlier conversations with this assistant:"]
        lines += [f"- {e.on.isoformat()}: {e.text}" for e in self.entries] or ["- (no entries)"]
        if self.impressions:
            lines.append("Your lasting impressions of it:")
            lines += [f"- {i}" for i in self.impressions]
        return "\n".join(lines)


class SessionEntryResult(BaseModel):
    """Outcome of :func:`write_session_entry`.

    Attributes:
        entry: the entry added to memory, or None when the model never produced a usable one.
        impressions_updated: whether the impressions were replaced.
        problem: what went wrong, if anything (the run goes on; the problem is for the record).
    """

    entry: MemoryEntry | None = None
    impressions_updated: bool = False
    problem: str | None = None


def entry_problems(text: str) -> list[str]:
    """Why an entry text breaks the rules of Appendix D.3 (empty list: it is fine)."""
    problems: list[str] = []
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    if not 2 <= len(sentences) <= 4:
        problems.append(f"it has {len(sentences)} sentences; write two to four")
    if re.search(r"\d", text):
        problems.append("it contains digits; leave out exact numbers, times and dates")
    if _PATH.search(text) or _EMAIL.search(text):
        problems.append("it contains a file name, path or address; leave those out")
    return problems


def _salvage(text: str) -> str | None:
    """Keep up to four clean sentences of a faulty entry, or None if none is clean."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    clean = [s for s in sentences if not re.search(r"\d", s) and not _PATH.search(s) and not _EMAIL.search(s)]
    return " ".join(clean[:4]) if clean else None


def _prompt(persona: Persona, memory: SimulatorMemory, on: date, transcript: str) -> list[ChatMessage]:
    system = (
        f"You are {persona.name}. You have just finished a conversation with your AI assistant, "
        "and you keep a private diary about how this assistant treats you.\n"
        "Write the diary entry for today in the first person, two to four sentences: what you "
        "asked for in general terms, how the assistant handled it and treated you, what you "
        "decided, and what is still open. Leave out the subject matter details, names of files, "
        "paths, exact numbers and dates; remember how you were treated, not the content.\n"
        "Then update your lasting impressions of the assistant: short phrases about how it tends "
        "to behave with you (for example 'tends to pile on detail' or 'checks before sending'). "
        f"Keep earlier impressions that still hold, change those that no longer do, at most "
        f"{MAX_IMPRESSIONS}.\n"
        'Reply with one JSON object only: {"entry": "...", "impressions": ["...", "..."]}'
    )
    user = f"{memory.render()}\n\nToday is {on.isoformat()}. Today's conversation as you saw it:\n{transcript}"
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


ENTRY_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "entry": {"type": "string"},
        "impressions": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["entry", "impressions"],
}
"""JSON schema of the entry reply (sent as ``json_schema``, so constrained decoders keep to it)."""


def _impressions(value: object) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    cleaned = [" ".join(v.split())[:_IMPRESSION_CHARS] for v in value if v.strip()]
    return cleaned[:MAX_IMPRESSIONS]


async def write_session_entry(
    client: ModelClient,
    memory: SimulatorMemory,
    persona: Persona,
    session_date: date,
    transcript: Sequence[DialogueEntry] | str,
) -> SessionEntryResult:
    """Write the dated first-person entry of a finished session and update the impressions.

    The model (role ``simulator``) gets the memory so far and the session as the user saw it.
    A reply that is not JSON, or whose entry breaks the rules (2-4 sentences; no digits, paths or
    addresses), is asked for once more with the problems named. If the second reply is still
    faulty, its clean sentences are kept when there are any; otherwise no entry is written and
    the problem is returned (and logged), never raised.

    Args:
        client: the model client.
        memory: the memory to update in place.
        persona: the user.
        session_date: story date of the session.
        transcript: the session as the user saw it (dialogue entries or rendered text).

    Returns:
        A :class:`SessionEntryResult`.

    Raises:
        LLMError: the model call itself failed.
    """
    text = transcript if isinstance(transcript, str) else render_dialogue(transcript)
    messages = _prompt(persona, memory, session_date, text)
    problem = ""
    entry_text: str | None = None
    impressions: list[str] | None = None
    for attempt in range(2):
        completion = await client.complete(Role.SIMULATOR, messages, json_schema=ENTRY_SCHEMA)
        try:
            data = parse_json_reply(completion.text)
        except JSONReplyError as err:
            problem = f"reply was not a JSON object ({err})"
            data = {}
        raw_entry = data.get("entry")
        if data and not isinstance(raw_entry, str):
            problem = "the JSON has no 'entry' string"
        candidate = " ".join(raw_entry.split()) if isinstance(raw_entry, str) else ""
        impressions = _impressions(data.get("impressions")) if data else None
        faults = entry_problems(candidate) if candidate else []
        if candidate and not faults:
            entry_text, problem = candidate, ""
            break
        if faults:
            problem = "entry " + "; ".join(faults)
        if attempt == 0:
            messages = [
                *messages,
                ChatMessage(role="assistant", content=completion.text),
                ChatMessage(role="user", content=f"Please write it again: {problem}. JSON only."),
            ]
        elif candidate:
            entry_text = _salvage(candidate)
    result = SessionEntryResult(problem=problem or None)
    if entry_text:
        result.entry = MemoryEntry(on=session_date, kind="session", text=entry_text)
        memory.entries.append(result.entry)
    if impressions is not None:
        memory.impressions = impressions
        result.impressions_updated = True
    if result.problem:
        kept = "kept up to four of its clean sentences" if entry_text else "no entry kept"
        log.warning("simulated user's memory (Appendix D.3): the diary entry for %s failed its check on both "
                    "tries (%s); %s", session_date.isoformat(), result.problem.removeprefix("entry "), kept)
    return result
