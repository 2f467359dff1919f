"""The simulator's message-check counts reach the step's run record (StepResult.simulator_checks,
stored in the step's result JSON): Table 8 condition 3, Appendix D.4.

A probe whose first simulator attempt asks for a manner of reply is played through the real
episode loop against the scripted model on loopback; a person in the user's seat gets the same
check as a warning.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from test_agent_support import START, PAQueue, RecordingMemory, call, tiny_world
from test_episode import autonomy_session, persona, targets
from test_seats_human import Person

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.runner.episode import EpisodeContext, StepResult, run_accumulation, run_probe
from mempa_tui.scripts.schema import Beat, DecisionPoint, Persona, Probe, Relationship
from mempa_tui.simulator import CHECK_COUNT_KEYS, MANNER_PROBLEM, SimulatorMemory, UserSimulator
from mempa_tui.simulator.human import HumanUserSeat, UserAction
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.tools import default_registry


def _sim(message: str) -> str:
    return (
        "<factual_check>none</factual_check>\n<turn_assessment>stay</turn_assessment>\n"
        f"<message>{message}</message>"
    )


def _persona() -> Persona:
    return Persona(
        label="A", name="Ingrid Salcedo", age=44, occupation="Service planner", workplace="Wendlink Transit",
        town="Hollins Ferry", living_arrangement="Lives with her son.",
        relationships=[Relationship(name="Colm Averill", relation="manager", context=Context.WORK)],
        routines=["Plans timetables on Mondays."], personality="Direct and busy.",
        speech_style="Short messages.", background="Has planned buses for years.",
    )


def _probe() -> Probe:
    key = "solution_breadth"
    return Probe(
        id="A-final-work-breadth", context=Context.WORK, attribute=key, starts_at=START, scenario="office",
        task="Pick a room for the review.", probe_kind="final",
        expected_replies={"Low": "one room", "High": "rooms compared"},
        beats=[
            Beat(
                id="ask", goal="get a room picked", conveys="asks which room to use", max_turns=1,
                active_attributes=[key],
                decision_point=DecisionPoint(
                    attribute=key, reactions={s: "carries on" for s in attribute(key).setting_names},
                    falls_short="asks again",
                ),
            )
        ],
    )


@pytest.fixture
async def played() -> AsyncIterator[StepResult]:
    sim_replies = [_sim("what are my options and how do they compare? which room?"), _sim("which room?")]

    def other(request: ScriptedRequest) -> ScriptedReply | str:
        assert request.model == "scripted-simulator"
        return sim_replies.pop(0)

    queue = PAQueue(other=other).push(
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "Low"})]), "Take room 2."
    )
    async with ScriptedModelServer(queue) as server:
        client = LLMClient(server.profile(context_window=131072))
        seat = UserSimulator(client, _persona(), mode="probe", llm_checker=False)
        ctx = EpisodeContext(
            persona=_persona(), targets={a.key: a.setting_names[0] for a in ATTRIBUTES}, world=tiny_world(),
            registry=default_registry(), memory=RecordingMemory(), client=client, simulator_memory=None,
            user_seat=seat,
        )
        yield await run_probe(_probe(), ctx)
    assert sim_replies == []


async def test_manner_request_counts_reach_the_step_result_and_its_json(played: StepResult) -> None:
    assert played.status == "completed", played.reason
    assert played.simulator_checks == {
        "rejected_attempts": 1, "manner_requests": 1, "manner_requests_checker": 0,
        "repeated_messages": 0, "stalled_messages": 0, "cut_replies": 0, "assistant_voice": 0, "trimmed_messages": 0,
        "invalid_turns": 0, "checker_warnings": 0,
    }
    assert set(played.simulator_checks) == set(CHECK_COUNT_KEYS)
    stored = json.loads(played.model_dump_json(exclude={"world"}))  # what the run store keeps
    assert stored["simulator_checks"]["manner_requests"] == 1
    delivered = [e.text for e in played.transcript if e.type == "user_message"]
    assert delivered == ["which room?"]


async def test_a_person_asking_for_the_tested_manner_at_the_decision_point_gets_a_warning() -> None:
    queue = PAQueue(other=lambda _r: "unreadable").push(
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Reactive"})]), "I'll wait for you.", "Ok."
    )
    person = Person([
        UserAction(kind="say", text="Text Colm the review moved, but check with me before it goes out."),
        UserAction(kind="say", text="Check with me before it goes out, I said."),  # a reaction: no warning
        UserAction(kind="end"),
    ])
    seat = HumanUserSeat(None, persona(), on_change=person)
    person.seat = seat
    async with ScriptedModelServer(queue) as server:
        client = LLMClient(server.profile(context_window=131072))
        ctx = EpisodeContext(
            persona=persona(), targets=targets(), world=tiny_world(), registry=default_registry(),
            memory=RecordingMemory(), client=client, simulator_memory=SimulatorMemory(), user_seat=seat,
        )
        result = await run_accumulation(autonomy_session(), ctx)
    assert result.status == "completed", result.reason
    first, second = seat.fidelity[0], seat.fidelity[1]
    assert any(w.startswith(MANNER_PROBLEM) for w in first.human_warnings), first.human_warnings
    assert not any(w.startswith(MANNER_PROBLEM) for w in second.human_warnings)
    assert result.simulator_checks == {}  # a person's seat keeps no simulator counts
