"""Assembling the simulator prompt of one turn (paper Appendix D.2, D.4 'Prompt rules', I.3).

The prompt is rebuilt every turn from the same content as the paper's runtime prompt: the profile
block (persona card, the rule that the user never calls tools, and in accumulation sessions the
simulator's own memory), the ground rules, the session's date, context and task, the output
format, the dialogue so far as the user saw it, the active skills of the current beat, and the
script as far as the user has reached it (the current beat, released facts, and on the decision
and reaction beats the reactions of the decision point). Accumulation sessions and probes use
different prompts: a probe user has never met the assistant, keeps no memory, acts out only the
production side of the skills and gives no feedback on the manner of a reply.

Order (issue 12, 'a stable simulator prefix'): llama.cpp's prompt cache reuses only the part of
a prompt that equals the start of an earlier one, so the parts come in the order of how long they
stay the same. First, in the system message (:func:`fixed_system_prompt`), what is the same for
every session and probe of the user: the persona card, the no-tools rule and the output format;
then the mode's ground rules (the same for all sessions, or for all probes); then what changes
between sessions: the simulator memory and the session's date, context and task. The user message
opens with what is fixed for the current beat (its skills, where the user is in the script, the
released facts and reactions), then the dialogue, which only grows at its end, and closes with
what changes every turn (waiting items, the turn count). So a turn re-reads only the newest
dialogue entry and the turn's own lines, and a beat change re-reads the beat's part and the
dialogue once.

Measured on the stored embedded quick run (``benchmarks/bench_embedded.py reuse``,
docs/prompt-reuse.md): with the dialogue before the beat's part, each turn re-read that part
(about 450 tokens with a decision point's reactions), 9.5k of the simulator's 21k new prompt
tokens; the output format after the session's date was re-read at every session and probe start.

Nothing here receives the PA's selection or withheld content: the dialogue is built from
:class:`~mempa_tui.ix.types.DeliveredTurn` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.ix.types import HeldItem
from mempa_tui.llm.types import ChatMessage
from mempa_tui.scripts.schema import AccumulationSession, Beat, Fact, Persona, Probe
from mempa_tui.simulator._dialogue import DialogueEntry, render_dialogue, render_held
from mempa_tui.simulator._memory import SimulatorMemory
from mempa_tui.simulator._skills import PreferenceSkill
from mempa_tui.taxonomy import attribute

__all__ = [
    "ActiveSkill",
    "SkillSide",
    "TurnPromptInput",
    "build_turn_messages",
    "fixed_system_prompt",
    "render_persona",
]

SkillSide = Literal["full", "reception", "production"]


class ActiveSkill(BaseModel):
    """A skill loaded at the current beat and the side of it that applies."""

    model_config = ConfigDict(frozen=True)

    skill: PreferenceSkill
    side: SkillSide


class TurnPromptInput(BaseModel):
    """Everything one turn's prompt is built from (all of it the simulator's own knowledge).

    Attributes:
        persona: the user.
        mode: ``accumulation`` or ``probe``.
        memory: the simulator memory (accumulation only; None in probes).
        script: the session or probe.
        beat_index: index of the current beat.
        turns_in_beat: messages already delivered in the current beat.
        released: facts released so far (never a fact of a later beat).
        skills: skills active at the current beat, with their side.
        show_decision: whether the decision point's reactions apply (decision and reaction beats).
        target: the user's current setting of the tested attribute (marks the wanted reaction).
        dialogue: the dialogue so far as the user saw it.
        pending: held items still waiting for the user's decision.
        output_format: ``tags`` (the blocks as tags) or ``json`` (one object with the same fields).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    persona: Persona
    mode: Literal["accumulation", "probe"]
    memory: SimulatorMemory | None = None
    script: AccumulationSession | Probe
    beat_index: int
    turns_in_beat: int = 0
    released: list[Fact] = Field(default_factory=list)
    skills: list[ActiveSkill] = Field(default_factory=list)
    show_decision: bool = False
    target: str | None = None
    dialogue: list[DialogueEntry] = Field(default_factory=list)
    pending: list[HeldItem] = Field(default_factory=list)
    output_format: Literal["tags", "json"] = "tags"

    @property
    def beat(self) -> Beat:
        """The current beat."""
        return self.script.beats[self.beat_index]


def render_persona(persona: Persona) -> str:
    """The persona card as prompt text (no preference matrix: the card never holds one)."""
    people = "\n".join(
        f"- {r.name}: {r.relation} ({r.context.value})" + (f"; {r.notes.strip()}" if r.notes.strip() else "")
        for r in persona.relationships
    )
    routines = "\n".join(f"- {r}" for r in persona.routines)
    hobbies = ", ".join(persona.hobbies) if persona.hobbies else "none in particular"
    return (
        f"You are {persona.name}, {persona.age}, {persona.occupation} ({persona.workplace}), "
        f"living in {persona.town}. {persona.living_arrangement.strip()}\n"
        f"People in your life:\n{people}\nYour routines:\n{routines}\nHobbies: {hobbies}\n"
        f"Personality: {persona.personality.strip()}\n"
        f"How you write messages: {persona.speech_style.strip()}\n"
        f"Background: {persona.background.strip()}"
    )


_TOOLS_RULE = (
    "You are chatting with your personal AI assistant. The assistant can read and change your "
    "email, calendar, files and other records with its tools. You never call tools yourself and "
    "never write tool calls, code or JSON: you only write messages, as a person would. The "
    "assistant has no name and is none of the people in your life: never greet it or thank it by "
    "one of their names."
)
"""Issue 12: the packaged 1.5B opened its messages to the assistant with "Hi Gideon!" (the depot
manager of User A's card) in the quick start's A-S51 and A-S14."""

_ACCUMULATION_RULES = """\
- Show what you want from the assistant only through what you ask for and how you react to what it
  actually did in its last reply. Never announce a general rule up front, never hand it a
  checklist of how to answer, and never name the kind of preference involved; leave the shape of
  each answer to the assistant.
- React only to behaviour that has actually appeared in the assistant's replies or in the actions
  that ran. Until it appears, play the current step as written.
- The first time a reply shows the behaviour your guidance is about, take a position on it in the
  same message as the task, in one or two clauses: say what you take from it when it suits you (a
  bare "fine" or "thanks" is not enough), or make the move your guidance names when it goes
  against you. Never let it pass in silence.
- Your own messages keep your usual way of writing; what you accept from the assistant is set by
  your guidance, not by how you yourself write.
- Never say "I prefer", "I'd rather", "from now on" or "next time" about the assistant's manner,
  and never mention a benchmark, a test, a script, steps or beats, a simulator, or anything about
  how this conversation is set up."""

_PROBE_RULES = """\
- You have never spoken to this assistant before. You know nothing about it and it knows nothing
  about you. Never refer to an earlier conversation: no "last time", "as usual", "like before",
  "as always", "you remembered" or anything like them.
- Talk only about the task. Never comment on the manner of a reply (its tone, length, format, how
  much it explains or asks, whether it checked with you first); respond to its content only.
- Never say "I prefer", "I'd rather", "from now on" or "next time", and never mention a benchmark,
  a test, a script, steps or beats, a simulator, or anything about how this conversation is set up."""

_PROBE_SKILL_NOTE = (
    "These lines shape only your own messages. Never ask the assistant for a way of answering: "
    "not how long to be, how many options to give, whether to explain itself, whether to check "
    "with you first, whether to tell you what it is doing, or how sure to sound. Leave the shape "
    "of every answer to the assistant."
)

#: The withheld-fact rule (Appendix C.3) is the last bullet of the mode's rules, not the last line of
#: the system message: there, right before the turn, the packaged 1.5B model took its "say you will
#: get to it in a moment" as the message to send, and opened every beat of two quick-start sessions
#: with "I'll get to it in a moment." (issue 12; replayed on the stored prompts, moving it made the
#: same model state the beat's task). The rule checks catch what is left
#: (:func:`~mempa_tui.simulator._leaks.conversation_check`).
_FACT_RULE = (
    "Use only the details given here. Some details of this task are not in front of you yet: if the "
    "assistant asks for something you do not have here, say you will get to it in a moment. Never "
    "make details up."
)


def _plain(text: str) -> str:
    """Script prose with the harness word 'beat' replaced (the schema's default uses it)."""
    return re.sub(r"\bbeat(s?)\b", r"step\1", text)


def _skills_block(inp: TurnPromptInput) -> str:
    if not inp.skills:
        return ""
    parts: list[str] = []
    for i, active in enumerate(inp.skills, 1):
        if inp.mode == "probe" or active.side == "production":
            body = active.skill.render_production()
        elif active.side == "reception":
            body = active.skill.render_reception()
        else:
            body = active.skill.render_full()
        parts.append(f"[{i}]\n{body}")
    if inp.mode == "probe":
        title = "How you write in this step"
        parts.append(_PROBE_SKILL_NOTE)
    else:
        title = "What you care about in this step"
    return f"# {title}\n" + "\n\n".join(parts)


def _decision_block(inp: TurnPromptInput) -> str:
    dp = next((b.decision_point for b in inp.script.beats if b.decision_point), None)
    if dp is None:
        return ""
    lines: list[str] = []
    if inp.show_decision and inp.mode == "accumulation":
        attr = attribute(dp.attribute)
        lines.append(
            "How you react to the way the assistant handles this (judge by what it actually did and "
            "what actually ran, not by what it says it will do):"
        )
        for setting in attr.settings:
            mark = "  (this is the way you want it)" if setting.name == inp.target else ""
            lines.append(f"- When the reply looks like this: {setting.behaviour}{mark}")
            lines.append(f"  you: {dp.reactions[setting.name]}")
    if inp.show_decision:
        lines.append(f"If the assistant falls short of the goal: {dp.falls_short}")
    return "\n".join(lines)


def _session_block(inp: TurnPromptInput) -> str:
    """The session's fixed context: its date and time, its context and its task (same every turn)."""
    script = inp.script
    return "\n".join([
        "# Today's conversation",
        f"It is {script.starts_at:%A %d %B %Y, %H:%M}. This is a {script.context.value} matter.",
        f"Task: {script.task}",
    ])


def _position_block(inp: TurnPromptInput) -> str:
    """Where the user is now: the finished goals, the current beat, released facts, reactions."""
    beat = inp.beat
    lines: list[str] = []
    done = inp.script.beats[: inp.beat_index]
    if done:
        lines.append("Already behind you in this conversation:")
        lines += [f"- {b.goal}" for b in done]
    lines += [
        "Where you are now:",
        f"- Goal: {beat.goal}",
        f"- What you want to say or ask: {beat.conveys}",
        f"- This starts: {_plain(beat.starts_when)}",
    ]
    if inp.released:
        lines.append("Details you have at hand:")
        lines += [f"- {f.text}" for f in inp.released]
    decision = _decision_block(inp)
    if decision:
        lines.append(decision)
    return "\n".join(lines)


def _consent_format(inp: TurnPromptInput) -> str:
    """How to write the consent decisions (only while items wait for the user; per turn)."""
    if not inp.pending:
        return ""
    if inp.output_format == "json":
        return (
            'Also add this field to your JSON object:\n'
            '- "consent_decisions": private: an object with one entry per waiting item, its id '
            'mapped to "approve" or "deny"; your message must agree with these decisions'
        )
    ids = "\n".join(f"{h.id}: approve" for h in inp.pending[:1]) + "\n..."
    return (
        "Also write this block, before <message>:\n"
        "<consent_decisions>\n"
        f"{ids}\n"
        "</consent_decisions>   (private: one line per waiting item, approve or deny; your "
        "message must agree with these decisions)"
    )


def _output_block_json() -> str:
    return (
        "# How to write your turn\n"
        "Reply with one JSON object and nothing else, with these fields:\n"
        '- "factual_check": private: any factual mistake in the assistant\'s last reply (wrong '
        "person, date, an action it claims that did not run), or 'none'\n"
        '- "turn_assessment": private: "stay", "advance" or "done" - has the assistant\'s latest '
        "reply achieved the goal of where you are now? advance = yes, move on; done = yes, and the "
        "whole task is finished; stay = not yet. On your first message for a goal, write stay.\n"
        '- "message": what you say to the assistant; only this is sent, so keep private notes '
        "out of it."
    )


def _output_block(inp: TurnPromptInput) -> str:
    """The turn's output format (fixed for the session; the consent part is per turn)."""
    if inp.output_format == "json":
        return _output_block_json()
    return (
        "# How to write your turn\n"
        "Write exactly these blocks and nothing else:\n"
        "<factual_check>private: any factual mistake in the assistant's last reply (wrong person, "
        "date, an action it claims that did not run), or 'none'</factual_check>\n"
        "<turn_assessment>stay, advance or done</turn_assessment>   (private: has the assistant's "
        "latest reply achieved the goal of where you are now? advance = yes, move on; done = yes, "
        "and the whole task is finished; stay = not yet. On your first message for a goal, "
        "write stay.)\n"
        "<message>what you say to the assistant; only this is sent</message>\n"
        "Only the text inside <message> reaches the assistant; keep private notes out of it."
    )


def fixed_system_prompt(inp: TurnPromptInput) -> str:
    """The part of the prompt that stays the same for every turn of one session or probe.

    In this order: the persona card, the no-tools rule and the output format (D.1), the same for
    every session and probe of the user; the ground rules (D.4 'Prompt rules'), the same for every
    session or every probe; the simulator memory (accumulation; it changes only between sessions,
    Appendix D.3); the session's date, context and task. So consecutive sessions share all but
    the memory and the session's own lines as a prompt-cache prefix. Nothing that moves with the
    beat, the released facts, the waiting items or the turn count is in it, so a prompt cache
    reuses it on every turn.
    """
    sections = [render_persona(inp.persona), _TOOLS_RULE, _output_block(inp)]
    if inp.mode == "accumulation":
        sections.append("# How you show what you want\n" + _ACCUMULATION_RULES + "\n- " + _FACT_RULE)
        sections.append("# Your memory\n" + (inp.memory or SimulatorMemory()).render())
    else:
        sections.append("# Ground rules\n" + _PROBE_RULES + "\n- " + _FACT_RULE)
    sections.append(_session_block(inp))
    return "\n\n".join(sections)


def build_turn_messages(
    inp: TurnPromptInput, *, rewrites: Sequence[tuple[str, str]] = ()
) -> list[ChatMessage]:
    """The chat messages of one simulator turn.

    Args:
        inp: the prompt inputs.
        rewrites: ``(rejected reply, problem note)`` for each rejected attempt of this turn, in
            order. Their notes (each distinct note once) go at the end of the user message,
            before the request to write the turn; the rejected replies themselves are not shown.
            Issue 12, replayed with ``benchmarks/simulator_replay.py`` on the packaged 1.5B model:
            with the rejected reply given back as an assistant turn, the model wrote it again
            word for word on every rewrite and A-S14 ended invalid at a beat change.

    Returns:
        ``[system, user]``. The system message is
        :func:`fixed_system_prompt`, identical on every turn of a session. The user message opens
        with what is fixed for the current beat: its active skills (Appendix D.2) and where the
        user is in the script with its released facts and reactions (C.3, D.2); then the dialogue
        so far, which only grows at its end from turn to turn; then what changes every turn: the
        waiting items with the consent format, and the turn count. So consecutive turns of a beat
        share the system message, the beat's part and the dialogue up to the newest entry as a
        prompt-cache prefix, and a rewrite shares the whole prompt up to its notes.

        On the first message of a beat after the first, the turn-count line names the new goal and
        what the user says for it (``Beat.goal``, ``Beat.conveys``), right after the dialogue:
        the 1.5B model otherwise wrote its previous message again at a beat change (issue 12:
        A-S14 and A-S51 of the quick start were discarded for it). Those lines are in the beat's
        part already; repeating them here costs about 50 prompt tokens at each beat change.
    """
    system = fixed_system_prompt(inp)
    user: list[str] = []
    skills = _skills_block(inp)
    if skills:
        user.append(skills)
        user.append("")
    user.append(_position_block(inp))
    user.append("")
    user += ["The conversation so far:", render_dialogue(inp.dialogue)]
    if inp.pending:
        user.append("")
        user.append("Items waiting for your decision:")
        user += [render_held(h) for h in inp.pending]
        user.append(_consent_format(inp))
    user.append("")
    beat = inp.beat
    if inp.turns_in_beat == 0 and inp.beat_index > 0:
        conveys = " ".join(beat.conveys.split())
        user.append(f"(This is your first message for the goal where you are now: {beat.goal} In it: {conveys})")
    elif inp.turns_in_beat == 0:
        user.append("(This is your first message for the goal where you are now.)")
    else:
        user.append(
            f"(You have sent {inp.turns_in_beat} message(s) for the goal where you are now; "
            f"at most {beat.max_turns}.)"
        )
    notes = list(dict.fromkeys(note for _draft, note in rewrites))
    for note in notes:
        user.append(f"That turn was not sent: {note}.")
    user.append("Write the whole turn again in the same format." if notes else "Write your next turn now.")
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content="\n".join(user))]
