"""A judge or PRS-rater reply cut at its cap is retried, then kept, marked and counted (issue 12).

On the embedded quick start 4 of 6 judge replies stopped at the evidence's 320-character schema cap
mid-sentence ("... with no recommendations or tradeoffs. The ") and were used as if whole. Now a
usable reply that ended at the completion token cap (``finish_reason`` ``length``) or ran to a
text field's ``maxLength`` without ending a sentence is asked for once more; still cut, its score
stands, its stored reason says it was cut, and the run's problems line counts it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_runner_support import protocol_responder, scripted_cli_run
from test_scoring_judge import probe_material

from mempa_tui.cli.main import main
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.structured import complete_json, watch_cut_replies
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.runner._scoring import CUT_MARK
from mempa_tui.scoring import judge_brs
from mempa_tui.scoring._judge import EVIDENCE_MAX_CHARS

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "evidence": {"type": "string", "maxLength": 40}},
    "required": ["score", "evidence"],
}
WHOLE = json.dumps({"score": 4, "evidence": "Two options, one recommended."})
AT_CAP = json.dumps({"score": 2, "evidence": "The reply gave one option and then it s"})  # 39 of 40
CUT_TOKENS = ScriptedReply(text=json.dumps({"score": 3, "evidence": "One option was"}), finish_reason="length")


def _read(text: str) -> tuple[int, str]:
    data = json.loads(text)
    return int(data["score"]), str(data["evidence"])


async def _ask(replies: list[ScriptedReply | str], **kw: object) -> tuple[object, list[ScriptedRequest]]:
    queue = list(replies)
    async with ScriptedModelServer(lambda _r: queue.pop(0)) as server:
        got = await complete_json(LLMClient(server.profile(num_retries=0)), Role.JUDGE,
                                  [ChatMessage(role="user", content="rate")], schema=SCHEMA, read=_read,
                                  **kw)  # type: ignore[arg-type]
        return got, list(server.requests)


async def test_a_reply_cut_at_the_token_cap_is_retried_and_the_whole_one_used() -> None:
    got, requests = await _ask([CUT_TOKENS, WHOLE], on_cut="retry")
    assert got.value == (4, "Two options, one recommended.") and got.cut is None  # type: ignore[attr-defined]
    assert len(requests) == 2 and "cut off" in requests[1].messages[-1].content
    assert "completion token cap" in requests[1].messages[-1].content


async def test_a_reply_that_stays_cut_keeps_its_score_and_says_so() -> None:
    got, requests = await _ask([AT_CAP, AT_CAP], on_cut="retry")
    assert got.value == (2, "The reply gave one option and then it s")  # type: ignore[attr-defined]
    assert got.cut and "'evidence' ran to the schema's 40-character cap" in got.cut  # type: ignore[attr-defined]
    assert got.error is None and len(requests) == 2  # type: ignore[attr-defined]
    # an unusable retry also keeps the cut reply's score, marked
    got, _ = await _ask([CUT_TOKENS, "not json"], on_cut="retry")
    assert got.value == (3, "One option was") and got.cut  # type: ignore[attr-defined]


async def test_a_whole_reply_at_the_cap_and_callers_that_do_not_ask_are_unchanged() -> None:
    full = json.dumps({"score": 5, "evidence": "Two options with their costs are shown."})  # 39, a sentence end
    got, requests = await _ask([full], on_cut="retry")
    assert got.cut is None and len(requests) == 1  # type: ignore[attr-defined]
    got, requests = await _ask([AT_CAP])  # no on_cut, no watch: the old behaviour
    assert got.value == (2, "The reply gave one option and then it s") and got.cut is None  # type: ignore[attr-defined]
    assert len(requests) == 1


async def test_watching_turns_the_retry_on_and_records_what_was_kept() -> None:
    with watch_cut_replies() as cuts:
        got, requests = await _ask([AT_CAP, AT_CAP])
    assert len(requests) == 2 and got.cut and [c.role for c in cuts] == [Role.JUDGE]  # type: ignore[attr-defined]


async def test_the_judge_retries_a_cut_verdict_then_keeps_its_score_marked() -> None:
    data, *_ = probe_material()
    cut = json.dumps({"score": 2, "evidence": ("The reply lists one option " * 40)[: EVIDENCE_MAX_CHARS - 1]})
    queue: list[str] = [cut, cut]
    async with ScriptedModelServer(lambda _r: queue.pop(0)) as server:
        verdict = await judge_brs(LLMClient(server.profile(num_retries=0)), data)
    assert verdict.score == 2 and verdict.attempts == 2 and verdict.cut
    assert "evidence" in verdict.cut


class CutJudge:
    """The protocol model, except that every judge reply ends at the completion token cap."""

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if request.model == "scripted-judge":
            return ScriptedReply(text=json.dumps({"score": 3, "evidence": "The reply lists one option and"}),
                                 finish_reason="length")
        return protocol_responder(request)


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("judge_cut")
    scripted_cli_run(tmp, CutJudge())
    return tmp / "saves"


def test_a_run_counts_its_cut_judge_replies_and_marks_their_reasons(
    cut_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "R-file-scripted-s0", "--saves", str(cut_run)]) == 0
    listing = capsys.readouterr().out
    finals = listing.count(" final ")
    assert finals >= 1
    assert f"judge or rater reply cut at its cap {finals} time" in listing, listing
    assert main(["show", "R-file-scripted-s0", "R-final-work-verbosity", "--saves", str(cut_run)]) == 0
    probe = capsys.readouterr().out
    assert f"BRS: 3  ({CUT_MARK}" in probe and "completion token cap" in probe, probe


async def test_an_unknown_cut_policy_is_refused_before_any_call() -> None:
    with pytest.raises(ValueError, match="on_cut must be one of watch, retry, reject, got 'retry_cut'"):
        await _ask([WHOLE], on_cut="retry_cut")
