"""Layout of the PA's payload pieces in the public reply (Appendix E.3).

Pure functions of payload values; the wrapper decides which pieces a setting delivers. They only
lay out what the PA wrote (labels, numbering, the level the PA gave a claim): the wrapper adds no
sentence of its own to the public reply (Section 3.4, E.1). :func:`describe_call` names a held
call in the held item's record and the scoring trace, never in the reply.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "confidence_block",
    "describe_call",
    "join_parts",
    "numbered_questions",
    "topic_section",
]

_MAX_ARG_CHARS = 60
_MAX_ARGS = 4


def describe_call(tool: str, arguments: dict[str, Any]) -> str:
    """A short human description of a proposed call, e.g. ``email_message_send (to: ..., ...)``.

    Values are cut to 60 characters and at most four arguments are named.
    """
    parts: list[str] = []
    for key, value in list(arguments.items())[:_MAX_ARGS]:
        text = value if isinstance(value, str) else repr(value)
        text = " ".join(text.split())
        if len(text) > _MAX_ARG_CHARS:
            text = text[: _MAX_ARG_CHARS - 3] + "..."
        parts.append(f"{key}: {text}")
    if len(arguments) > _MAX_ARGS:
        parts.append("...")
    return f"{tool} ({', '.join(parts)})" if parts else tool


def topic_section(label: str, content: str) -> str:
    """One topic under its label."""
    return f"{label}:\n{content.strip()}"


def numbered_questions(questions: list[str]) -> str:
    """All questions in one numbered block (Information Elicitation: Structured)."""
    return "\n".join(f"{i}. {q.strip()}" for i, q in enumerate(questions, start=1))


def confidence_block(notes: list[dict[str, Any]]) -> str:
    """Each claim with the confidence level the PA gave it, one per line (Uncertainty Expression:
    Express); no heading of the wrapper's own."""
    return "\n".join(f"- {n['claim'].strip()} (confidence: {n['level']})" for n in notes)


def join_parts(parts: list[str]) -> str:
    """Join non-empty parts with blank lines."""
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
