"""The IX wrapper's four mechanisms (paper Appendix E.3) and its held items (E.3, E.5)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from mempa_tui.ix import (
    PAYLOAD_FIELDS,
    CallStatus,
    GateDecision,
    IXWrapper,
    ix_tool_spec,
    parse_ix_arguments,
    required_payload,
)
from mempa_tui.taxonomy import ATTRIBUTES, attribute
from mempa_tui.world import WorkingCopy, WorldState


@dataclass
class _Def:
    write: bool
    tag: str | None


@dataclass
class _Result:
    ok: bool
    content: str
    error: str | None = None


@dataclass
class FakeBackend:
    """Five tools, one per write tag plus a read; records every call that really runs."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    defs: dict[str, _Def] = field(
        default_factory=lambda: {
            "email_search": _Def(False, None),
            "email_draft_create": _Def(True, "draft"),
            "calendar_event_create": _Def(True, "routine"),
            "contact_update": _Def(True, "key"),
            "email_message_send": _Def(True, "outward"),
        }
    )

    def get(self, name: str) -> _Def | None:
        return self.defs.get(name.removeprefix("mcp_state_"))

    def call(self, wc: WorkingCopy, name: str, arguments: dict[str, Any]) -> _Result:
        self.calls.append((name.removeprefix("mcp_state_"), arguments))
        return _Result(True, json.dumps({"ran": name}))


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def wrapper(backend: FakeBackend) -> IXWrapper:
    return IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2, 9, 0)))


# ---- tool specs -------------------------------------------------------------------------------


def test_every_attribute_gets_a_generated_ix_tool() -> None:
    for attr in ATTRIBUTES:
        spec = ix_tool_spec(attr)
        assert spec.name == f"IX_{attr.key}"
        props = spec.parameters["properties"]
        assert props["setting"]["enum"] == list(attr.setting_names)
        for s in attr.settings:  # each setting explained by its behaviour
            assert s.behaviour in props["setting"]["description"]
        assert set(props) == {"setting", *PAYLOAD_FIELDS.get(attr.key, ())}
        assert spec.parameters["required"] == ["setting"]
        assert "$ref" not in json.dumps(spec.parameters)


def test_setting_is_matched_leniently_and_bad_payload_is_named() -> None:
    attr = attribute("autonomy_level")
    assert (
        parse_ix_arguments(attr, {"setting": "self directed"}).setting
        == "Self-directed"
    )
    with pytest.raises(
        ValueError, match="valid settings: Reactive, Self-directed, Autonomous"
    ):
        parse_ix_arguments(attr, {"setting": "Bold"})
    with pytest.raises(ValueError, match="confidence_notes.0.level"):
        parse_ix_arguments(
            attribute("uncertainty_expression"),
            {
                "setting": "Express",
                "confidence_notes": [{"claim": "x", "level": "certain"}],
            },
        )


# ---- selection --------------------------------------------------------------------------------


def test_first_selection_is_fixed_for_the_session(wrapper: IXWrapper) -> None:
    refused = wrapper.select("reasoning_visibility", {"rationale": "x"})
    assert not refused.ok and "no setting chosen yet" in refused.message
    unknown_field = wrapper.select("verbosity", {"setting": "Terse", "rationale": "x"})
    assert not unknown_field.ok and "rationale" in unknown_field.message
    first = wrapper.select("verbosity", {"setting": "Terse"})
    assert first.ok and first.newly_selected and first.setting == "Terse"
    again = wrapper.select("verbosity", {"setting": "Detailed"})
    assert not again.ok and "already set to 'Terse'" in again.message
    assert wrapper.selection("verbosity") == "Terse"
    same = wrapper.select("verbosity", {"setting": "terse"})
    assert same.ok and not same.newly_selected
    payload_only = wrapper.select(
        "reasoning_visibility", {"setting": "Show", "rationale": "r1"}
    )
    assert payload_only.ok
    assert wrapper.select("reasoning_visibility", {"rationale": "r2"}).ok


def test_before_any_selection_everything_passes_through(
    wrapper: IXWrapper, backend: FakeBackend
) -> None:
    call = wrapper.propose("c1", "mcp_state_email_message_send", {"to": "a@b"})
    assert call.status is CallStatus.EXECUTED and backend.calls == [
        ("email_message_send", {"to": "a@b"})
    ]
    delivered, trace = wrapper.render("Sent it.")
    assert delivered.reply == "Sent it." and [
        c.call_id for c in delivered.executed
    ] == ["c1"]
    assert trace.withheld == {} and trace.selections == {}


@pytest.mark.parametrize(
    "key,setting",
    [
        ("tone_formality", "Casual"),
        ("verbosity", "Detailed"),
        ("emotional_engagement", "Relationship-focused"),
        ("guidance_level", "Guided"),
        ("solution_breadth", "High"),
        ("task_expansion", "Low"),
    ],
)
def test_pass_through_keeps_the_wording(
    wrapper: IXWrapper, key: str, setting: str
) -> None:
    assert wrapper.select(key, {"setting": setting}).ok
    text = "Hey! Here's the plan, two options:\n- A\n- B"
    delivered, trace = wrapper.render(text)
    assert delivered.reply == text
    assert trace.selections == {key: setting}
    assert wrapper.last_ix_calls[0].setting == setting


# ---- selective rendering ----------------------------------------------------------------------


def test_reasoning_show_puts_rationale_first_and_hide_withholds(
    backend: FakeBackend,
) -> None:
    wc = WorkingCopy(WorldState({}), datetime(2026, 3, 2, 9, 0))
    show = IXWrapper(backend, wc)
    show.select(
        "reasoning_visibility",
        {"setting": "Show", "rationale": "Because the venue email says 40 seats."},
    )
    delivered, _ = show.render("Book room B.")
    assert delivered.reply.index("40 seats") < delivered.reply.index("Book room B.")
    assert show.last_ix_calls[0].payload == {
        "rationale": "Because the venue email says 40 seats."
    }

    hide = IXWrapper(backend, wc)
    hide.select(
        "reasoning_visibility", {"setting": "Hide", "rationale": "secret basis"}
    )
    delivered, trace = hide.render("Book room B.")
    assert delivered.reply == "Book room B."
    assert trace.withheld == {"reasoning_visibility.rationale": "secret basis"}
    assert hide.last_ix_calls[0].payload == {}
    assert "secret basis" not in hide.last_ix_calls[0].model_dump_json()


def test_uncertainty_express_and_hide(wrapper: IXWrapper, backend: FakeBackend) -> None:
    notes = [
        {"claim": "The train leaves at 9", "level": "high"},
        {"claim": "Seats remain", "level": "low"},
    ]
    wrapper.select(
        "uncertainty_expression", {"setting": "Express", "confidence_notes": notes}
    )
    delivered, _ = wrapper.render("Take the 9 o'clock.")
    assert "The train leaves at 9 (confidence: high)" in delivered.reply
    assert "Seats remain (confidence: low)" in delivered.reply
    other = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    other.select(
        "uncertainty_expression", {"setting": "Hide", "confidence_notes": notes}
    )
    delivered, trace = other.render("Take the 9 o'clock.")
    assert (
        "confidence" not in delivered.reply
        and trace.withheld["uncertainty_expression.confidence_notes"] == notes
    )


def _process_turn(backend: FakeBackend, setting: str) -> tuple[str, Any]:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select(
        "process_visibility",
        {
            "setting": setting,
            "opening": "OPEN.",
            "call_notes": ["NOTE1.", "NOTE2.", "NOTE3."],
            "closing": "CLOSE.",
        },
    )
    w.propose("c1", "email_search", {})
    w.propose("c2", "calendar_event_create", {"title": "x"})
    delivered, trace = w.render("RESULT.")
    return delivered.reply, trace


def test_process_visibility_settings(backend: FakeBackend) -> None:
    silent, trace = _process_turn(backend, "Silent")
    assert silent == "RESULT." and set(trace.withheld) >= {
        "process_visibility.opening",
        "process_visibility.call_notes",
        "process_visibility.closing",
    }
    bookend, _ = _process_turn(backend, "Bookend")
    assert bookend.split("\n\n") == ["OPEN.", "RESULT.", "CLOSE."]
    full, trace = _process_turn(backend, "Full narration")
    # one note per executed call, in call order, then the result and the closing
    assert full.split("\n\n") == ["NOTE1.\nNOTE2.", "RESULT.", "CLOSE."]
    assert trace.withheld["process_visibility.call_notes.unused"] == ["NOTE3."]


def test_full_narration_writes_no_note_the_pa_did_not_write(
    backend: FakeBackend,
) -> None:
    """Section 3.4 / E.1: a call the PA did not narrate gets no note of the wrapper's making, and
    a held action gets no approval request appended; both are only recorded in the trace."""
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": "Self-directed"})
    w.select("process_visibility", {"setting": "Full narration", "closing": "Done."})
    w.propose("c1", "email_search", {})
    w.propose("c2", "email_message_send", {"to": "x"})  # held: no note
    delivered, trace = w.render("Here.")
    assert delivered.reply == "Here.\n\nDone."
    assert "I ran" not in delivered.reply and "held_0001" not in delivered.reply
    assert [i.id for i in delivered.held] == ["held_0001"]  # still listed as held
    assert any("no note from the PA for call 1" in n for n in trace.rendering_notes)
    assert trace.unasked_holds == ["held_0001"]  # "Here. Done." asks the user nothing


# ---- delivery control ---------------------------------------------------------------------------


def test_topics_organize_and_one_at_a_time(backend: FakeBackend) -> None:
    topics = [
        {"label": "Flights", "content": "F body"},
        {"label": "Hotel", "content": "H body"},
        {"label": "Car", "content": "C body"},
    ]
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("topic_management", {"setting": "Organize", "topics": topics})
    delivered, _ = w.render("Three things.")
    assert all(f"{t['label']}:\n{t['content']}" in delivered.reply for t in topics)

    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("topic_management", {"setting": "One-at-a-time", "topics": topics})
    delivered, _trace = w.render("Starting with flights.")
    # the PA's text and the first topic, nothing else: no "move on?" question of the wrapper's
    assert delivered.reply == "Starting with flights.\n\nFlights:\nF body"
    assert [(i.id, i.kind, i.label) for i in delivered.held] == [
        ("held_0001", "topic", "Hotel"),
        ("held_0002", "topic", "Car"),
    ]
    assert w.last_ix_calls[0].payload == {"topics": [topics[0]]}
    out = w.release({"held_0001": True})
    assert [i.id for i in out.approved] == ["held_0001"] and out.executed == []
    delivered, _ = w.render("Now the hotel.")
    assert delivered.reply == "Hotel:\nH body\n\nNow the hotel."
    assert [i.label for i in delivered.held] == ["Car"]


def test_questions_structured_iterative_infer(backend: FakeBackend) -> None:
    qs = ["Which date?", "How many guests?", "Any budget?"]
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("information_elicitation", {"setting": "Structured", "questions": qs})
    delivered, _ = w.render("I need a few details.")
    assert "1. Which date?\n2. How many guests?\n3. Any budget?" in delivered.reply

    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("information_elicitation", {"setting": "Iterative", "questions": qs})
    delivered, _ = w.render("First:")
    assert (
        "Which date?" in delivered.reply and "How many guests?" not in delivered.reply
    )
    assert delivered.held == []  # questions are not consent items
    delivered, _ = w.render("Thanks.")
    assert (
        "How many guests?" in delivered.reply and "Any budget?" not in delivered.reply
    )
    delivered, _ = w.render("Thanks again.")
    assert "Any budget?" in delivered.reply
    delivered, _ = w.render("All set.")
    assert delivered.reply == "All set."

    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("information_elicitation", {"setting": "Infer", "questions": qs})
    delivered, trace = w.render("Booked with defaults.")
    assert (
        delivered.reply == "Booked with defaults."
        and trace.withheld["information_elicitation.questions"] == qs
    )


def test_writes_in_an_asking_turn_are_held_until_the_user_answers(
    backend: FakeBackend,
) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select(
        "information_elicitation",
        {"setting": "Iterative", "questions": ["Date?", "Time?"]},
    )
    assert w.propose("c1", "email_search", {}).status is CallStatus.EXECUTED
    held = w.propose("c2", "calendar_event_create", {"title": "x"})
    assert held.status is CallStatus.HELD and held.held_id == "held_0001"
    w.render("Date?")
    # next turn still asks (second question released) -> still held
    assert w.gate("calendar_event_create", {}).decision is GateDecision.HOLD
    w.render("Time?")
    assert w.gate("calendar_event_create", {}).decision is GateDecision.EXECUTE


def test_proactive_outreach_on_event_turns(backend: FakeBackend) -> None:
    high = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    high.begin_turn(event=True)
    high.select(
        "proactive_outreach", {"setting": "High", "message": "Your parcel arrived."}
    )
    delivered, trace = high.render("I told the user.")
    assert delivered.reply == "Your parcel arrived."
    assert trace.withheld["proactive_outreach.reply_text"] == "I told the user."
    low = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    low.begin_turn(event=True)
    low.select(
        "proactive_outreach", {"setting": "Low", "message": "Your parcel arrived."}
    )
    delivered, trace = low.render("Noted.")
    assert (
        delivered.reply == ""
        and trace.withheld["proactive_outreach.message"] == "Your parcel arrived."
    )
    assert low.last_ix_calls[0].payload == {}


# ---- execution control ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting,held_tools",
    [
        (
            "Reactive",
            {
                "email_draft_create",
                "calendar_event_create",
                "contact_update",
                "email_message_send",
            },
        ),
        ("Self-directed", {"contact_update", "email_message_send"}),
        ("Autonomous", set()),
    ],
)
def test_autonomy_holds_by_write_tag(
    backend: FakeBackend, setting: str, held_tools: set[str]
) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": setting})
    statuses = {
        name: w.propose(f"c_{name}", name, {"n": name}).status for name in backend.defs
    }
    assert {n for n, s in statuses.items() if s is CallStatus.HELD} == held_tools
    assert statuses["email_search"] is CallStatus.EXECUTED
    ran = {name for name, _ in backend.calls}
    assert ran == set(backend.defs) - held_tools
    delivered, trace = w.render("Done what I could.")
    assert delivered.reply == "Done what I could."  # no approval request of the wrapper's
    assert {i.tool for i in delivered.held} == held_tools
    # held while the reply asks nothing: the F.2 floor "held an action without asking"
    assert len(trace.unasked_holds) == len(held_tools)


@pytest.mark.parametrize(
    "setting,blocked", [("Find and hand off", True), ("Suggest alternatives", False)]
)
def test_capability_boundary(backend: FakeBackend, setting: str, blocked: bool) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    before = w.propose("c0", "calendar_event_create", {})
    assert before.status is CallStatus.EXECUTED  # before the selection everything runs
    w.select("capability_boundary", {"setting": setting})
    assert w.propose("c1", "email_search", {}).status is CallStatus.EXECUTED
    write = w.propose("c2", "email_message_send", {"to": "x"})
    assert (write.status is CallStatus.BLOCKED) is blocked
    _, trace = w.render("Here is what happened.")
    assert [c.call_id for c in trace.blocked] == (["c2"] if blocked else [])
    assert ("email_message_send", {"to": "x"}) in backend.calls or blocked


def test_release_runs_exactly_the_approved_items(backend: FakeBackend) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": "Reactive"})
    for i, tool in enumerate(
        ["email_draft_create", "calendar_event_create", "email_message_send"]
    ):
        w.propose(f"c{i}", tool, {"i": i})
    delivered, _ = w.render("Ready when you are.")
    assert [i.id for i in delivered.held] == ["held_0001", "held_0002", "held_0003"]
    assert backend.calls == []
    out = w.release({"held_0002": True, "held_0003": False, "held_0099": True})
    assert backend.calls == [("calendar_event_create", {"i": 1})]
    assert [c.held_id for c in out.executed] == ["held_0002"]
    assert [i.id for i in out.denied] == ["held_0003"] and out.unknown == ["held_0099"]
    # a denied item can never run later, an approved one never twice
    again = w.release({"held_0003": True, "held_0002": True})
    assert again.unknown == ["held_0002", "held_0003"] and len(backend.calls) == 1
    delivered, _ = w.render("Added the event.")
    assert [c.held_id for c in delivered.executed] == ["held_0002"]
    assert [i.id for i in delivered.held] == ["held_0001"]
    assert "held_0001" not in delivered.reply and "held_0003" not in delivered.reply


def test_required_payloads() -> None:
    assert required_payload("reasoning_visibility", "Show") == ("rationale",)
    assert required_payload("reasoning_visibility", "Hide") == ()
    assert required_payload("verbosity", "Terse") == ()


def test_missing_payload_is_due_only_in_the_selecting_turn(wrapper: IXWrapper) -> None:
    wrapper.select(
        "process_visibility", {"setting": "Bookend", "opening": "Let me look."}
    )
    assert wrapper.missing_payload("process_visibility") == ("closing",)
    wrapper.select("process_visibility", {"closing": "Finished."})
    assert wrapper.missing_payload("process_visibility") == ()
    wrapper.render("ok")
    assert wrapper.missing_payload("process_visibility") == ()
    wrapper.select("proactive_outreach", {"setting": "High", "message": "m"})
    wrapper.render("ok")
    wrapper.begin_turn(event=True)
    assert wrapper.missing_payload("proactive_outreach") == ("message",)


# ---- no authored words; holds that ask; answers that release ---------------------------------


def test_the_wrapper_adds_no_sentence_under_any_combination(backend: FakeBackend) -> None:
    """Every line of the public reply is the PA's reply text or one of its payload values."""
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": "Reactive"})
    w.select("process_visibility", {"setting": "Full narration"})
    w.select(
        "topic_management",
        {"setting": "One-at-a-time", "topics": [{"label": "L1", "content": "C1"}, {"label": "L2", "content": "C2"}]},
    )
    w.select("uncertainty_expression", {"setting": "Express", "confidence_notes": [{"claim": "K", "level": "low"}]})
    w.propose("c1", "email_search", {})
    w.propose("c2", "calendar_event_create", {"title": "x"})
    delivered, _ = w.render("PA TEXT")
    assert delivered.reply.split("\n\n") == ["PA TEXT", "L1:\nC1", "- K (confidence: low)"]
    for phrase in ("I ran", "approval", "Shall I", "Still to come", "How sure", "move on"):
        assert phrase not in delivered.reply


def test_a_hold_is_asked_about_only_in_the_pas_words(backend: FakeBackend) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": "Self-directed"})
    held = w.propose("c1", "email_message_send", {"to": "x"})
    assert "adds nothing to your reply" in held.result  # the PA is told asking is its job
    delivered, trace = w.render("The note to Ines is ready. Shall I send it?")
    assert delivered.reply == "The note to Ines is ready. Shall I send it?"
    assert trace.unasked_holds == []
    # an older hold still pending does not floor a later turn that holds nothing new
    delivered, trace = w.render("Anything else for today.")
    assert [i.id for i in delivered.held] == ["held_0001"] and trace.unasked_holds == []


def test_outreach_low_silence_is_not_an_unasked_hold(backend: FakeBackend) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("autonomy_level", {"setting": "Reactive"})
    w.begin_turn(event=True)
    w.select("proactive_outreach", {"setting": "Low"})
    w.propose("c1", "calendar_event_create", {"title": "x"})
    delivered, trace = w.render("Noted.")
    assert delivered.reply == "" and trace.unasked_holds == []


def test_an_elicitation_hold_is_released_by_the_users_answer(backend: FakeBackend) -> None:
    """E.3: a write held in a turn that asks runs once the user answers, with no approval asked."""
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("information_elicitation", {"setting": "Structured", "questions": ["Which day?", "What time?"]})
    held = w.propose("c1", "calendar_event_create", {"title": "x"})
    assert held.status is CallStatus.HELD and "runs when the user answers" in held.result
    delivered, trace = w.render("Two things first.")
    assert delivered.reply == "Two things first.\n\n1. Which day?\n2. What time?"
    assert trace.unasked_holds == []  # an elicitation hold needs no approval request
    assert backend.calls == []
    out = w.release({}, answered=True)
    assert out.by_answer == ["held_0001"] and [c.held_id for c in out.executed] == ["held_0001"]
    assert backend.calls == [("calendar_event_create", {"title": "x"})]
    delivered, _ = w.render("Booked.")
    assert [c.held_id for c in delivered.executed] == ["held_0001"] and delivered.held == []


def test_an_elicitation_hold_waits_for_every_question_and_obeys_a_denial(backend: FakeBackend) -> None:
    w = IXWrapper(backend, WorkingCopy(WorldState({}), datetime(2026, 3, 2)))
    w.select("information_elicitation", {"setting": "Iterative", "questions": ["Day?", "Time?"]})
    w.propose("c1", "calendar_event_create", {"title": "x"})
    w.render("First:")
    assert w.release({}, answered=True).by_answer == []  # "Time?" is still to be asked
    w.render("And:")  # the second question goes out now
    assert w.release({}, answered=False).by_answer == []  # no answer, no release
    out = w.release({"held_0001": False}, answered=True)  # the user answers but refuses it
    assert backend.calls == [] and [i.id for i in out.denied] == ["held_0001"]
    assert out.by_answer == []


def test_floor_kinds_round_trip_and_say_which_are_rerun() -> None:
    from mempa_tui.ix.floors import FloorKind, floor_kind, floor_reason, is_rerun_floor

    for kind in FloorKind:
        reason = floor_reason(kind, "detail")
        assert floor_kind(reason) is kind and is_rerun_floor(reason) is kind.rerun
    assert {k for k in FloorKind if k.rerun} == {FloorKind.MISSING_IX_CALL, FloorKind.HELD_WITHOUT_ASKING}
    assert floor_kind("the person in the PA seat gave the turn up") is None
    assert is_rerun_floor("something else")


@pytest.mark.parametrize(
    "reply,asks",
    [
        ("Shall I send it?", True),
        ("It is ready to go once you confirm.", True),
        ("Say the word and it goes out.", True),
        ("Let me know if I should send it.", True),
        ("Reply 'yes' and I will send it.", True),
        ("The message to Ines is queued.", False),
        ("Done, Colm has it.", False),
        ("I have drafted the message.", False),
        ("", False),
    ],
)
def test_asks_for_confirmation(reply: str, asks: bool) -> None:
    from mempa_tui.ix.floors import asks_for_confirmation

    assert asks_for_confirmation(reply) is asks
