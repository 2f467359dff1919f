"""The BRS judge (paper Section 3.5 'Behavioral Realization', Appendices F.2 and I.4, Table 9).

One call per probe. The system prompt holds the scoring rules and the universal anchors for 1-5;
the user message holds the probe's task and the world state at its start, the public dialogue,
the tool trajectory that actually ran, and the rubric of the probed attribute for the target
setting. The judge is blind to the PA's selection: :class:`BRSJudgeInput` has no field for the
selection, an IX call, held or withheld content or the scoring trace, forbids extra fields, and
refuses interaction-tool names in the trajectory. A reply that cannot be used is retried once;
if it still cannot be used BRS is missing (the probe's BRS is incomplete), never invented. A
usable reply cut at its cap (the token cap, or the evidence's length cap mid-sentence) is
retried once too; cut again, its score is kept and the verdict says so (``cut``), to be counted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mempa_tui.ix.types import CallStatus, DeliveredTurn, ExecutedCall
from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.errors import JSONReplyError, LLMError
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Completion, Role
from mempa_tui.scoring._rubrics import rubric_text
from mempa_tui.taxonomy import Context, attribute

__all__ = [
    "JUDGE_SCHEMA",
    "BRSJudgeInput",
    "BRSVerdict",
    "JudgeClient",
    "JudgeToolStep",
    "JudgeTurn",
    "judge_brs",
    "judge_messages",
    "judge_turn",
]

_RESULT_CHARS = 400


class JudgeClient(Protocol):
    """The part of :class:`mempa_tui.llm.LLMClient` the judge uses."""

    async def complete(
        self,
        role: Role,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat call; see ``LLMClient.complete``."""
        ...


class JudgeToolStep(BaseModel):
    """A world-tool call that ran, as the judge sees it.

    Attributes:
        tool: tool name without the ``mcp_state_`` prefix; interaction tools are refused.
        arguments: the call's arguments.
        ok: False when the tool rejected the call or failed.
        result: the start of the tool's result text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: str = ""

    @field_validator("tool")
    @classmethod
    def _world_tool_only(cls, value: str) -> str:
        name = value.removeprefix("mcp_state_")
        if name.upper().startswith("IX_"):
            raise ValueError(f"{value!r} is an interaction tool; the judge never sees IX calls")
        return name


class JudgeTurn(BaseModel):
    """One message of the public dialogue.

    Attributes:
        speaker: ``user``, ``assistant`` or ``event`` (a world-event notice).
        text: the message as delivered (for the assistant: the rendered public reply).
        actions: for assistant turns, the world-tool calls that ran in that turn, in order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    speaker: Literal["user", "assistant", "event"]
    text: str
    actions: list[JudgeToolStep] = Field(default_factory=list)


class BRSJudgeInput(BaseModel):
    """Everything the BRS judge receives for one probe (Table 9, 'BRS judge' row).

    Attributes:
        probe_id: the probe's id (for logs).
        attribute: key of the probed attribute.
        context: context of the probed cell.
        target: the target setting of the probed cell.
        task: the probe's task line.
        world_summary: the world state at the probe's start, summarised in plain text.
        dialogue: the public dialogue with the actions that ran, in order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    probe_id: str = ""
    attribute: str
    context: Context
    target: str
    task: str
    world_summary: str = ""
    dialogue: list[JudgeTurn]

    @field_validator("attribute")
    @classmethod
    def _known_attribute(cls, value: str) -> str:
        try:
            return attribute(value).key
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from None


class BRSVerdict(BaseModel):
    """The judge's result for one probe.

    Attributes:
        score: 1-5, or None when no usable reply came back (BRS missing, probe incomplete).
        evidence: the judge's justification.
        attempts: model calls made (at most 2).
        error: why the score is missing.
        cut: set when the score comes from a reply cut at a cap even after the retry (the
            evidence ends mid-sentence; :func:`mempa_tui.llm.structured.cut_reason`): what was
            cut. The score stands; the caller marks and counts it.
    """

    score: int | None = Field(default=None, ge=1, le=5)
    evidence: str = ""
    attempts: int = 0
    error: str | None = None
    cut: str | None = None


EVIDENCE_MAX_CHARS = 480
"""Longest evidence text a judge reply may hold (about 115 tokens of Qwen's at the 4.2 characters
per token measured). Issue 12: at 320 the embedded 0.5B judge's evidence ran to the cap
mid-sentence in 4 of the quick start's 6 judge replies (319-320 characters, 71-78 completion
tokens; the others 203 and 288); the prompt asks for one to three sentences, and three long ones
fit in 480. A reply that still runs to the cap is retried once, then kept and marked
(:attr:`BRSVerdict.cut`)."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "evidence": {"type": "string", "maxLength": EVIDENCE_MAX_CHARS},
    },
    "required": ["score", "evidence"],
    "additionalProperties": False,
}
"""The reply schema sent with every judge call. The evidence has a length cap so that a
grammar-constrained server closes the object inside the judge's token budget: uncapped, the
embedded 0.5B judge wrote evidence until its 160-token cap cut the JSON, and the probe's BRS was
missing (issue 12's quick start, 2 of 6 probes)."""

_SYSTEM = """\
You rate how faithfully a personal assistant's delivered behaviour in one short conversation \
follows a single interaction preference of its user. You get the task and the state of the \
user's world at the start, the conversation as the user saw it, the tool actions that actually \
ran, and a rubric for the one preference to check.

Rules:
- Rate only that preference, against its rubric. Ignore whether the task itself was solved well, \
unless the rubric makes it part of the preference.
- Rate what was delivered: the visible replies and the actions that ran. What the assistant may \
have intended does not count, and neither do actions that never ran.
- Read every assistant turn; one turn that breaks the preference counts against the score.
- Length, politeness and effort earn nothing by themselves.
- If there is no assistant reply to rate, give 1.

Scale:
5 - every criterion of the rubric is met; nothing in the conversation works against it.
4 - met in substance, with one small slip a user would hardly notice.
3 - partly met: the central criterion holds, but a clear part of the rubric is missing or \
contradicted.
2 - mostly missed: only traces of the preference; the central criterion fails.
1 - not followed at all, or the opposite behaviour was delivered.

Answer with one JSON object {"score": <integer 1-5>, "evidence": "<one to three sentences that \
point to the replies or actions behind the score>"} and nothing else."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def judge_turn(delivered: DeliveredTurn) -> JudgeTurn:
    """The judge's view of one delivered PA turn: the public reply and the calls that ran.

    Held, blocked and rejected calls and interaction-tool calls are left out.

    Args:
        delivered: what the user received for the turn.

    Returns:
        An assistant :class:`JudgeTurn`.
    """
    return JudgeTurn(speaker="assistant", text=delivered.reply, actions=_steps(delivered.executed))


def _steps(calls: Sequence[ExecutedCall]) -> list[JudgeToolStep]:
    steps = []
    for call in calls:
        if call.status is not CallStatus.EXECUTED:
            continue
        if call.tool.removeprefix("mcp_state_").upper().startswith("IX_"):
            continue
        steps.append(
            JudgeToolStep(
                tool=call.tool,
                arguments=call.arguments,
                ok=not call.error,
                result=_clip(call.result, _RESULT_CHARS),
            )
        )
    return steps


def judge_messages(data: BRSJudgeInput) -> list[ChatMessage]:
    """The judge's ``[system, user]`` messages for one probe (Appendix I.4).

    Args:
        data: the judge input.

    Returns:
        The two messages.
    """
    lines: list[str] = []
    trajectory: list[str] = []
    reply_no = 0
    for turn in data.dialogue:
        if turn.speaker == "assistant":
            reply_no += 1
            lines.append(f"ASSISTANT (reply {reply_no}): {turn.text}")
            for step in turn.actions:
                args = json.dumps(step.arguments, ensure_ascii=False, sort_keys=True)
                status = "ok" if step.ok else "error"
                trajectory.append(f"{len(trajectory) + 1}. [reply {reply_no}] {step.tool}({args}) -> {status}: {step.result}")
        elif turn.speaker == "user":
            lines.append(f"USER: {turn.text}")
        else:
            lines.append(f"EVENT NOTICE: {turn.text}")
    user = (
        f"## Task ({data.context.value} context)\n{data.task}\n\n"
        f"## World at the start\n{data.world_summary.strip() or '(no summary given)'}\n\n"
        f"## Conversation\n" + ("\n\n".join(lines) or "(no messages)") + "\n\n"
        "## Actions that ran (in order; [reply n] is the assistant turn they belong to)\n"
        + ("\n".join(trajectory) or "(none)")
        + "\n\n"
        f"## Rubric\n{rubric_text(data.attribute, data.target)}\n\n"
        "Rate how well the delivered behaviour follows the target setting."
    )
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


def _score(raw: object) -> int:
    """Accept an integer score, or a whole number written as a float or a numeric string."""
    if isinstance(raw, bool):
        raise ValueError("score: a boolean is not a score")  # noqa: TRY004 - malformed output
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if not isinstance(raw, int):
        raise ValueError(f"score: expected an integer 1-5, got {raw!r}")  # noqa: TRY004
    if not 1 <= raw <= 5:
        raise ValueError(f"score: {raw} is outside 1-5")
    return raw


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: object
    evidence: str


def _read(text: str) -> tuple[int, str]:
    try:
        raw = parse_json_reply(text)
        reply = _Reply.model_validate(raw)
    except JSONReplyError as exc:
        raise ValueError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return _score(reply.score), reply.evidence.strip()


async def judge_brs(client: JudgeClient, data: BRSJudgeInput) -> BRSVerdict:
    """Score one probe's Behavioral Realization (BRS) with the judge model.

    Never raises for model output or a failed call; a missing score comes back with the reason.

    Args:
        client: the model client (role ``judge``).
        data: the judge input (blind to the selection by construction).

    Returns:
        The verdict; ``score`` None means BRS is missing for this probe.
    """
    try:
        got = await complete_json(
            client, Role.JUDGE, judge_messages(data), schema=JUDGE_SCHEMA, read=_read,
            retry_hint='Answer again with only the JSON object {"score": <integer 1-5>, "evidence": "..."}.',
            on_cut="retry",
        )
    except LLMError as exc:
        return BRSVerdict(attempts=0, error=f"judge call failed: {exc}")
    if got.value is None:
        return BRSVerdict(attempts=got.attempts, error=got.error)
    score, evidence = got.value
    return BRSVerdict(score=score, evidence=evidence, attempts=got.attempts, cut=got.cut)
