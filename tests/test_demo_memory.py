"""The demo model uses memory (issue 16): its simulated user states the wanted behaviour in plain
words only after a decision point, its memory role answers every memory system's prompt in a
usable shape, and its PA picks what its memory section names and nothing else."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from mempa_tui.ix.types import DeliveredTurn, IXCall
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.llm.scripted_change import read_change
from mempa_tui.llm.scripted_roles import DEMO_WISH_LEAD, demo_memory_answer, demo_setting
from mempa_tui.llm.types import ChatMessage
from mempa_tui.memory._consolidation import consolidate
from mempa_tui.memory._prefstate_extract import extraction_messages, read_extraction as read_observations
from mempa_tui.memory._prefstate_extract import validate_items
from mempa_tui.memory.base import TurnRecord
from mempa_tui.scripts.loader import load_user
from mempa_tui.simulator import UserSimulator
from mempa_tui.taxonomy import attribute
from mempa_tui.tui.demo import demo_responder

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
TERSE = attribute("verbosity").setting("Terse").behaviour
DETAILED = attribute("verbosity").setting("Detailed").behaviour
WISH = f"Could you help me with this, please? {DEMO_WISH_LEAD}{TERSE}"


def _turn(message: str, context: str = "work", step: str = "A-S01") -> TurnRecord:
    return TurnRecord.model_validate({"step_id": step, "turn_index": 1, "at": datetime(2026, 3, 3, 8, 40),
                                      "context": context, "user_message": message, "reply": "Done."})


def _request(model: str, messages: list[ChatMessage], schema: dict | None = None) -> ScriptedRequest:
    body = {"format": schema} if schema else {}
    return ScriptedRequest(wire="ollama", model=model, messages=messages, ollama_format=schema, body=body)


async def test_the_demo_user_says_what_it_wants_on_the_message_after_the_decision_and_only_there() -> None:
    bundle = load_user(WORLDS, "A")
    script = bundle.sessions["A-S01"]  # verbosity at work; User A wants Terse there
    target = bundle.targets_at(script.context, script.starts_at)["verbosity"]
    assert target == "Terse"
    async with ScriptedModelServer(demo_responder) as server:
        sim = UserSimulator(LLMClient(server.profile()), bundle.persona)
        sim.start(script, bundle.targets_at(script.context, script.starts_at))
        said: list[tuple[str | None, str]] = []
        delivered = None
        for _ in range(12):
            turn = await sim.next_turn(delivered)
            if turn.message:
                said.append((turn.beat_id, turn.message))
            if sim.done:
                break
            delivered = DeliveredTurn(reply="Here it is.")
    decision = next(b.id for b in script.beats if b.decision_point)
    after = script.beats[[b.id for b in script.beats].index(decision) + 1].id
    with_wish = [beat for beat, text in said if DEMO_WISH_LEAD in text]
    assert with_wish == [after]  # once, on the first message after the decision point
    assert TERSE in next(text for beat, text in said if beat == after)
    assert not any(DETAILED in text for _b, text in said)  # the other setting is never said
    assert sim.check_counts["rejected_attempts"] == 0  # the leak and manner checks pass it


def _pa_request(memory: str, user: str = "Could you help me with this, please?") -> ScriptedRequest:
    return _request("scripted-pa", [
        ChatMessage(role="system", content="instructions"),
        ChatMessage(role="system", content=f"What your memory holds about this person\n{memory}\n\nCurrent date and time\nIt is now."),
        ChatMessage(role="user", content=user)])


def test_the_demo_pa_picks_what_its_memory_names_the_latest_mention_winning_else_the_first() -> None:
    offered = ["Terse", "Detailed"]
    assert demo_setting("verbosity", offered, _pa_request("(Your memory has nothing for this turn.)")) == "Terse"
    # a wish in the user's message is not memory: the PA reads only its memory section
    assert demo_setting("verbosity", offered, _pa_request("(nothing)", user=f"{DEMO_WISH_LEAD}{DETAILED}")) == "Terse"
    both = f"- In work matters they asked for this: {TERSE}\n- In personal matters they asked for this: {DETAILED}"
    assert demo_setting("verbosity", offered, _pa_request(both)) == "Detailed"
    assert demo_setting("tone_formality", ["Casual", "Formal"], _pa_request(both)) == "Casual"  # not this attribute
    ranked = ("Earlier conversation turns similar to the user's message (most similar first; score = cosine "
              f"similarity):\n[1] (score 0.9) User: {DEMO_WISH_LEAD}{DETAILED}\n[2] (score 0.5) User: {DEMO_WISH_LEAD}{TERSE}")
    assert demo_setting("verbosity", offered, _pa_request(ranked)) == "Detailed"  # retrieved: the best match wins
    prefstate = '- Verbosity (IX_verbosity): Detailed (confidence 0.90, since 2026-03-03; they said: "x")'
    assert demo_setting("verbosity", offered, _pa_request(prefstate)) == "Detailed"


async def test_file_memory_consolidation_is_usable_and_keeps_one_note_per_cell() -> None:
    async with ScriptedModelServer(demo_responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        first = await consolidate(client, "", [_turn(WISH), _turn("Thanks, that is all.")])
        assert first.reply is not None and first.attempts == 1
        assert first.reply.memory.count(TERSE) == 1 and "In work matters" in first.reply.memory
        changed = await consolidate(client, first.reply.memory, [_turn(f"{DEMO_WISH_LEAD}{DETAILED}", step="A-S20")])
        assert changed.reply is not None
        assert DETAILED in changed.reply.memory and TERSE not in changed.reply.memory  # the newer wish replaces it
        other = await consolidate(client, changed.reply.memory, [_turn(WISH, context="personal")])
        assert other.reply is not None and DETAILED in other.reply.memory and TERSE in other.reply.memory


def test_prefstate_extraction_is_accepted_by_its_own_checks() -> None:
    record = _turn(WISH)
    text = demo_memory_answer(_request("scripted-memory", extraction_messages(record, None),
                                       {"type": "object", "properties": {"observations": {"type": "array"}}}))
    assert text is not None
    check = validate_items(read_observations(text).items, record)
    assert [(o.attribute, o.setting) for o in check.accepted] == [("verbosity", "Terse")] and not check.dropped
    quiet = demo_memory_answer(_request("scripted-memory", extraction_messages(_turn("Thanks."), None),
                                        {"type": "object", "properties": {"observations": {"type": "array"}}}))
    assert quiet is not None and read_observations(quiet).items == []


def test_mem0ai_library_prompts_get_well_formed_replies() -> None:
    prompts = pytest.importorskip("mem0.configs.prompts")
    conversation = f"user: {WISH}\nassistant: Done."
    facts = demo_memory_answer(_request("scripted-memory", [
        ChatMessage(role="system", content=prompts.FACT_RETRIEVAL_PROMPT),
        ChatMessage(role="user", content=f"Input:\n{conversation}")]))
    assert facts is not None and json.loads(facts)["facts"] and TERSE in json.loads(facts)["facts"][0]
    old = [{"id": "0", "text": "Lives in Leeds."}, {"id": "1", "text": f"Once they asked for this: {DETAILED}"}]
    update = prompts.get_update_memory_messages(old, json.loads(facts)["facts"])
    reply = demo_memory_answer(_request("scripted-memory", [ChatMessage(role="user", content=update)]))
    assert reply is not None
    events = json.loads(reply)["memory"]
    assert [(e["id"], e["event"]) for e in events] == [("1", "UPDATE")] and TERSE in events[0]["text"]
    if hasattr(prompts, "generate_additive_extraction_prompt"):  # mem0ai 2.2's one-call extraction
        user = prompts.generate_additive_extraction_prompt(existing_memories=[], new_messages=[
            {"role": "user", "content": WISH}, {"role": "assistant", "content": "Done."}])
        added = demo_memory_answer(_request("scripted-memory", [
            ChatMessage(role="system", content=prompts.ADDITIVE_EXTRACTION_PROMPT),
            ChatMessage(role="user", content=user)]))
        assert added is not None
        items = json.loads(added)["memory"]
        assert len(items) == 1 and TERSE in items[0]["text"]


def test_a_note_read_again_keeps_the_context_it_was_written_with() -> None:
    prompts = pytest.importorskip("mem0.configs.prompts")
    note = f"In personal matters they asked for this: {DETAILED}"
    update = prompts.get_update_memory_messages([], [note])
    reply = demo_memory_answer(_request("scripted-memory", [ChatMessage(role="user", content=update)]))
    assert reply is not None and [e["text"] for e in json.loads(reply)["memory"]] == [note]


# ---- a change of mind (issue 16: PET on the demo) ------------------------------------------------

LOW = attribute("solution_breadth").setting("Low").behaviour
HIGH = attribute("solution_breadth").setting("High").behaviour
RULE = ("that's what i needed in front of me this morning. from now on, when there's a choice to make at work, "
        "put the realistic ones side by side with what separates them, cost and catch, and i'll make the call")


def test_every_change_event_rule_is_read_as_the_new_setting_from_the_old_choice_it_answers() -> None:
    from mempa_tui.scripts.loader import load_user

    for user in "ABCD":
        for event in load_user(WORLDS, user).events.values():
            rule = event.transcript[-1].user
            assert read_change(rule, [(event.attribute, event.old_setting)]) == (event.attribute, event.new_setting), \
                event.id
            alone = read_change(rule)  # no choice in view: its cue words, or nothing, never another cell
            assert alone in (None, (event.attribute, event.new_setting)), (event.id, alone)
    assert read_change("Could you help me with this, please?", [("solution_breadth", "Low")]) is None


async def test_file_memory_folds_a_change_of_mind_over_the_older_wish_with_the_users_words() -> None:
    choice = IXCall(attribute="solution_breadth", setting="Low")
    turns = [
        _turn(f"{DEMO_WISH_LEAD}{LOW}", step="A-S14"),
        TurnRecord.model_validate({**_turn("find a venue", step="A-E01").model_dump(), "ix_calls": [choice]}),
        _turn(RULE, step="A-E01"),
    ]
    async with ScriptedModelServer(demo_responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        folded = await consolidate(client, "", turns)
    assert folded.reply is not None
    memory = folded.reply.memory
    assert " ".join(HIGH.split()) in memory and LOW not in memory  # the newer statement replaces the cell
    assert "changed their mind" in memory and "side by side" in memory  # the reason, in the user's words
    assert demo_setting("solution_breadth", ["Low", "High"], _pa_request(memory)) == "High"


def test_the_demo_pa_follows_a_retrieved_change_of_mind_over_a_better_ranked_older_wish() -> None:
    offered = ["Low", "High"]
    ranked = ("Earlier messages most similar to this one (most similar first; score = cosine similarity):\n"
              f"[1] (score 0.9) [2026-05-12 14:20, work] {DEMO_WISH_LEAD}{LOW}\n"
              f"[2] (score 0.4) [2026-05-19 10:00, work] {RULE}")
    assert demo_setting("solution_breadth", offered, _pa_request(ranked)) == "High"
    wish_only = ranked.rsplit("\n", 1)[0]
    assert demo_setting("solution_breadth", offered, _pa_request(wish_only)) == "Low"
    # the rule is about another attribute: it does not move this one
    assert demo_setting("verbosity", ["Terse", "Detailed"], _pa_request(f"- {RULE}")) == "Terse"


def test_prefstate_extraction_quotes_a_change_of_mind_verbatim() -> None:
    record = _turn(RULE, step="A-E01")
    text = demo_memory_answer(_request("scripted-memory", extraction_messages(record, None),
                                       {"type": "object", "properties": {"observations": {"type": "array"}}}))
    assert text is not None
    check = validate_items(read_observations(text).items, record)
    assert [(o.attribute, o.setting) for o in check.accepted] == [("solution_breadth", "High")], check


async def test_the_demo_profile_window_fits_a_pa_call_and_scales_file_memory_to_consolidate(tmp_path: Path) -> None:
    from mempa_tui.memory import default_thresholds
    from mempa_tui.runner._budget import prompt_budget, window_problem
    from mempa_tui.tools import default_registry
    from mempa_tui.tui.demo import DEMO_PROMPT_ROOM, demo_profile, write_demo_profile

    async with ScriptedModelServer(demo_responder) as server:
        budget = prompt_budget(LLMClient(demo_profile(server)), default_registry())
        written = write_demo_profile(server, tmp_path).read_text(encoding="utf-8")
    assert window_problem(budget) is None  # the client's own check accepts a PA call in it
    assert budget.room == DEMO_PROMPT_ROOM
    assert default_thresholds(budget.room) == (DEMO_PROMPT_ROOM // 2, DEMO_PROMPT_ROOM // 4)
    assert f"context_window {budget.window:,} is small on purpose" in written  # said in the profile
