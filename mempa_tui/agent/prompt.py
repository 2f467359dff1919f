"""The PA's system prompt and the harness's marked messages (our own wording).

Paper Section 3.4 ('PA and Memory Interface': evidence placed in the PA's prompt), Section 3.5
('Reference Conditions': under Oracle the target setting and its definition), Appendix C.3 (4)
(reminder before the forced call). The same prompt serves sessions and probes (SPEC 4.5).

Since the IX wrapper writes no words of its own (Section 3.4, Appendix E.1, E.5), the
instructions tell the PA that asking the person to approve a held change is done in its own
reply, and that IX_ fields take their material only when such a tool
is on offer (no ban on ordinary clarifying questions). They name no setting and favour none.

Layout for KV-cache reuse (SPEC section 7): the fixed instructions are the first system message,
which chat templates (Qwen's, Ollama's) follow with the tool schemas; the memory section and the
story date come in a second system message after them, so the long instructions-plus-tools
prefix is evaluated once per server and reused by every later PA call, in sessions and probes
alike. In that second message the memory (or Oracle) section comes before the date: probes after
the same sessions see the same memory on different dates, so a prompt cache keeps the memory
section too and reads only the date anew (issue 12: about 0.8k of the embedded quick start's 44k
new prompt tokens, docs/prompt-reuse.md). Within a turn the prompt only grows at its end.
"""

from __future__ import annotations

from datetime import datetime

from mempa_tui.agent.seat import OracleHint
from mempa_tui.memory.base import Evidence
from mempa_tui.taxonomy import attribute

__all__ = [
    "ECHO_REASK",
    "HARNESS_PREFIX",
    "NOTICE_PREFIX",
    "event_message",
    "reminder_message",
    "repeated_call_message",
    "context_prompt",
    "instructions",
    "system_prompt",
    "user_turn_message",
]

NOTICE_PREFIX = "[World event - this is a notification, not a message from the user]"
HARNESS_PREFIX = "[Harness note - not from the user]"

_INSTRUCTIONS = """\
You are a personal assistant working for one person. You help them with their everyday work and \
private life: their email, text messages, calendar, documents, contacts and the other records \
your tools can reach. What the tools show is the whole world you can see; do not invent records, \
people or results.

How to act in the world
- Tools whose names start with mcp_state_ read or change the person's records. Reading is always \
fine. A tool that rejects a call says which value was wrong and why; fix it and try again, or ask \
the person when only they can supply it.
- A change you request may be held until the person approves it, or refused; the tool result \
tells you. A held change has not happened yet, so never describe it as done.
- Nobody else speaks to the person for you: the harness adds no words to your reply. A held \
change runs only if the person approves it, and asking them for that approval is up to you, in \
your reply.
- When you have nothing more to do in this turn, answer the person in plain text without a tool \
call. That text ends your turn.

How to choose the way you interact
- Tools whose names start with IX_ decide how you interact with this person on one question \
(for example how much to explain, or what to do before asking). Such a tool is offered when that \
question comes up, which may be in the middle of a conversation.
- When an IX_ tool is offered and you have not called it yet in this conversation, call it before \
you act on that question, and pick the setting that suits this person best. Your first choice \
holds for the rest of the conversation. Later calls may repeat it to add material for the turn.
- When an IX_ tool you have been offered has a field for some material (rationale, confidence \
notes, progress notes, topics, questions, an outreach message), put that material in the field \
rather than in your reply text; the harness delivers it according to the setting. Material that \
no offered IX_ tool has a field for belongs in your reply as usual: when no IX_ tool is offered, \
ask whatever you need to ask in your reply. Never write setting names or IX_ tool names into \
other tools' arguments or your reply.
- Messages that begin with "[World event" report something that happened in the world; the \
person did not write them and may not know about it yet. Messages that begin with "[Harness note" \
come from the system running you, not from the person."""


ECHO_REASK = (
    f"{HARNESS_PREFIX} Your last reply was not sent: it repeated a message of the system running "
    "you instead of answering. Now write what you want to tell the person, in your own words, "
    "from what you found this turn."
)
"""The one re-ask after a reply that echoed harness text (:mod:`mempa_tui.agent.echo`)."""


def _date_section(starts_at: datetime) -> str:
    return f"Current date and time\nIt is {starts_at:%A, %Y-%m-%d, %H:%M}."


def _oracle_section(hint: OracleHint) -> str:
    attr = attribute(hint.attribute)
    setting = attr.setting(hint.setting)
    return (
        "What this person wants for the decision at hand\n"
        f"Question: {attr.name} - {attr.question}\n"
        f"Their preference: {setting.name}. In practice: {setting.behaviour}"
    )


def _memory_section(evidence: Evidence) -> str:
    body = evidence.system_text.strip() or "(Your memory has nothing for this turn.)"
    return "What your memory holds about this person\n" + body


def instructions() -> str:
    """The fixed instructions: the PA's first system message, identical in every call."""
    return _INSTRUCTIONS


def context_prompt(
    starts_at: datetime, evidence: Evidence, oracle: OracleHint | None = None
) -> str:
    """The PA's second system message: the memory (or Oracle) section and the story date.

    The section that is the same across steps (one memory after the same sessions, one Oracle
    target for a cell) comes first and the date, which differs from step to step, last, so a
    prompt cache reuses the section between probes (see the module docstring).

    Args:
        starts_at: story date and time at the step's start.
        evidence: the memory's evidence for this turn (ignored under Oracle).
        oracle: the probed cell's target, only in an Oracle probe; it replaces the memory section.

    Returns:
        The memory (or Oracle) section, then the date, separated by a blank line.
    """
    first = _oracle_section(oracle) if oracle is not None else _memory_section(evidence)
    return "\n\n".join([first, _date_section(starts_at)])


def system_prompt(
    starts_at: datetime, evidence: Evidence, oracle: OracleHint | None = None
) -> str:
    """The whole system prompt as one text (instructions, memory, date), for display and export.

    The PA itself sends it as two system messages (see the module docstring).
    """
    return "\n\n".join([_INSTRUCTIONS, context_prompt(starts_at, evidence, oracle)])


def user_turn_message(message: str, runtime_notes: list[str]) -> str:
    """The user's message, preceded by harness feedback on held items when there is any."""
    if not runtime_notes:
        return message
    notes = "\n".join(f"- {n}" for n in runtime_notes)
    return f"{HARNESS_PREFIX}\n{notes}\n\n{message}"


def event_message(now: datetime, notice: str, runtime_notes: list[str]) -> str:
    """A world event's notice, clearly marked as not from the user."""
    text = f"{NOTICE_PREFIX} {now:%Y-%m-%d %H:%M}: {notice}"
    if runtime_notes:
        text += "\n" + "\n".join(f"- {n}" for n in runtime_notes)
    return text


def repeated_call_message(tool_name: str) -> str:
    """The tool result of a call that repeats an earlier call of the turn exactly (same name and
    arguments), when the profile wraps such a turn up (``pa_repeated_call: wrap_up``): the call
    did not run again, and the turn now moves to its answer."""
    return (
        f"{HARNESS_PREFIX} You already called {tool_name or 'this tool'} with exactly these "
        "arguments earlier in this turn, so it was not run a second time; the result you got then "
        "still holds. Work from what you have and finish the turn."
    )


def reminder_message(tool_name: str, missing: tuple[str, ...]) -> str:
    """The one in-turn reminder about a required IX call (Appendix C.3 (4))."""
    if missing:
        fields = ", ".join(missing)
        return (
            f"{HARNESS_PREFIX} Your choice needs its material for this turn: call {tool_name} "
            f"again with {fields} before you finish."
        )
    return (
        f"{HARNESS_PREFIX} This turn needs a decision from {tool_name}. Call it with the setting "
        "that suits this person before you finish the turn."
    )
