"""Interaction-tool text in a delivered reply (paper Appendix F.2, Table 9; issue 12).

The judge is blind to the PA's selection; F.2 floors a probe whose PA wrote interaction-tool text
into a task tool's arguments. The same rule applies to the reply a turn delivers:

* a probe whose reply states the selection ("Thank you for selecting 'High' for Solution
  Breadth") is floored with the reason, never judged, and nothing of it reaches the user;
* a reply that says "high" without naming the attribute is an ordinary reply;
* in an accumulation session the sentences carrying it are withheld (counted), the rest is
  delivered; a reply with nothing else ends the session floored;
* the count is shown beside the other PA problems.
"""

from __future__ import annotations

from test_agent_support import START, RecordingMemory, call
from test_episode import Rig, _reactions, ctx, rig, sim  # noqa: F401  (rig: fixture)

from mempa_tui.agent.actions import (
    ix_text_in_arguments,
    ix_text_in_reply,
    withhold_ix_sentences,
)
from mempa_tui.ix.floors import FloorKind, floor_kind, is_rerun_floor
from mempa_tui.llm import ScriptedReply
from mempa_tui.runner._health import pa_problem_phrases
from mempa_tui.runner._scoring import rater_dialogue
from mempa_tui.runner.episode import run_accumulation, run_probe
from mempa_tui.scripts.schema import AccumulationSession, Beat, DecisionPoint, Probe
from mempa_tui.taxonomy import Context

LEAK = "Thank you for selecting 'High' for Solution Breadth. Your payload received: none."
SEL = {"solution_breadth": "High"}


def _beat() -> Beat:
    return Beat(
        id="ask",
        goal="get a plan for the forum",
        conveys="asks how to handle the forum",
        max_turns=1,
        active_attributes=["solution_breadth"],
        decision_point=DecisionPoint(
            attribute="solution_breadth", reactions=_reactions("solution_breadth"), falls_short="asks"
        ),
    )


def breadth_probe() -> Probe:
    return Probe(
        id="A-PF-work-solution_breadth",
        context=Context.WORK,
        attribute="solution_breadth",
        starts_at=START,
        scenario="office",
        task="Plan the residents' forum.",
        probe_kind="final",
        expected_replies={"Low": "one plan", "High": "options with tradeoffs"},
        beats=[_beat()],
    )


def breadth_session() -> AccumulationSession:
    return AccumulationSession(
        id="A-w-breadth-01",
        context=Context.WORK,
        attribute="solution_breadth",
        starts_at=START,
        scenario="office",
        task="Plan the residents' forum.",
        beats=[_beat()],
    )


def _push(rig: Rig, reply: str) -> None:
    rig.sim_replies.append(sim("How should we handle the forum next week?"))
    rig.queue.push(ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]), reply)


def test_the_rule_reads_the_attribute_with_its_setting_not_the_word_alone() -> None:
    assert "states the selection Solution Breadth = High" in (ix_text_in_reply(LEAK, SEL) or "")
    assert "IX_solution_breadth" in (ix_text_in_reply("I was asked to call IX_solution_breadth.", SEL) or "")
    assert ix_text_in_reply("solution_breadth: high", SEL) is not None  # the key counts too
    # 'high' without the attribute, and the attribute with other words, are ordinary replies
    assert ix_text_in_reply("Here is a high-level plan; the hall has high ceilings.", SEL) is None
    assert ix_text_in_reply("High", SEL) is None
    low = {"solution_breadth": "Low"}
    assert ix_text_in_reply("The solution breadth here falls below what I hoped; follow up.", low) is None
    # the arguments rule is the same function's, with whole words now ("allow" holds no "low")
    assert ix_text_in_arguments({"body": "solution breadth: allow two"}, low) is None
    assert ix_text_in_arguments({"body": "Solution breadth: Low"}, low) is not None


def test_withholding_keeps_the_sentences_of_the_pas_own() -> None:
    kept, dropped = withhold_ix_sentences(
        "Thanks for waiting. I was asked to call IX_solution_breadth first. The hall seats 120.", SEL
    )
    assert (kept, dropped) == ("Thanks for waiting. The hall seats 120.", 1)
    assert withhold_ix_sentences("A high-level plan.", SEL) == ("A high-level plan.", 0)


async def test_a_probe_reply_that_states_the_selection_is_floored_unjudged(rig: Rig) -> None:
    _push(rig, LEAK)
    memory = RecordingMemory()
    result = await run_probe(breadth_probe(), ctx(rig, memory, probe=True))
    assert result.status == "floored"
    assert floor_kind(result.reason) is FloorKind.IX_TEXT_IN_REPLY
    assert "Solution Breadth = High" in (result.reason or "") and "Thank you for selecting" in (result.reason or "")
    assert not is_rerun_floor(result.reason)  # scored as it happened, like the arguments case
    assert result.selection == "High"
    # nothing of it was delivered: no exchange, no reply event, the rater is told no reply came
    assert result.exchanges == [] and "pa_reply" not in [e.type for e in result.transcript]
    assert all("Solution Breadth" not in e.text for e in rater_dialogue(result))
    assert rater_dialogue(result)[-1].text == "the assistant sent no reply"


async def test_a_probe_reply_saying_high_alone_is_completed(rig: Rig) -> None:
    _push(rig, "Two options, each with a high turnout: the hall, or the library room.")
    result = await run_probe(breadth_probe(), ctx(rig, RecordingMemory(), probe=True))
    assert result.status == "completed", result.reason
    assert result.exchanges[0].delivered.reply.startswith("Two options, each with a high turnout")


async def test_a_session_reply_has_the_ix_sentence_withheld_and_counted(rig: Rig) -> None:
    _push(rig, "The hall seats 120. I picked High for Solution Breadth. The library is free.")
    rig.sim_replies.append(sim("", "done"))
    memory = RecordingMemory()
    result = await run_accumulation(breadth_session(), ctx(rig, memory))
    assert result.status == "completed", result.reason
    assert result.exchanges[0].delivered.reply == "The hall seats 120. The library is free."
    assert memory.records[0].reply == "The hall seats 120. The library is free."
    assert "Solution Breadth" not in rig.sim_text()
    assert result.pa_ix_text_withheld == 1
    assert result.transcript[-1].pa_ix_text_withheld == 1  # type: ignore[union-attr]
    reply = next(e for e in result.transcript if e.type == "pa_reply")
    assert "1 sentence with interaction-tool text withheld" in reply.note()  # type: ignore[union-attr]


async def test_a_session_reply_that_is_only_ix_text_floors_the_session(rig: Rig) -> None:
    _push(rig, "Thank you for selecting 'High' for Solution Breadth!")
    memory = RecordingMemory()
    result = await run_accumulation(breadth_session(), ctx(rig, memory))
    assert result.status == "floored" and floor_kind(result.reason) is FloorKind.IX_TEXT_IN_REPLY
    assert "nothing of it was left" in (result.reason or "")
    assert result.world is None and memory.records == []


def test_withheld_sentences_are_worded_beside_the_other_pa_problems() -> None:
    phrases = pa_problem_phrases(0, 0, 3, 2)
    assert phrases == [
        "PA echoed a harness note as its reply 3 times (withheld: never shown to the user or judged)",
        "PA named its interaction-tool selection in 2 reply sentences (withheld: never shown to the user or stored)",
    ]


def test_the_apps_step_summary_and_mempa_show_name_the_withheld_sentences() -> None:
    from mempa_tui.cli._show import detail_text
    from mempa_tui.runner._browse import StepDetail
    from mempa_tui.runner._episode_events import StepStatusEvent
    from mempa_tui.tui.screens.browser import summary_text

    phrase = ("run problem (warning): PA named its interaction-tool selection in 2 reply sentences "
              "(withheld: never shown to the user or stored)")
    status = StepStatusEvent(status="completed", pa_echoed_replies=1, pa_ix_text_withheld=2)
    detail = StepDetail(run_id="R-file-scripted-s0", step_id="R-s1", repeat=0, kind="accumulation",
                        status="completed", reason=None, selection=None, events=[status], calls=[])
    shown = summary_text(detail).plain
    assert phrase + "\n" in shown and "PA echoed a harness note as its reply 1 time" in shown
    assert phrase in detail_text(detail).splitlines()
    clean = detail.model_copy(update={"events": [StepStatusEvent(status="completed")]})
    assert "interaction-tool selection" not in summary_text(clean).plain


# ---- fresh-user report, findings 1 and 2 --------------------------------------------------------

RAW = ("Thank you for choosing 'High' for Solution Breadth. The result you got then still holds. "
       "Work from what you have and finish the turn.")
"""The Oracle probe's raw reply (A-PF-personal-solution_breadth, call 4): IX text and an echo."""


async def test_ix_text_is_found_in_the_reply_as_written_before_the_echo_filter_cuts_it(rig: Rig) -> None:
    # the echo filter alone would cut this to "Thank you for choosing '", which names no selection
    rig.sim_replies.append(sim("How should we handle the forum next week?"))
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),  # repeated
        RAW,
    )
    from mempa_tui.agent import PersonalAgent

    agent = PersonalAgent(rig.client, repeated_call="wrap_up")  # the repeat guard's note: harness text
    result = await run_probe(breadth_probe(), ctx(rig, RecordingMemory(), probe=True, agent_seat=agent))
    assert result.status == "floored", result.reason
    assert floor_kind(result.reason) is FloorKind.IX_TEXT_IN_REPLY
    assert "Solution Breadth = High" in (result.reason or "")
    assert result.exchanges == [] and "pa_reply" not in [e.type for e in result.transcript]


async def test_a_probe_reply_that_echoes_the_repeat_note_is_an_echo_not_ix_text(rig: Rig) -> None:
    # measured on the quick start's Oracle run: the 0.5B PA's reply was the repeat guard's own
    # note, which names IX_solution_breadth; the harness's words are an echo (withheld and
    # re-asked), not the PA stating its selection, and must not floor the probe
    from mempa_tui.agent import PersonalAgent
    from mempa_tui.agent.prompt import repeated_call_message

    rig.sim_replies.append(sim("How should we handle the forum next week?"))
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),  # repeated
        repeated_call_message("IX_solution_breadth"),
        "Here are the two venues side by side: the hall seats 120, the library room 40.",
    )
    agent = PersonalAgent(rig.client, repeated_call="wrap_up")
    result = await run_probe(breadth_probe(), ctx(rig, RecordingMemory(), probe=True, agent_seat=agent))
    assert floor_kind(result.reason) is not FloorKind.IX_TEXT_IN_REPLY, result.reason


async def test_a_session_withholds_ix_sentences_of_the_raw_reply_before_the_echo_filter(rig: Rig) -> None:
    from mempa_tui.agent import PersonalAgent

    rig.sim_replies.append(sim("How should we handle the forum next week?"))
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),  # repeated
        f"The hall seats 120 people. {RAW}",
    )
    rig.sim_replies.append(sim("", "done"))
    memory = RecordingMemory()
    agent = PersonalAgent(rig.client, repeated_call="wrap_up")
    result = await run_accumulation(breadth_session(), ctx(rig, memory, agent_seat=agent))
    assert result.status == "completed", result.reason
    assert memory.records[0].reply == "The hall seats 120 people."  # IX sentence withheld, echo cut
    assert result.pa_ix_text_withheld == 1 and result.pa_echoed_replies == 1
    assert "Thank you for choosing" not in rig.sim_text()


async def test_a_probe_with_no_final_reply_is_floored_as_a_capability_failure_unjudged(rig: Rig) -> None:
    from mempa_tui.agent import PersonalAgent
    from mempa_tui.runner._scoring import score_final_probe

    rig.sim_replies.append(sim("How should we handle the forum next week?"))
    search = "mcp_state_contact_search"
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_solution_breadth", {"setting": "High"})]),
        ScriptedReply(tool_calls=[call(search, {"query": "Ruth"})]),
        ScriptedReply(tool_calls=[call(search, {"query": "forum"})]),  # the cap's call: no reply
    )
    agent = PersonalAgent(rig.client, max_model_calls=3)
    result = await run_probe(breadth_probe(), ctx(rig, RecordingMemory(), probe=True, agent_seat=agent))
    assert result.status == "floored", result.reason
    assert floor_kind(result.reason) is FloorKind.NO_FINAL_REPLY and not is_rerun_floor(result.reason)
    assert "no final reply after 3 model calls" in (result.reason or "")
    assert "model-capability failure, Appendix F.2" in (result.reason or "")
    assert result.selection == "High" and result.exchanges == []

    async def judge(*_args: object) -> object:
        raise AssertionError("a probe with no reply must not be judged or rated")

    scores = await score_final_probe(judge, None, breadth_probe(), "High", result, None)  # type: ignore[arg-type]
    assert scores.brs is None and "BRS 1 by rule" in (scores.brs_reason or "")
    assert scores.prs == 1 and "no final reply" in (scores.prs_reason or "")


def test_a_no_reply_floor_scores_psa_0_brs_1_and_prs_1_and_stays_scorable() -> None:
    from mempa_tui.scoring._outcome import ProbeOutcome, ProbeStatus
    from mempa_tui.scripts.schema import ProbeKind

    reason = "no reply to judge: no final reply after 8 model calls (model-capability failure, Appendix F.2)"
    assert floor_kind(reason) is FloorKind.NO_FINAL_REPLY
    outcome = ProbeOutcome(
        user="A", context=Context.WORK, attribute="solution_breadth", probe_kind=ProbeKind.FINAL, repeat=1,
        target="High", selection="High", status=ProbeStatus.FLOORED, prs=1, reason=reason,
    )
    assert outcome.scorable and not outcome.correct  # in the denominator, PSA 0 despite the selection
    assert outcome.brs_scored == 1.0 and outcome.prs_scored == 1.0
