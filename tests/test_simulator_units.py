"""Pure parts of the user simulator: skills, turn parsing, leak rules, memory rules, dialogue
rendering, rating parsing, and the typed boundary of Table 9 (no model calls here)."""

from __future__ import annotations

import inspect
import re
from datetime import date
from pathlib import Path

import pytest
import yaml

from mempa_tui.ix.types import CallStatus, DeliveredTurn, ExecutedCall, HeldItem
from mempa_tui.simulator import (
    DialogueEntry,
    LeakRules,
    SimulatorMemory,
    SkillFileError,
    UserSimulator,
    acting_sheet,
    default_skills,
    entry_from_delivered,
    entry_problems,
    load_skills,
    parse_turn,
    read_rating,
    render_dialogue,
    rule_check,
)
from mempa_tui.simulator._checker import checker_questions
from mempa_tui.simulator._manner import MANNER_PATTERNS, MANNER_PROBLEM, find_manner_requests, spoken_form
from mempa_tui.taxonomy import ATTRIBUTES


def _mentions(name: str, text: str) -> bool:
    words = [re.escape(w) for w in re.split(r"[\s\-]+", name.lower()) if w]
    return re.search(r"\b" + r"[\s\-]+".join(words) + r"\b", text.lower()) is not None


# ---------------------------------------------------------------------------------- skills


def test_one_skill_per_setting_all_32() -> None:
    book = default_skills()
    assert len(book) == 32
    for attr in ATTRIBUTES:
        for setting in attr.settings:
            skill = book.get(attr.key, setting.name)
            assert (skill.attribute, skill.setting) == (attr.key, setting.name)
            assert skill.production and skill.reception.on_against and skill.reception.on_fit


def test_no_skill_names_its_attribute_or_setting() -> None:
    for skill in default_skills().skills:
        attr = next(a for a in ATTRIBUTES if a.key == skill.attribute)
        for line in skill.all_lines():
            assert not _mentions(skill.setting, line), (skill.attribute, skill.setting, line)
            assert not _mentions(attr.name.replace("&", " "), line), (skill.attribute, line)
            assert attr.key not in line
        for line in skill.spoken_lines():
            for other in ATTRIBUTES:
                assert not _mentions(other.name.replace("&", " "), line), (skill.setting, line)
            for sibling in attr.setting_names:
                assert not _mentions(sibling, line), (skill.setting, sibling, line)


def test_reception_render_has_no_production_and_full_has_both() -> None:
    skill = default_skills().get("verbosity", "Terse")
    assert skill.production[0] not in skill.render_reception()
    assert skill.reception.fits[0] in skill.render_reception()
    full = skill.render_full()
    assert skill.production[0] in full and skill.reception.on_against[0] in full
    assert skill.reception.fits[0] not in skill.render_production()


def test_acting_sheet_names_the_cell() -> None:
    skill = default_skills().get("autonomy_level", "Self-directed")
    sheet = acting_sheet("autonomy_level", "Self-directed")
    assert sheet.startswith("Acting sheet: Autonomy Level = Self-directed")
    assert skill.reception.on_against[0] in sheet


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "skills.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _packaged() -> dict[str, dict[str, dict[str, object]]]:
    text = (Path(__file__).parents[1] / "mempa_tui" / "simulator" / "skills.yaml").read_text("utf-8")
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def test_skills_file_missing_skill_is_named(tmp_path: Path) -> None:
    data = _packaged()
    del data["verbosity"]["Terse"]
    with pytest.raises(SkillFileError, match=r"no skill for verbosity\.Terse"):
        load_skills(_write(tmp_path, data))


def test_skills_file_unknown_setting_and_bad_field_are_named(tmp_path: Path) -> None:
    data = _packaged()
    data["verbosity"]["Chatty"] = data["verbosity"]["Terse"]
    with pytest.raises(SkillFileError, match="'Chatty' is not a setting of Verbosity"):
        load_skills(_write(tmp_path, data))
    data = _packaged()
    data["verbosity"]["Terse"]["production"] = []
    with pytest.raises(SkillFileError, match=r"verbosity\.Terse: production"):
        load_skills(_write(tmp_path, data))


# ---------------------------------------------------------------------------------- parsing


def test_parse_well_formed_turn() -> None:
    turn = parse_turn(
        "<factual_check>none</factual_check>\n<turn_assessment>advance</turn_assessment>\n"
        "<consent_decisions>\nheld_0003: approve\nheld_0004: deny\n</consent_decisions>\n"
        "<message>Yes, send the first one.</message>"
    )
    assert turn.message == "Yes, send the first one."
    assert turn.assessment == "advance"
    assert turn.consent == {"held_0003": True, "held_0004": False}
    assert turn.problems == []


def test_parse_tolerates_case_missing_close_and_prose() -> None:
    turn = parse_turn(
        "Sure, here is my turn.\n<Turn-Assessment> STAY </turn-assessment>\n"
        "<FACTUAL_CHECK>it said Tuesday, the email says Wednesday\n<MESSAGE>\"wed, not tue?\""
    )
    assert turn.message == "wed, not tue?"
    assert turn.assessment == "stay"
    assert turn.factual_check == "it said Tuesday, the email says Wednesday"


def test_parse_bare_text_is_the_message() -> None:
    turn = parse_turn("Message: can you find the depot email?")
    assert turn.message == "can you find the depot email?"
    assert turn.assessment is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "<turn_assessment>stay</turn_assessment><message>   </message>",
        "<factual_check>none</factual_check><turn_assessment>stay</turn_assessment>",
    ],
)
def test_parse_empty_or_missing_message_fails(text: str) -> None:
    turn = parse_turn(text)
    assert turn.message is None and not turn.ok
    assert turn.problems


def test_parse_consent_verb_first_and_unreadable_assessment() -> None:
    turn = parse_turn(
        "<turn_assessment>maybe</turn_assessment><consent_decisions>approve held_0007</consent_decisions>"
        "<message>ok go</message>"
    )
    assert turn.consent == {"held_0007": True}
    assert turn.assessment is None
    assert any("turn_assessment" in p for p in turn.problems)


# ---------------------------------------------------------------------------------- leak rules

_RULES = LeakRules(
    beat_ids=("ask_venue", "react"),
    script_id="A-w-verbosity-01",
    attributes=("verbosity", "topic_management"),
    task_material="Find the depot rota email and the film script notes.",
)


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("<message>hi</message>", "private block tag"),
        ("held_0003: approve, thanks", "consent block"),
        ("That hits the target setting nicely.", "target setting"),
        ("Is this part of the benchmark?", "benchmark"),
        ("The simulator wants the time.", "simulator"),
        ("My preference skill says so.", "preference skill"),
        ("That is off the taxonomy.", "taxonomy"),
        ("We are on the next beat now.", "beat"),
        ("I finished the probe.", "probe"),
        ("Please call IX_verbosity.", "IX"),
        ("Done with ask_venue, moving on.", "ask_venue"),
        ("Your verbosity is too much.", "Verbosity"),
        ("From now on keep it terse.", "terse"),
        ("I'd rather you go one at a time.", "one-at-a-time"),
    ],
)
def test_rule_check_flags_leaks(message: str, fragment: str) -> None:
    problems = rule_check(message, _RULES)
    assert problems, message
    assert any(fragment.lower() in p.lower() for p in problems), problems


@pytest.mark.parametrize(
    "message",
    [
        "can you find the depot rota email?",
        "Thanks, that terse summary works.",  # setting word without a preference phrase
        "Can we beat the Thursday deadline?",  # ordinary 'beat'
        "Send me the film script notes too.",  # 'script' is task material here
        "I always read the board pack on the ferry.",  # preference phrase without a setting name
        "react to that later",  # a plain-word beat id is not matched
    ],
)
def test_rule_check_passes_ordinary_messages(message: str) -> None:
    assert rule_check(message, _RULES) == []


def test_earlier_session_phrases_only_flagged_in_probes() -> None:
    message = "Same as last time, please, you remember how it went."
    assert rule_check(message, _RULES) == []
    probe_rules = _RULES.model_copy(update={"probe": True})
    problems = rule_check(message, probe_rules)
    assert any("earlier conversation" in p for p in problems)


def test_rule_check_flags_repeated_private_notes() -> None:
    note = "the assistant got the depot name wrong in its reply"
    problems = rule_check(f"Hm, {note}.", _RULES, private_texts=[note])
    assert any("private notes" in p for p in problems)


# ---------------------------------------------------------------------------------- memory


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("It helped.", "1 sentences"),
        ("One. Two. Three. Four. Five.", "5 sentences"),
        ("It booked the 14:30 slot. I was pleased.", "digits"),
        ("It saved notes/plan.md for me. I was pleased.", "file name"),
    ],
)
def test_entry_problems(text: str, fragment: str) -> None:
    assert any(fragment in p for p in entry_problems(text))


def test_entry_problems_accepts_a_clean_entry() -> None:
    text = "I asked it to sort out a meeting. It answered briefly and I decided to go. Nothing is open."
    assert entry_problems(text) == []
    assert entry_problems("It asked whether to call and/or write. I said write.") == []
    assert entry_problems("It filed it under work/reports/march. I was fine with that.")


def test_memory_round_trip_and_note() -> None:
    memory = SimulatorMemory(impressions=["tends to pile on detail"])
    memory.add_note(date(2026, 3, 9), "I told it to stop sending things without asking me first.")
    restored = SimulatorMemory.model_validate_json(memory.model_dump_json())
    assert restored == memory
    assert restored.entries[0].kind == "change_note"
    text = restored.render()
    assert "2026-03-09" in text and "tends to pile on detail" in text
    with pytest.raises(ValueError, match="empty"):
        memory.add_note(date(2026, 3, 9), "  ")


# ---------------------------------------------------------------------------------- PRS parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 4, "reason": "Mostly short."}', (4, "Mostly short.")),
        ('```json\n{"score": "2", "reason": "Too long."}\n```', (2, "Too long.")),
        ('Here: {"score": 5.0, "reason": "Exactly right."}', (5, "Exactly right.")),
    ],
)
def test_read_rating_accepts(text: str, expected: tuple[int, str]) -> None:
    assert read_rating(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"score": 7, "reason": "x"}', "from 1 to 5"),
        ('{"score": true, "reason": "x"}', "whole number"),
        ('{"score": 3.5, "reason": "x"}', "whole number"),
        ('{"score": 3}', "reason"),
        ("four out of five", "JSON"),
    ],
)
def test_read_rating_rejects(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        read_rating(text)


# ---------------------------------------------------------------------------------- dialogue


def test_dialogue_shows_ran_calls_and_held_actions_but_no_held_content() -> None:
    delivered = DeliveredTurn(
        reply="Drafted it. Shall I send it?",
        executed=[
            ExecutedCall(call_id="c1", tool="email_draft_create", status=CallStatus.EXECUTED, result="draft_0001"),
            ExecutedCall(call_id="c2", tool="email_message_send", status=CallStatus.BLOCKED, result="Not run"),
        ],
        held=[
            HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                     arguments={"to": "gideon@example.org"}),
            HeldItem(id="held_0002", kind="topic", attribute="topic_management", label="Rota",
                     text="TOPIC-CONTENT-NOT-YET-RELEASED"),
        ],
    )
    text = render_dialogue([DialogueEntry(speaker="user", text="draft it"), entry_from_delivered(delivered)])
    assert "email_draft_create" in text and "draft_0001" in text
    assert "email_message_send" in text  # the held action the user decides on
    assert "Not run" not in text  # the blocked call never ran
    assert "held_0002" in text and "Rota" in text
    assert "TOPIC-CONTENT-NOT-YET-RELEASED" not in text


def test_simulator_inputs_have_no_field_for_a_selection() -> None:
    """Table 9: the simulator's only view of the PA is DeliveredTurn (reply, executed, held)."""
    assert set(DeliveredTurn.model_fields) == {"reply", "executed", "held"}
    params = inspect.signature(UserSimulator.next_turn).parameters
    assert list(params) == ["self", "delivered"]
    start = inspect.signature(UserSimulator.start).parameters
    assert list(start) == ["self", "script", "targets", "context"]


# ---------------------------------------------------------------------------------- manner requests
# Table 8 condition 3, Appendix C.3 and D.2: nothing the simulator is told to write, and nothing
# it sends in a probe or at a decision point, may ask the assistant for a manner of reply.

#: A production line may not tell the user to ask or expect anything of the assistant: requests
#: come from the beat's script, the production side only shapes how the user writes.
_ASKS_OR_EXPECTS = re.compile(
    r"^\s*ask\b|\bask (?:it|the assistant|for|what|how|whether|to)\b|\bexpect(?:s|ed|ing)?\b", re.IGNORECASE
)


def production_line_problems(line: str) -> list[str]:
    """Why a production line would cue its setting (empty: it shapes only how the user writes)."""
    problems: list[str] = []
    if _ASKS_OR_EXPECTS.search(line):
        problems.append("tells the user to ask for or expect something of the assistant")
    for found in find_manner_requests(line) + find_manner_requests(spoken_form(line)):
        problems.append(f"manner request ({found.kind}): {found.phrase!r}")
    return problems


def test_no_production_line_asks_the_assistant_for_anything_about_its_reply() -> None:
    bad = [
        f"{skill.attribute}.{skill.setting}: {line!r}: {problems}"
        for skill in default_skills().skills
        for line in skill.production
        if (problems := production_line_problems(line))
    ]
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize(
    "line",
    [  # production lines of the earlier skills file, each of which cued its setting
        "Ask for the bottom line; ask narrow, direct questions.",
        "Ask what the possibilities are and how they compare.",
        "Ask how to go about things and what to do first.",
        "When you ask for a decision or a recommendation, ask what it will be based on.",
        "Ask how firm the information is and how sure it is before you act on it.",
        "Ask to hear how it goes about multi-step jobs and what it checked along the way.",
        "Phrase requests as find, check or propose, and ask it to come back to you.",
        "Raise several things in one message when you have several on your mind, then take them in turn.",
        "Hand over multi-step jobs and expect to hear when it starts and when it is finished.",
    ],
)
def test_the_lint_flags_lines_that_cue_the_setting(line: str) -> None:
    assert production_line_problems(line), line


@pytest.mark.parametrize(
    ("line", "flagged"),
    [  # the detector itself (not only the ask/expect rule) reads the cue in these
        ("Ask for the bottom line; ask narrow, direct questions.", "verbosity"),
        ("Ask what the possibilities are and how they compare.", "solution_breadth"),
        ("Ask how to go about things and what to do first.", "guidance_level"),
        ("When you ask for a decision, ask what it will be based on.", "reasoning_visibility"),
        ("Ask how firm the information is.", "uncertainty_expression"),
        ("Ask to hear how it goes about multi-step jobs.", "process_visibility"),
        ("Phrase requests as find or check, and ask it to come back to you.", "autonomy_level"),
    ],
)
def test_detector_reads_skill_lines_through_the_spoken_form(line: str, flagged: str) -> None:
    assert flagged in {m.attribute for m in find_manner_requests(spoken_form(line))}


def test_spoken_form_swaps_the_pronouns() -> None:
    assert spoken_form("Ask it to come back to you.") == "ask you to come back to me."
    assert spoken_form("What the assistant's answer is based on") == "what your answer is based on"


@pytest.mark.parametrize(
    ("message", "attribute_key"),
    [
        ("just give me the bottom line, when does it land?", "verbosity"),
        ("Keep it short please - which platform?", "verbosity"),
        ("what are my options here and how do they compare?", "solution_breadth"),
        ("Can you lay out a few options for the venue?", "solution_breadth"),
        ("what will that be based on?", "reasoning_visibility"),
        ("Explain your reasoning before you pick one.", "reasoning_visibility"),
        ("How sure are you about the 9:40?", "uncertainty_expression"),
        ("Walk me through it, I've never done one.", "guidance_level"),
        ("keep me posted while you do it", "process_visibility"),
        ("Tell me what you're doing as you go.", "process_visibility"),
        ("Check with me before anything goes out.", "autonomy_level"),
        ("Draft it and come back to me.", "autonomy_level"),
        ("Ask me whatever you need for the booking.", "information_elicitation"),
        ("let\u2019s take them one at a time", "topic_management"),
        ("Let me know if the delivery date changes.", "proactive_outreach"),
        ("If you can't book it, tell me and I'll do it.", "capability_boundary"),
        ("Talk to me normally, would you.", "tone_formality"),
        ("Only do what I asked, nothing more.", "task_expansion"),
        ("No sympathy needed, just the facts.", "emotional_engagement"),
        ("You don't need my okay to draft it.", "autonomy_level"),
        ("Is that definite, or a guess?", "uncertainty_expression"),
        ("Sorry, what do I actually do first?", "guidance_level"),
        ("Ask it all now, then book.", "information_elicitation"),
    ],
)
def test_manner_detector_flags_requests_about_the_reply(message: str, attribute_key: str) -> None:
    found = find_manner_requests(message)
    assert attribute_key in {m.attribute for m in found}, found
    assert [m.attribute for m in find_manner_requests(message, [attribute_key])] == [attribute_key]


@pytest.mark.parametrize(
    "message",
    [
        "When does Wenna's crab land now?",
        "Can you write a short note to Tom saying I'm late?",  # a text for someone else
        "Let me know if Thursday works for Gideon.",  # not about something changing later
        "Book the table for 7 please, the usual four of us.",
        "I'm a bit frazzled today. Which shifts move to Eastbank?",
        "Yes, send it.",
        "Who should hear about the review first?",
        "The whole team needs the rota by Friday.",
        "I can't book it without the details from Gideon.",
        "Could you run the figures past Gideon?",
        "What should I do about the Eastbank shifts?",  # a task question names no manner
        "What do you suggest for Saturday?",
        "I'll skip the working party on Saturday.",
        "I paid with my own card, so it needs to come back to me.",  # money, not a check-back
    ],
)
def test_manner_detector_passes_task_messages(message: str) -> None:
    assert find_manner_requests(message) == []


def test_manner_detector_names_an_unknown_attribute() -> None:
    with pytest.raises(KeyError, match="no manner-request patterns for 'verbose'"):
        find_manner_requests("hi", ["verbose"])


def test_rule_check_flags_manner_requests_in_probes_and_where_asked_only() -> None:
    message = "Just the bottom line: which shifts move?"
    assert rule_check(message, _RULES) == []  # accumulation, not at a decision point
    assert rule_check(message, _RULES, manner=("solution_breadth",)) == []  # another attribute
    at_decision = rule_check(message, _RULES, manner=("verbosity",))
    assert len(at_decision) == 1 and at_decision[0].startswith(MANNER_PROBLEM)
    assert "'bottom line'" in at_decision[0]
    probe_rules = _RULES.model_copy(update={"probe": True})
    assert [p for p in rule_check(message, probe_rules) if p.startswith(MANNER_PROBLEM)]
    assert rule_check("Which shifts move?", probe_rules) == []


def test_probe_render_is_the_production_side_alone() -> None:
    for skill in default_skills().skills:
        text = skill.render_production()
        assert skill.wants not in text, (skill.attribute, skill.setting)
        assert all(line in text for line in skill.production)
        assert not any(line in text for line in skill.reception.fits + skill.reception.on_against)


def test_checker_adds_the_manner_question_in_probes_and_at_decision_points() -> None:
    def keys(**kw: bool) -> list[str]:
        return [q.key for q in checker_questions(has_unreleased=False, **kw)]

    assert "manner_feedback" not in keys(probe=False)
    assert "manner_feedback" in keys(probe=False, at_decision=True)
    assert "manner_feedback" in keys(probe=True)


def test_every_attribute_has_manner_patterns() -> None:
    # a decision point on any attribute looks its patterns up; a missing key would raise mid-run
    assert set(MANNER_PATTERNS) == {a.key for a in ATTRIBUTES}
