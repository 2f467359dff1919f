"""The LLM message checker (paper Appendix D.4 'Rule-based checks', Appendix I.3 'Simulator Message
Checker').

Role ``checker`` reads a candidate simulator message with the PA's previous reply and the current
beat and answers a fixed set of yes/no questions, one JSON verdict per question. Malformed checker
output is asked for once more; if it is still malformed the check is recorded as skipped with a
logged warning and the message passes: a broken checker never crashes a run and never blocks a
message on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Completion, Role, ToolSpec
from mempa_tui.scripts.schema import Beat, Fact

__all__ = ["CheckerOutcome", "CheckerQuestion", "ModelClient", "check_message", "checker_questions"]

log = logging.getLogger(__name__)


class ModelClient(Protocol):
    """The part of :class:`~mempa_tui.llm.LLMClient` the simulator uses."""

    async def complete(
        self,
        role: Role,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """One model call; see :meth:`mempa_tui.llm.LLMClient.complete`."""
        ...


class CheckerQuestion(BaseModel):
    """One rule question the checker answers (``violated`` true means the message fails)."""

    model_config = ConfigDict(frozen=True)

    key: str
    question: str
    problem: str = Field(description="The note the simulator gets back when the rule is violated.")


_NAMES = CheckerQuestion(
    key="names_preference",
    question=(
        "Does the message announce how the assistant should behave in general (its style, length, "
        "how much it asks, whether it acts alone, and so on) or name such a preference, WITHOUT "
        "reacting to something the assistant just did in its previous reply? A remark on the "
        "previous reply, or a request that follows directly from it, is not a violation."
    ),
    problem="the message announces a preference instead of reacting to what the assistant just did",
)
_EARLY = CheckerQuestion(
    key="early_fact",
    question=(
        "Does the message give away any of the NOT-YET-RELEASED DETAILS listed below (their "
        "content, not just the topic)?"
    ),
    problem="the message gives a task detail you do not have yet; say you will come to it instead",
)
_OFF = CheckerQuestion(
    key="off_task",
    question=(
        "Is the message off the task: it neither pursues the current step's goal nor responds to "
        "the assistant's previous reply?"
    ),
    problem="the message drifts off the task; pursue the current step or answer the assistant",
)
_EARLIER = CheckerQuestion(
    key="earlier_session",
    question="Does the message refer to an earlier conversation with this assistant?",
    problem="the message refers to an earlier conversation; you have never spoken to this assistant",
)
_MANNER = CheckerQuestion(
    key="manner_feedback",
    question=(
        "Does the message comment on the MANNER of the assistant's reply (its tone, length, format, "
        "how much it explained or asked), or ask the assistant for a way of replying (how long to "
        "be, how many options to give, whether to explain its reasoning, whether to check back "
        "before acting, whether to report what it is doing, how sure it should say it is, how to "
        "take several topics), rather than speaking about the task itself? A request about a text "
        "the person will send to someone else is task content, not a violation."
    ),
    problem="the message comments on or asks for a manner of reply; stay with the task itself",
)
_MANNER_AT_DECISION = CheckerQuestion(
    key="manner_feedback",
    question=(
        "Does the message ask the assistant for a way of replying to THIS request (how long to be, "
        "how many options to give, whether to explain its reasoning, whether to check back before "
        "acting, whether to report what it is doing, how sure it should say it is, how to take "
        "several topics)? Reacting to something the assistant already did is not a violation, and "
        "neither is a request about a text the person will send to someone else."
    ),
    problem="the message asks for a manner of reply; ask only about the task and leave the answer's shape to the assistant",
)


def checker_questions(*, probe: bool, has_unreleased: bool, at_decision: bool = False) -> list[CheckerQuestion]:
    """The rule questions for a message (D.4 'Prompt rules'; Table 8 condition 3).

    Probe mode adds the earlier-session and manner questions; ``at_decision`` (the message that
    opens a decision point in an accumulation session) adds the manner-request question.
    """
    questions = [_NAMES, _OFF]
    if has_unreleased:
        questions.insert(1, _EARLY)
    if probe:
        questions += [_EARLIER, _MANNER]
    elif at_decision:
        questions.append(_MANNER_AT_DECISION)
    return questions


class CheckerOutcome(BaseModel):
    """The checker's result for one candidate message.

    Attributes:
        problems: notes for the violated questions (empty: the message passes).
        manner: the manner question was violated (counted by the simulator).
        warning: set when the checker's output stayed malformed and the check was skipped.
        raw: the checker's last reply text, for the record.
    """

    problems: list[str] = Field(default_factory=list)
    manner: bool = False
    warning: str | None = None
    raw: str = ""


_SYSTEM = (
    "You review a single message that a person is about to send to their AI assistant, before it "
    "is sent. Answer every question below about that message with true (the message violates "
    "the rule) or false, plus a short reason. Judge only the message, using the rest as context. "
    'Reply with one JSON object only: {"verdicts": {"<question key>": {"violated": true|false, '
    '"reason": "..."}}} with one entry for every question key.'
)


def _schema(keys: Sequence[str]) -> dict[str, Any]:
    verdict = {
        "type": "object",
        "properties": {"violated": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["violated", "reason"],
    }
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "object",
                "properties": {k: verdict for k in keys},
                "required": list(keys),
            }
        },
        "required": ["verdicts"],
    }


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in {"true", "yes", "fail", "violated", "violation"}:
            return True
        if word in {"false", "no", "pass", "ok", "not violated"}:
            return False
    return None


def _read_verdicts(data: dict[str, Any], keys: Sequence[str]) -> dict[str, bool]:
    """Map question key -> violated; raises ValueError naming the first unreadable key."""
    body: object = data.get("verdicts", data)
    if isinstance(body, list):
        body = {str(v.get("rule") or v.get("key")): v for v in body if isinstance(v, dict)}
    if not isinstance(body, dict):
        raise ValueError("'verdicts' is not an object")
    result: dict[str, bool] = {}
    for key in keys:
        raw = body.get(key)
        value = _as_bool(raw.get("violated") if isinstance(raw, dict) else raw)
        if value is None:
            raise ValueError(f"no readable verdict for {key!r}")
        result[key] = value
    return result


async def check_message(
    client: ModelClient,
    *,
    message: str,
    previous_reply: str | None,
    beat: Beat,
    unreleased: Sequence[Fact],
    probe: bool,
    at_decision: bool = False,
) -> CheckerOutcome:
    """Ask the checker model about one candidate message.

    Args:
        client: the model client (role ``checker``).
        message: the candidate message.
        previous_reply: the PA's last delivered reply, or None at the start of a session.
        beat: the current beat (its goal and what the user conveys).
        unreleased: facts of the script not yet released (the checker may see them; the
            simulator may not).
        probe: probe mode (adds the earlier-session and manner questions).
        at_decision: the message opens a decision point of an accumulation session (adds the
            manner-request question).

    Returns:
        A :class:`CheckerOutcome`; malformed output twice gives no problems and a warning.

    Raises:
        LLMError: the call itself failed (transport or provider), after the client's retries.
    """
    questions = checker_questions(probe=probe, has_unreleased=bool(unreleased), at_decision=at_decision)
    keys = [q.key for q in questions]
    lines = ["QUESTIONS (answer each key):"]
    lines += [f"- {q.key}: {q.question}" for q in questions]
    lines.append(f"\nCURRENT STEP GOAL: {beat.goal}\nWHAT THE PERSON MEANS TO CONVEY: {beat.conveys}")
    if unreleased:
        lines.append("NOT-YET-RELEASED DETAILS:")
        lines += [f"- {f.text}" for f in unreleased]
    lines.append(f"\nASSISTANT'S PREVIOUS REPLY:\n{previous_reply or '(none: this opens the conversation)'}")
    lines.append(f"\nMESSAGE TO CHECK:\n{message}")
    messages = [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content="\n".join(lines))]
    got = await complete_json(
        client, Role.CHECKER, messages, schema=_schema(keys),
        read=lambda text: _read_verdicts(parse_json_reply(text), keys),
    )
    raw = got.replies[-1] if got.replies else ""
    if got.value is not None:
        return CheckerOutcome(
            problems=[q.problem for q in questions if got.value[q.key]],
            manner=bool(got.value.get("manner_feedback")),
            raw=raw,
        )
    warning = f"message checker output unreadable twice ({got.error}); check skipped, message passed"
    log.warning(warning)
    return CheckerOutcome(warning=warning, raw=raw)
