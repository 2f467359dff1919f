"""A PA reply that echoes the harness's own text is never taken as the reply (issue 12, validity).

The rule of :mod:`mempa_tui.agent.echo` on the replies of a stored embedded run, then the PA loop
against a scripted model over loopback HTTP: an echo is counted; words of the PA's own around the
copy are kept as the reply; a pure echo is dropped and the reply asked for once more (forced, even
one call past the cap), and a pure echo after that one re-ask fails the turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from test_agent_support import START, PAWorld, call, pa_world

from mempa_tui.agent import AgentTurnInput
from mempa_tui.agent.echo import harness_echo, own_sentences, own_words, without_echoed_sentences
from mempa_tui.agent.personal import EMPTY_REPLY_REMINDER
from mempa_tui.agent.prompt import ECHO_REASK, instructions, repeated_call_message
from mempa_tui.llm import ScriptedReply

SEARCH = "mcp_state_contact_search"
DRAFT = "mcp_state_email_draft_create"
NOTE = repeated_call_message(SEARCH)
"""The repeat guard's note for a repeated contact search, as the PA reads it."""
TAIL = "The result you got then still holds. Work from what you have and finish the turn."
INSTRUCTION = "Messages that begin with [Harness note come from the system running you, not from the person."
"""A sentence of the PA's instructions (harness text in every turn)."""
ERROR = "email_draft_create: in_reply_to 'none' names no email in the inbox"


@pytest.fixture
async def rig() -> AsyncIterator[PAWorld]:
    async with pa_world() as world:
        yield world


def _turn(**kw: object) -> AgentTurnInput:
    return AgentTurnInput(user_message="Which email does Colm use?", now=START, **kw)  # type: ignore[arg-type]


def _search() -> ScriptedReply:
    return ScriptedReply(tool_calls=[call(SEARCH, {"query": "Colm"})])


# ---- the rule --------------------------------------------------------------------------------


def test_the_stored_runs_echoes_are_echoes_whatever_the_spacing_and_case() -> None:
    notes = [repeated_call_message(DRAFT), instructions()]
    whole = repeated_call_message(DRAFT).removeprefix("[Harness note - not from the user] ")
    assert harness_echo(whole, notes) is not None  # A-S14's reply, word for word
    match = harness_echo(f"  {TAIL.upper()}\n", notes)  # A-S51's: the note's tail
    assert match is not None and match.share == 1.0 and match.words == 16
    assert "You already called" in match.source
    mixed = "Selected 'High' for Solution Breadth. Payload received: none."
    assert harness_echo(mixed, [mixed]) is not None  # the IX wrapper's answer is harness text too


def test_the_pas_own_words_are_not_echoes() -> None:
    notes = [repeated_call_message(DRAFT), instructions(), ERROR]
    for reply in (
        f"I could not make the draft: {ERROR.split(': ', 1)[1]}, so which email is it?",
        "Colm's address is colm.averill@wendlink.example.",
        "I'm sorry, but I can't assist with that.",
        "Done.",
        "Still holds.",  # shorter than the smallest echo
    ):
        assert harness_echo(reply, notes) is None, reply


# ---- the PA loop -----------------------------------------------------------------------------


async def test_an_echoed_note_is_dropped_and_the_reply_asked_for_once_more(rig: PAWorld) -> None:
    rig.queue.push(_search(), _search(), TAIL, "Colm uses colm.averill@wendlink.example.")
    agent = rig.new_agent("wrap_up")
    result = await agent.respond(_turn(), rig.actions())
    assert result.status == "wrapped_up" and result.reply == "Colm uses colm.averill@wendlink.example."
    assert result.echoed_replies == 1 and result.echo_retried and result.model_calls == 4
    reask = rig.queue.pa_requests[3]
    assert reask.messages[-1].role == "user" and reask.messages[-1].content == ECHO_REASK
    assert reask.tools == []  # the re-ask is the forced reply (no tools on Ollama's wire)
    assert all(TAIL not in m.content for m in reask.messages if m.role == "assistant")
    assert all(TAIL not in m.content for m in agent.history if m.role == "assistant")  # never the PA's words


async def test_an_echo_after_the_re_ask_fails_the_turn_with_no_reply(rig: PAWorld) -> None:
    rig.queue.push(_search(), _search(), TAIL, NOTE, "never asked for")
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.status == "failed" and result.reply == ""
    assert result.echoed_replies == 2 and result.model_calls == 4  # one re-ask, not two
    assert "echoed the harness's own text again after a re-ask" in (result.reason or "")
    assert "no reply to the user" in (result.reason or "")
    assert list(rig.queue.replies) == ["never asked for"]


async def test_an_echo_at_the_cap_gets_its_re_ask_one_call_past_the_cap(rig: PAWorld) -> None:
    # the quick start's A-S14 was discarded when the 0.5B model echoed at its eighth call
    rig.queue.push(_search(), _search(), TAIL, "Colm uses colm.averill@wendlink.example.", "never asked for")
    result = await rig.new_agent("wrap_up", max_model_calls=3).respond(_turn(), rig.actions())
    assert result.status != "failed" and result.reply == "Colm uses colm.averill@wendlink.example."
    assert result.echoed_replies == 1 and result.echo_retried and result.model_calls == 4
    assert list(rig.queue.replies) == ["never asked for"]  # one call past the cap, not more


async def test_a_reply_with_words_of_its_own_around_the_copy_keeps_only_those(rig: PAWorld) -> None:
    # 16 of its 19 words copied (an echo: 75% or more), three of its own
    rig.queue.push(_search(), _search(), f"Sorry, cannot help. {TAIL}", "never asked for")
    agent = rig.new_agent("wrap_up")
    result = await agent.respond(_turn(), rig.actions())
    assert result.reply == "Sorry, cannot help."
    assert result.echoed_replies == 1 and not result.echo_retried and result.model_calls == 3  # no re-ask
    assert result.echoes_cut == 1
    assert all(TAIL not in m.content for m in agent.history if m.role == "assistant")
    assert list(rig.queue.replies) == ["never asked for"]


def test_own_words_leave_out_every_copied_run_and_keep_the_rest() -> None:
    assert own_words(f"Done: booked it. {TAIL} Anything else?", [NOTE]) == "Done: booked it. Anything else?"
    assert own_words(TAIL, [NOTE]) == ""
    assert own_words("Colm uses colm.averill@wendlink.example.", [NOTE]) == "Colm uses colm.averill@wendlink.example."


async def test_the_empty_reply_reminder_and_the_echo_re_ask_share_one_re_ask(rig: PAWorld) -> None:
    rig.queue.push("", INSTRUCTION, "never asked for")
    result = await rig.new_agent().respond(_turn(), rig.actions())
    assert result.status == "failed" and result.empty_retried and not result.echo_retried
    assert result.echoed_replies == 1 and result.model_calls == 2
    assert rig.queue.pa_requests[1].messages[-1].content == EMPTY_REPLY_REMINDER
    assert "one re-ask (an empty reply) was used" in (result.reason or "")


async def test_echoes_of_feedback_on_held_items_and_of_error_texts_count(rig: PAWorld) -> None:
    released = "The user approved held_0001; it has now run: message sent to Colm Averill"
    rig.queue.push(f"{released}.", "I sent Colm the message you approved.")
    first = await rig.new_agent().respond(_turn(runtime_notes=[released]), rig.actions())
    assert first.status == "ok" and first.echoed_replies == 1 and first.reply == "I sent Colm the message you approved."

    rig.queue.push(
        ScriptedReply(tool_calls=[call("mcp_state_contact_update", {"contact_id": "ct_9999", "notes": "x"})]),
        "Which Colm do you mean?",
    )
    actions = rig.actions()
    agent = rig.new_agent()
    second = await agent.respond(_turn(), actions)
    (error,) = actions.harness_texts  # the failed call's error text; no world data is listed
    assert "ct_9999" in error and second.status == "ok" and second.echoed_replies == 0
    rig.queue.push(error, "I could not find that contact; which Colm do you mean?")
    third = await agent.respond(_turn(), rig.actions())  # an earlier turn's error text still counts
    assert third.echoed_replies == 1 and third.reply.startswith("I could not find")


async def test_a_text_the_cap_would_deliver_is_checked_too(rig: PAWorld) -> None:
    # text beside a call at the cap: no final reply, so the cap would deliver that text
    echo = ScriptedReply(text=INSTRUCTION, tool_calls=[call(SEARCH, {"query": "x"})])
    rig.queue.push(_search(), _search(), echo)
    result = await rig.new_agent(max_model_calls=3).respond(_turn(), rig.actions())
    assert result.status == "failed" and result.echoed_replies == 1 and result.reply == ""


async def test_a_turn_with_no_final_reply_delivers_no_text(rig: PAWorld) -> None:
    # own words beside a call at the cap are not a reply: nothing reaches the user
    chatter = ScriptedReply(text="Let me look at the calendar for you first.",
                            tool_calls=[call(SEARCH, {"query": "y"})])
    rig.queue.push(_search(), _search(), chatter)
    result = await rig.new_agent(max_model_calls=3).respond(_turn(), rig.actions())
    assert result.no_final_reply and result.reply == ""


def test_world_data_quoted_in_a_harness_note_is_not_harness_text() -> None:
    note = ('The user approved held_0001; it has now run: {"message_id": "msg_0009", '
            '"text": "The review moved to three tomorrow afternoon"}')
    assert harness_echo("The review moved to three tomorrow afternoon.", [note]) is None
    assert harness_echo("The user approved held_0001; it has now run.", [note]) is not None


# ---- fresh-user report, finding 7: no fragment is delivered ------------------------------------


def test_own_sentences_leave_out_a_sentence_a_copied_run_was_cut_from() -> None:
    note = repeated_call_message("mcp_state_calendar_event_update")
    raw = ("The person has already called mcp_state_calendar_event_update with exactly these arguments "
           "earlier in this turn. " + TAIL)
    assert own_words(raw, [note]).startswith("The person has")  # what was delivered (A-S51, call 7)
    assert own_sentences(raw, [note]) == ""
    assert own_sentences(f"Done: booked it. {TAIL} Anything else?", [NOTE]) == "Done: booked it. Anything else?"
    assert own_sentences(f"I booked it for Friday {TAIL.lower()}", [NOTE]) == ""  # one sentence, cut


def test_an_echoed_sentence_leaves_a_reply_that_is_no_echo_as_a_whole() -> None:
    # A-S14 of the quick start: the reply's own account, then the tail of two harness notes
    notes = [NOTE, ECHO_REASK]
    own = "I found three halls near the station and held the Eastbank one for Thursday evening."
    raw = f"{own} Please ask me what you found this turn and finish the turn."
    assert harness_echo(raw, notes) is None  # under the whole-reply share
    assert without_echoed_sentences(raw, notes) == own
    # a sentence with a short copied run of its own words stays, as does a reply with no copy
    kept = "Work from the Eastbank hall list: it seats 120 and is free on Thursday."
    assert without_echoed_sentences(kept, notes) == kept
    assert without_echoed_sentences(own, notes) == own
    # the kept text stays as written: indentation, a list without the left-out item, CJK sentences
    table = "Here:\n    09:00  Eastbank hall\n    10:00  Library"
    assert without_echoed_sentences(f"{table}\n{TAIL} Anything else?", notes) == f"{table}\nAnything else?"
    assert without_echoed_sentences(f"- one\n- {TAIL}\n- two", notes) == "- one\n- two"
    assert without_echoed_sentences(f"Hi Ingrid,\n\n{TAIL}\n\nI booked it.", notes) == "Hi Ingrid,\n\nI booked it."
    assert without_echoed_sentences(f"\u6211\u5df2\u7ecf\u9884\u8ba2\u4e86\u3002{TAIL}", notes) == (
        "\u6211\u5df2\u7ecf\u9884\u8ba2\u4e86\u3002")
    # letters that change length when case-folded do not shift which sentence is cut
    assert without_echoed_sentences("Stra\u00dfe " * 25 + f"ist zu. Ja gut. {TAIL}", notes).endswith("Ja gut.")


async def test_a_sentence_relaying_a_tool_error_is_not_cut(rig: PAWorld) -> None:
    # the error text is the harness's, but telling the person what failed is the PA's account
    failed = "The draft failed: in_reply_to 'none' names no email in the inbox."
    rig.queue.push(ScriptedReply(tool_calls=[call(DRAFT, {"to": "colm@example.org", "subject": "Hi", "body": "x",
                                                          "in_reply_to": "none"})]),
                   f"{failed} Which email should I answer?", "never asked for")
    actions = rig.actions()
    result = await rig.new_agent("wrap_up").respond(_turn(), actions)
    assert any("names no email" in t for t in actions.harness_texts)  # the call failed with that error
    assert result.reply == f"{failed} Which email should I answer?" and result.echoes_cut == 0


async def test_an_echoed_sentence_is_cut_from_the_delivered_reply(rig: PAWorld) -> None:
    own = "Colm uses colm.averill@wendlink.example for work and answers within a day."
    rig.queue.push(_search(), _search(), f"{own} {TAIL}", "never asked for")  # the repeat note holds TAIL
    agent = rig.new_agent("wrap_up")
    result = await agent.respond(_turn(), rig.actions())
    assert result.reply == own
    assert result.echoed_replies == 1 and result.echoes_cut == 1 and not result.echo_retried
    assert all(TAIL not in m.content for m in agent.history if m.role == "assistant")


async def test_a_reply_left_as_a_fragment_is_re_asked_not_delivered_and_counted(rig: PAWorld) -> None:
    fragment = f"The person has {TAIL.lower()}"  # "The person has" would be left: no sentence
    rig.queue.push(_search(), _search(), fragment, "Colm uses colm.averill@wendlink.example.")
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.reply == "Colm uses colm.averill@wendlink.example."
    assert result.echoed_replies == 1 and result.echo_retried and result.echoes_cut == 0
    assert result.model_calls == 4


async def test_a_fragment_after_the_re_ask_fails_the_turn(rig: PAWorld) -> None:
    rig.queue.push(_search(), _search(), TAIL, f"The person has {TAIL.lower()}", "never asked for")
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.status == "failed" and result.reply == "" and result.echoed_replies == 2


def test_the_reply_label_tells_re_asked_echoes_from_cut_ones() -> None:
    from mempa_tui.runner._episode_events import PAReplyEvent

    both = PAReplyEvent(text="Sorry, cannot help.", echoed_replies=2, echoes_cut=1)
    assert both.note() == " (1 echoed harness note re-asked; 1 echoed harness note cut, the PA's own sentences kept)"
    assert PAReplyEvent(text="x", echoed_replies=1).note() == " (1 echoed harness note re-asked)"
    assert PAReplyEvent(text="x", echoed_replies=1, echoes_cut=1).note() == (
        " (1 echoed harness note cut, the PA's own sentences kept)"
    )
