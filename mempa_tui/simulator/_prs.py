"""Perceived Realization Score: the user's own 1-5 rating of a probe (paper Section 3.5, F.2).

After a final probe, the simulator without its accumulated memory re-reads the public exchange
with its persona card and the acting sheet of the probed setting, and rates how well the PA met
its preference on the probed attribute, with a short reason. It never sees the PA's selection,
withheld content or the judge's material (Table 9, note e). A reply that cannot be read is asked
for once more; if it still cannot be read the rating fails with :class:`PRSError`, so the probe's
PRS is recorded as missing, never invented.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mempa_tui.llm import JSONReplyError, parse_json_reply
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.scripts.schema import Persona
from mempa_tui.simulator._checker import ModelClient
from mempa_tui.simulator._dialogue import DialogueEntry, render_dialogue
from mempa_tui.simulator._prompt import render_persona
from mempa_tui.simulator._skills import SkillBook, default_skills
from mempa_tui.taxonomy import Context, attribute

__all__ = ["PRSError", "rate_probe", "read_rating"]

REASON_MAX_CHARS = 450
"""Longest reason a rating reply may hold (about 107 tokens of Qwen's at the 4.2 characters per
token measured). Chosen by the judge's reasoning for its evidence
(:data:`mempa_tui.scoring._judge.EVIDENCE_MAX_CHARS`, 480): the capped text at a pessimistic 2.5
characters per token, plus about 20 tokens for the rest of the object, must fit the role's
completion cap, so a grammar-constrained server closes the object before the cap cuts it. The
rater runs under the simulator role, whose cap on the embedded profile is 200 tokens (it bounds
every simulated user message too, so it stays): (200 - 20) x 2.5 = 450, which is the most that fits;
the judge's 480 would need 212. Issue 12: at 400, 3 of the embedded quick start's 6 rater replies
stopped at the cap mid-sentence and were retried as cut (:func:`~mempa_tui.llm.structured.cut_reason`);
the prompt asks for one or two sentences, and two long ones fit in 450."""

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                   "reason": {"type": "string", "maxLength": REASON_MAX_CHARS}},
    "required": ["score", "reason"],
}
"""The rating's reply schema; the reason's length cap (:data:`REASON_MAX_CHARS`) lets a
grammar-constrained server close the object inside the simulator's token budget (uncapped, a
cut-off reason lost the PRS)."""


class PRSError(RuntimeError):
    """The rater's output could not be read twice; PRS is missing for this probe.

    Attributes:
        attribute / setting: the probed cell's attribute key and target setting.
        replies: the rater's reply texts.
    """

    def __init__(self, attribute_key: str, setting: str, problem: str, replies: list[str]) -> None:
        self.attribute = attribute_key
        self.setting = setting
        self.replies = replies
        super().__init__(f"PRS for {attribute_key}={setting} is missing: {problem}")


def read_rating(text: str) -> tuple[int, str]:
    """Read ``{"score": 1-5, "reason": "..."}`` from a rater reply.

    The score may be an integer, an integral float (``4.0``) or a numeric string (``"4"``).

    Raises:
        ValueError: no JSON object, the score is missing, not a whole number or outside 1-5, or
            the reason is missing or empty (the message says which).
    """
    try:
        data = parse_json_reply(text)
    except JSONReplyError as err:
        raise ValueError(str(err)) from err
    raw = data.get("score")
    score: int | None = None
    if isinstance(raw, bool):
        score = None
    elif isinstance(raw, int):
        score = raw
    elif isinstance(raw, float) and raw.is_integer():
        score = int(raw)
    elif isinstance(raw, str) and raw.strip().isdigit():
        score = int(raw.strip())
    if score is None:
        raise ValueError(f"'score' must be a whole number from 1 to 5, got {raw!r}")
    if not 1 <= score <= 5:
        raise ValueError(f"'score' must be from 1 to 5, got {score}")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("'reason' must be a non-empty string")
    return score, " ".join(reason.split())


def _messages(persona: Persona, sheet: str, exchange: str, aspect: str) -> list[ChatMessage]:
    system = (
        f"{render_persona(persona)}\n\n"
        "You have just had the short conversation below with an AI assistant you had never used "
        "before. Here is what you want from an assistant on one particular aspect:\n"
        f"{sheet}\n\n"
        f"Rate from 1 to 5 how well the assistant met what you want on this aspect ({aspect}), "
        "judging by what it said and what actually ran, not by whether the task itself got done:\n"
        "5 = exactly the way you want it; 4 = mostly, with a small lapse; 3 = partly; "
        "2 = mostly not; 1 = the opposite of what you want.\n"
        'Reply with one JSON object only: {"score": <1-5>, "reason": "<one or two sentences in '
        'your own voice>"}'
    )
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=f"The conversation:\n{exchange}"),
    ]


async def rate_probe(
    client: ModelClient,
    persona: Persona,
    attribute_key: str,
    target_setting: str,
    transcript_public: Sequence[DialogueEntry] | str,
    *,
    context: Context | None = None,
    skills: SkillBook | None = None,
) -> tuple[int, str]:
    """Rate a finished probe from the user's side (PRS, 1-5, with a reason).

    Args:
        client: the model client (role ``simulator``: the same model as the simulator).
        persona: the user.
        attribute_key: the probed attribute.
        target_setting: the user's setting of the probed cell (it picks the acting sheet).
        transcript_public: the public exchange (user messages, delivered replies, actions that
            ran, held items) as dialogue entries or rendered text.
        context: the probed cell's context (shown on the acting sheet).
        skills: the skill book (default: the packaged skills).

    Returns:
        ``(score, reason)``.

    Raises:
        KeyError: unknown attribute or setting.
        PRSError: the rater's reply could not be read twice.
        LLMError: the model call itself failed.
    """
    attr = attribute(attribute_key)
    sheet = (skills or default_skills()).get(attr.key, target_setting).acting_sheet(context)
    exchange = (
        transcript_public
        if isinstance(transcript_public, str)
        else render_dialogue(transcript_public, user_label=persona.name.split()[0])
    )
    got = await complete_json(
        client, Role.SIMULATOR, _messages(persona, sheet, exchange, attr.question),
        schema=_SCHEMA, read=read_rating,
    )
    if got.value is None:
        raise PRSError(attr.key, target_setting, got.error or "no reply", got.replies)
    return got.value
