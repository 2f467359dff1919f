"""Text pieces the IX wrapper assembles into the public reply (Appendix E.3).

Pure functions of payload values; the wrapper decides which pieces a setting delivers.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "confidence_block",
    "consent_line",
    "deferred_line",
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


def consent_line(items: list[tuple[str, str]]) -> str:
    """The closing request for consent: each held id with what it would do.

    Args:
        items: (held id, description) pairs in id order.
    """
    listed = "; ".join(f"{hid}: {desc}" for hid, desc in items)
    return (
        f"Waiting for your approval before I do the following: {listed}. "
        "Tell me yes or no for each."
    )


def topic_section(label: str, content: str) -> str:
    """One topic under its label."""
    return f"{label}:\n{content.strip()}"


def deferred_line(labels: list[str], next_id: str) -> str:
    """Name the deferred topics and ask before moving on to the next one."""
    named = ", ".join(f"'{label}'" for label in labels)
    return (
        f"Still to come: {named}. Shall I move on to '{labels[0]}' next? "
        f"(reply about {next_id})"
    )


def numbered_questions(questions: list[str]) -> str:
    """All questions in one numbered block (Information Elicitation: Structured)."""
    return "\n".join(f"{i}. {q.strip()}" for i, q in enumerate(questions, start=1))


def confidence_block(notes: list[dict[str, Any]]) -> str:
    """Each claim with its confidence level (Uncertainty Expression: Express)."""
    lines = [f"- {n['claim'].strip()} (confidence: {n['level']})" for n in notes]
    return "How sure I am:\n" + "\n".join(lines)


def join_parts(parts: list[str]) -> str:
    """Join non-empty parts with blank lines."""
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
