"""The BRS judge against a scripted judge model over loopback (Section 3.5, App. I.4, Table 9)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from mempa_tui.ix.types import (
    CallStatus,
    DeliveredTurn,
    ExecutedCall,
    HeldItem,
    IXCall,
    ScoringTrace,
)
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.scoring import (
    RUBRICS,
    BRSJudgeInput,
    JudgeToolStep,
    JudgeTurn,
    judge_brs,
    judge_messages,
    judge_turn,
    rubric_text,
)
from mempa_tui.taxonomy import ATTRIBUTES


@dataclass
class Queue:
    replies: list[ScriptedReply | str] = field(default_factory=list)

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        if self.replies:
            return self.replies.pop(0)
        return json.dumps({"score": 4, "evidence": "One opening and one closing sentence."})


@pytest.fixture
async def judge() -> AsyncIterator[tuple[ScriptedModelServer, LLMClient, Queue]]:
    queue = Queue()
    async with ScriptedModelServer(queue) as server:
        yield server, LLMClient(server.profile(num_retries=0)), queue


def probe_material() -> tuple[BRSJudgeInput, IXCall, ScoringTrace, list[HeldItem]]:
    """A probe where the PA selected 'Full narration' although the target is 'Bookend'."""
    ix = IXCall(attribute="process_visibility", setting="Full narration", payload={"opening": "Let me look."})
    trace = ScoringTrace(
        selections={"process_visibility": "Full narration"},
        withheld={"call_notes": ["WITHHELD-NOTE-7781"]},
        rendering_notes=["RENDER-TRACE-5521"],
        raw_reply="RAW-REPLY-0042",
    )
    held = [HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                     arguments={"body": "HELD-BODY-3390"})]
    delivered = DeliveredTurn(
        reply="Let me look. The meeting is on Friday at 10:00. All done.",
        executed=[
            ExecutedCall(call_id="c1", tool="calendar_event_list", status=CallStatus.EXECUTED,
                         arguments={"date": "2025-03-07"}, result='[{"id": "ev_1", "title": "Review"}]'),
            ExecutedCall(call_id="c2", tool="email_message_send", status=CallStatus.HELD,
                         arguments={"body": "HELD-BODY-3390"}, held_id="held_0001"),
            ExecutedCall(call_id="c3", tool="IX_process_visibility", status=CallStatus.EXECUTED,
                         arguments={"setting": "Full narration"}),
        ],
        held=held,
    )
    data = BRSJudgeInput(
        probe_id="A-probe-pv-work",
        attribute="process_visibility",
        context="work",
        target="Bookend",
        task="Find when the quarterly review meets.",
        world_summary="Calendar holds the quarterly review on 2025-03-07 10:00.",
        dialogue=[JudgeTurn(speaker="user", text="When is the quarterly review?"), judge_turn(delivered)],
    )
    return data, ix, trace, held


async def test_judge_never_receives_selection_ix_call_held_or_trace(judge) -> None:  # type: ignore[no-untyped-def]
    server, client, _ = judge
    data, ix, trace, held = probe_material()
    verdict = await judge_brs(client, data)
    assert verdict.score == 4 and verdict.attempts == 1
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.model == "scripted-judge"
    sent = json.dumps(request.body)
    # what the judge must see
    for needed in ("Bookend", "quarterly review meets", "2025-03-07 10:00", "Let me look. The meeting",
                   "calendar_event_list", "Where to look"):
        assert needed in sent, needed
    # what it must never see: the selection, the IX call, held content, the scoring trace
    forbidden = ["Full narration", "IX_process_visibility", "IX_", ix.setting, "HELD-BODY-3390",
                 "held_0001", "email_message_send", "WITHHELD-NOTE-7781", "RENDER-TRACE-5521",
                 "RAW-REPLY-0042", *trace.selections.values(), held[0].id]
    for text in forbidden:
        assert text not in sent, text


def test_judge_input_has_no_place_for_the_selection() -> None:
    data, *_ = probe_material()
    fields = set(BRSJudgeInput.model_fields)
    assert not fields & {"selection", "ix_calls", "held", "trace", "withheld", "scoring_trace"}
    with pytest.raises(ValidationError, match="selection"):
        BRSJudgeInput.model_validate({**data.model_dump(), "selection": "Full narration"})
    with pytest.raises(ValidationError, match="interaction tool"):
        JudgeToolStep(tool="IX_verbosity", arguments={"setting": "Terse"})
    with pytest.raises(ValidationError, match="interaction tool"):
        JudgeToolStep(tool="mcp_state_IX_autonomy_level")
    with pytest.raises(ValidationError, match="ix_calls"):
        JudgeTurn.model_validate({"speaker": "assistant", "text": "hi", "ix_calls": []})


@pytest.mark.parametrize(
    ("replies", "score", "attempts"),
    [
        (['```json\n{"score": 5, "evidence": "ok"}\n```'], 5, 1),
        (['Verdict: {"score": "3", "evidence": "partly"} done.'], 3, 1),
        (['{"score": 2.0, "evidence": "mostly missed"}'], 2, 1),
        (['{"score": 4, "evid', '{"score": 4, "evidence": "fine"}'], 4, 2),
        (['{"score": 9, "evidence": "x"}', '{"score": 1, "evidence": "opposite"}'], 1, 2),
        (["", '{"score": 3, "evidence": "partly"}'], 3, 2),
    ],
    ids=["fenced", "string-score", "float-score", "cut-off-then-ok", "out-of-range-then-ok", "empty-then-ok"],
)
async def test_malformed_judge_reply_repaired_or_retried(judge, replies, score, attempts) -> None:  # type: ignore[no-untyped-def]
    server, client, queue = judge
    queue.replies.extend(replies)
    data, *_ = probe_material()
    verdict = await judge_brs(client, data)
    assert (verdict.score, verdict.attempts, verdict.error) == (score, attempts, None)
    assert len(server.requests) == attempts


@pytest.mark.parametrize(
    "replies",
    [
        ['{"score": 4, "evid', "I think it deserves a four."],
        ['{"score": true, "evidence": "x"}', '{"score": 0, "evidence": "x"}'],
        ['{"evidence": "no score"}', '{"score": "high", "evidence": "x"}'],
        [ScriptedReply(status=500, error="judge down")],
    ],
    ids=["cut-off-then-prose", "bool-then-zero", "missing-then-word", "server-error"],
)
async def test_unusable_judge_reply_leaves_brs_missing(judge, replies) -> None:  # type: ignore[no-untyped-def]
    _, client, queue = judge
    queue.replies.extend(replies)
    data, *_ = probe_material()
    verdict = await judge_brs(client, data)
    assert verdict.score is None
    assert verdict.error


def test_every_setting_has_a_rubric() -> None:
    for a in ATTRIBUTES:
        assert set(RUBRICS[a.key].settings) == set(a.setting_names), a.key
        for s in a.settings:
            text = rubric_text(a.key, s.name)
            assert s.behaviour in text and f"Target setting: {s.name}" in text
            others = [n for n in a.setting_names if n != s.name and n not in s.name]
            assert not any(f"Target setting: {n}" in text for n in others)


def test_judge_messages_place_actions_in_their_turn() -> None:
    data, *_ = probe_material()
    system, user = judge_messages(data)
    assert system.role == "system" and "5 -" in system.content and "1 -" in system.content
    assert "[reply 1] calendar_event_list" in user.content
    assert "USER: When is the quarterly review?" in user.content
