"""The episode loop end to end over loopback HTTP: real simulator, real tools, real wrapper.

Paper Sections 3.1, 3.4, 3.5; Appendices C.2-C.4, D.1, D.3 (Table 9), E, F.2.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from test_agent_support import START, PAQueue, RecordingMemory, call, tiny_world

from mempa_tui.ix import CallStatus
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.runner._episode_events import episode_event_adapter
from mempa_tui.runner.episode import (
    EpisodeContext,
    StepResult,
    public_transcript,
    replay_change_event,
    run_accumulation,
    run_probe,
)
from mempa_tui.scripts.schema import (
    AccumulationSession,
    Beat,
    ChangeEvent,
    DecisionPoint,
    EventTranscriptTurn,
    Fact,
    PACannedTurn,
    Persona,
    Probe,
    Relationship,
    ScriptedCall,
    WorldEvent,
    WriteLock,
)
from mempa_tui.simulator import SimulatorMemory, UserSimulator
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.tools import default_registry

WITHHELD = "WITHHELD-RATIONALE-7731"
ENTRY = json.dumps(
    {
        "entry": "I asked for a text to go out. It waited for my word first.",
        "impressions": ["careful"],
    }
)


def persona() -> Persona:
    return Persona(
        label="A",
        name="Ingrid Salcedo",
        age=44,
        occupation="Service planner",
        workplace="Wendlink Transit",
        town="Hollins Ferry",
        living_arrangement="Lives with her son.",
        relationships=[
            Relationship(name="Colm Averill", relation="manager", context=Context.WORK)
        ],
        routines=["Plans timetables on Mondays."],
        personality="Direct and busy.",
        speech_style="Short messages.",
        background="Has planned buses for years.",
    )


def targets(**override: str) -> dict[str, str]:
    out = {a.key: a.setting_names[0] for a in ATTRIBUTES}
    out.update(override)
    return out


def _reactions(key: str) -> dict[str, str]:
    return {s: f"reacts to {s.lower()}" for s in attribute(key).setting_names}


def autonomy_session() -> AccumulationSession:
    return AccumulationSession(
        id="A-w-autonomy-01",
        context=Context.WORK,
        attribute="autonomy_level",
        starts_at=START,
        scenario="team logistics",
        task="Tell Colm the review moved.",
        facts=[Fact(id="new_time", text="The review moved to 15:00.")],
        write_lock=WriteLock(
            tool="message_send",
            match={"contact": "Colm Averill"},
            unlocked_by="new_time",
        ),
        beats=[
            Beat(
                id="ask",
                goal="get Colm told",
                conveys="ask for a text to Colm",
                max_turns=2,
                active_attributes=["autonomy_level"],
                decision_point=DecisionPoint(
                    attribute="autonomy_level",
                    reactions=_reactions("autonomy_level"),
                    falls_short="asks again",
                ),
            ),
            Beat(
                id="give_time",
                goal="give the time",
                conveys="the new time",
                releases=["new_time"],
                max_turns=2,
            ),
            Beat(id="react", goal="react", conveys="thanks", max_turns=2),
        ],
    )


def sim(message: str, assessment: str = "stay", consent: str = "") -> str:
    block = f"<consent_decisions>\n{consent}\n</consent_decisions>\n" if consent else ""
    return f"<factual_check>none</factual_check>\n<turn_assessment>{assessment}</turn_assessment>\n{block}<message>{message}</message>"


@dataclass
class Rig:
    queue: PAQueue
    server: ScriptedModelServer
    client: LLMClient
    sim_replies: list[str]

    def sim_requests(self) -> list[ScriptedRequest]:
        return [r for r in self.server.requests if r.model == "scripted-simulator"]

    def sim_text(self) -> str:
        return "\n".join(
            json.dumps(r.body, ensure_ascii=False) for r in self.sim_requests()
        )


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    sim_replies: list[str] = []

    def other(request: ScriptedRequest) -> ScriptedReply | str:
        if request.model == "scripted-simulator":
            return sim_replies.pop(0) if sim_replies else ENTRY
        return "unreadable"  # the message checker: unreadable twice -> passes with a warning

    queue = PAQueue(other=other)
    async with ScriptedModelServer(queue) as server:
        client = LLMClient(server.profile(context_window=131072))
        yield Rig(queue, server, client, sim_replies)


def ctx(
    rig: Rig,
    memory: RecordingMemory,
    *,
    probe: bool = False,
    tgt: dict[str, str] | None = None,
    events: list[Any] | None = None,
    **kw: Any,
) -> EpisodeContext:
    seat = UserSimulator(
        rig.client,
        persona(),
        mode="probe" if probe else "accumulation",
        memory=None if probe else SimulatorMemory(),
        llm_checker=False,
    )
    observer: Callable[[Any], None] | None = (
        events.append if events is not None else None
    )
    return EpisodeContext(
        persona=persona(),
        targets=tgt or targets(),
        world=tiny_world(),
        registry=default_registry(),
        memory=memory,
        client=rig.client,
        simulator_memory=None if probe else seat.memory,
        user_seat=seat,
        observer=observer,
        **kw,
    )


def _push_autonomy_pa(rig: Rig, setting: str) -> None:
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call("IX_autonomy_level", {"setting": setting}),
                call(
                    "mcp_state_message_send",
                    {"contact": "Colm Averill", "text": "The review moved."},
                ),
            ]
        ),
        "I can text Colm once I have the new time. Shall I send it then?",
        "Done, Colm has it.",
        "Glad to help.",
    )


async def test_accumulation_session_commits_world_memory_and_entry(rig: Rig) -> None:
    rig.sim_replies.extend(
        [
            sim("Can you text Colm that the review moved?"),
            sim("", "advance"),
            sim(
                "It's at 15:00 now. Go ahead and send it.", consent="held_0001: approve"
            ),
            sim("", "advance"),
            sim("Thanks."),
            sim("", "done"),
        ]
    )
    _push_autonomy_pa(rig, "Self-directed")
    memory, events = RecordingMemory(), []
    result = await run_accumulation(autonomy_session(), ctx(rig, memory, events=events))
    assert result.status == "completed", result.reason
    assert result.selection == "Self-directed"
    # held first, the user's consent released exactly that item, after the fact opened the lock
    first = result.exchanges[0].delivered
    assert [i.id for i in first.held] == ["held_0001"]
    # the PA asks in its own words; the wrapper appends no approval request (Appendix E.5)
    assert first.reply == "I can text Colm once I have the new time. Shall I send it then?"
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.world is not None and result.world != tiny_world()
    # memory got every turn as the PA saw it, and the session end
    assert [r.turn_index for r in memory.records] == [0, 1, 2]
    assert memory.records[1].tool_calls[0].tool == "message_send"
    assert memory.records[0].ix_calls[0].setting == "Self-directed"
    assert memory.sessions_ended == ["A-w-autonomy-01"]
    assert result.turn_records == memory.records
    assert result.simulator_entry and "waited" in result.simulator_entry
    # the PA was told about the release before its second turn
    second_turn_user = [
        m for m in rig.queue.pa_requests[2].messages if m.role == "user"
    ][-1].content
    assert "approved held_0001" in second_turn_user and "Go ahead" in second_turn_user
    # observer saw the same events, and they round-trip through the union
    assert events == result.transcript
    kinds = [e.type for e in events]
    for kind in (
        "user_message",
        "evidence",
        "ix_selection",
        "tool_call",
        "held_items",
        "consent",
        "pa_reply",
        "beat_change",
        "step_status",
    ):
        assert kind in kinds
    for e in events:
        assert episode_event_adapter.validate_json(e.model_dump_json()) == e


async def test_required_ix_call_missing_floors_and_discards(rig: Rig) -> None:
    rig.sim_replies.append(sim("Can you text Colm that the review moved?"))
    rig.queue.push("Sure.", "Sure.", "Sure.")
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "floored" and "IX_autonomy_level" in (result.reason or "")
    assert result.world is None and memory.records == [] and memory.sessions_ended == []
    assert result.transcript[-1].type == "step_status"


async def test_invalid_user_turn_discards_the_step(rig: Rig) -> None:
    rig.sim_replies.extend(
        ["<turn_assessment>stay</turn_assessment>"] * 4
    )  # never a message
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "invalid" and result.world is None
    assert rig.queue.pa_requests == []


def outreach_script(kind: str = "probe") -> Any:
    beats = [
        Beat(
            id="chat",
            goal="small task",
            conveys="asks to find Colm's email",
            max_turns=1,
        ),
        Beat(
            id="parcel",
            goal="event",
            conveys="nothing",
            active_attributes=["proactive_outreach"],
            event=WorldEvent(
                at=datetime(2026, 3, 2, 11, 30),
                notice="A delivery note says the parcel is at the depot.",
            ),
            decision_point=DecisionPoint(
                attribute="proactive_outreach",
                reactions=_reactions("proactive_outreach"),
                falls_short="finds out alone",
            ),
        ),
        Beat(id="after", goal="carry on", conveys="says thanks or asks", max_turns=1),
    ]
    common = {
        "id": "A-w-outreach-p",
        "context": Context.WORK,
        "attribute": "proactive_outreach",
        "starts_at": START,
        "scenario": "office",
        "task": "Parcel arrives.",
        "beats": beats,
    }
    if kind == "probe":
        return Probe(
            probe_kind="final",
            expected_replies={s: "x" for s in ("Low", "High")},
            **common,
        )
    return AccumulationSession(**common)


@pytest.mark.parametrize("setting", ["High", "Low"])
async def test_world_event_turn_moves_the_clock_and_outreach_is_delivered_or_suppressed(
    rig: Rig, setting: str
) -> None:
    rig.sim_replies.extend(
        [
            sim("What's Colm's email?"),
            sim("", "advance"),
            sim("Ok, noted."),
            sim("", "done"),
        ]
    )
    message = "Your parcel is waiting at the depot."
    rig.queue.push(
        "It is colm.averill@wendlink.example.",
        ScriptedReply(
            tool_calls=[
                call("IX_proactive_outreach", {"setting": setting, "message": message})
            ]
        ),
        "Logged the event.",
        "Anytime.",
    )
    memory = RecordingMemory()
    result = await run_probe(outreach_script(), ctx(rig, memory, probe=True))
    assert result.status == "completed", result.reason
    assert result.selection == setting
    event_turn = result.exchanges[1]
    assert event_turn.user_message is None and event_turn.notice
    assert event_turn.delivered.reply == (message if setting == "High" else "")
    notice_req = rig.queue.pa_requests[1].messages[-1].content
    assert notice_req.startswith("[World event") and "2026-03-02 11:30" in notice_req
    assert result.turn_records[1].user_message.startswith("[Notification]")
    assert result.turn_records[1].at == datetime(2026, 3, 2, 11, 30)
    # the simulator read exactly what was delivered, never the withheld message under Low
    if setting == "Low":
        assert message not in rig.sim_text()
        assert result.traces[1].withheld["proactive_outreach.message"] == message


async def test_no_send_or_suppress_decision_on_an_event_floors(rig: Rig) -> None:
    rig.sim_replies.extend([sim("What's Colm's email?"), sim("", "advance")])
    rig.queue.push("It is colm.averill@wendlink.example.", "Noted.", "Noted.", "Noted.")
    result = await run_probe(outreach_script(), ctx(rig, RecordingMemory(), probe=True))
    assert result.status == "floored" and "send-or-suppress" in (result.reason or "")


def reasoning_probe() -> Probe:
    return Probe(
        id="A-final-work-reasoning",
        context=Context.WORK,
        attribute="reasoning_visibility",
        starts_at=START,
        scenario="office",
        task="Pick who to tell.",
        probe_kind="final",
        expected_replies={"Show": "with basis", "Hide": "answer only"},
        beats=[
            Beat(
                id="ask",
                goal="get a pick",
                conveys="asks who should hear about it",
                max_turns=1,
                active_attributes=["reasoning_visibility"],
                decision_point=DecisionPoint(
                    attribute="reasoning_visibility",
                    reactions=_reactions("reasoning_visibility"),
                    falls_short="asks",
                ),
            )
        ],
    )


async def _probe_once(
    rig: Rig, tgt: dict[str, str], **kw: Any
) -> tuple[StepResult, RecordingMemory, int]:
    start = len(rig.queue.pa_requests)
    rig.sim_replies.append(
        sim("Who should hear about the review first?")
    )  # one turn: the beat's cap
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call(
                    "IX_reasoning_visibility",
                    {"setting": "Hide", "rationale": WITHHELD},
                ),
                call("mcp_state_contact_create", {"name": "Temp Person"}),
            ]
        ),
        "Tell Colm first.",
    )
    memory = RecordingMemory()
    result = await run_probe(
        reasoning_probe(), ctx(rig, memory, probe=True, tgt=tgt, **kw)
    )
    return result, memory, start


def _without_server_ids(body: dict[str, Any]) -> str:
    """The request body with the scripted server's per-call ids (``srv_<n>``) blanked."""
    import re

    return re.sub(r"srv_\d+", "srv_#", json.dumps(body, sort_keys=True))


async def test_table9_boundaries_in_a_probe(rig: Rig) -> None:
    a, mem_a, start_a = await _probe_once(rig, targets(reasoning_visibility="Show"))
    b, mem_b, start_b = await _probe_once(rig, targets(reasoning_visibility="Hide"))
    assert a.status == b.status == "completed" and a.selection == "Hide"
    # the PA's requests do not depend on the target at all (no target reaches the PA)
    req_a = [r.body for r in rig.queue.pa_requests[start_a:start_b]]
    req_b = [r.body for r in rig.queue.pa_requests[start_b:]]
    assert len(req_a) == 2 and rig.sim_replies == []
    for ra, rb in zip(req_a, req_b, strict=True):
        assert _without_server_ids(ra) == _without_server_ids(rb)
    # withheld content: only in the scoring trace
    assert a.traces[0].withheld["reasoning_visibility.rationale"] == WITHHELD
    assert WITHHELD not in a.exchanges[0].delivered.reply
    for record in a.turn_records:
        assert WITHHELD not in record.model_dump_json()
    assert WITHHELD not in rig.sim_text()
    assert all(
        WITHHELD not in e.model_dump_json() for e in public_transcript(a.transcript)
    )
    # the simulator never gets the selection
    assert "IX_reasoning_visibility" not in rig.sim_text()
    assert "ix_selection" not in [e.type for e in public_transcript(a.transcript)]
    # the probe's world and memory changes are discarded
    assert a.world is None and mem_a.records == [] and mem_b.records == []
    assert [(c.tool, c.op) for c in a.change_log] == [("contact_create", "insert")]
    assert a.simulator_entry is None
    # what memory was handed does not depend on the target either
    assert [_without_server_ids(r.model_dump(mode="json")) for r in a.turn_records] == [
        _without_server_ids(r.model_dump(mode="json")) for r in b.turn_records
    ]


async def test_oracle_probe_puts_the_target_in_the_prompt_only_then(rig: Rig) -> None:
    _plain, _, start = await _probe_once(rig, targets(reasoning_visibility="Show"))
    _oracle, _, start_o = await _probe_once(
        rig, targets(reasoning_visibility="Show"), oracle=True
    )
    plain_system = rig.queue.pa_requests[start].messages[1].content
    oracle_system = rig.queue.pa_requests[start_o].messages[1].content
    behaviour = attribute("reasoning_visibility").setting("Show").behaviour
    assert "Their preference: Show" in oracle_system and behaviour in oracle_system
    assert "Their preference" not in plain_system
    assert (
        "The user once asked for short answers." in plain_system
    )  # evidence, not under Oracle
    assert "The user once asked for short answers." not in oracle_system


def change_event() -> ChangeEvent:
    return ChangeEvent(
        id="A-ev-autonomy",
        context=Context.WORK,
        attribute="autonomy_level",
        old_setting="Autonomous",
        new_setting="Reactive",
        starts_at=datetime(2026, 3, 9, 10, 0),
        slot=1,
        task="Text Colm.",
        transcript=[
            EventTranscriptTurn(
                user="Let Colm know the review moved to Friday.",
                pa=PACannedTurn(
                    tool_calls=[
                        ScriptedCall(
                            tool="message_send",
                            args={
                                "contact": "Colm Averill",
                                "text": "Review is Friday.",
                            },
                        )
                    ],
                    ix_setting="Autonomous",
                    reply="Sent Colm a text about Friday.",
                ),
            ),
            EventTranscriptTurn(
                user="He replied cross. From now on, show me anything before it goes out."
            ),
        ],
        simulator_note="I told the assistant to check with me before anything goes out.",
    )


async def test_change_event_replay_calls_no_model_and_writes_through_real_tools(
    rig: Rig,
) -> None:
    memory, events = RecordingMemory(), []
    context = ctx(rig, memory, events=events)
    result = await replay_change_event(change_event(), context)
    assert result.status == "completed", result.reason
    assert rig.server.requests == []  # no model call at all
    assert (
        result.selection == "Autonomous"
        and result.simulator_entry == change_event().simulator_note
    )
    assert [(c.tool, c.op, c.collection) for c in result.change_log] == [
        ("message_send", "insert", "messages/messages")
    ]
    assert result.world is not None and "messages/messages.yaml" in result.world
    first, last = memory.records
    assert (
        first.tool_calls[0].status is CallStatus.EXECUTED
        and "msg_" in first.tool_calls[0].result
    )
    assert (
        first.ix_calls[0].setting == "Autonomous"
        and first.reply == "Sent Colm a text about Friday."
    )
    assert last.user_message.startswith("He replied cross") and last.reply == ""
    assert memory.sessions_ended == ["A-ev-autonomy"]
    # replaying again from the same world gives the same records and the same world
    again = RecordingMemory()
    second = await replay_change_event(change_event(), ctx(rig, again))
    assert [r.model_dump() for r in again.records] == [
        r.model_dump() for r in memory.records
    ]
    assert second.world == result.world


async def test_change_event_with_a_rejected_canned_call_fails_without_commit(
    rig: Rig,
) -> None:
    bad = change_event().model_copy(deep=True)
    broken = bad.transcript[0].pa.model_copy(  # type: ignore[union-attr]
        update={
            "tool_calls": [
                ScriptedCall(
                    tool="message_send", args={"contact": "Nobody Known", "text": "x"}
                )
            ]
        }
    )
    bad = bad.model_copy(
        update={
            "transcript": [
                bad.transcript[0].model_copy(update={"pa": broken}),
                bad.transcript[1],
            ]
        }
    )
    memory = RecordingMemory()
    result = await replay_change_event(bad, ctx(rig, memory))
    assert result.status == "failed" and "Nobody Known" in (result.reason or "")
    assert result.world is None and memory.records == []


class ScriptedPASeat:
    """A non-model PA seat driving TurnActions directly, as a person at the TUI would."""

    def __init__(self) -> None:
        self.starts: list[Any] = []
        self.inputs: list[Any] = []

    def begin_session(self, start: Any) -> None:
        self.starts.append(start)

    async def respond(self, turn: Any, actions: Any) -> Any:
        from mempa_tui.agent import AgentTurnResult

        self.inputs.append(turn)
        actions.ix(
            "reasoning_visibility",
            {"setting": "Show", "rationale": "Colm chairs the review."},
        )
        actions.world("h1", "mcp_state_contact_search", {"query": "Colm"})
        return AgentTurnResult(reply="Tell Colm first.", calls=list(actions.calls))


async def test_a_human_pa_seat_plugs_in_and_results_serialise(rig: Rig) -> None:
    rig.sim_replies.append(sim("Who should hear about the review first?"))
    seat = ScriptedPASeat()
    result = await run_probe(
        reasoning_probe(), ctx(rig, RecordingMemory(), probe=True, agent_seat=seat)
    )
    assert result.status == "completed" and result.selection == "Show"
    assert rig.queue.pa_requests == []  # no PA model call
    (turn,) = seat.inputs
    assert turn.required_ix == "reasoning_visibility" and turn.offered_ix == [
        "reasoning_visibility"
    ]
    assert (
        result.exchanges[0].delivered.reply
        == "Colm chairs the review.\n\nTell Colm first."
    )
    assert seat.starts[0].is_probe and seat.starts[0].oracle is None
    # what the runner stores: the result without the world, as JSON, and back
    dumped = result.model_dump_json(exclude={"world"})
    again = StepResult.model_validate_json(dumped)
    assert (
        again.transcript == result.transcript
        and again.turn_records == result.turn_records
    )


# ---- issue 15 point 1: a user's consent or confirmation is never dropped -------------------------


async def test_consent_in_a_turn_that_moves_to_the_next_beat_releases_the_item(
    rig: Rig,
) -> None:
    rig.sim_replies.extend(
        [
            sim("Can you text Colm that the review moved?"),
            # approves the held text and moves on in the same turn: the consent and the words
            # go with the next beat's message (the words open it)
            sim("Yes, send it.", "advance", consent="held_0001: approve"),
            sim("It's at 15:00 now."),
            sim("", "advance"),
            sim("Thanks."),
            sim("", "done"),
        ]
    )
    _push_autonomy_pa(rig, "Self-directed")
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "completed", result.reason
    consent = [e for e in result.transcript if e.type == "consent"]
    assert [e.decisions for e in consent] == [{"held_0001": True}]
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    # the PA heard of the release with the next beat's message
    second_turn_user = [
        m for m in rig.queue.pa_requests[2].messages if m.role == "user"
    ][-1].content
    assert "approved held_0001" in second_turn_user and "15:00" in second_turn_user
    assert "Yes, send it.\n\nIt's at 15:00 now." in second_turn_user


async def test_a_text_confirmation_that_ends_the_session_reaches_the_pa_first(
    rig: Rig,
) -> None:
    rig.sim_replies.extend(
        [
            sim("Can you text Colm that the review moved?"),
            sim("", "advance"),
            sim("It's at 15:00 now."),
            # confirms in text and ends the session in the same message
            sim("Yes, send it.", "done"),
        ]
    )
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Autonomous"})]),
        "Happy to. What is the new time?",
        "Shall I text Colm that the review is at 15:00?",
        ScriptedReply(
            tool_calls=[
                call(
                    "mcp_state_message_send",
                    {"contact": "Colm Averill", "text": "The review moved to 15:00."},
                )
            ]
        ),
        "Sent.",
    )
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "completed", result.reason
    # the confirmation was delivered, and the PA got the turn to act on it
    assert [e.user_message for e in result.exchanges][-1] == "Yes, send it."
    last_user = [m for m in rig.queue.pa_requests[-1].messages if m.role == "user"][-1]
    assert "Yes, send it." in (last_user.content or "")
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.exchanges[-1].delivered.reply == "Sent."
    assert [r.turn_index for r in memory.records] == [0, 1, 2]
    # the end signal came after that turn without another simulator turn: 4 turns + the entry
    assert len(rig.sim_requests()) == 5


async def test_an_empty_pa_reply_twice_fails_the_step_and_memory_keeps_nothing(
    rig: Rig,
) -> None:
    rig.sim_replies.append(sim("Can you text Colm that the review moved?"))
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Reactive"})]),
        ScriptedReply(text="", finish_reason="length"),
        ScriptedReply(text=""),
    )
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "failed" and "empty reply" in (result.reason or "")
    assert memory.records == [] and result.world is None
    assert not any(e.type == "pa_reply" for e in result.transcript)


async def test_a_closing_thanks_after_a_plain_answer_is_not_sent_to_the_pa(rig: Rig) -> None:
    rig.sim_replies.extend(
        [
            sim("Can you text Colm that the review moved?"),
            sim("", "advance"),
            sim("It's at 15:00 now."),
            sim("Thanks, that's all.", "done"),  # nothing awaits the user's word: discarded
        ]
    )
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Autonomous"})]),
        "Happy to. What is the new time?",
        ScriptedReply(
            tool_calls=[
                call(
                    "mcp_state_message_send",
                    {"contact": "Colm Averill", "text": "The review moved to 15:00."},
                )
            ]
        ),
        "Sent: Colm knows it is at 15:00.",
    )
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), ctx(rig, memory))
    assert result.status == "completed", result.reason
    assert [e.user_message for e in result.exchanges] == [
        "Can you text Colm that the review moved?",
        "It's at 15:00 now.",
    ]
