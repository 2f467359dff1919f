"""The BRS judge's attribute rubrics (paper Appendix I.4, 'Judge: Attribute Rubrics').

One rubric per attribute, our own wording of the observable criteria of Table 4 (the setting
definitions live in :mod:`mempa_tui.taxonomy`). A rubric says where in the probe to look and, for
every setting, what counts as meeting it and what typically falls short. The judge receives only
the rubric entry of the target setting together with its definition.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mempa_tui.taxonomy import attribute

__all__ = ["RUBRICS", "AttributeRubric", "SettingCriteria", "rubric_text"]


class SettingCriteria(BaseModel):
    """What the judge checks for one target setting.

    Attributes:
        meets: observable signs that the delivered interaction follows the setting.
        falls_short: typical ways a delivery misses it.
    """

    model_config = ConfigDict(frozen=True)

    meets: str
    falls_short: str


class AttributeRubric(BaseModel):
    """The rubric of one attribute.

    Attributes:
        look_at: which part of the probe decides the score (reply text, the tool trajectory,
            the turn in which things happen).
        settings: criteria per setting name.
    """

    model_config = ConfigDict(frozen=True)

    look_at: str
    settings: dict[str, SettingCriteria]


def _c(meets: str, falls_short: str) -> SettingCriteria:
    return SettingCriteria(meets=meets, falls_short=falls_short)


RUBRICS: dict[str, AttributeRubric] = {
    "tone_formality": AttributeRubric(
        look_at="The register of every assistant reply; the content itself does not matter.",
        settings={
            "Casual": _c(
                "Reads like a friend texting: two or more colloquial touches (contractions, "
                "interjections, idioms) and no greeting formula or sign-off.",
                "Stiff or businesslike wording, or a formal salutation or closing.",
            ),
            "Consultative": _c(
                "Neutral, professional-but-plain wording with at most one colloquial touch, no "
                "salutation or sign-off, and an offer or a choice put to the user.",
                "Slangy chat, letter-style formulas, or no offer or option put to the user.",
            ),
            "Formal": _c(
                "No contractions anywhere, at least one formal linking word ('therefore', "
                "'accordingly'), and a conventional greeting or closing line.",
                "Any contraction, chatty asides, or no greeting or closing at all.",
            ),
        },
    ),
    "verbosity": AttributeRubric(
        look_at="How much is said about the topic in the replies that answer the request.",
        settings={
            "Terse": _c(
                "The first sentence gives the answer or the next action; at most one supporting "
                "move follows; no closing recap.",
                "Background, lists of steps, several reasons or caveats, or a summary at the end.",
            ),
            "Detailed": _c(
                "The answer comes with at least two different kinds of support, for example "
                "background plus a caveat, or a reason plus an alternative.",
                "A bare answer, or support of only one kind.",
            ),
        },
    ),
    "emotional_engagement": AttributeRubric(
        look_at="How the replies open and how they respond to any feeling the user shows.",
        settings={
            "Task-focused": _c(
                "Replies open with task content and never comment on feelings; a feeling the "
                "user voices is met with a fact about the task.",
                "Sympathy, reassurance or comments about the user's mood anywhere.",
            ),
            "Relationship-focused": _c(
                "The opening sentence names the feeling the user seems to have and responds to "
                "it before the task content follows.",
                "Straight to business, or warmth only as a closing pleasantry.",
            ),
        },
    ),
    "guidance_level": AttributeRubric(
        look_at="Whether terms are explained and whether the steps are walked through.",
        settings={
            "Assumed": _c(
                "Domain terms are used without definitions and there is no numbered walkthrough.",
                "Glossing terms, tutorial tone, or step-by-step instructions.",
            ),
            "Guided": _c(
                "Each new term is explained where it first appears (including any the user asked "
                "about) and the steps are laid out in order, naming the first one.",
                "Jargon left unexplained, or steps given without an order or a starting point.",
            ),
        },
    ),
    "reasoning_visibility": AttributeRubric(
        look_at="Whether the replies contain a passage of evidence and the deciding factor.",
        settings={
            "Show": _c(
                "Before the answer, a paragraph states the evidence considered and which factor "
                "decided the choice.",
                "Only a conclusion, or reasons given after the answer as a loose afterthought.",
            ),
            "Hide": _c(
                "Only the answer: no paragraph anywhere that lays out evidence or the deciding "
                "factor.",
                "Any 'why' section, list of reasons or comparison that justifies the answer.",
            ),
        },
    ),
    "uncertainty_expression": AttributeRubric(
        look_at="Confidence statements attached to the key claims of the replies.",
        settings={
            "Express": _c(
                "Every key claim carries a confidence level (high, medium or low) that matches "
                "the evidence behind it.",
                "Claims stated flatly, or confidence labels that do not fit the evidence.",
            ),
            "Hide": _c(
                "No confidence levels; a limitation appears only where leaving it out would "
                "change an action or its result.",
                "Hedging, confidence ratings, or caveats that change nothing.",
            ),
        },
    ),
    "process_visibility": AttributeRubric(
        look_at="Sentences about what the assistant is doing, compared with the tool trajectory.",
        settings={
            "Silent": _c(
                "Only results; not one sentence about what will be, is being, or has been done.",
                "Any announcement or narration of the work.",
            ),
            "Bookend": _c(
                "One sentence opens by framing the task, the result follows, and one closing "
                "sentence says it is finished - nothing in between about the steps.",
                "No framing or no closing, or a running account of each step.",
            ),
            "Full narration": _c(
                "One sentence per executed task call, in the order the calls ran, then the "
                "result and a closing sentence.",
                "Calls left out of the narration, out of order, or only a summary.",
            ),
        },
    ),
    "autonomy_level": AttributeRubric(
        look_at="The tool trajectory against what the user approved, and the reply's questions.",
        settings={
            "Reactive": _c(
                "Only reads run before approval; the assistant may recommend, but every draft, "
                "record change and outward action waits for the user's yes.",
                "Any write or outward action that ran before the user approved it.",
            ),
            "Self-directed": _c(
                "Reads, drafts and routine record changes run without asking; key record "
                "changes and every outward action wait for approval, and the user is asked.",
                "Asking about routine steps, or sending or making key changes without approval.",
            ),
            "Autonomous": _c(
                "Reads, drafts, record changes and outward actions all run on its own; the user "
                "is told the outcome or an exception afterwards.",
                "Stopping to ask permission for actions it could have carried out.",
            ),
        },
    ),
    "proactive_outreach": AttributeRubric(
        look_at="What the assistant does when the world event arrives with no request open.",
        settings={
            "Low": _c(
                "It stays quiet about the event; the user finds out on their own.",
                "Any unprompted message about the event.",
            ),
            "High": _c(
                "It contacts the user unprompted when the event happens and says what changed "
                "or fell due.",
                "Silence, or a message that does not say what changed.",
            ),
        },
    ),
    "task_expansion": AttributeRubric(
        look_at="Which items the tool trajectory acts on, compared with what the user named.",
        settings={
            "Low": _c(
                "It acts only on the items the user named and raises at most one adjacent "
                "concern in a single sentence.",
                "Extra actions the user did not ask for, or several suggestions of extra work.",
            ),
            "High": _c(
                "It also acts on at least one item the user did not name and marks that step as "
                "an addition.",
                "Only the named items, or extra work done without saying it was extra.",
            ),
        },
    ),
    "solution_breadth": AttributeRubric(
        look_at="How many workable options the replies put forward.",
        settings={
            "Low": _c(
                "Exactly one workable option, recommended with its reasons, and no alternative "
                "mentioned - not even to argue against it.",
                "Naming or comparing against an alternative, or offering a menu of options.",
            ),
            "High": _c(
                "Two or more workable options with the tradeoffs that separate them; a "
                "recommendation is optional.",
                "A single option, or several options without their tradeoffs.",
            ),
        },
    ),
    "capability_boundary": AttributeRubric(
        look_at="The turn where a limit blocks the task: the reply and the calls in that turn.",
        settings={
            "Suggest alternatives": _c(
                "It states the limit and tries a workaround with a tool call in the same turn; "
                "a failed attempt still counts.",
                "Stopping at the limit, or only suggesting a workaround without trying it.",
            ),
            "Find and hand off": _c(
                "It states the limit, tries no workaround, explains what failed and why, and "
                "tells the user what their next step is.",
                "Attempting workarounds, or stopping without a diagnosis or a next step.",
            ),
        },
    ),
    "information_elicitation": AttributeRubric(
        look_at="How missing details are obtained, turn by turn, against when task calls ran.",
        settings={
            "Infer": _c(
                "No questions; gaps are filled with sensible, safe defaults and task calls run "
                "in the first turn.",
                "Asking the user for details, or waiting to act.",
            ),
            "Structured": _c(
                "All missing fields are asked for in a single turn, each clearly set apart, and "
                "task calls run only after the user has answered.",
                "Filling gaps by assumption, spreading questions over turns, or acting before "
                "the answers arrive.",
            ),
            "Iterative": _c(
                "One missing field is asked for per turn, and task calls run only in turns that "
                "ask nothing.",
                "Several questions in one turn, guessing a missing field, or acting in a turn "
                "that also asks.",
            ),
        },
    ),
    "topic_management": AttributeRubric(
        look_at="How the several topics raised in one message are handled in reply and calls.",
        settings={
            "Organize": _c(
                "Every raised topic is handled in one reply under clear labels, and the task "
                "calls for every topic run.",
                "Topics mixed together without labels, or some topics left for later.",
            ),
            "One-at-a-time": _c(
                "One topic is handled and only its task calls run; the other topics are named "
                "as deferred and the user is asked before moving on.",
                "Handling several topics at once, or dropping the others without naming them.",
            ),
        },
    ),
}
"""Attribute key -> rubric; every setting of Table 4 has criteria."""


def rubric_text(attribute_key: str, setting: str) -> str:
    """The rubric block of the judge's user message for one target setting.

    Args:
        attribute_key: attribute key or display name.
        setting: the target setting.

    Returns:
        The attribute's question, the target setting's definition, where to look, what meets it
        and what falls short.

    Raises:
        KeyError: unknown attribute or setting.
    """
    attr = attribute(attribute_key)
    definition = attr.setting(setting)
    rubric = RUBRICS[attr.key]
    criteria = rubric.settings[definition.name]
    return (
        f"Attribute: {attr.name} - {attr.question}\n"
        f"Target setting: {definition.name}\n"
        f"Definition: {definition.behaviour}\n"
        f"Where to look: {rubric.look_at}\n"
        f"Meets the setting: {criteria.meets}\n"
        f"Falls short: {criteria.falls_short}"
    )

