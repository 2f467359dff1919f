"""Human seats in the episode loop, without Textual: a scripted 'person' feeds the seats' queues.

SPEC §4.11 (play as the user / as the PA), §6 (simulator fidelity); paper Sections 3.4, 3.5,
Appendix E (held items, consent), F.2 (floors), Table 9 (what each seat may see).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from test_agent_support import PAQueue, RecordingMemory, call, tiny_world
from test_episode import _push_autonomy_pa, autonomy_session, persona, sim, targets

from mempa_tui.agent.human import HumanAgentSeat, PAAction, PATurnView
from mempa_tui.ix import CallStatus
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.runner.episode import EpisodeContext, run_accumulation
from mempa_tui.simulator import SimulatorMemory, UserSimulator
from mempa_tui.simulator.human import HumanUserSeat, UserAction, UserPanel
from mempa_tui.tools import default_registry

SHADOW = "Could you get word to Colm about the review?"


@dataclass
class Rig:
    queue: PAQueue
    server: ScriptedModelServer
    client: LLMClient
    sim_replies: list[str] = field(default_factory=list)
    shadow_fails: bool = False

    def sim_requests(self) -> list[ScriptedRequest]:
        return [r for r in self.server.requests if r.model == "scripted-simulator"]


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    holder: list[Rig] = []

    def other(request: ScriptedRequest) -> ScriptedReply | str:
        r = holder[0]
        if request.model == "scripted-simulator":
            if r.shadow_fails:
                return ScriptedReply(status=400, error="simulator down")
            return r.sim_replies.pop(0) if r.sim_replies else sim(SHADOW, "advance", "held_0001: approve")
        return "unreadable"

    queue = PAQueue(other=other)
    async with ScriptedModelServer(queue) as server:
        client = LLMClient(server.profile(context_window=131072))
        holder.append(Rig(queue, server, client))
        yield holder[0]


class Person:
    """Plays the user's seat from a list of actions, one each time the seat waits."""

    def __init__(self, actions: list[UserAction]) -> None:
        self.actions = list(actions)
        self.panels: list[UserPanel] = []
        self.seat: HumanUserSeat | None = None

    def __call__(self, panel: UserPanel) -> None:
        self.panels.append(panel)
        if panel.waiting and self.actions and self.seat is not None:
            self.seat.submit(self.actions.pop(0))


def context(rig: Rig, memory: RecordingMemory, **kw: object) -> EpisodeContext:
    return EpisodeContext(
        persona=persona(), targets=targets(), world=tiny_world(), registry=default_registry(),
        memory=memory, client=rig.client, simulator_memory=SimulatorMemory(), **kw,  # type: ignore[arg-type]
    )


async def test_person_plays_the_user_and_the_shadow_is_recorded_side_by_side(rig: Rig) -> None:
    person = Person([
        UserAction(kind="say", text="Can you text Colm that the review moved?"),
        UserAction(kind="advance"),
        UserAction(kind="say", text="It's at 15:00 now. Go ahead.", consent={"held_0001": True}),
        UserAction(kind="advance"),
        UserAction(kind="say", text="Thanks."),
        UserAction(kind="end"),
    ])
    seat = HumanUserSeat(rig.client, persona(), memory=SimulatorMemory(), on_change=person)
    person.seat = seat
    _push_autonomy_pa(rig, "Self-directed")
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), context(rig, memory, user_seat=seat))

    assert result.status == "completed", result.reason
    # the person's words reached the PA and memory exactly; consent released the held send
    assert [r.user_message for r in memory.records] == [
        "Can you text Colm that the review moved?", "It's at 15:00 now. Go ahead.", "Thanks."]
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    # the fact of the second beat was released when the person moved on, opening the lock
    assert seat.released_facts == ("new_time",)
    # one fidelity pair per person turn, with the beat and the shadow's own turn beside it
    pairs = seat.fidelity
    assert [p.beat_id for p in pairs] == ["ask", "give_time", "react"]
    assert [p.human_message for p in pairs] == [r.user_message for r in memory.records]
    assert pairs[1].human_consent == {"held_0001": True}
    assert all(p.simulator.message == SHADOW and p.simulator.assessment == "advance" for p in pairs)
    assert pairs[1].simulator.consent == {"held_0001": True}
    # the shadow saw the real dialogue (the person's earlier message, the PA's delivered reply)
    last_prompt = json.dumps(rig.sim_requests()[-1].body)
    assert "It's at 15:00 now. Go ahead." in last_prompt
    assert "Done, Colm has it." in last_prompt
    # the panel showed the acting sheet at the decision beat, and the released fact later
    at_ask = next(p for p in person.panels if p.waiting and p.beat and p.beat.id == "ask")
    assert at_ask.acting_sheets and at_ask.acting_sheets[0].startswith("Acting sheet: Autonomy Level")
    at_time = next(p for p in person.panels if p.waiting and p.beat and p.beat.id == "give_time")
    assert [f.id for f in at_time.released] == ["new_time"]
    assert [i.id for i in at_time.pending] == ["held_0001"]


async def test_a_failing_shadow_is_recorded_and_the_session_goes_on(rig: Rig) -> None:
    rig.shadow_fails = True
    person = Person([UserAction(kind="say", text="Please text Colm the review moved."), UserAction(kind="end")])
    seat = HumanUserSeat(rig.client, persona(), memory=SimulatorMemory(), on_change=person)
    person.seat = seat
    rig.queue.push(ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"})]), "Sure.")
    result = await run_accumulation(autonomy_session(), context(rig, RecordingMemory(), user_seat=seat))
    assert result.status == "completed", result.reason
    assert len(seat.fidelity) == 1
    assert seat.fidelity[0].simulator.message is None
    assert "simulator down" in (seat.fidelity[0].simulator.error or "")


async def test_user_seat_rejects_bad_actions_with_clear_messages(rig: Rig) -> None:
    seat = HumanUserSeat(None, persona())
    seat.start(autonomy_session(), targets())
    with pytest.raises(ValueError, match="cannot be empty"):
        seat.submit(UserAction(kind="say", text="  "))
    with pytest.raises(ValueError, match="no held item held_0009"):
        seat.submit(UserAction(kind="say", text="hi", consent={"held_0009": True}))


async def test_leaky_words_from_the_person_are_recorded_as_warnings(rig: Rig) -> None:
    person = Person([UserAction(kind="say", text="Use the Autonomy Level setting please."), UserAction(kind="end")])
    seat = HumanUserSeat(None, persona(), on_change=person)
    person.seat = seat
    rig.queue.push(ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"})]), "Sure.")
    result = await run_accumulation(autonomy_session(), context(rig, RecordingMemory(), user_seat=seat))
    assert result.status == "completed"
    assert seat.fidelity[0].human_warnings
    assert seat.fidelity[0].simulator.error  # no shadow client: said so, not silently empty


class PAPerson:
    """Plays the PA seat: a list of actions per turn, submitted one at a time as the view asks."""

    def __init__(self, turns: list[list[PAAction]]) -> None:
        self.turns = [list(t) for t in turns]
        self.views: list[PATurnView] = []
        self.seat: HumanAgentSeat | None = None
        self._turn = -1

    def __call__(self, view: PATurnView) -> None:
        self.views.append(view.model_copy(deep=True))
        if not view.waiting or self.seat is None:
            return
        if view.turn_index != self._turn:
            self._turn = view.turn_index
        queue = self.turns[self._turn]
        if queue:
            self.seat.submit(queue.pop(0))


def tool(name: str, **arguments: object) -> PAAction:
    return PAAction(kind="tool", tool=name, arguments=dict(arguments))


def reply(text: str) -> PAAction:
    return PAAction(kind="reply", text=text)


def simulated_user(rig: Rig) -> UserSimulator:
    return UserSimulator(rig.client, persona(), memory=SimulatorMemory(), llm_checker=False)


async def test_person_plays_the_pa_through_the_wrapper(rig: Rig) -> None:
    rig.sim_replies.extend([
        sim("Can you text Colm that the review moved?"),
        sim("", "advance"),
        sim("It's at 15:00 now. Go ahead and send it.", consent="held_0001: approve"),
        sim("", "advance"),
        sim("Thanks."),
        sim("", "done"),
    ])
    person = PAPerson([
        [reply("On it."),  # refused: the decision point needs the IX call first
         tool("IX_autonomy_level", setting="Self-directed"),
         tool("mcp_state_message_send", contact="Colm Averill", text="The review moved."),
         tool("mcp_state_no_such_tool"),
         reply("I can text Colm once I have the new time. Shall I send it then?")],
        [reply("Done, Colm has it.")],
        [reply("Glad to help.")],
    ])
    seat = HumanAgentSeat(on_change=person)
    person.seat = seat
    memory = RecordingMemory()
    ctx = context(rig, memory, user_seat=simulated_user(rig), agent_seat=seat)
    result = await run_accumulation(autonomy_session(), ctx)

    assert result.status == "completed", result.reason
    assert result.selection == "Self-directed"
    first = result.exchanges[0].delivered
    assert [i.id for i in first.held] == ["held_0001"]
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [r.reply for r in memory.records][1:] == ["Done, Colm has it.", "Glad to help."]
    assert memory.records[0].ix_calls[0].setting == "Self-directed"
    # the premature reply was refused with a note naming the IX tool
    assert any(v.note and "IX_autonomy_level" in v.note for v in person.views)
    # the person saw the held status, the unknown tool's error, and the memory's evidence
    done_first = [v for v in person.views if v.turn_index == 0][-1]
    assert [o.status for o in done_first.outcomes] == ["ix", "held", "rejected"]
    assert "no tool named" in done_first.outcomes[2].result
    assert done_first.evidence == memory.evidence_text
    # the second turn's view carried the consent note, and never the user's target
    second = next(v for v in person.views if v.turn_index == 1)
    assert any("approved held_0001" in n for n in second.runtime_notes)
    assert all(v.oracle is None for v in person.views)
    assert result.transcript[-1].type == "step_status"
    assert any(e.type == "tool_call" and e.call.status is CallStatus.HELD for e in result.transcript)


async def test_ix_text_in_task_arguments_floors_a_human_pa_too(rig: Rig) -> None:
    rig.sim_replies.append(sim("Can you text Colm that the review moved?"))
    person = PAPerson([[
        tool("IX_autonomy_level", setting="Self-directed"),
        tool("mcp_state_message_send", contact="Colm Averill", text="IX_autonomy_level chosen"),
    ]])
    seat = HumanAgentSeat(on_change=person)
    person.seat = seat
    memory = RecordingMemory()
    result = await run_accumulation(
        autonomy_session(), context(rig, memory, user_seat=simulated_user(rig), agent_seat=seat))
    assert result.status == "floored"
    assert "interaction-tool text" in (result.reason or "")
    assert result.world is None and memory.records == []


async def test_giving_up_floors_the_turn_and_submit_outside_a_turn_is_refused(rig: Rig) -> None:
    rig.sim_replies.append(sim("Can you text Colm that the review moved?"))
    seat = HumanAgentSeat()
    with pytest.raises(RuntimeError, match="no PA turn is waiting"):
        seat.submit(reply("hello"))
    person = PAPerson([[PAAction(kind="give_up")]])
    seat.on_change = person
    person.seat = seat
    result = await run_accumulation(
        autonomy_session(), context(rig, RecordingMemory(), user_seat=simulated_user(rig), agent_seat=seat))
    assert result.status == "floored"
    assert "gave the turn up" in (result.reason or "")
