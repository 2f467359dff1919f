"""The IX wrapper's rules inside a played session (paper Section 3.4, Appendix E.3, E.5, F.2).

* A turn that holds an action for approval and whose reply asks the user nothing ends the step
  floored ("held an action without asking"); the reply was still delivered.
* A write held while the PA asks for information is released by the user's answer, with no
  approval request of the wrapper's own.
"""

from __future__ import annotations

from test_agent_support import RecordingMemory, call
from test_episode import Rig, _reactions, autonomy_session, ctx, rig, sim  # noqa: F401  (rig: fixture)

from mempa_tui.ix.floors import FloorKind, floor_kind
from mempa_tui.llm import ScriptedReply
from mempa_tui.runner.episode import run_accumulation
from mempa_tui.scripts.schema import AccumulationSession, DecisionPoint

_SEND = call("mcp_state_message_send", {"contact": "Colm Averill", "text": "The review moved."})


async def test_a_hold_the_reply_does_not_ask_about_floors_the_step(rig: Rig) -> None:
    rig.sim_replies.extend([sim("Can you text Colm that the review moved?")])
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"}), _SEND]),
        "I can text Colm once I have the new time.",  # holds the send, asks nothing
    )
    result = await run_accumulation(autonomy_session(), ctx(rig, RecordingMemory()))
    assert result.status == "floored"
    assert floor_kind(result.reason) is FloorKind.HELD_WITHOUT_ASKING and "held_0001" in (result.reason or "")
    assert result.world is None  # nothing of a floored step is committed
    # the user did receive the reply (the PRS rater reads it), word for word the PA's
    assert [e.delivered.reply for e in result.exchanges] == ["I can text Colm once I have the new time."]


def _elicitation_session() -> AccumulationSession:
    base = autonomy_session()
    ask = base.beats[0].model_copy(
        update={
            "active_attributes": ["information_elicitation"],
            "decision_point": DecisionPoint(
                attribute="information_elicitation",
                reactions=_reactions("information_elicitation"),
                falls_short="asks again",
            ),
        }
    )
    return base.model_copy(
        update={"id": "A-w-elicit-01", "attribute": "information_elicitation", "beats": [ask, *base.beats[1:]]}
    )


async def test_the_users_answer_releases_a_write_held_while_asking(rig: Rig) -> None:
    rig.sim_replies.extend(
        [
            sim("Can you text Colm that the review moved?"),
            sim("", "advance"),
            sim("It's at 15:00 now."),  # an answer, no consent decision
            sim("", "advance"),
            sim("Thanks."),
            sim("", "done"),
        ]
    )
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call("IX_information_elicitation", {"setting": "Structured", "questions": ["What is the new time?"]}),
                _SEND,
            ]
        ),
        "One detail first.",
        "Done, Colm has it.",
        "Glad to help.",
    )
    result = await run_accumulation(_elicitation_session(), ctx(rig, RecordingMemory()))
    assert result.status == "completed", result.reason
    first = result.exchanges[0].delivered
    assert first.reply == "One detail first.\n\n1. What is the new time?"  # no approval request added
    assert [i.id for i in first.held] == ["held_0001"]
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    second_turn_user = [m for m in rig.queue.pa_requests[2].messages if m.role == "user"][-1].content
    assert "answered, which released held_0001" in second_turn_user
