"""The user simulator end to end through the scripted model on loopback (litellm path, no network).

Covers beat progression, withheld facts, skill loading per beat, rewrites and invalid turns,
consent decisions, the probe prompt, the LLM checker, the Table 9 boundary with the real IX
wrapper, simulator memory entries and the PRS rating.
"""

from __future__ import annotations

import json

from collections.abc import AsyncIterator
from datetime import date, datetime
from typing import Any

import pytest

from mempa_tui.ix import IXWrapper
from mempa_tui.ix.types import DeliveredTurn, HeldItem
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.scripts.schema import AccumulationSession, Persona, Probe
from mempa_tui.simulator import PRSError, SimulatorMemory, UserSimulator, default_skills, rate_probe
from mempa_tui.simulator._manner import MANNER_PROBLEM
from mempa_tui.tools import default_registry
from mempa_tui.world import WorkingCopy, WorldState

FACT = "The meeting room code is QX-7731."
SHIFT_FACT = "Shifts 3 and 5 move to Eastbank."
TERSE = default_skills().get("verbosity", "Terse")
PRODUCTION_MARK = TERSE.production[0]
RECEPTION_MARK = TERSE.reception.against[0]
REACTION_MARK = "take the time and move on"
_CHECK_KEYS = ("names_preference", "early_fact", "off_task", "earlier_session", "manner_feedback")
PASS = '{"verdicts": {' + ", ".join(f'"{k}": {{"violated": false, "reason": "ok"}}' for k in _CHECK_KEYS) + "}}"


def turn(message: str, assessment: str = "stay", consent: str = "") -> str:
    """A well-formed simulator reply."""
    block = f"<consent_decisions>\n{consent}\n</consent_decisions>\n" if consent else ""
    return (
        f"<factual_check>none</factual_check>\n<turn_assessment>{assessment}</turn_assessment>\n"
        f"{block}<message>{message}</message>"
    )


class Model:
    """Scripted replies per role; the last reply of a list repeats when it runs out."""

    def __init__(self, sim: list[str] | None = None, checker: list[str] | None = None,
                 other: list[str] | None = None) -> None:
        self.queues: dict[str, list[str | ScriptedReply]] = {
            "scripted-simulator": list(sim or []), "scripted-checker": list(checker or [PASS])}
        self.other: list[str | ScriptedReply] = list(other or [])
        self.seen: dict[str, int] = {}

    def __call__(self, request: ScriptedRequest) -> str | ScriptedReply:
        queue = self.queues.get(request.model, self.other)
        n = self.seen.get(request.model, 0)
        self.seen[request.model] = n + 1
        return queue[min(n, len(queue) - 1)]


def sim_requests(server: ScriptedModelServer) -> list[ScriptedRequest]:
    return [r for r in server.requests if r.model == "scripted-simulator"]


def prompt_text(request: ScriptedRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def persona() -> Persona:
    return Persona(
        label="A", name="Ingrid Salcedo", age=44, occupation="service planner", workplace="Wendlink Transit",
        town="Hollins Ferry", living_arrangement="Lives with her son.",
        relationships=[{"name": "Gideon Thrale", "relation": "depot manager", "context": "work"}],
        routines=["Tuesday stand-up"], personality="Exact and dry at work.",
        speech_style="Clipped, lowercase, one or two lines.", background="Writes the network's timetables.",
    )


def beats(*, event: bool = False) -> list[dict[str, Any]]:
    dp = {"attribute": "verbosity", "reactions": {"Terse": REACTION_MARK, "Detailed": "say you only needed the time"},
          "falls_short": "ask again for the time"}
    return [
        {"id": "open_ask", "goal": "get the assistant to find the rota email", "conveys": "ask for the email",
         "max_turns": 2},
        {"id": "gather_shifts", "goal": "get the affected shifts", "conveys": "ask which shifts move",
         "releases": ["shift_list"], "max_turns": 2},
        {"id": "decide_time", "goal": "get the meeting time confirmed", "conveys": "ask what time works",
         "releases": ["room_code"], "active_attributes": ["verbosity"], "decision_point": dp, "max_turns": 2},
        {"id": "react_time", "goal": "react to the answer", "conveys": "take a position on the answer",
         "max_turns": 2},
        {"id": "wrap_up", "goal": "close the errand", "conveys": "say you are done", "max_turns": 1},
    ]


def session() -> AccumulationSession:
    return AccumulationSession.model_validate({
        "id": "A-w-verbosity-01", "context": "work", "attribute": "verbosity", "starts_at": "2026-03-02T09:30",
        "scenario": "office", "task": "Confirm the depot meeting", "beats": beats(),
        "facts": [{"id": "room_code", "text": FACT}, {"id": "shift_list", "text": SHIFT_FACT}],
    })


def probe() -> Probe:
    dp = beats()[2]["decision_point"]
    return Probe.model_validate({
        "id": "A-p-verbosity-w", "context": "work", "attribute": "verbosity", "starts_at": "2026-05-02T09:30",
        "scenario": "office", "task": "Check the ferry timetable", "probe_kind": "final",
        "expected_replies": {"Terse": "the time", "Detailed": "the time with context"},
        "beats": [{"id": "ask_time", "goal": "get the first ferry time", "conveys": "ask for it",
                   "active_attributes": ["verbosity"], "decision_point": dp, "max_turns": 2}],
    })


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
async def server(model: Model) -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer(model) as srv:
        yield srv


def simulator(server: ScriptedModelServer, **kwargs: Any) -> UserSimulator:
    return UserSimulator(LLMClient(server.profile()), persona(), **kwargs)


def reply(text: str = "Found it.") -> DeliveredTurn:
    return DeliveredTurn(reply=text)


def goal_of(request: ScriptedRequest) -> str:
    system = prompt_text(request)
    return system.split("- Goal: ", 1)[1].split("\n", 1)[0]


# ------------------------------------------------------------------------- progression


async def test_withheld_fact_absent_before_its_beat_and_present_after(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find the rota email?"),  # open_ask, first message
        turn("unused draft", "advance"), turn("which shifts move?"),  # -> gather_shifts
        turn("unused draft", "advance"), turn("what time works?"),  # -> decide_time
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    second = await sim.next_turn(reply())
    third = await sim.next_turn(reply("Shifts 3 and 5."))
    assert [first.beat_id, second.beat_id, third.beat_id] == ["open_ask", "gather_shifts", "decide_time"]
    assert (first.released_facts, second.released_facts, third.released_facts) == ([], ["shift_list"], ["room_code"])
    assert sim.released_facts == ("shift_list", "room_code")
    for request in sim_requests(server):
        text = prompt_text(request)
        assert (FACT in text) == (goal_of(request) == "get the meeting time confirmed"), goal_of(request)
        assert "will get to it" in text  # the rule for details asked for early
    assert third.message == "what time works?"


async def test_skills_full_on_declaring_beat_reception_next_then_dropped(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find it?"), turn("x", "advance"), turn("shifts?"), turn("x", "advance"), turn("time?"),
        turn("x", "advance"), turn("got it, 3pm, booking"), turn("x", "advance"), turn("done, thanks"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    for _ in range(4):
        await sim.next_turn(reply())
    seen: dict[str, tuple[bool, bool, bool]] = {}
    for request in sim_requests(server):
        system = prompt_text(request)
        seen[goal_of(request)] = (PRODUCTION_MARK in system, RECEPTION_MARK in system, REACTION_MARK in system)
    assert seen == {
        "get the assistant to find the rota email": (False, False, False),
        "get the affected shifts": (False, False, False),
        "get the meeting time confirmed": (True, True, True),
        "react to the answer": (False, True, True),
        "close the errand": (False, False, False),
    }


async def test_session_done_after_last_beat_and_early_done_is_not_a_skip(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find it?"), turn("x", "done"), turn("shifts?"),  # 'done' with protected beats ahead
        turn("x", "advance"), turn("time?"), turn("x", "advance"), turn("fine, 3pm"),
        turn("x", "advance"), turn("that's all"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    turns = [await sim.next_turn(None)]
    for _ in range(4):
        turns.append(await sim.next_turn(reply()))
    assert [t.beat_id for t in turns] == ["open_ask", "gather_shifts", "decide_time", "react_time", "wrap_up"]
    assert not any(t.done for t in turns)
    calls = len(sim_requests(server))
    final = await sim.next_turn(reply("You're welcome."))  # wrap_up allows one message
    assert final.done and final.message == "" and sim.current_beat is None
    assert len(sim_requests(server)) == calls  # no model call was needed to end


async def test_max_turns_moves_ahead_to_the_declaring_beat(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = [turn("find it?"), turn("did you find it?"), turn("what time works?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(reply("Looking."))
    third = await sim.next_turn(reply("Still looking."))  # open_ask is out of turns
    assert third.beat_id == "decide_time"  # gather_shifts declares nothing and is passed over
    assert third.released_facts == ["shift_list", "room_code"]
    assert SHIFT_FACT in prompt_text(sim_requests(server)[-1])


async def test_event_beat_waits_for_the_loop_then_user_reacts(
    server: ScriptedModelServer, model: Model
) -> None:
    dp = {"attribute": "proactive_outreach", "reactions": {"Low": "carry on", "High": "complain you found out alone"},
          "falls_short": "ask what happened"}
    script = AccumulationSession.model_validate({
        "id": "A-w-outreach-01", "context": "work", "attribute": "proactive_outreach",
        "starts_at": "2026-03-03T09:00", "scenario": "office", "task": "Keep an eye on the rota",
        "beats": [
            {"id": "ask_watch", "goal": "hand over the rota check", "conveys": "ask it to check the rota"},
            {"id": "rota_event", "goal": "the rota changes", "conveys": "nothing; the world moves",
             "active_attributes": ["proactive_outreach"], "decision_point": dp,
             "event": {"at": "2026-03-03T11:00", "notice": "A new rota email arrived."}},
            {"id": "notice_change", "goal": "deal with the changed rota", "conveys": "bring up the change"},
        ],
    })
    model.queues["scripted-simulator"] = [turn("check the rota?"), turn("x", "advance"), turn("saw the rota changed")]
    sim = simulator(server, llm_checker=False)
    sim.start(script, {"proactive_outreach": "High"})
    await sim.next_turn(None)
    waiting = await sim.next_turn(reply("Checked, nothing new."))
    assert waiting.waiting_for_event and waiting.message == "" and not waiting.done
    assert sim.current_beat is not None and sim.current_beat.event is not None
    assert sim.advance_beat() is not None
    spoken = await sim.next_turn(DeliveredTurn(reply=""))  # Low-style silence from the PA
    assert spoken.beat_id == "notice_change" and spoken.message == "saw the rota changed"
    system = prompt_text(sim_requests(server)[-1])
    outreach = default_skills().get("proactive_outreach", "High")
    assert outreach.reception.against[0] in system and outreach.production[0] not in system
    assert "did not get in touch" in prompt_text(sim_requests(server)[-1])


def test_start_rejects_missing_targets_and_wrong_mode() -> None:
    sim = UserSimulator(LLMClient.__new__(LLMClient), persona(), llm_checker=False)
    with pytest.raises(ValueError, match="'verbosity'.*A-w-verbosity-01"):
        sim.start(session(), {})
    with pytest.raises(KeyError, match="not a setting of Verbosity"):
        sim.start(session(), {"verbosity": "Wordy"})
    with pytest.raises(ValueError, match="is a probe"):
        sim.start(probe(), {"verbosity": "Terse"})
    with pytest.raises(ValueError, match="no simulator memory"):
        UserSimulator(LLMClient.__new__(LLMClient), persona(), mode="probe", memory=SimulatorMemory())


# ------------------------------------------------------------------------- rewrites


async def test_empty_message_is_rewritten(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = ["<turn_assessment>stay</turn_assessment><message>  </message>",
                                          turn("find the rota email?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "find the rota email?" and not result.invalid
    assert len(result.rejected) == 1 and "empty" in result.rejected[0].problems[0]
    requests = sim_requests(server)
    assert len(requests) == 2
    assert "That turn was not sent" in requests[1].messages[-1].content
    assert "empty" in requests[1].messages[-1].content


async def test_setting_name_leak_is_rewritten_then_invalid_after_three_rewrites(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("From now on keep it terse, I prefer that.")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.invalid and result.message == ""
    assert len(result.rejected) == 4 and len(sim_requests(server)) == 4
    assert "terse" in (result.invalid_reason or "")
    assert "standing preference" in sim_requests(server)[-1].messages[-1].content
    assert sim.done
    after = await sim.next_turn(reply())
    assert after.done and len(sim_requests(server)) == 4


async def test_leak_fixed_on_the_third_rewrite_is_delivered(
    server: ScriptedModelServer, model: Model
) -> None:
    leak = turn("next time, keep it terse")
    model.queues["scripted-simulator"] = [leak, leak, leak, turn("find the rota email?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert not result.invalid and result.message == "find the rota email?"
    assert len(result.rejected) == 3
    last = sim_requests(server)[-1].messages
    assert [m.role for m in last] == ["system", "user"]  # the rejected drafts are not shown again
    assert last[-1].content.count("That turn was not sent") == 1  # the same note is given once
    assert "keep it terse" not in last[-1].content


async def test_consent_decisions_are_parsed(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = [
        turn("find it?"),
        turn("yes send it, not the other", "stay", "held_0001: approve\nheld_0002: deny\nheld_0099: approve"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    held = [
        HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                 arguments={"to": "gideon@wendlink.example"}),
        HeldItem(id="held_0002", kind="action", attribute="autonomy_level", tool="calendar_event_create"),
    ]
    result = await sim.next_turn(DeliveredTurn(reply="Drafted. Send?", held=held))
    assert result.consent == {"held_0001": True, "held_0002": False}  # unknown held_0099 ignored
    text = prompt_text(sim_requests(server)[-1])
    assert "<consent_decisions>" in text and "held_0001" in text and "email_message_send" in text


# ------------------------------------------------------------------------- checker


async def test_checker_violation_sends_the_message_back(server: ScriptedModelServer, model: Model) -> None:
    flagged = PASS.replace('"names_preference": {"violated": false', '"names_preference": {"violated": true')
    model.queues["scripted-checker"] = [flagged, PASS]
    model.queues["scripted-simulator"] = [turn("keep answers short please"), turn("find the rota email?")]
    sim = simulator(server)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "find the rota email?"
    assert "announces a preference" in result.rejected[0].problems[0]
    assert "announces a preference" in sim_requests(server)[-1].messages[-1].content


async def test_malformed_checker_output_is_retried_once_then_passes_with_warning(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-checker"] = ["I think it is fine!"]
    model.queues["scripted-simulator"] = [turn("find the rota email?")]
    sim = simulator(server)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "find the rota email?" and not result.invalid
    assert len(result.checker_warnings) == 1 and "skipped" in result.checker_warnings[0]
    assert len([r for r in server.requests if r.model == "scripted-checker"]) == 2


# ------------------------------------------------------------------------- boundary (Table 9)


async def test_pa_selection_and_withheld_content_never_reach_the_simulator(
    server: ScriptedModelServer, model: Model
) -> None:
    secret = "ZQX-WITHHELD: the depot manager's objection decided it"
    wrapper = IXWrapper(default_registry(), WorkingCopy(WorldState(), datetime(2026, 3, 2, 9, 30)))
    wrapper.begin_turn()
    assert wrapper.select("verbosity", {"setting": "Detailed"}).ok
    assert wrapper.select("reasoning_visibility", {"setting": "Hide", "rationale": secret}).ok
    delivered, trace = wrapper.render("Thursday at 3pm works for everyone.")
    assert trace.selections == {"verbosity": "Detailed", "reasoning_visibility": "Hide"}
    assert secret in str(trace.withheld)  # the wrapper really held it back
    model.queues["scripted-simulator"] = [turn("time?"), turn("fine, 3pm")]
    sim = simulator(server)  # checker on: its requests are checked too
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(delivered)
    assert len(server.requests) >= 4
    for request in server.requests:
        text = prompt_text(request)
        assert "ZQX-WITHHELD" not in text
        assert "reasoning_visibility" not in text and "IX_" not in text
    # The public reply did arrive: the boundary removes only what the wrapper withheld.
    assert "Thursday at 3pm works for everyone." in prompt_text(sim_requests(server)[-1])


# ------------------------------------------------------------------------- probe mode


async def test_probe_prompt_forbids_earlier_sessions_and_gives_no_memory_or_reception(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("like last time, first ferry?"), turn("first ferry tomorrow?")]
    sim = simulator(server, mode="probe", llm_checker=False)
    sim.start(probe(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "first ferry tomorrow?"
    assert "earlier conversation" in result.rejected[0].problems[0]
    system = prompt_text(sim_requests(server)[0])
    assert "never spoken to this assistant" in system and '"last time"' in system
    assert "Never comment on the manner of a reply" in system
    assert "# Your memory" not in system
    assert PRODUCTION_MARK in system and RECEPTION_MARK not in system and REACTION_MARK not in system
    # D.2: only the production side applies in a probe; the wants sentence says what a good reply
    # looks like, so it must not be there (Table 8 condition 3)
    assert TERSE.wants not in system
    assert "Never ask the assistant for a way of answering" in system


async def test_probe_manner_request_is_sent_back_and_counted(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = [
        turn("just the bottom line: first ferry tomorrow?"),
        turn("first ferry tomorrow?"),
    ]
    model.queues["scripted-checker"] = [PASS]
    sim = simulator(server, mode="probe", llm_checker=True)
    sim.start(probe(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "first ferry tomorrow?"
    assert len(result.rejected) == 1
    assert result.rejected[0].problems[0].startswith(MANNER_PROBLEM)
    assert "bottom line" in result.rejected[0].problems[0]
    # the note travels back to the simulator with the rewrite request
    assert MANNER_PROBLEM in prompt_text(sim_requests(server)[-1])
    assert sim.check_counts == {
        "rejected_attempts": 1, "manner_requests": 1, "manner_requests_checker": 0,
        "repeated_messages": 0, "stalled_messages": 0, "cut_replies": 0, "assistant_voice": 0, "trimmed_messages": 0,
        "invalid_turns": 0, "checker_warnings": 0,
    }
    sim.start(probe(), {"verbosity": "Terse"})  # counts are per step
    assert set(sim.check_counts.values()) == {0}


async def test_checker_manner_verdict_in_a_probe_is_counted(server: ScriptedModelServer, model: Model) -> None:
    flagged = json.loads(PASS)
    flagged["verdicts"]["manner_feedback"] = {"violated": True, "reason": "asks how to answer"}
    model.queues["scripted-simulator"] = [turn("first ferry? numbers only"), turn("first ferry tomorrow?")]
    model.queues["scripted-checker"] = [json.dumps(flagged), PASS]
    sim = simulator(server, mode="probe", llm_checker=True)
    sim.start(probe(), {"verbosity": "Terse"})
    result = await sim.next_turn(None)
    assert result.message == "first ferry tomorrow?"
    assert sim.check_counts["manner_requests_checker"] == 1 and sim.check_counts["manner_requests"] == 0
    assert sim.check_counts["rejected_attempts"] == 1


async def test_decision_point_opening_message_may_not_ask_for_the_tested_manner(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find it? keep it short"),  # not a decision point: passes
        turn("did you find it?"),
        turn("just the bottom line: what time works?"),  # opens the decision point: sent back
        turn("what time works?"),
        turn("too much. just the bottom line: what time?"),  # a reaction on the same beat: passes
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find it? keep it short" and first.rejected == []
    await sim.next_turn(reply("Looking."))
    third = await sim.next_turn(reply("Still looking."))  # moves on to decide_time
    assert third.beat_id == "decide_time" and third.message == "what time works?"
    assert third.rejected[0].problems[0].startswith(MANNER_PROBLEM)
    fourth = await sim.next_turn(reply("Several times could work; here is the background..."))
    assert fourth.message.startswith("too much") and fourth.rejected == []
    assert sim.check_counts["manner_requests"] == 1 and sim.check_counts["rejected_attempts"] == 1


async def test_decision_point_opening_adds_the_manner_question_to_the_checker(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("find it?"), turn("did you find it?"), turn("what time works?")]
    sim = simulator(server, llm_checker=True)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(reply("Looking."))
    await sim.next_turn(reply("Still looking."))
    checks = [prompt_text(r) for r in server.requests if r.model == "scripted-checker"]
    assert len(checks) == 3
    assert ["manner_feedback" in c for c in checks] == [False, False, True]


# ------------------------------------------------------------------------- memory


async def test_session_entry_written_and_shown_next_session(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find it?"),
        '{"entry": "It booked the 14:30 slot. Fine.", "impressions": ["quick"]}',
        '{"entry": "I asked it to find a meeting. It answered in one line and I took it. Nothing is open.",'
        ' "impressions": ["gets to the point"]}',
    ]
    memory = SimulatorMemory(impressions=["old impression"])
    sim = simulator(server, memory=memory, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    result = await sim.write_session_entry(date(2026, 3, 2))
    assert result.entry is not None and result.problem is None
    assert result.entry.on == date(2026, 3, 2) and "one line" in result.entry.text
    assert memory.impressions == ["gets to the point"]
    retry = sim_requests(server)[-1].messages[-1].content
    assert "digits" in retry
    assert "old impression" in prompt_text(sim_requests(server)[1])  # the old impressions were shown
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    assert "It answered in one line" in sim_requests(server)[-1].messages[0].content


async def test_session_entry_never_crashes_on_bad_output(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = ["no json here", "still none"]
    memory = SimulatorMemory()
    sim = simulator(server, memory=memory, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    result = await sim.write_session_entry(date(2026, 3, 2), "You: hi\nAssistant: hello")
    assert result.entry is None and result.problem and "JSON" in result.problem
    assert memory.entries == []
    probe_sim = simulator(server, mode="probe", llm_checker=False)
    with pytest.raises(RuntimeError, match="probes write nothing"):
        await probe_sim.write_session_entry(date(2026, 3, 2), "x")


# ------------------------------------------------------------------------- PRS


async def test_rate_probe_reads_score_after_one_retry(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = ['{"score": 9, "reason": "??"}', '{"score": 4, "reason": "Short enough."}']
    client = LLMClient(server.profile())
    score = await rate_probe(client, persona(), "verbosity", "Terse", "Ingrid: time?\nAssistant: 3pm.")
    assert score == (4, "Short enough.")
    first = prompt_text(sim_requests(server)[0])
    assert "Acting sheet: Verbosity = Terse" in first and "Ingrid Salcedo" in first
    assert "# Your memory" not in first
    assert "from 1 to 5" in sim_requests(server)[1].messages[-1].content


async def test_rate_probe_fails_clearly_instead_of_inventing(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = ["pretty good", '{"reason": "ok"}']
    client = LLMClient(server.profile())
    with pytest.raises(PRSError, match="PRS for verbosity=Terse is missing"):
        await rate_probe(client, persona(), "verbosity", "Terse", "Ingrid: time?\nAssistant: 3pm.")
    assert len(sim_requests(server)) == 2



# ------------------------------------------------------------------------- JSON turn format


async def test_json_turns_are_asked_for_by_schema_and_read_like_tagged_ones(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        '{"factual_check": "none", "turn_assessment": "stay", "message": ""}',
        '```json\n{"factual_check": "none", "turn_assessment": "stay", "message": "find the rota email?"}\n```',
        json.dumps({"factual_check": "none", "turn_assessment": "stay", "message": "send it, not the other",
                    "consent_decisions": {"held_0001": "approve", "held_0002": "deny"}}),
    ]
    sim = simulator(server, llm_checker=False, output_format="json")
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find the rota email?" and "empty" in first.rejected[0].problems[0]
    held = [
        HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send"),
        HeldItem(id="held_0002", kind="action", attribute="autonomy_level", tool="calendar_event_create"),
    ]
    second = await sim.next_turn(DeliveredTurn(reply="Drafted. Send?", held=held))
    assert second.consent == {"held_0001": True, "held_0002": False}
    requests = sim_requests(server)
    assert all(r.json_schema and "turn_assessment" in r.json_schema["properties"] for r in requests)
    assert '"consent_decisions"' in prompt_text(requests[-1]) and "<message>" not in prompt_text(requests[-1])


# ------------------------------------------------------------------------- conversation checks


async def test_a_first_message_that_puts_the_task_off_is_sent_back_and_counted(
    server: ScriptedModelServer, model: Model
) -> None:
    # measured on the packaged 1.5B model (issue 12): the user's first message of every beat was
    # the withheld-fact rule's deferral, so the PA was never told the task
    model.queues["scripted-simulator"] = [turn("I'll get to it in a moment."), turn("find the rota email?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find the rota email?"
    assert len(first.rejected) == 1 and "nobody has asked you for" in first.rejected[0].problems[0]
    assert "nobody has asked you for" in prompt_text(sim_requests(server)[-1])  # the note goes back
    counts = sim.check_counts
    assert (counts["rejected_attempts"], counts["stalled_messages"], counts["repeated_messages"]) == (1, 1, 0)


async def test_a_message_repeating_an_earlier_one_word_for_word_is_sent_back(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("find the rota email?"), turn("Find the rota email!"), turn("which shifts move?"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    second = await sim.next_turn(reply("I could not find it."))
    assert second.message == "which shifts move?"
    assert [p.split(";")[0] for p in second.rejected[0].problems] == [
        "the message repeats word for word what you already said earlier in this conversation"]
    assert sim.check_counts["repeated_messages"] == 1
    # the note names what the step has the user say (a 1.5B model at temperature 0 wrote its
    # rejected message again word for word when the note did not)
    beat = session().beats[0]  # the second message still belongs to the first step (stay)
    assert f"your message does this: {beat.conveys.rstrip('.')}" in second.rejected[0].problems[0]


async def test_a_message_that_copies_an_earlier_one_is_sent_without_the_copy(
    server: ScriptedModelServer, model: Model
) -> None:
    # the packaged 1.5B wrote its previous message again and put the new question after it, and
    # opened a message with the dialogue's own label (issue 12, benchmarks/simulator_replay.py)
    model.queues["scripted-simulator"] = [
        turn("Hi Gideon! Can you find the rota email from Priya? Thanks!"),
        turn("You: Hi Gideon! Can you find the rota email from Priya? Thanks! Which shifts move on Friday?"),
        turn("Ingrid: Thanks! which shifts move to eastbank then"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "Can you find the rota email from Priya? Thanks!"  # greeted a contact
    second = await sim.next_turn(reply("I could not find it."))
    assert second.message == "Thanks! Which shifts move on Friday?" and not second.rejected
    third = await sim.next_turn(reply("Shifts 3 and 5."))
    assert third.message == "Thanks! which shifts move to eastbank then"  # a label alone is removed
    assert sim.check_counts["trimmed_messages"] == 3 and sim.check_counts["repeated_messages"] == 0
    # the dialogue keeps what was sent, so the next check compares with the trimmed words
    assert sim.dialogue[-1].text == third.message


async def test_a_message_left_with_nothing_of_its_own_after_the_copy_is_a_repeat(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [
        turn("can you find the rota email from priya?"),
        turn("Hi! Can you find the rota email from Priya? Thanks!"),
        turn("which shifts move on friday?"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    second = await sim.next_turn(reply("I could not find it."))
    assert second.message == "which shifts move on friday?"
    assert second.rejected[0].problems[0].startswith("the message repeats word for word")
    assert sim.check_counts["repeated_messages"] == 1 and sim.check_counts["trimmed_messages"] == 0


async def test_a_user_that_moves_on_with_only_a_copy_ends_without_sending_it(
    server: ScriptedModelServer, model: Model
) -> None:
    # replayed A-S14 on the 1.5B: after "... Anything else?" the user moved on four times with its
    # previous message word for word, and the turn ended invalid (the session discarded)
    model.queues["scripted-simulator"] = [
        turn("when is the first ferry tomorrow?"), turn("When is the first ferry tomorrow?", "done"),
    ]
    sim = simulator(server, mode="probe", llm_checker=False)
    sim.start(probe(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    last = await sim.next_turn(reply("6:40 from the north quay. Anything else?"))
    assert last.done and not last.invalid and not last.message and not last.rejected
    assert sim.check_counts["trimmed_messages"] == 1 and sim.check_counts["invalid_turns"] == 0
    assert len(sim_requests(server)) == 2  # no rewrite was asked for


async def test_a_message_copying_the_steps_instruction_or_the_assistants_words_is_sent_back(
    server: ScriptedModelServer, model: Model
) -> None:
    # fresh quick start of 3 December, A-S14 on the 1.5B: "Go on from what it did, then end." (the
    # beat's own instruction) and the body of the email the PA had drafted, sent as the user's words
    draft = "I hope this email finds you well and the rota suits everyone."
    model.queues["scripted-simulator"] = [
        turn("Ask for the email."), turn("find the rota email?"),
        turn(f"{draft} Thanks."), turn("good, which shifts move?"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find the rota email?"
    assert first.rejected[0].problems == [
        "the message copies your instructions word for word; write, in your own words, what you say to the assistant"]
    from mempa_tui.ix.types import CallStatus, ExecutedCall

    ran = ExecutedCall(call_id="c1", tool="email_draft_create", arguments={"body": draft},
                       status=CallStatus.EXECUTED, result="{}")
    second = await sim.next_turn(DeliveredTurn(reply="Drafted it.", executed=[ran]))
    assert second.message == "good, which shifts move?"
    assert second.rejected[0].problems[0].startswith("the message copies the assistant's words")
    assert sim.check_counts["rejected_attempts"] == 2


def test_copy_check_cases() -> None:
    from mempa_tui.simulator._leaks import copy_check

    steps = ["Go on from what it did, then end.", "Ask the assistant to find Colm's email."]
    assert copy_check("Go on from what it did, then end.", steps, []) != []
    assert copy_check("Thanks! go on from what it did then end", steps, []) != []  # case and punctuation aside
    assert copy_check("Can you find Colm's email?", steps, []) == []  # the step's content in the user's words
    assert copy_check("Then end.", steps, []) == []  # a two-word sentence is no copy
    said = ["Calder Print delivers all 12,000 leaflets by 2 June, before your date."]
    assert copy_check("Calder Print delivers all 12,000 leaflets by 2 June? Great.", [], said) != []
    assert copy_check("Calder Print it is, by 2 June.", [], said) == []


async def test_a_turn_that_only_repeats_the_user_ends_its_step_not_the_session(
    server: ScriptedModelServer, model: Model
) -> None:
    # fresh quick start of 3 December: the 1.5B's A-S14 said its last message again through every
    # rewrite at its last beat, and the session was discarded (Appendix D.4's rule)
    model.queues["scripted-simulator"] = [turn("when is the first ferry tomorrow?"),
                                          turn("When is the first ferry tomorrow?")]
    sim = simulator(server, mode="probe", llm_checker=False)
    sim.start(probe(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    last = await sim.next_turn(reply("6:40 from the north quay."))
    assert last.done and not last.invalid and not last.message
    assert len(last.rejected) == 4 and all(r.problems[0].startswith("the message repeats") for r in last.rejected)
    assert sim.check_counts["trimmed_messages"] == 1 and sim.check_counts["invalid_turns"] == 0


def test_trim_copied_cases() -> None:
    from mempa_tui.simulator._leaks import trim_copied

    earlier = ["I just booked Gull Cottage for August. Can you tell me the dates?"]
    cut = trim_copied("I just booked Gull Cottage for August! How do I get there by train?", earlier)
    assert (cut.text, cut.dropped, cut.label) == ("How do I get there by train?", 1, False)
    assert cut.changed and not cut.only_copies
    # three-word sentences are not copies (yes, send it); nor is a sentence that only overlaps
    same = trim_copied("Yes, send it. Can you tell me the train times?", ["yes send it", "tell me the dates"])
    assert not same.changed and same.text == "Yes, send it. Can you tell me the train times?"
    assert trim_copied("Can you tell me the dates? Thanks!", earlier).only_copies
    assert trim_copied("Me:   which train?", []).text == "which train?"
    assert trim_copied("Gideon: which train?", [], ("Gideon Thrale", "Gideon")).label
    assert not trim_copied("You: ", []).label  # a label with nothing after it is left to the format check
    assert trim_copied("you: is the train on time", []).text == "is the train on time"
    # a greeting that names a contact goes (the 1.5B's "Hi Gideon!" to the assistant, issue 12)
    contacts = ("Gideon Thrale", "Gideon", "Colm Averill", "Colm")
    hi = trim_copied("Hi Gideon! I just booked Gull Cottage for August.", [], (), contacts)
    assert (hi.text, hi.greeting, hi.changed) == ("I just booked Gull Cottage for August.", True, True)
    assert trim_copied("hello Colm Averill, need the 14 stop list by thu?", [], (), contacts).text == (
        "need the 14 stop list by thu?")
    # the name alone, a greeting to someone else, or one with nothing after it are left as written
    for kept in ("Colm wants the 14 stop list by thu?", "Hi there! Which train?", "Hi Gideon!",
                 "Hi Gideonite crew, which train?",
                 # the name as the subject of the sentence is no greeting (A-E01's own openings)
                 "hey colm wants us to host an info session", "hi colm's out of the exec meeting"):
        assert not trim_copied(kept, [], (), contacts).greeting, kept
    for greeted in ("Hi, Gideon! which train?", "Hi Gideon - which train?", "Hi Gideon\nwhich train?"):
        assert trim_copied(greeted, [], (), contacts).text == "which train?", greeted


async def test_a_deferral_after_the_assistant_asks_something_is_delivered(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("find the rota email?"), turn("i'll get to the room code in a moment")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    second = await sim.next_turn(reply("Found it. Which room is the meeting in?"))
    assert second.message == "i'll get to the room code in a moment" and not second.rejected
    assert sim.check_counts["stalled_messages"] == 0


def test_conversation_check_cases() -> None:
    from mempa_tui.simulator._leaks import conversation_check

    assert conversation_check("ok", ["ok"], None) == []  # too short to call a repeat
    assert conversation_check("Yes, send it.", ["yes send it"], "Send it?")[0].startswith("the message repeats")
    assert conversation_check("I'll get to it in a moment.", ["Ill get to it in a moment"], "Dates?") != []
    assert conversation_check("I will come back to the booking in a minute", [], "Done.") != []
    assert conversation_check("I will come back to the booking in a minute", [], "What are the dates?") == []
    assert conversation_check("booked gull cottage, what dates does it say?", [], None) == []
    # a run of six words or more copied out of an earlier message repeats it (issue 12, A-S51)
    earlier = ["Thanks! Do you have any other suggestions for getting to Sallowmouth? Any other ideas?"]
    part = "Do you have any other suggestions for getting to Sallowmouth?"
    assert conversation_check(part, earlier, "Drive.")[0].startswith("the message repeats")
    assert conversation_check("Any other ideas?", earlier, "Drive.") == []  # short phrases recur
    assert conversation_check("What time can we get into the cottage on the Saturday?", earlier, "Drive.") == []


async def test_first_message_of_a_later_beat_names_its_goal_after_the_dialogue(
    server: ScriptedModelServer, model: Model
) -> None:
    # at a beat change the 1.5B model wrote its previous message again (issue 12): the turn line
    # right after the dialogue names the new goal and what to say for it; other turns do not
    model.queues["scripted-simulator"] = [turn("find the rota email?"), turn("x", "advance"), turn("which shifts move?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(reply())
    tails = [r.messages[-1].content.rsplit("\n", 2)[-2] for r in sim_requests(server)]
    assert tails[0] == "(This is your first message for the goal where you are now.)"
    assert "get the assistant to find the rota email" not in tails[1]  # second turn of open_ask
    assert tails[2] == ("(This is your first message for the goal where you are now: "
                        "get the affected shifts In it: ask which shifts move)")


async def test_rewrites_sample_at_the_rewrite_temperature_and_first_attempts_at_the_simulators(
    server: ScriptedModelServer, model: Model
) -> None:
    # at temperature 0 a small model rewrote its rejected message word for word (issue 12)
    model.queues["scripted-simulator"] = [
        turn("I'll get to it in a moment."), turn("find the rota email?"), turn("which shifts move?"),
    ]
    sim = simulator(server, llm_checker=False, rewrite_temperature=0.7)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(reply("Which email?"))
    temperatures = [request.options.get("temperature") for request in sim_requests(server)]
    own = server.profile().spec_for("simulator").temperature
    assert temperatures == [own, 0.7, own]


async def test_without_a_rewrite_temperature_rewrites_keep_the_simulators(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("I'll get to it in a moment."), turn("find the rota email?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    own = server.profile().spec_for("simulator").temperature
    assert [request.options.get("temperature") for request in sim_requests(server)] == [own, own]


async def test_every_rewrite_attempt_samples_anew_and_a_replay_draws_the_same(
    server: ScriptedModelServer, model: Model
) -> None:
    # the seed is derived from the scope and the prompt (mempa_tui.llm.sampling); a rewrite's
    # prompt shows each distinct note once, so from the third attempt on it no longer changed and
    # the 1.5B drew the same message again at the rewrite temperature (issue 12, replayed A-S14)
    from mempa_tui.llm.sampling import sampling_scope

    model.queues["scripted-simulator"] = [turn("find the rota email?"), turn("find the rota email?")]

    async def play() -> list[int]:
        sim = UserSimulator(LLMClient(server.profile(seed=7)), persona(), llm_checker=False)
        sim.start(session(), {"verbosity": "Terse"})
        model.seen.clear()
        before = len(sim_requests(server))
        with sampling_scope("run-seed=0 step=S1 attempt=1"):
            await sim.next_turn(None)
            second = await sim.next_turn(reply("I could not find it."))
        assert len(second.rejected) >= 4  # the same repeat, four times (then the step ends)
        requests = sim_requests(server)[before:]
        return [int(r.options.get("seed", r.body.get("seed"))) for r in requests]

    seeds = await play()
    assert len(set(seeds[1:5])) == 4, seeds  # the second turn's four attempts
    prompts = [r.messages[-1].content for r in sim_requests(server)[2:4]]
    assert prompts[0] == prompts[1]  # the same prompt, yet another draw
    assert await play() == seeds  # the same run played again samples as before

# ------------------------------------------------------------------------- cut and assistant-voice checks

LOOP = "I need the rota email for the depot meeting today. " * 6


def test_cut_check_cases() -> None:
    from mempa_tui.simulator._leaks import CUT_PROBLEM, cut_check

    # measured on the packaged 1.5B model (issue 12): it repeats a sentence until its cap
    looping = cut_check(turn(LOOP + "I need the rota"), "length")
    assert len(looping) == 1 and looping[0].startswith(f"{CUT_PROBLEM} (repeating itself)")
    # a run of eight words found twice is a loop even without sentence ends
    assert "(repeating itself)" in cut_check("one two three four five six seven eight one two three four "
                                             "five six seven eight one", "length")[0]
    plain = cut_check(turn("find the rota email and then tell me which of the shifts"), "length")
    assert len(plain) == 1 and plain[0].startswith(f"{CUT_PROBLEM}:")
    assert cut_check(turn(LOOP), "stop") == [] and cut_check(turn(LOOP), None) == []
    assert cut_check(turn("find it"), "tool_calls") == []


def test_assistant_voice_check_cases() -> None:
    from mempa_tui.simulator._leaks import ASSISTANT_VOICE_PROBLEM, assistant_voice_check

    for text, label in [
        ("Hello! How can I assist you today?", "how can I assist you"),
        ("How may I help you?", "how can I assist you"),
        ("I'd be happy to help with that.", "I'd be happy to help"),
        ("I would be glad to assist.", "I'd be happy to help"),
        ("Is there anything else I can help you with?", "anything else I can help you with"),
        ("Let me know if you need anything else!", "let me know if you need anything else"),
        ("As an AI, I cannot open email.", "as an AI"),
        ("What can I do for you?", "what can I do for you"),
    ]:
        problems = assistant_voice_check(text)
        assert problems == [f"{ASSISTANT_VOICE_PROBLEM} ('{label}'); write what you, the user, say or ask the "
                            "assistant"], text
    # the typographic apostrophe reads like the plain one; words inside other words do not match
    assert assistant_voice_check("I\u2019d be happy to help.") != []
    assert assistant_voice_check("find the rota email, as an aide said?") == []
    assert assistant_voice_check("I'd be happy to hear the times.") == []
    # a phrase of the user's own task material is the user's words (like the vocabulary checks)
    material = "Task: write the shop's new greeting card, 'How can I help you?', for the front desk."
    assert assistant_voice_check("put 'How can I help you?' on the card", material) == []
    assert assistant_voice_check("put 'How can I help you?' on the card") != []


async def test_a_reply_cut_at_its_cap_is_sent_back_and_counted(server: ScriptedModelServer, model: Model) -> None:
    # the tagged reply is cut inside its message (no closing tag): the note says it was cut, not
    # that the format is wrong
    model.queues["scripted-simulator"] = [
        ScriptedReply(text=turn(LOOP).removesuffix("</message>"), finish_reason="length"),
        turn("find the rota email?"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find the rota email?"
    assert [p.split(":")[0] for p in first.rejected[0].problems] == ["cut at its cap (repeating itself)"]
    assert "cut at its cap (repeating itself)" in prompt_text(sim_requests(server)[-1])  # the note goes back
    counts = sim.check_counts
    assert (counts["rejected_attempts"], counts["cut_replies"], counts["assistant_voice"]) == (1, 1, 0)


async def test_a_cut_reply_that_moves_on_is_not_taken_as_a_move(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = [
        turn("find the rota email?"),
        ScriptedReply(text=turn("x", "advance"), finish_reason="length"),  # its move is not read
        turn("did you find it?"),
    ]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    second = await sim.next_turn(reply("Looking."))
    assert (second.beat_id, second.message) == ("open_ask", "did you find it?")
    assert second.rejected[0].problems[0].startswith("cut at its cap:")
    assert sim.check_counts["cut_replies"] == 1


async def test_a_reply_cut_on_every_attempt_ends_the_turn_invalid(server: ScriptedModelServer, model: Model) -> None:
    model.queues["scripted-simulator"] = [ScriptedReply(text=turn(LOOP), finish_reason="length")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.invalid and "cut at its cap (repeating itself)" in (first.invalid_reason or "")
    counts = sim.check_counts
    assert (counts["cut_replies"], counts["rejected_attempts"], counts["invalid_turns"]) == (4, 4, 1)


async def test_a_message_written_as_the_assistant_is_sent_back_and_counted(
    server: ScriptedModelServer, model: Model
) -> None:
    model.queues["scripted-simulator"] = [turn("Hi! How can I assist you today?"), turn("find the rota email?")]
    sim = simulator(server, llm_checker=False)
    sim.start(session(), {"verbosity": "Terse"})
    first = await sim.next_turn(None)
    assert first.message == "find the rota email?"
    assert first.rejected[0].problems[0].startswith("written as the assistant, not as the user ('how can I assist")
    assert "written as the assistant" in prompt_text(sim_requests(server)[-1])
    counts = sim.check_counts
    assert (counts["rejected_attempts"], counts["assistant_voice"], counts["cut_replies"]) == (1, 1, 0)
