"""A stable simulator prefix (issue 12): consecutive prompts of one session share their fixed part.

The simulator's prompt is rebuilt each turn (paper Appendix D.1-D.2, I.3). llama.cpp's prompt
cache reuses only the common prefix of two consecutive prompts, so what is fixed for the session
(persona, rules, memory, the session's date and task, the output format) must come first, the
dialogue (which only grows at its end) next, and what moves per turn (beat, skills, released
facts, reactions, waiting items, the turn count) last. These tests drive a scripted session over
the loopback model and measure the common prefix of consecutive simulator requests.
"""

from __future__ import annotations

import os

from test_simulator_session import (  # noqa: F401  (model, server: the fixtures)
    FACT,
    Model,
    PRODUCTION_MARK,
    REACTION_MARK,
    model,
    persona,
    probe,
    reply,
    server,
    session,
    sim_requests,
    simulator,
    turn,
)

from mempa_tui.ix.types import DeliveredTurn, HeldItem
from mempa_tui.llm import ScriptedModelServer, ScriptedRequest
from mempa_tui.simulator import SimulatorMemory, TurnPromptInput, build_turn_messages
from mempa_tui.simulator._prompt import fixed_system_prompt

def _flat(request: ScriptedRequest) -> str:
    """The request's messages as one string, in the order a chat template lays them out."""
    return "".join(f"<{m.role}>{m.content}" for m in request.messages)


def _dialogue_part(request: ScriptedRequest) -> str:
    """The user message up to the end of the dialogue (before the per-turn part)."""
    user = request.messages[1].content
    return user.split("\n\n", 1)[0]


async def _play(server: ScriptedModelServer, model: Model) -> list[ScriptedRequest]:
    """Plays the test session across every beat change, a held item and a decision point."""
    model.queues["scripted-simulator"] = [
        turn("find the rota email?"),
        turn("and the shifts?"),  # the beat's turns run out: on to the decision beat
        turn("what time works?"),
        turn("yes send it", "stay", "held_0001: approve"),
        turn("x", "advance"), turn("fine, 3pm then"),
    ]
    sim = simulator(server, llm_checker=False, memory=SimulatorMemory())
    sim.start(session(), {"verbosity": "Terse"})
    await sim.next_turn(None)
    await sim.next_turn(reply("Looking."))
    await sim.next_turn(reply("Found the rota email."))
    held = [HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                     arguments={"to": "gideon@wendlink.example"})]
    await sim.next_turn(DeliveredTurn(reply="Shifts 3 and 5. Send the note to Gideon?", held=held))
    await sim.next_turn(reply("Sent. 15:00 works."))
    return sim_requests(server)


async def test_system_message_is_identical_on_every_turn_of_a_session(server: ScriptedModelServer, model: Model) -> None:
    requests = await _play(server, model)
    assert len(requests) >= 5
    systems = {r.messages[0].content for r in requests}
    assert len(systems) == 1, "the system message changed between turns of one session"
    (system,) = systems
    # the fixed part holds the session's own context, and nothing that moves with the beat
    assert "Task: Confirm the depot meeting" in system and "Monday 02 March 2026, 09:30" in system
    assert "# Your memory" in system and "will get to it" in system
    for moving in ("- Goal: ", FACT, PRODUCTION_MARK, REACTION_MARK, "held_0001", "message(s) for the goal"):
        assert moving not in system, moving
    # ...all of which still reaches the simulator, in the user part
    text = "".join(_flat(r) for r in requests)
    for moving in ("- Goal: ", FACT, PRODUCTION_MARK, REACTION_MARK, "held_0001", "<consent_decisions>"):
        assert moving in text, moving


async def test_consecutive_prompts_share_the_fixed_part_and_the_dialogue(server: ScriptedModelServer, model: Model) -> None:
    requests = await _play(server, model)
    firsts = [r for r in requests if len(r.messages) == 2]  # no rewrites in this session
    for before, after in zip(firsts, firsts[1:]):
        common = len(os.path.commonprefix([_flat(before), _flat(after)]))
        fixed = len(f"<system>{before.messages[0].content}<user>")
        dialogue = _dialogue_part(before)
        if dialogue.endswith("(nothing has been said yet)"):  # the placeholder of an empty dialogue
            dialogue = "The conversation so far:\n"
        # the whole system message, then the earlier dialogue as far as the earlier turn saw it
        assert common >= fixed + len(dialogue), (common, fixed, len(dialogue))
        assert _dialogue_part(after).startswith(dialogue.rstrip())


def test_per_turn_parts_come_after_the_dialogue() -> None:
    script = session()
    inp = TurnPromptInput(persona=persona(), mode="accumulation", memory=SimulatorMemory(), script=script,
                          beat_index=2, turns_in_beat=1, released=list(script.facts), show_decision=True,
                          target="Terse")
    system, user = build_turn_messages(inp)
    assert system.content == fixed_system_prompt(inp)
    assert user.content.startswith("The conversation so far:\n(nothing has been said yet)")
    assert user.content.index("- Goal: get the meeting time confirmed") > user.content.index("(nothing has")
    assert user.content.rstrip().endswith("Write your next turn now.")
    # beat, facts and turn count move; the system message does not
    later = inp.model_copy(update={"beat_index": 3, "turns_in_beat": 0, "released": []})
    assert build_turn_messages(later)[0].content == system.content


def test_probe_prompt_is_fixed_too() -> None:
    pr = probe()
    inp = TurnPromptInput(persona=persona(), mode="probe", script=pr, beat_index=0, show_decision=True)
    system = fixed_system_prompt(inp)
    assert "# Your memory" not in system and "never spoken to this assistant" in system
    assert build_turn_messages(inp.model_copy(update={"turns_in_beat": 1}))[0].content == system
