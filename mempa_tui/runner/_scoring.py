"""BRS and PRS for a final probe (paper Section 3.5; Appendix F.2; Table 9).

A completed final probe gets both. A floored one gets BRS 1 by rule (no judge call) and is still
rated for PRS: the user rates what was delivered, so PRS is aggregated over the same final probes
as BRS (F.2).

* BRS: the judge gets the probe's task, a summary of the world records the probe refers to (as
  they stood at its start), the public dialogue with the actions that ran, and the rubric of the
  target setting; never the selection, IX calls or withheld content.
* PRS: the simulator without accumulated memory re-reads the public exchange with its persona
  card and the acting sheet of the target setting, and rates 1-5 with a reason.

A score that cannot be obtained is stored as missing with the reason (that probe's BRS or PRS is
then incomplete, never zero): the judge reports its own failures that way. A failed PRS model call
is raised, so the run stops and the probe repeat is played again on resume.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mempa_tui.ix.floors import FloorKind, floor_kind
from mempa_tui.scripts.schema import Probe
from mempa_tui.world import WorldState

if TYPE_CHECKING:
    from mempa_tui.runner._shared import RunContext
    from mempa_tui.runner.episode import StepResult
    from mempa_tui.scoring._judge import JudgeTurn
    from mempa_tui.simulator import DialogueEntry

__all__ = [
    "CUT_MARK",
    "ProbeScorer",
    "RealizationScores",
    "cut_marked",
    "default_scorer",
    "is_cut_marked",
    "judge_dialogue",
    "matrix_differing",
    "rater_dialogue",
    "score_final_probe",
    "world_summary",
]

_SUMMARY_CHARS = 600
"""Most characters of one record in the judge's world summary."""


@dataclass(frozen=True)
class RealizationScores:
    """BRS and PRS of one probe repeat (None: missing, with the reason)."""

    brs: int | None = None
    brs_reason: str | None = None
    prs: int | None = None
    prs_reason: str | None = None


ProbeScorer = Callable[["RunContext", Probe, str, "StepResult", WorldState], Awaitable[RealizationScores]]
"""``(run, probe, target, step_result, world_at_start) -> RealizationScores``."""


def _trailing_user_message(result: StepResult) -> str | None:
    """The user's last message when it came after the PA's last reply (e.g. the reaction)."""
    from mempa_tui.runner._episode_events import PAReplyEvent, UserMessageEvent
    from mempa_tui.runner.episode import public_transcript

    last: str | None = None
    for event in public_transcript(result.transcript):
        if isinstance(event, UserMessageEvent):
            last = event.text
        elif isinstance(event, PAReplyEvent):
            last = None
    return last


def judge_dialogue(result: StepResult) -> list[JudgeTurn]:
    """The public dialogue as the BRS judge reads it: messages, notices, delivered replies with
    the actions that ran (held, blocked and IX calls are left out by ``judge_turn``)."""
    from mempa_tui.scoring._judge import JudgeTurn, judge_turn

    turns: list[JudgeTurn] = []
    for exchange in result.exchanges:
        if exchange.notice:
            turns.append(JudgeTurn(speaker="event", text=exchange.notice))
        if exchange.user_message is not None:
            turns.append(JudgeTurn(speaker="user", text=exchange.user_message))
        turns.append(judge_turn(exchange.delivered))
    trailing = _trailing_user_message(result)
    if trailing is not None:
        turns.append(JudgeTurn(speaker="user", text=trailing))
    return turns


def rater_dialogue(result: StepResult) -> list[DialogueEntry]:
    """The public exchange as the user saw it, for the PRS rating.

    When the probe was floored in the middle of a PA turn, the user's last message is followed by
    a notice that no reply came (what the user met).
    """
    from mempa_tui.simulator import DialogueEntry, entry_from_delivered

    entries: list[DialogueEntry] = []
    for exchange in result.exchanges:
        if exchange.notice:
            entries.append(DialogueEntry(speaker="notice", text=exchange.notice))
        if exchange.user_message is not None:
            entries.append(DialogueEntry(speaker="user", text=exchange.user_message))
        entries.append(entry_from_delivered(exchange.delivered))
    trailing = _trailing_user_message(result)
    if trailing is not None:
        entries.append(DialogueEntry(speaker="user", text=trailing))
        if result.status == "floored":  # the PA's turn broke off: nothing reached the user
            entries.append(DialogueEntry(speaker="notice", text="the assistant sent no reply"))
    return entries


def world_summary(probe: Probe, world: WorldState) -> str:
    """The records the probe's beats refer to, as visible at its start, one per paragraph.

    Args:
        probe: the probe (its beats' ``records``).
        world: the branch's world at the probe's start.

    Returns:
        Plain text; a record that is missing or not yet visible is named as such.
    """
    from mempa_tui.world import WorkingCopy, WorldError

    copy = WorkingCopy(world, probe.starts_at)
    refs: list[str] = []
    for beat in probe.beats:
        for ref in beat.records:
            if ref not in refs:
                refs.append(ref)
    lines = [f"Date and time: {probe.starts_at:%Y-%m-%d %H:%M} ({probe.context.value} context)."]
    for ref in refs:
        collection, _, record_id = ref.partition(":")
        try:
            record = copy.get(collection, record_id)
        except (WorldError, ValueError) as exc:
            lines.append(f"{ref}: unreadable ({exc})")
            continue
        if record is None:
            lines.append(f"{ref}: not in the world at this time")
            continue
        text = json.dumps(record.model_dump(mode="json", exclude={"entered_at"}), ensure_ascii=False)
        lines.append(f"{ref}: {text[:_SUMMARY_CHARS]}")
    return "\n".join(lines)


async def default_scorer(
    run: RunContext, probe: Probe, target: str, result: StepResult, world: WorldState
) -> RealizationScores:
    """Judge BRS and rate PRS for one final probe (a floored one: PRS only, BRS is 1 by rule).

    Raises:
        LLMError: the rater's model call failed (the judge returns its own failures as missing).
    """
    from mempa_tui.scoring._judge import BRSJudgeInput, judge_brs
    from mempa_tui.simulator import PRSError, rate_probe

    from mempa_tui.llm.structured import watch_cut_replies

    brs: int | None = None
    brs_reason = _FLOORED_BRS
    if result.status != "floored":
        data = BRSJudgeInput(
            probe_id=probe.id, attribute=probe.attribute, context=probe.context, target=target,
            task=probe.task, world_summary=world_summary(probe, world), dialogue=judge_dialogue(result),
        )
        verdict = await judge_brs(run.client, data)  # never raises: a failure is a missing BRS
        brs = verdict.score
        brs_reason = verdict.evidence if verdict.score is not None else f"BRS missing: {verdict.error}"
        if verdict.score is not None and verdict.cut:
            brs_reason = cut_marked(brs_reason, verdict.cut)
    try:
        with watch_cut_replies() as cuts:  # the rater's call retries a cut reply, and says so
            prs, prs_reason = await rate_probe(
                run.client, run.bundle.persona, probe.attribute, target, rater_dialogue(result),
                context=probe.context,
            )
        if cuts:
            prs_reason = cut_marked(prs_reason, cuts[-1].cut)
        prs_value: int | None = prs
    except PRSError as exc:
        prs_value, prs_reason = None, f"PRS missing: {exc}"
    return RealizationScores(brs=brs, brs_reason=brs_reason, prs=prs_value, prs_reason=prs_reason)


_FLOORED_BRS = "floored: BRS 1 by rule, not judged"
_NO_REPLY_PRS = "floored, no final reply: PRS 1 by rule (the person got no answer), not rated"

CUT_MARK = "[reply cut at its cap; score kept] "
"""Opens the stored BRS or PRS reason of a judge or rater reply that stayed cut after its retry
(:func:`mempa_tui.llm.structured.cut_reason`); counted per run as ``judge_replies_cut``."""


def cut_marked(reason: str, cut: str) -> str:
    """``[reply cut at its cap; score kept] <reason> (cut: <what>)``: a stored reason that says
    its reply was cut, so it is never read as a whole one."""
    return f"{CUT_MARK}{reason} (cut: {cut})"


def is_cut_marked(reason: str | None) -> bool:
    """Whether a stored BRS or PRS reason carries :data:`CUT_MARK`."""
    return reason is not None and reason.startswith(CUT_MARK)


async def score_final_probe(
    scorer: ProbeScorer, run: RunContext, probe: Probe, target: str, result: StepResult, world: WorldState
) -> RealizationScores:
    """BRS and PRS of one final probe as the paper aggregates them (Section 3.5, Appendix F.2).

    A completed probe gets what ``scorer`` gives. A floored probe is rated too (PRS is
    aggregated over the same final probes as BRS, floored ones included: the user rates what was
    delivered), but its BRS is left to the floor rule (1, applied in scoring), never a judge's
    score. Any other status (invalid, failed: incomplete) gets nothing.

    A probe floored for having no final reply (``FloorKind.NO_FINAL_REPLY``, a model-capability
    failure of Appendix F.2) calls neither judge nor rater: there is no reply of the PA's to read,
    and a rater handed none invents one (fresh-user report, finding 2: BRS 4 and PRS 3 for options
    never offered). Its BRS is the floor's 1; its PRS is set to 1, the rubric's lowest score, by
    rule: the person got no answer, so nothing met the requirement, and the probe stays in PRS's
    denominator as in BRS's (F.2 aggregates PRS over the same final probes).

    Raises:
        LLMError: from ``scorer`` (a failed rater call).
    """
    if result.status not in ("completed", "floored"):
        return RealizationScores()
    if result.status == "floored" and floor_kind(result.reason) is FloorKind.NO_FINAL_REPLY:
        return RealizationScores(brs=None, brs_reason=_FLOORED_BRS, prs=1, prs_reason=_NO_REPLY_PRS)
    scores = await scorer(run, probe, target, result, world)
    if result.status == "floored":
        return RealizationScores(brs=None, brs_reason=_FLOORED_BRS, prs=scores.prs, prs_reason=scores.prs_reason)
    return scores


@lru_cache(maxsize=64)
def _differing(path: Path, mtime_ns: int) -> frozenset[str]:
    from mempa_tui.scripts._yamldoc import YamlDoc, validate_doc
    from mempa_tui.scripts.schema import PreferenceMatrix
    from mempa_tui.taxonomy import ATTRIBUTES, Context

    matrix, errors = validate_doc(YamlDoc.read(path), PreferenceMatrix, "preferences")
    if matrix is None:
        raise errors[0]
    return frozenset(
        a.key for a in ATTRIBUTES if matrix.setting(Context.WORK, a.key) != matrix.setting(Context.PERSONAL, a.key)
    )


def matrix_differing(worlds_dir: str | Path, user: str) -> frozenset[str]:
    """Attribute keys whose settings differ between work and personal in one user's preference
    matrix (``worlds/users/<user>/preferences.yaml``, Appendix B.4): that user's pairs in CS's set
    D (Section 3.5), also the pairs carry-over counts (F.3). The paper's four users have 18.

    Read once per file version (cached by path and modification time).

    Raises:
        mempa_tui.scripts.WorldFileError: the file is missing or not a valid matrix
            (``path:line: message``).
    """
    from mempa_tui.scripts._yamldoc import WorldFileError

    path = (Path(worlds_dir) / "users" / user / "preferences.yaml").resolve()
    if not path.is_file():
        raise WorldFileError(path, 1, f"missing preferences file of user {user!r} (CS's set D is read from it)")
    return _differing(path, path.stat().st_mtime_ns)
