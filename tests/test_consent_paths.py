"""Every path where a user's consent or confirmation is consumed reaches the PA, and the PA gets
the turn to act on it before the session ends (issue 15 point 1).

Paper Section 3.4 (the simulator's turns, the IX wrapper's held items), Appendix D.1 (one turn is
one message with its private blocks; beats move on the simulator's assessment), Appendix E.4
(consent releases exactly the held item; the PA is told what ran). Real simulator, seats, tools
and wrapper; every model is the scripted one on loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from pathlib import Path

import pytest
from test_agent_support import PAQueue, RecordingMemory, call, tiny_world
from test_episode import ENTRY, _reactions, autonomy_session, persona, sim, targets

from mempa_tui.ix.types import DeliveredTurn
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.runner.episode import EpisodeContext, StepResult, run_accumulation
from mempa_tui.scripts.schema import AccumulationSession, Beat, DecisionPoint, WorldEvent
from mempa_tui.simulator import SimulatorMemory, UserSeat, UserSimulator, UserTurn
from mempa_tui.simulator.human import HumanUserSeat, UserAction, UserPanel
from mempa_tui.taxonomy import Context
from mempa_tui.tools import default_registry

SEND = {"contact": "Colm Averill", "text": "The review moved to 15:00."}


class Rig:
    """The scripted model: a PA queue, simulator replies in order (then the diary entry)."""

    def __init__(self, queue: PAQueue, server: ScriptedModelServer, sim_replies: list[str]) -> None:
        self.queue = queue
        self.server = server
        self.client = LLMClient(server.profile(context_window=131072))
        self.sim_replies = sim_replies

    def sim_requests(self) -> list[ScriptedRequest]:
        return [r for r in self.server.requests if r.model == "scripted-simulator"]

    def pa_user_message(self, index: int) -> str:
        """The last user-role message of the PA's request ``index`` (what its turn opened with)."""
        users = [m for m in self.queue.pa_requests[index].messages if m.role == "user"]
        return users[-1].content or ""


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    sim_replies: list[str] = []

    def other(request: ScriptedRequest) -> ScriptedReply | str:
        if request.model == "scripted-simulator":
            return sim_replies.pop(0) if sim_replies else ENTRY
        return "unreadable"  # the message checker (not used: llm_checker=False)

    queue = PAQueue(other=other)
    async with ScriptedModelServer(queue) as server:
        yield Rig(queue, server, sim_replies)


def context(rig: Rig, memory: RecordingMemory, seat: UserSeat | None = None) -> EpisodeContext:
    if seat is None:
        seat = UserSimulator(rig.client, persona(), memory=SimulatorMemory(), llm_checker=False)
    return EpisodeContext(
        persona=persona(), targets=targets(), world=tiny_world(), registry=default_registry(),
        memory=memory, client=rig.client, simulator_memory=SimulatorMemory(), user_seat=seat,
    )


def unlocked_session() -> AccumulationSession:
    """The autonomy session without its write lock (the send may run at any beat)."""
    base = autonomy_session()
    beats = [b.model_copy(update={"releases": []}) for b in base.beats]
    return base.model_copy(update={"write_lock": None, "facts": [], "beats": beats})


def event_session(*, decision_next: bool = False) -> AccumulationSession:
    """Ask (the autonomy decision point), then a beat that opens with a world event, then a closing
    beat; with ``decision_next``, a plain ask, then a verbosity decision point, then the close."""
    ask = autonomy_session().beats[0]
    if decision_next:
        ask = Beat(id="ask", goal="get Colm told", conveys="ask for a text to Colm", max_turns=2)
        middle = Beat(
            id="second_ask", goal="get the agenda out", conveys="ask for the agenda to go out",
            max_turns=2, active_attributes=["verbosity"],
            decision_point=DecisionPoint(attribute="verbosity", reactions=_reactions("verbosity"),
                                         falls_short="asks again"),
        )
    else:
        middle = Beat(
            id="reply_arrives", goal="Colm answers", conveys="nothing; the world moves",
            event=WorldEvent(at=datetime(2026, 3, 2, 11, 0), notice="Colm replied: see you at 15:00."),
        )
    return AccumulationSession(
        id="A-w-autonomy-02", context=Context.WORK,
        attribute="verbosity" if decision_next else "autonomy_level",
        starts_at=autonomy_session().starts_at, scenario="team logistics", task="Tell Colm the review moved.",
        beats=[ask, middle, Beat(id="wrap", goal="wrap up", conveys="thanks", max_turns=2)],
    )


def kinds(result: StepResult) -> list[str]:
    return [e.type for e in result.transcript]


# ---- the simulator ----------------------------------------------------------------------------


async def test_a_confirmation_that_moves_to_an_ordinary_beat_opens_its_message(rig: Rig) -> None:
    rig.sim_replies.extend([
        sim("Can you text Colm that the review moved?"),
        # approves in words and in its block, and moves on in the same turn
        sim("Yes, send it once you have it.", "advance", consent="held_0001: approve"),
        sim("It's at 15:00 now."),  # the next beat's draft
        sim("", "advance"),
        sim("Thanks."),
        sim("", "done"),
    ])
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"}),
                                  call("mcp_state_message_send", SEND)]),
        "I can text Colm once I have the new time. Shall I send it then?",
        "Done, Colm has it.",
        "Glad to help.",
    )
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), context(rig, memory))
    assert result.status == "completed", result.reason
    joined = "Yes, send it once you have it.\n\nIt's at 15:00 now."
    # the words reached the PA with the next beat's message, in one turn (no extra turn)
    assert [e.user_message for e in result.exchanges] == [
        "Can you text Colm that the review moved?", joined, "Thanks."]
    assert joined in rig.pa_user_message(2) and "approved held_0001" in rig.pa_user_message(2)
    # the next beat's fact opened the lock before the consent ran the held send
    assert [c.held_id for c in result.exchanges[1].delivered.executed] == ["held_0001"]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    # the next beat's draft was written knowing the confirmation was said
    assert "Yes, send it once you have it." in str(rig.sim_requests()[2].body)


async def test_a_confirmation_before_a_world_event_is_acted_on_before_the_event(rig: Rig) -> None:
    rig.sim_replies.extend([
        sim("Can you text Colm that the review is at 15:00?"),
        sim("Yes, send it.", "advance"),  # text only: the PA asked, nothing was held
        sim("Good, he knows."),
        sim("", "done"),
    ])
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Autonomous"})]),
        "Shall I text Colm that the review is at 15:00?",
        ScriptedReply(tool_calls=[call("mcp_state_message_send", SEND)]),
        "Sent.",
        "Colm has replied that he will be there.",
        "Glad it worked out.",
    )
    result = await run_accumulation(event_session(), context(rig, RecordingMemory()))
    assert result.status == "completed", result.reason
    # the confirmation was the user's message for its own turn; the PA sent, then the event came
    assert [(e.user_message, e.notice) for e in result.exchanges] == [
        ("Can you text Colm that the review is at 15:00?", None), ("Yes, send it.", None),
        (None, "Colm replied: see you at 15:00."), ("Good, he knows.", None)]
    order = kinds(result)
    assert order.index("tool_call") < order.index("notice")
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.exchanges[1].delivered.reply == "Sent."


async def test_a_confirmation_before_a_decision_point_is_its_own_turn(rig: Rig) -> None:
    rig.sim_replies.extend([
        sim("Can you text Colm that the review is at 15:00?"),
        sim("Yes, send it.", "advance"),
        sim("Now the agenda for the review, please."),  # opens the next decision point
        sim("", "advance"),
        sim("Thanks."),
        sim("", "done"),
    ])
    rig.queue.push(
        "Shall I text Colm that the review is at 15:00?",
        ScriptedReply(tool_calls=[call("mcp_state_message_send", SEND)]),
        "Sent.",
        ScriptedReply(tool_calls=[call("IX_verbosity", {"setting": "Terse"})]),
        "Agenda: times, room, owners.",
        "Any time.",
    )
    result = await run_accumulation(event_session(decision_next=True), context(rig, RecordingMemory()))
    assert result.status == "completed", result.reason
    assert [e.user_message for e in result.exchanges][:3] == [
        "Can you text Colm that the review is at 15:00?", "Yes, send it.",
        "Now the agenda for the review, please."]
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]


# ---- the episode loop, for any seat -----------------------------------------------------------


class ScriptedSeat:
    """A user seat that plays fixed turns and records every call (any seat may fill the loop)."""

    def __init__(self, turns: list[UserTurn]) -> None:
        self.turns = list(turns)
        self.seen: list[DeliveredTurn | None] = []
        self._beat: Beat | None = None

    def start(self, script: AccumulationSession, targets: Mapping[str, str], context: Context | None = None) -> None:
        self._beat = script.beats[0]

    async def next_turn(self, delivered: DeliveredTurn | None) -> UserTurn:
        self.seen.append(delivered)
        return self.turns.pop(0) if self.turns else UserTurn(done=True)

    @property
    def current_beat(self) -> Beat | None:
        return self._beat

    def advance_beat(self) -> Beat | None:
        return self._beat

    @property
    def released_facts(self) -> tuple[str, ...]:
        return ()


async def test_a_done_turn_that_carries_words_is_delivered_and_answered_before_the_end(rig: Rig) -> None:
    seat = ScriptedSeat([
        UserTurn(message="Can you text Colm that the review is at 15:00?", released_facts=["new_time"]),
        UserTurn(message="Yes, send it.", done=True),
    ])
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Autonomous"})]),
        "Shall I text Colm that the review is at 15:00?",
        ScriptedReply(tool_calls=[call("mcp_state_message_send", SEND)]),
        "Sent.",
    )
    result = await run_accumulation(autonomy_session(), context(rig, RecordingMemory(), seat))
    assert result.status == "completed", result.reason
    assert "Yes, send it." in rig.pa_user_message(2)
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.exchanges[-1].delivered.reply == "Sent."
    assert len(seat.seen) == 2  # the seat was not asked again after its end signal


async def test_a_done_turn_with_consent_alone_gives_the_pa_a_turn(rig: Rig) -> None:
    seat = ScriptedSeat([
        UserTurn(message="Can you text Colm that the review is at 15:00?", released_facts=["new_time"]),
        UserTurn(consent={"held_0001": True}, done=True),
    ])
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"}),
                                  call("mcp_state_message_send", SEND)]),
        "Shall I send Colm the text?",
        "Colm has the new time.",
    )
    memory = RecordingMemory()
    result = await run_accumulation(autonomy_session(), context(rig, memory, seat))
    assert result.status == "completed", result.reason
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    # the PA's turn opened with the harness's account of the release, not with invented words
    opening = rig.pa_user_message(2)
    assert "approved held_0001" in opening and "it has now run" in opening
    assert result.exchanges[-1].user_message is None
    assert result.exchanges[-1].delivered.reply == "Colm has the new time."
    assert memory.records[-1].user_message == "[Consent] approved held_0001"
    assert "consent" in kinds(result) and "user_message" not in kinds(result)[kinds(result).index("consent"):]


# ---- the human user seat ----------------------------------------------------------------------


class Person:
    """Plays the user's seat from a list of actions, one each time the seat waits."""

    def __init__(self, actions: list[UserAction]) -> None:
        self.actions = list(actions)
        self.seat: HumanUserSeat | None = None

    def __call__(self, panel: UserPanel) -> None:
        if panel.waiting and self.actions and self.seat is not None:
            self.seat.submit(self.actions.pop(0))


def human(rig: Rig, actions: list[UserAction]) -> HumanUserSeat:
    person = Person(actions)
    seat = HumanUserSeat(None, persona(), memory=SimulatorMemory(), on_change=person, shadow=False)
    person.seat = seat
    return seat


def _push_held_send(rig: Rig, *after: str) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"}),
                                  call("mcp_state_message_send", SEND)]),
        "Shall I send Colm the text?",
        *after,
    )


async def test_a_person_who_ends_with_words_and_consent_gets_the_pas_answer_first(rig: Rig) -> None:
    seat = human(rig, [
        UserAction(kind="say", text="Can you text Colm that the review is at 15:00?"),
        UserAction(kind="end", text="Yes, send it.", consent={"held_0001": True}),
    ])
    _push_held_send(rig, "Sent.")
    memory = RecordingMemory()
    result = await run_accumulation(unlocked_session(), context(rig, memory, seat))
    assert result.status == "completed", result.reason
    assert [r.user_message for r in memory.records][-1] == "Yes, send it."
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.exchanges[-1].delivered.reply == "Sent."
    # the person saw the PA's last reply; their last word is a turn of the fidelity record
    assert seat.dialogue[-1].speaker == "assistant" and "Sent." in seat.dialogue[-1].text
    assert [p.human_message for p in seat.fidelity][-1] == "Yes, send it."
    assert seat.panel().finished


async def test_a_person_who_ends_with_consent_alone_gives_the_pa_a_turn(rig: Rig) -> None:
    seat = human(rig, [
        UserAction(kind="say", text="Can you text Colm that the review is at 15:00?"),
        UserAction(kind="end", consent={"held_0001": True}),
    ])
    _push_held_send(rig, "Colm has the new time.")
    memory = RecordingMemory()
    result = await run_accumulation(unlocked_session(), context(rig, memory, seat))
    assert result.status == "completed", result.reason
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert "approved held_0001" in rig.pa_user_message(2)
    assert result.exchanges[-1].delivered.reply == "Colm has the new time."
    assert memory.records[-1].user_message == "[Consent] approved held_0001"


async def test_a_person_who_moves_past_the_last_beat_with_consent_gives_the_pa_a_turn(rig: Rig) -> None:
    seat = human(rig, [
        UserAction(kind="say", text="Can you text Colm that the review moved?"),
        UserAction(kind="advance"),
        UserAction(kind="advance"),  # into the last beat; the send is still waiting
        UserAction(kind="advance", consent={"held_0001": True}),  # past the last beat
    ])
    _push_held_send(rig, "Colm has the new time.")
    result = await run_accumulation(autonomy_session(), context(rig, RecordingMemory(), seat))
    assert result.status == "completed", result.reason
    # the moves released the fact that opens the lock, then the consent ran the send
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
    assert result.exchanges[-1].delivered.reply == "Colm has the new time."


def test_an_advance_with_words_is_refused_rather_than_dropped() -> None:
    seat = HumanUserSeat(None, persona(), shadow=False)
    seat.start(autonomy_session(), targets())
    with pytest.raises(ValueError, match="send it first, or end the session with it"):
        seat.submit(UserAction(kind="advance", text="Yes, send it."))


# ---- the app's play-as-user screen ------------------------------------------------------------


async def test_the_app_sends_the_box_text_with_end_and_the_pa_answers_it(tmp_path: Path) -> None:
    from test_tui_support import fixed_scorer, make_folders, run_responder, write_profile
    from textual.widgets import Input, Select

    from mempa_tui.tui import MempaApp, RunnerOptions
    from mempa_tui.tui.screens.play_user import PlayUserScreen

    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        app = MempaApp(folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=100))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("u")
            screen = app.screen
            assert isinstance(screen, PlayUserScreen)
            await pilot.pause()
            screen.query_one("#play-user", Select).value = "R"
            await pilot.pause()
            screen.query_one("#play-step", Select).value = "R-s1"
            screen.query_one("#play-profile", Select).value = "scripted"

            async def until_waiting(key: str) -> None:
                before = screen.panel
                await pilot.press(key)
                while not (screen.panel is not None and screen.panel is not before and screen.panel.waiting):
                    await pilot.pause()

            await until_waiting("ctrl+r")
            box = screen.query_one("#message", Input)
            box.value = "Can you find the boiler inspection email?"
            await until_waiting("enter")
            box.value = "That's all I needed, thanks."
            await pilot.press("ctrl+o")  # end the session with the words in the box
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert screen.outcome is not None and screen.outcome.status == "completed", screen.outcome
            assert [p.human_message for p in screen.outcome.fidelity] == [
                "Can you find the boiler inspection email?", "That's all I needed, thanks."]
            assert box.value == ""
        pa = [r for r in server.requests if r.model.endswith("-pa")]
        last_user = [m for m in pa[-1].messages if m.role == "user"][-1].content or ""
        assert "That's all I needed, thanks." in last_user


async def test_a_person_in_the_pa_seat_sees_a_consent_only_turn_as_notes(rig: Rig) -> None:
    from test_seats_human import PAPerson, reply, tool

    from mempa_tui.agent.human import HumanAgentSeat

    seat = ScriptedSeat([
        UserTurn(message="Can you text Colm that the review is at 15:00?", released_facts=["new_time"]),
        UserTurn(consent={"held_0001": True}, done=True),
    ])
    pa_person = PAPerson([
        [tool("IX_autonomy_level", setting="Self-directed"),
         tool("mcp_state_message_send", **SEND), reply("Shall I send Colm the text?")],
        [reply("Colm has the new time.")],
    ])
    pa = HumanAgentSeat(on_change=pa_person)
    pa_person.seat = pa
    ctx = context(rig, RecordingMemory(), seat)
    ctx.agent_seat = pa
    result = await run_accumulation(autonomy_session(), ctx)
    assert result.status == "completed", result.reason
    last = [v for v in pa_person.views if v.turn_index == 1][-1]
    assert last.user_message is None and any("approved held_0001" in n for n in last.runtime_notes)
    assert [(c.tool, c.op) for c in result.change_log] == [("message_send", "insert")]
