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
Tom") is task content and is not matched on purpose, and neither are plain task questions that
name no manner ("what should I do?", "what do you suggest?"). A regular-expression detector
misses paraphrases; the LLM message checker's manner question covers those where it is on.
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

#: Shorthands inside the patterns below: ``<me>`` the user as object, ``<ans>`` a word for the
#: reply, ``<if_blocked>`` the opening of a sentence about a blocked step.
_TOKENS = {
    "<me>": r"(?:me|us)",
    "<ans>": r"(?:answer|version|rundown)",
    "<if_blocked>": r"if (?:you can't|you cannot|that doesn't work|it doesn't work|that fails|it fails)\b.{0,40}",
}


def _expand(pattern: str) -> str:
    for token, regex in _TOKENS.items():
        pattern = pattern.replace(token, regex)
    return pattern


#: attribute key -> (what kind of manner the patterns ask for, regular expressions on the
#: lower-cased message with straight apostrophes and single spaces).
MANNER_PATTERNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "verbosity": ("how long the reply is", (
        r"\bbottom line\b",
        r"\b(?:get|cut|come) (?:straight )?to the (?:point|chase)\b",
        r"\b(?:keep|make) (?:it|this|that|things|your <ans>s?) (?:short|brief|quick|concise|tight|snappy)\b",
        r"\b(?:give <me>|just|only|want|need) (?:a |the )?"
        r"(?:short|brief|quick|one[- ]line|concise|long|full|detailed) <ans>\b",
        r"\b(?:tell|give|answer|explain|sum|put|say)\b[\w' ]{0,20}?\bin (?:a|one) (?:word|line|sentence)\b",
        r"\b(?:tell|give|answer|explain|sum|put|say)\b[\w' ]{0,20}?\bin (?:a few|as few|two or three) words\b",
        r"\bin a nutshell\b",
        r"\b(?:just|only) (?:give <me> |tell <me> )?the (?:answer|headline|gist|essentials|short of it)\b",
        r"\b(?:skip|spare <me>|leave out) the (?:background|preamble|details|extras|fluff|waffle)\b",
        r"\b(?:tell|give|explain to) <me> (?:the )?(?:background|surrounding picture|full picture|whole picture)\b",
        r"\b(?:tell|explain|give|go through|describe|cover|talk)\b[\w' ]{0,20}?"
        r"\b(?:in (?:full |more |great )?detail|at length|in depth)\b",
        r"\bwhat (?:sits|lies) behind (?:it|that|the answer)\b",
    )),
    "solution_breadth": ("how many options to give", (
        r"\bwhat (?:are|were) (?:my|the|our|your) (?:options|alternatives|choices|possibilities)\b",
        r"\bwhat (?:my|the|our) (?:options|alternatives|choices|possibilities) (?:are|were)\b",
        r"\b(?:give|show|list|lay out|offer|suggest|tell) (?:<me> )?"
        r"(?:a few |some |several |two |three |the |your |all the |different )"
        r"(?:options|alternatives|choices|possibilities)\b",
        r"\bhow (?:do |would |does )?(?:they|these|those|the options|the two|the alternatives|the possibilities) "
        r"(?:compare|stack up)\b",
        r"\b(?:what are|what're|give <me>|tell <me>|list|lay out|with) (?:the |their |any )?"
        r"(?:pros and cons|trade-?offs?)\b",
        r"\b(?:just|only|give <me>) (?:one|a single) (?:option|recommendation|suggestion|choice)\b",
        r"\b(?:just|only) (?:pick|choose|recommend) one\b",
    )),
    "reasoning_visibility": ("whether to show the reasoning", (
        r"\b(?:explain|show|tell <me>|walk <me> through|give <me>) (?:your|the) "
        r"(?:reasoning|thinking|logic|working|evidence|rationale)\b",
        r"\bwhat (?:is|was|will|would) (?:it|that|this|your (?:answer|pick|choice|recommendation)) "
        r"(?:be )?based on\b",
        r"\bwhat (?:[\w']+ ){1,4}be based on\b",
        r"\bwhat (?:you're|you are|you'll be|it's|it is) basing (?:it|that|this) on\b",
        r"\bhow (?:did|do|will|would) you (?:decide|choose|pick|work (?:it|that) out|get there|arrive at)\b",
        r"\bwhy (?:you|you'd|you would) (?:chose|choose|picked|pick|recommend|suggest)\b",
        r"\b(?:no|skip the|spare <me> the|without the) (?:explanation|reasoning|working|justification)s?\b"
        r"(?! (?:party|parties|group|day|week|hours?|lunch))",
        r"\b(?:outcome|verdict),? not (?:the )?(?:working|reasoning)\b",
    )),
    "uncertainty_expression": ("how sure the reply should say it is", (
        r"\bhow (?:sure|certain|confident|firm|solid|reliable) "
        r"(?:are you|you are|is (?:it|that|this)|it is|that is|the (?:information|info|data|figure|answer))\b",
        r"\b(?:confidence|certainty) (?:levels?|ratings?|scores?)\b",
        r"\b(?:no|skip the|spare <me> the) (?:hedging|caveats|qualifiers)\b",
        r"\b(?:don't|do not) hedge\b",
        r"\b(?:definite|certain|sure),? or (?:a guess|guesswork|a hunch)\b",
    )),
    "guidance_level": ("whether to walk the user through", (
        r"\bwalk <me> through\b",
        r"\bstep[- ]by[- ]step\b",
        r"\bwhat (?:do i|should i|to)(?: actually)? do first\b",
        r"\bwhere (?:do i|should i|to) (?:start|begin)\b",
        r"\bhow (?:do i|should i|to) go about\b",
        r"\b(?:no need to|don't|do not) (?:explain|define) (?:the )?(?:terms|basics|jargon|steps)\b",
    )),
    "process_visibility": ("whether to narrate its work", (
        r"\b(?:keep|let) <me> (?:posted|updated|in the loop|informed)\b",
        r"\bkept (?:posted|updated|in the loop)\b",
        r"\btell <me> (?:what|each thing|every step|everything) (?:you're|you are|you) "
        r"(?:doing|do|did|check|checked|look at|looked at)\b",
        r"\b(?:talk|walk) <me> through what you\b",
        r"\bwhat you (?:checked|looked at|did) along the way\b",
        r"\bhow (?:you|you'll|you will|it) go(?:es)? about\b",
        r"\blet <me> know when (?:you(?:'re| are)? )?(?:done|finished|start|starting|it's done|it is done)\b",
        r"\b(?:no need to|don't|do not) (?:tell|narrate|explain|report) (?:<me> )?(?:what|how) you\b",
        r"\b(?:just|only) (?:the )?result\b",
        r"\b(?:tell|narrate|explain|report) (?:<me> )?(?:every|each) (?:step|thing you do)\b",
    )),
    "autonomy_level": ("whether to check back before acting", (
        r"\b(?:check|confirm) with <me>\b",
        r"\bask <me> (?:first|before)\b",
        r"(?<!needs )(?<!has )(?<!have )\b(?:and|then|to|please|just) (?:come|get|report) back to <me>\b",
        r"\b(?:come|get|report) back to <me> (?:first|before|with|when|once|for)\b",
        r"\b(?:run|clear) (?:it|this|that|them|everything|anything) (?:by|past|with) <me>\b",
        r"\b(?:run|clear) [\w' ]{1,25}? (?:by|past) <me>\b",
        r"\b(?:don't|do not|no) need (?:my|our) (?:ok|okay|go-ahead|approval|say-so|sign-off)\b",
        r"\bwait for (?:my|our) (?:ok|okay|go-ahead|approval|say-so|sign-off)\b",
        r"\b(?:don't|do not) (?:send|book|change|do|submit) anything (?:until|before|without)\b",
        r"\b(?:without|no need to|don't need to|do not need to) (?:asking|ask|checking|check)(?: with)? <me>\b",
        r"\b(?:sort|deal with|handle) it (?:all )?(?:yourself|for <me> without)\b",
    )),
    "information_elicitation": ("how to ask for missing details", (
        r"\bask <me> (?:anything|whatever|what) you need\b",
        r"\b(?:ask|list) (?:<me> )?(?:all )?(?:your|the) questions (?:at once|together|in one go|up front)\b",
        r"\b(?:one|a single) question at a time\b",
        r"\b(?:fill in|use) (?:the )?(?:defaults|whatever makes sense|your best guess|sensible defaults)\b",
        r"\b(?:don't|do not|no need to) ask <me>\b",
        r"\bask (?:it|them|everything) all (?:now|at once|up front|in one go)\b",
        r"\bask <me> the rest\b",
    )),
    "topic_management": ("how to take several topics", (
        r"\b(?:one|each) (?:thing|topic|item|question) at a time\b",
        r"\b(?:handle|do|sort|take|deal with|tackle|answer) "
        r"(?:them|these|those|it all|everything|all of (?:it|them)|all (?:three|two|four)) "
        r"(?:one at a time|in turn|one by one|at once|in one go|together)\b",
        r"\bunder (?:separate |clear )?(?:headings|labels)\b",
    )),
    "task_expansion": ("how far beyond the request to go", (
        r"\b(?:only|just) (?:do|handle|touch) (?:what|the things?|the items?) i (?:asked|named|mentioned|listed)\b",
        r"\b(?:and|also|plus) anything else (?:that )?(?:needs|you think|you notice|related)\b",
        r"\b(?:don't|do not) (?:do|touch|change|add) anything else\b",
    )),
    "proactive_outreach": ("whether to get in touch unprompted", (
        r"\b(?:let <me> know|tell <me>|ping <me>|alert <me>|notify <me>|warn <me>|give <me> a (?:heads[- ]up|shout)) "
        r"(?:if|when|as soon as)\b[\w' ]{0,30}?"
        r"\b(?:changes?|moves?|comes? in|arrives?|falls? due|happens?|shifts?|updates?|lands?)\b",
        r"\b(?:alert|notify|ping|warn) <me>\b",
        r"\bto be (?:alerted|notified|pinged|warned)\b",
        r"\bkeep an eye on (?:it|this|that|them) for <me>\b",
        r"\b(?:don't|do not|no need to) (?:alert|notify|ping|message|contact) <me>\b",
    )),
    "capability_boundary": ("what to do when something is blocked", (
        r"\b<if_blocked>\b(?:try|find) (?:another|some other|a different) way\b",
        r"\b<if_blocked>\b(?:tell <me>|let <me> know|i'll do it|i will do it|hand it back)\b",
    )),
    "emotional_engagement": ("whether to respond to feelings", (
        r"\b(?:no|skip the|spare <me> the|without the) (?:sympathy|pep talk)\b",
        r"\b(?:just|only) (?:the )?facts\b",
    )),
    "tone_formality": ("what tone to reply in", (
        r"\b(?:talk|write|speak) to <me> (?:normally|properly|formally|casually|plainly|like a (?:friend|person))\b",
        r"\b(?:no need to be|don't be|do not be) so (?:formal|stiff|chatty|casual)\b",
        r"\bjust talk to <me>\b",
    )),
}

#: Formatting asks that give away no single attribute but are still a way of replying.
_FORMAT: tuple[str, ...] = (
    r"\bbullet(?:ed)? (?:points|list)\b",
    r"\b(?:as|in) a (?:numbered |short |bulleted )?list\b",
    r"\bnumbered (?:steps|list)\b",
)

_COMPILED: dict[str, tuple[str, tuple[re.Pattern[str], ...]]] = {
    key: (kind, tuple(re.compile(_expand(p)) for p in patterns)) for key, (kind, patterns) in MANNER_PATTERNS.items()
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
