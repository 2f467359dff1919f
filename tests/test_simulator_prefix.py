"""A stable simulator prefix (issue 12): consecutive prompts of one session share their fixed part.

The simulator's prompt is rebuilt each turn (paper Appendix D.1-D.2, I.3). llama.cpp's prompt
cache reuses only the common prefix of two prompts, so the parts come in the order of how long
they stay the same: what is fixed for every session of the user (persona, no-tools rule, output
format), the mode's rules, what is fixed for the session (memory, date and task), what is fixed
for the beat (skills, beat, released facts, reactions), the dialogue (which only grows at its
end), and last what moves every turn (waiting items, the turn count). These tests drive a
scripted session over the loopback model and measure the common prefix of consecutive simulator
requests."""

from __future__ import annotations

import os
from datetime import date, datetime

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
from mempa_tui.simulator._dialogue import DialogueEntry
from mempa_tui.simulator._prompt import fixed_system_prompt

def _flat(request: ScriptedRequest) -> str:
    """The request's messages as one string, in the order a chat template lays them out."""
    return "".join(f"<{m.role}>{m.content}" for m in request.messages)


def _goal(request: ScriptedRequest) -> str:
    """The current beat's goal line of a turn's prompt."""
    return next(line for line in request.messages[1].content.splitlines() if line.startswith("- Goal: "))


def _through_dialogue(request: ScriptedRequest) -> str:
    """The user message up to the end of its dialogue (what the next turn of the beat re-sends)."""
    user = request.messages[1].content
    cut = min(i for i in (user.find("\n\nItems waiting for your decision:"), user.rfind("\n\n(")) if i >= 0)
    return user[:cut].removesuffix("(nothing has been said yet)")  # the empty dialogue's placeholder goes


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


async def test_consecutive_prompts_of_a_beat_share_everything_up_to_the_new_turn(
        server: ScriptedModelServer, model: Model) -> None:
    requests = await _play(server, model)
    firsts = [r for r in requests if len(r.messages) == 2]  # no rewrites in this session
    same_beat = changed = 0
    for before, after in zip(firsts, firsts[1:]):
        common = len(os.path.commonprefix([_flat(before), _flat(after)]))
        fixed = len(f"<system>{before.messages[0].content}<user>")
        if _goal(before) == _goal(after):
            # the system message, the beat's part and the dialogue as far as the earlier turn saw it:
            # only the newest dialogue entry and the turn's own lines are new
            same_beat += 1
            assert after.messages[1].content.startswith(_through_dialogue(before))
            assert common >= fixed + len(_through_dialogue(before)), (common, fixed)
        else:  # a new beat: its part and the dialogue are read again, never the system message
            changed += 1
            assert common >= fixed, (common, fixed)
    assert same_beat and changed


def test_per_beat_parts_come_before_the_dialogue_and_per_turn_parts_after() -> None:
    script = session()
    dialogue = [DialogueEntry(speaker="user", text="find the rota email?"),
                DialogueEntry(speaker="assistant", text="Found it.")]
    held = [HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                     arguments={"to": "gideon@wendlink.example"})]
    inp = TurnPromptInput(persona=persona(), mode="accumulation", memory=SimulatorMemory(), script=script,
                          beat_index=2, turns_in_beat=1, released=list(script.facts), show_decision=True,
                          target="Terse", dialogue=dialogue, pending=held)
    system, user = build_turn_messages(inp)
    assert system.content == fixed_system_prompt(inp)
    text = user.content
    order = [text.index(mark) for mark in (
        "- Goal: get the meeting time confirmed", FACT, REACTION_MARK,  # the beat's part
        "The conversation so far:\n", "find the rota email?",  # the dialogue
        "Items waiting for your decision:", "held_0001", "(You have sent 1 message(s)",  # this turn's
    )]
    assert order == sorted(order), order
    assert text.rstrip().endswith("Write your next turn now.")
    # the next turn of the beat re-sends everything before the turn's own lines, with one more entry
    later = inp.model_copy(update={"turns_in_beat": 2, "pending": [],
                                   "dialogue": [*dialogue, DialogueEntry(speaker="user", text="and the shifts?"),
                                                DialogueEntry(speaker="assistant", text="3 and 5.")]})
    cut = text.index("\n\nItems waiting for your decision:")
    assert build_turn_messages(later)[1].content.startswith(text[:cut])
    # beat, facts and turn count move; the system message does not
    moved = inp.model_copy(update={"beat_index": 3, "turns_in_beat": 0, "released": []})
    assert build_turn_messages(moved)[0].content == system.content


def test_sessions_and_probes_share_the_system_message_up_to_what_changes_between_them() -> None:
    """Persona, no-tools rule and output format come first (the same for every session and probe
    of the user), then the mode's rules, then the memory and the session's own date and task."""
    first = TurnPromptInput(persona=persona(), mode="accumulation", memory=SimulatorMemory(), script=session(),
                            beat_index=0)
    memory = SimulatorMemory()
    memory.add_note(date(2026, 3, 2), "I asked about the depot meeting and it answered in a line.")
    second_script = session().model_copy(update={"id": "A-w-verbosity-02", "task": "Move the rota review",
                                                  "starts_at": datetime(2026, 3, 9, 14, 0)})
    second = first.model_copy(update={"memory": memory, "script": second_script})
    one, two = fixed_system_prompt(first), fixed_system_prompt(second)
    shared = os.path.commonprefix([one, two])
    assert shared.endswith("# Your memory\n") and "# How to write your turn" in shared
    assert "# How you show what you want" in shared and "Task:" not in shared
    pr = TurnPromptInput(persona=persona(), mode="probe", script=probe(), beat_index=0)
    across = os.path.commonprefix([one, fixed_system_prompt(pr)])
    assert "# How to write your turn" in across and across.endswith("\n\n# ")  # up to the mode's rules


def test_probe_prompt_is_fixed_too() -> None:
    pr = probe()
    inp = TurnPromptInput(persona=persona(), mode="probe", script=pr, beat_index=0, show_decision=True)
    system = fixed_system_prompt(inp)
    assert "# Your memory" not in system and "never spoken to this assistant" in system
    assert build_turn_messages(inp.model_copy(update={"turns_in_beat": 1}))[0].content == system
