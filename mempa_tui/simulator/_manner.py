"""Manner requests: a user message that asks the assistant for a way of replying (paper Table 8
condition 3, Appendix C.3 and D.2).

At a decision point the PA has to choose a setting from what it remembers. A user message that
asks for the setting outright ("just the bottom line", "what are my options and how do they
compare", "check with me first") lets a PA with no memory pick it from the message alone, so the
No Memory reference scores too high and every memory's gain over it shrinks. In probes the user
gives no feedback on manner at all (D.2: only the production side of a skill applies).

:func:`find_manner_requests` is a deterministic detector over a message: each pattern below is
tied to the attribute whose setting it would give away. The simulator uses it as a message check
(in probes on every turn, in accumulation sessions on the message that opens the decision point,
for the tested attribute) and a lint test runs it over the production side of every skill.

The patterns aim at requests about the assistant's own reply ("tell me", "keep it short",
"check with me"); an instruction about a text the user sends to someone else ("a short note to
Tom") is task content and is not matched on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

__all__ = [
    "MANNER_PROBLEM",
    "MANNER_PATTERNS",
    "MannerRequest",
    "find_manner_requests",
    "manner_problem",
    "spoken_form",
]

#: Every problem note from this check starts with this text (the simulator counts them by it).
MANNER_PROBLEM = "the message asks the assistant for a way of replying"

_ME = r"(?:me|us)"
_ANS = r"(?:answer|version|rundown)"

#: attribute key -> (what kind of manner the pattern asks for, regular expressions on the
#: lower-cased message with straight apostrophes).
MANNER_PATTERNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "verbosity": (
        "how long the reply is",
        (
            r"\bbottom line\b",
            r"\b(?:get|cut|come) (?:straight )?to the (?:point|chase)\b",
            r"\b(?:keep|make) (?:it|this|that|things|your " + _ANS + r"s?) (?:short|brief|quick|concise|tight|snappy)\b",
            r"\b(?:give " + _ME + r"|just|only|want|need) (?:a |the )?(?:short|brief|quick|one[- ]line|concise|long|full|detailed) " + _ANS + r"\b",
            r"\b(?:tell|give|answer|explain|sum|put|say)\b[\w' ]{0,20}?\bin (?:a|one) (?:word|line|sentence)\b",
            r"\b(?:tell|give|answer|explain|sum|put|say)\b[\w' ]{0,20}?\bin (?:a few|as few|two or three) words\b|\bin a nutshell\b",
            r"\b(?:just|only) (?:give " + _ME + r" |tell " + _ME + r" )?the (?:answer|headline|gist|essentials|short of it)\b",
            r"\b(?:skip|spare " + _ME + r"|leave out|without) the (?:background|preamble|details|extras|fluff|waffle)\b",
            r"\b(?:tell|give|explain to) " + _ME + r" (?:the )?(?:background|surrounding picture|full picture|whole picture|context)\b",
            r"\b(?:in (?:full |more |great )?detail|at length|in depth)\b",
            r"\bwhat (?:sits|lies) behind (?:it|that|the answer)\b",
        ),
    ),
    "solution_breadth": (
        "how many options to give",
        (
            r"\bwhat (?:are|were) (?:my|the|our|your) (?:options|alternatives|choices|possibilities)\b",
            r"\bwhat (?:my|the|our) (?:options|alternatives|choices|possibilities) (?:are|were)\b",
            r"\b(?:give|show|list|lay out|offer|suggest|tell) (?:" + _ME + r" )?(?:a few |some |several |two |three |the |your |all the |different )"
            r"(?:options|alternatives|choices|possibilities)\b",
            r"\bhow (?:do |would |does )?(?:they|these|those|the options|the two|the alternatives|the possibilities) (?:compare|stack up)\b",
            r"\b(?:pros and cons|trade-?offs?)\b",
            r"\b(?:just |only )?(?:one|a single) (?:option|recommendation|suggestion|choice)\b",
            r"\b(?:just|only) (?:pick|choose|recommend) one\b",
        ),
    ),
    "reasoning_visibility": (
        "whether to show the reasoning",
        (
            r"\b(?:explain|show|tell " + _ME + r"|walk " + _ME + r" through|give " + _ME + r") (?:your|the) (?:reasoning|thinking|logic|working|evidence|rationale)\b",
            r"\bwhat (?:is|was|will|would) (?:it|that|this|your (?:answer|pick|choice|recommendation)) (?:be )?based on\b",
            r"\bwhat (?:you're|you are|you'll be|it's|it is) basing (?:it|that|this) on\b",
            r"\bwhat (?:[\w']+ ){1,4}be based on\b",
            r"\bhow (?:did|do|will|would) you (?:decide|choose|pick|work (?:it|that) out|get there|arrive at)\b",
            r"\bwhy (?:you|you'd|you would) (?:chose|choose|picked|pick|recommend|suggest)\b",
            r"\b(?:no|skip the|spare " + _ME + r" the|without the) (?:explanation|reasoning|working|justification)s?\b",
            r"\b(?:just |only )?(?:the )?(?:outcome|verdict),? not (?:the )?(?:working|reasoning)\b",
        ),
    ),
    "uncertainty_expression": (
        "how sure the reply should say it is",
        (
            r"\bhow (?:sure|certain|confident|firm|solid|reliable) (?:are you|you are|is (?:it|that|this)|it is|that is|the (?:information|info|data|figure|answer))\b",
            r"\b(?:confidence|certainty) (?:levels?|ratings?|scores?)\b",
            r"\b(?:no|without|skip the|spare " + _ME + r" the) (?:hedging|caveats|qualifiers)\b",
            r"\b(?:don't|do not) hedge\b",
        ),
    ),
    "guidance_level": (
        "whether to walk the user through",
        (
            r"\bwalk " + _ME + r" through\b",
            r"\bstep[- ]by[- ]step\b",
            r"\bwhat (?:do i|should i|to) do first\b",
            r"\bwhere (?:do i|should i|to) (?:start|begin)\b",
            r"\bhow (?:do i|should i|to) go about\b",
            r"\b(?:no need to|don't|do not) (?:explain|define) (?:the )?(?:terms|basics|jargon|steps)\b",
        ),
    ),
    "process_visibility": (
        "whether to narrate its work",
        (
            r"\b(?:keep|let) " + _ME + r" (?:posted|updated|in the loop|informed)\b|\bkept (?:posted|updated|in the loop)\b",
            r"\btell " + _ME + r" (?:what|each thing|every step|everything) (?:you're|you are|you) (?:doing|do|did|check|checked|look at|looked at)\b",
            r"\b(?:talk|walk) " + _ME + r" through what you\b",
            r"\bwhat you (?:checked|looked at|did) along the way\b",
            r"\bhow (?:you|you'll|you will|it) go(?:es)? about\b",
            r"\blet " + _ME + r" know when (?:you(?:'re| are)? )?(?:done|finished|start|starting|it's done|it is done)\b",
            r"\b(?:no need to|don't|do not) (?:tell|narrate|explain|report) (?:" + _ME + r" )?(?:what|how) you\b",
            r"\b(?:just|only) (?:the )?result\b",
        ),
    ),
    "autonomy_level": (
        "whether to check back before acting",
        (
            r"\b(?:check|confirm) with " + _ME + r"\b",
            r"\bask " + _ME + r" (?:first|before)\b",
            r"\b(?:come|get|report) back to " + _ME + r"\b",
            r"\b(?:run|clear) (?:it|this|that|them|everything|anything) (?:by|past|with) " + _ME + r"\b",
            r"\bwait for (?:my|our) (?:ok|okay|go-ahead|approval|say-so|sign-off)\b",
            r"\b(?:don't|do not) (?:send|book|change|do|submit) anything (?:until|before|without)\b",
            r"\b(?:without|no need to|don't need to|do not need to) (?:asking|ask|checking|check)(?: with)? " + _ME + r"\b",
            r"\b(?:just |simply )?(?:sort|deal with|handle) it (?:all )?(?:yourself|for " + _ME + r" without)\b",
        ),
    ),
    "information_elicitation": (
        "how to ask for missing details",
        (
            r"\bask " + _ME + r" (?:anything|whatever|what) you need\b",
            r"\b(?:ask|list) (?:" + _ME + r" )?(?:all )?(?:your|the) questions (?:at once|together|in one go|up front)\b",
            r"\b(?:one|a single) question at a time\b",
            r"\b(?:fill in|use) (?:the )?(?:defaults|whatever makes sense|your best guess|sensible defaults)\b",
            r"\b(?:don't|do not|no need to) ask " + _ME + r"\b",
        ),
    ),
    "topic_management": (
        "how to take several topics",
        (
            r"\b(?:one|each) (?:thing|topic|item|question) at a time\b",
            r"\b(?:handle|do|sort|take|deal with|tackle|answer) (?:them|these|those|it all|everything|all of (?:it|them)|all (?:three|two|four)) "
            r"(?:one at a time|in turn|one by one|at once|in one go|together)\b",
            r"\bunder (?:separate |clear )?(?:headings|labels)\b",
        ),
    ),
    "task_expansion": (
        "how far beyond the request to go",
        (
            r"\b(?:only|just) (?:do|handle|touch) (?:what|the things?|the items?) i (?:asked|named|mentioned|listed)\b",
            r"\b(?:and|also|plus) anything else (?:that )?(?:needs|you think|you notice|related)\b",
            r"\b(?:don't|do not) (?:do|touch|change|add) anything else\b",
        ),
    ),
    "proactive_outreach": (
        "whether to get in touch unprompted",
        (
            r"\b(?:let " + _ME + r" know|tell " + _ME + r"|ping " + _ME + r"|alert " + _ME + r"|notify " + _ME + r"|warn " + _ME + r"|give " + _ME
            + r" a (?:heads[- ]up|shout)) (?:if|when|as soon as)\b[\w' ]{0,30}?\b(?:changes?|moves?|comes? in|arrives?|falls? due|"
            r"happens?|shifts?|updates?|lands?)\b",
            r"\b(?:alert|notify|ping|warn) " + _ME + r"\b|\bto be (?:alerted|notified|pinged|warned)\b",
            r"\bkeep an eye on (?:it|this|that|them) for " + _ME + r"\b",
            r"\b(?:don't|do not|no need to) (?:alert|notify|ping|message|contact) " + _ME + r"\b",
        ),
    ),
    "capability_boundary": (
        "what to do when something is blocked",
        (
            r"\bif (?:you can't|you cannot|that doesn't work|it doesn't work|that fails|it fails)\b.{0,40}\b(?:try|find) (?:another|some other|a different) way\b",
            r"\bif (?:you can't|you cannot|that doesn't work|it doesn't work|that fails|it fails)\b.{0,40}\b(?:tell " + _ME + r"|let " + _ME
            + r" know|i'll do it|i will do it|hand it back)\b",
        ),
    ),
    "emotional_engagement": (
        "whether to respond to feelings",
        (
            r"\b(?:no|skip the|spare " + _ME + r" the|without the) (?:sympathy|pep talk|feelings)\b",
            r"\b(?:just|only) (?:the )?facts\b",
        ),
    ),
    "tone_formality": (
        "what tone to reply in",
        (
            r"\b(?:talk|write|speak) to " + _ME + r" (?:normally|properly|formally|casually|plainly|like a (?:friend|person))\b",
            r"\b(?:no need to be|don't be|do not be) so (?:formal|stiff|chatty|casual)\b",
            r"\bwhat (?:do |would )?you (?:suggest|propose)\b|\bwhat you(?:'d| would)? (?:suggest|propose)\b",
        ),
    ),
}

#: Formatting asks that give away no single attribute but are still a way of replying.
_FORMAT: tuple[str, ...] = (
    r"\bbullet(?:ed)? (?:points|list)\b",
    r"\b(?:as|in) a (?:numbered |short |bulleted )?list\b",
    r"\bnumbered (?:steps|list)\b",
)

_COMPILED: dict[str, tuple[str, tuple[re.Pattern[str], ...]]] = {
    key: (kind, tuple(re.compile(p) for p in patterns)) for key, (kind, patterns) in MANNER_PATTERNS.items()
}
_FORMAT_COMPILED = tuple(re.compile(p) for p in _FORMAT)


class MannerRequest(BaseModel):
    """One manner request found in a message.

    Attributes:
        attribute: the attribute whose setting the request would give away (``format`` for a
            formatting ask tied to none).
        kind: what the request asks for, in words (e.g. ``how long the reply is``).
        phrase: the matched text, lower-cased.
    """

    model_config = ConfigDict(frozen=True)

    attribute: str
    kind: str
    phrase: str


def _norm(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").lower().split())


def find_manner_requests(text: str, attributes: Iterable[str] | None = None) -> list[MannerRequest]:
    """The manner requests in ``text``, at most one per attribute, in attribute order.

    Args:
        text: a candidate user message (any case; curly apostrophes are straightened).
        attributes: attribute keys to look for; None for every attribute and the formatting asks.

    Returns:
        One :class:`MannerRequest` per attribute with a match; empty when the text asks for no
        manner of reply.

    Raises:
        KeyError: an attribute key that has no patterns (the message lists the known keys).
    """
    norm = _norm(text)
    keys = list(MANNER_PATTERNS) if attributes is None else list(attributes)
    found: list[MannerRequest] = []
    for key in keys:
        if key not in _COMPILED:
            raise KeyError(f"no manner-request patterns for {key!r}; known: {', '.join(MANNER_PATTERNS)}")
        kind, patterns = _COMPILED[key]
        for pattern in patterns:
            match = pattern.search(norm)
            if match:
                found.append(MannerRequest(attribute=key, kind=kind, phrase=match.group(0)))
                break
    if attributes is None:
        for pattern in _FORMAT_COMPILED:
            match = pattern.search(norm)
            if match:
                found.append(MannerRequest(attribute="format", kind="how to lay the reply out", phrase=match.group(0)))
                break
    return found


def manner_problem(found: MannerRequest) -> str:
    """The note the simulator gets back for one manner request (starts with :data:`MANNER_PROBLEM`)."""
    return (
        f"{MANNER_PROBLEM} ({found.kind}: '{found.phrase}'); ask only about the task itself and "
        "leave how to answer entirely to the assistant"
    )


def spoken_form(instruction: str) -> str:
    """A skill line turned from instruction to speech, so the detector can read it.

    Skill lines speak to the user ("you") about the assistant ("it"); a message speaks to the
    assistant ("you") about the user ("me"). ``Ask it to come back to you`` becomes ``ask you to
    come back to me``. Used by the skills lint only; rough on purpose (pronouns only).
    """
    text = _norm(instruction)
    text = re.sub(r"\bthe assistant's\b", "zzpa_pos", text)
    text = re.sub(r"\b(?:the assistant|it)\b", "zzpa", text)
    text = re.sub(r"\byourself\b", "myself", text)
    text = re.sub(r"\byours\b", "mine", text)
    text = re.sub(r"\byour\b", "my", text)
    text = re.sub(r"\byou\b", "me", text)
    return text.replace("zzpa_pos", "your").replace("zzpa", "you")
