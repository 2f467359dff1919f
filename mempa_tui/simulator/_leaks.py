"""Rule-based leak checks on a candidate simulator message (paper Appendix D.4 'Rule-based checks').

Before a message reaches the PA it must not carry text from the simulator's instructions or
private notes, nor give a preference away by name. The checks here are pure functions; each
problem is a short note that names what was found, and the simulator gets it back with the
request to write the turn again.

Common English words of the benchmark vocabulary ('script', 'beat', 'probe') are matched only in
phrases that point at the harness ('the script', 'this beat'), and any term that also occurs in
the user's own task material (persona, task, beats, released facts) is not a leak: a screenwriter
may talk about a script.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.simulator._blocks import PRIVATE_TAGS
from mempa_tui.simulator._manner import find_manner_requests, manner_problem
from mempa_tui.taxonomy import ATTRIBUTES, attribute

__all__ = [
    "ASSISTANT_VOICE_PROBLEM",
    "COPIED_PROBLEM",
    "CUT_PROBLEM",
    "EARLIER_SESSION_PHRASES",
    "REPEATED_PROBLEM",
    "STALL_PROBLEM",
    "LeakRules",
    "Trimmed",
    "assistant_voice_check",
    "conversation_check",
    "copy_check",
    "cut_check",
    "rule_check",
    "trim_copied",
]

#: (pattern, label, exemption): a term is not a leak when ``exemption`` (default: the pattern
#: itself) matches the user's own task material.
_VOCABULARY: tuple[tuple[str, str, str | None], ...] = (
    (r"\btarget[ -]settings?\b", "target setting", None),
    (r"\bsimulat(?:or|ed user)s?\b", "simulator", None),
    (r"\bbenchmarks?\b", "benchmark", None),
    (r"\bmempa", "MemPA", None),
    (r"\bpreference[ -]skills?\b", "preference skill", None),
    (r"\bpreference matri(?:x|ces)\b", "preference matrix", None),
    (r"\btaxonom(?:y|ies)\b", "taxonomy", None),
    (r"\bdecision[ -]points?\b", "decision point", None),
    (r"\bacting[ -]sheets?\b", "acting sheet", None),
    (r"\bwithheld facts?\b", "withheld fact", None),
    (r"\bprobe polarity\b", "probe polarity", None),
    (r"\b(?:the|this|that|a|my|next|final|current) probes?\b|\bprobe sessions?\b", "probe", r"\bprobes?\b"),
    (
        r"\b(?:the|this|that|next|current|previous|last|my) beats?\b|\bbeats? (?:ids?|goals?)\b",
        "beat",
        r"\bbeats?\b",
    ),
    (r"\b(?:the|this|my|your|session) script\b|\bscript (?:says|tells|wants)\b", "script", r"\bscripts?\b"),
    (r"\bpersona\b", "persona", None),
    (r"\binteraction tools?\b", "interaction tool", None),
    (r"\b(?:psa|brs|prs)\b", "score name", None),
    (r"\bfactual[ _]check\b|\bturn[ _]assessment\b|\bconsent[ _]decisions?\b", "private block name", None),
)
_IX = re.compile(r"\bIX\b|\bIX_\w*")

_PREFERENCE_PHRASE = re.compile(
    r"\b(i prefer|i'd prefer|i would prefer|i'd rather|i would rather|next time|always|"
    r"from now on|in future|in the future|going forward|i like it when|my preference)\b",
    re.IGNORECASE,
)

#: Phrases that point back to an earlier conversation (forbidden in probes, Appendix D.4).
EARLIER_SESSION_PHRASES: tuple[str, ...] = (
    "last time",
    "as usual",
    "you remembered",
    "you remember",
    "like before",
    "as before",
    "same as before",
    "like last",
    "as always",
    "like always",
    "as i said before",
    "as we discussed",
    "we discussed",
    "we talked about",
    "you already know",
    "the other day",
    "you know how i like",
    "remember when",
    "previous session",
    "last session",
    "previous conversation",
    "last conversation",
    "earlier conversation",
)

_TAG_TEXT = re.compile(r"</?\s*(?:" + "|".join(("message", *PRIVATE_TAGS)) + r")\b", re.IGNORECASE)
_CONSENT_SYNTAX = re.compile(r"\bheld_\w+\s*[:=]\s*(?:approve|approved|deny|denied)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def _norm(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _words(name: str) -> str:
    parts = [re.escape(p) for p in re.split(r"[\s\-]+", name.lower()) if p]
    return r"\b" + r"[\s\-]+".join(parts) + r"\b"


def _attribute_pattern(name: str) -> str:
    if "&" not in name:
        return _words(name)
    left, right = name.split("&", 1)
    return _words(left) + r"\s*(?:&|and)\s*" + _words(right)


class LeakRules(BaseModel):
    """What the rule checks need to know about the session.

    Attributes:
        probe: True in probe mode (earlier-session references are forbidden).
        beat_ids: ids of the script's beats; only ids with an underscore or a digit are matched
            (a plain word such as 'intro' cannot be told apart from ordinary speech).
        script_id: the script's id (e.g. ``A-w-verbosity-01``).
        attributes: keys of the attributes active anywhere in the script; their setting names are
            flagged when used with a preference phrase.
        task_material: the user's own task text (persona, task, beats, released facts); a
            vocabulary or attribute term found there is not a leak.
    """

    model_config = ConfigDict(frozen=True)

    probe: bool = False
    beat_ids: tuple[str, ...] = ()
    script_id: str = ""
    attributes: tuple[str, ...] = ()
    task_material: str = Field(default="", repr=False)


def _found(pattern: str, text: str, flags: int = re.IGNORECASE) -> bool:
    return re.search(pattern, text, flags) is not None


def rule_check(
    message: str,
    rules: LeakRules,
    private_texts: Iterable[str] = (),
    *,
    manner: Sequence[str] | Literal["all"] = (),
) -> list[str]:
    """Check a candidate message against the rules of Appendix D.4, and for manner requests.

    Args:
        message: the candidate visible message.
        rules: the session's :class:`LeakRules`.
        private_texts: contents of this reply's private blocks (a message that repeats one of
            them, 24 characters or longer, leaks its private notes).
        manner: attribute keys whose manner requests are flagged (e.g. the tested attribute on
            the message that opens a decision point), or ``"all"``. In probe mode every kind is
            flagged whatever is passed (D.2: no feedback on manner in probes; Table 8 condition
            3). See :mod:`mempa_tui.simulator._manner`.

    Returns:
        Problem notes, empty when the message passes. Each note names what was found; manner
        notes start with :data:`~mempa_tui.simulator._manner.MANNER_PROBLEM`.
    """
    text = _norm(message)
    allowed = _norm(rules.task_material)
    problems: list[str] = []

    if _TAG_TEXT.search(message):
        problems.append("the message contains a private block tag; write only what you say")
    if _CONSENT_SYNTAX.search(message):
        problems.append("the message contains the consent block; put decisions only in <consent_decisions>")
    for private in private_texts:
        chunk = " ".join(_norm(private).split())
        if len(chunk) >= 24 and chunk in " ".join(text.split()):
            problems.append("the message repeats your private notes; keep them out of the message")
            break

    for pattern, label, exemption in _VOCABULARY:
        if _found(pattern, text) and not _found(exemption or pattern, allowed):
            problems.append(f"the message uses the word '{label}', which belongs to the harness, not to you")
    if _IX.search(message) and not _IX.search(rules.task_material):
        problems.append("the message mentions 'IX', which belongs to the harness, not to you")

    ids = [b for b in rules.beat_ids if "_" in b or any(ch.isdigit() for ch in b)]
    if rules.script_id:
        ids.append(rules.script_id)
    for beat_id in ids:
        if re.search(r"(?<![\w-])" + re.escape(beat_id.lower()) + r"(?![\w-])", text):
            problems.append(f"the message contains the internal id '{beat_id}'")

    for attr in ATTRIBUTES:
        for pattern in {_attribute_pattern(attr.name), re.escape(attr.key)}:
            if _found(pattern, text) and not _found(pattern, allowed):
                problems.append(f"the message names the kind of preference ('{attr.name}'); show it only by reacting")
                break

    problems += _setting_with_phrase(text, rules.attributes)

    if rules.probe or manner == "all":
        problems += [manner_problem(m) for m in find_manner_requests(message)]
    elif manner:
        problems += [manner_problem(m) for m in find_manner_requests(message, manner)]

    if rules.probe:
        for phrase in EARLIER_SESSION_PHRASES:
            if _found(_words(phrase), text):
                problems.append(
                    f"the message refers to an earlier conversation ('{phrase}'); you have never "
                    "spoken to this assistant before"
                )
    return problems


def _setting_with_phrase(text: str, attribute_keys: Sequence[str]) -> list[str]:
    problems: list[str] = []
    names = {s.name for key in attribute_keys for s in attribute(key).settings}
    for sentence in _SENTENCES.split(text):
        phrase = _PREFERENCE_PHRASE.search(sentence)
        if not phrase:
            continue
        for name in sorted(names):
            if _found(_words(name), sentence):
                problems.append(
                    f"the message states a standing preference ('{phrase.group(1)}' with "
                    f"'{name.lower()}'); react to what the assistant just did instead"
                )
    return problems


#: Opening of the note for a message that repeats an earlier one of the user word for word.
REPEATED_PROBLEM = "the message repeats word for word what you already said earlier in this conversation"
#: Opening of the note for a message that puts the assistant off when nothing was asked.
STALL_PROBLEM = "the message puts off a detail nobody has asked you for"

#: "I'll get to it in a moment", "I will come back to the booking in a minute": the words the
#: fact rule gives for a detail the assistant asks for early (Appendix C.3 withheld facts).
_STALL = re.compile(
    r"\b(?:i'?ll|i will|let me)\s+(?:get|come)\s+(?:back\s+)?to\s+[^.?!]{0,48}?\bin\s+a\s+"
    r"(?:moment|minute|bit|sec(?:ond)?)\b"
)
_TOKEN = re.compile(r"[a-z0-9]+")


def conversation_check(
    message: str, earlier_user: Sequence[str], last_assistant: str | None, conveys: str = ""
) -> list[str]:
    """Check a candidate message against the conversation so far (issue 12: simulator validity).

    A simulated user whose turns carry none of the step's content plays no session at all: on the
    packaged 1.5B model the user said "I'll get to it in a moment." as the first message of every
    beat of two sessions, so the PA was never told the task and the memory had nothing to learn.
    Two rule checks send such a turn back for a rewrite (Appendix D.4: failed checks are rewritten,
    then the turn is invalid):

    - a message of three words or more identical, word for word (case and punctuation aside), to
      one the user already sent in this conversation, or of six words or more found word for
      word inside one (at a beat change the 1.5B model sent the second half of its previous
      message as the next beat's message; issue 12, ``benchmarks/simulator_replay.py`` A-S51);
    - a message that defers a detail (the withheld-fact rule's "I'll get to it in a moment",
      Appendix C.3) when the assistant has not asked anything: no assistant reply yet, or a last
      reply with no question mark.

    Args:
        message: the candidate visible message.
        earlier_user: the user's messages delivered so far in this session or probe, oldest first.
        last_assistant: the assistant's latest delivered reply, or None before its first.
        conveys: what the current step has the user say or ask (the beat's ``conveys``); the notes
            end with it. At temperature 0 (the paper's simulator setting) a rewrite asked for with
            a bare note gave the 1.5B model's rejected message back word for word, four times;
            with the step's words in the note it wrote them (issue 12, replayed on stored prompts).

    Returns:
        Problem notes (empty when the message passes); each opens with :data:`REPEATED_PROBLEM` or
        :data:`STALL_PROBLEM`.
    """
    problems: list[str] = []
    step = conveys.strip().rstrip(".")
    now = f"; for where you are now, your message does this: {step}" if step else ""
    words = _TOKEN.findall(_plain_words(message))
    if len(words) >= 3 and any(_repeats(words, _TOKEN.findall(_plain_words(e))) for e in earlier_user):
        again = now or "; write what you say now, for where you are now"
        problems.append(f"{REPEATED_PROBLEM}{again}")
    if _STALL.search(message.lower()) and (last_assistant is None or "?" not in last_assistant):
        ask = now or "; say or ask what 'What you want to say or ask' describes"
        problems.append(f"{STALL_PROBLEM}: the assistant has not asked for anything yet{ask}")
    return problems


PART_REPEAT_MIN_WORDS = 6
"""A message at least this long that occurs word for word inside an earlier one repeats it."""


def _repeats(words: Sequence[str], earlier: Sequence[str]) -> bool:
    """Whether ``words`` equals ``earlier`` or, with :data:`PART_REPEAT_MIN_WORDS` words or more,
    occurs as one unbroken run inside it (both already lower-cased word lists)."""
    if list(words) == list(earlier):
        return True
    n = len(words)
    if n < PART_REPEAT_MIN_WORDS or n > len(earlier):
        return False
    return any(list(earlier[i:i + n]) == list(words) for i in range(len(earlier) - n + 1))


def _plain_words(text: str) -> str:
    """Lower case with apostrophes dropped, so "I'll" and "Ill" compare equal."""
    return text.lower().replace("'", "").replace("\u2019", "")


#: Opening of the note for a reply whose model call stopped at the completion token cap.
CUT_PROBLEM = "cut at its cap"

LOOP_MIN_WORDS = 8
"""A run of this many words found twice in a reply cut at its cap marks it as repeating itself."""


def cut_check(reply: str, finish_reason: str | None) -> list[str]:
    """Check whether a simulator reply was cut at its completion cap (issue 12).

    A reply whose model call ended with ``finish_reason`` ``length`` stopped mid-sentence at the
    role's ``max_tokens``: it is not a turn. On the packaged 1.5B model such replies looped,
    writing one sentence again and again until the cap. Appendix D.4: a failed check is sent back
    for a rewrite.

    Args:
        reply: the model's whole reply text (blocks and message).
        finish_reason: the completion's finish reason as the provider reported it
            (:attr:`~mempa_tui.llm.types.Completion.finish_reason`; None: not reported).

    Returns:
        ``[]`` unless ``finish_reason`` is ``"length"``; else one note opening with
        :data:`CUT_PROBLEM`, marked ``(repeating itself)`` when the reply holds a sentence of three
        words or more twice, or a run of :data:`LOOP_MIN_WORDS` words twice (case, punctuation and
        apostrophes aside).
    """
    if finish_reason != "length":
        return []
    looping = " (repeating itself)" if _loops(reply) else ""
    return [f"{CUT_PROBLEM}{looping}: the reply ran to its length limit before it ended; write one short "
            "message that says each thing once"]


def _loops(text: str) -> bool:
    """Whether ``text`` holds a sentence (3+ words) twice or a run of :data:`LOOP_MIN_WORDS` words twice."""
    sentences = [tuple(_TOKEN.findall(_plain_words(s))) for s in _SENTENCES.split(text)]
    sentences = [s for s in sentences if len(s) >= 3]
    if len(set(sentences)) < len(sentences):
        return True
    words = _TOKEN.findall(_plain_words(text))
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - LOOP_MIN_WORDS + 1):
        run = tuple(words[i:i + LOOP_MIN_WORDS])
        first = seen.setdefault(run, i)
        if i - first >= LOOP_MIN_WORDS:  # a second, non-overlapping occurrence
            return True
    return False


#: Opening of the note for a message written from the assistant's side.
ASSISTANT_VOICE_PROBLEM = "written as the assistant, not as the user"

#: (pattern, label): phrases an assistant says to its user, never a user to its assistant. The
#: 1.5B simulator sometimes wrote the assistant's side of the conversation (issue 12).
ASSISTANT_PHRASES: tuple[tuple[str, str], ...] = (
    (r"\bhow (?:can|may) i (?:assist|help) you\b", "how can I assist you"),
    (r"\bi(?:'d| would) be (?:happy|glad) to (?:help|assist)\b", "I'd be happy to help"),
    (r"\b(?:is there )?anything else i can (?:help|assist) you with\b", "anything else I can help you with"),
    (r"\blet me know if you need anything else\b", "let me know if you need anything else"),
    (r"\bas an ai\b", "as an AI"),
    (r"\bwhat can i (?:do|help) (?:for|with) you\b", "what can I do for you"),
)


def assistant_voice_check(text: str, task_material: str = "") -> list[str]:
    """Check whether a candidate simulator message speaks as the assistant (issue 12).

    The simulated user plays the user (Appendix D.4: the message is the user's turn); a message
    such as "How can I assist you today?" takes the assistant's side instead.

    Args:
        text: the candidate visible message.
        task_material: the user's own task text (:attr:`LeakRules.task_material`); a phrase that
            also occurs there is the user's own words and is not flagged (as with the vocabulary
            checks of :func:`rule_check`).

    Returns:
        ``[]`` when no phrase of :data:`ASSISTANT_PHRASES` is found, else one note opening with
        :data:`ASSISTANT_VOICE_PROBLEM` that names the phrases found.
    """
    message, allowed = _norm(text), _norm(task_material)
    found = [label for pattern, label in ASSISTANT_PHRASES
             if _found(pattern, message) and not _found(pattern, allowed)]
    if not found:
        return []
    named = ", ".join(f"'{label}'" for label in found)
    return [f"{ASSISTANT_VOICE_PROBLEM} ({named}); write what you, the user, say or ask the assistant"]


COPY_MIN_WORDS = 4
"""A sentence of at least this many words found word for word in an earlier user message is a copy."""

TRIM_KEEP_MIN_WORDS = 5
"""What is left of a message after its copied sentences are dropped must have this many words;
a shorter rest (a greeting, "Thanks!") makes the whole message a repeat."""


class Trimmed(BaseModel):
    """What :func:`trim_copied` made of a candidate message.

    Attributes:
        text: the message to check and send: the candidate without a leading speaker label, a
            leading greeting to one of the user's contacts, or the sentences copied from earlier
            user messages.
        label: whether a leading ``You:``-style speaker label was removed.
        greeting: whether a leading greeting that named one of the user's contacts was removed.
        dropped: how many copied sentences were removed.
        words: the word count of ``text``.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    label: bool = False
    greeting: bool = False
    dropped: int = 0
    words: int = 0

    @property
    def changed(self) -> bool:
        """Whether anything was removed."""
        return self.label or self.greeting or self.dropped > 0

    @property
    def only_copies(self) -> bool:
        """Whether copied sentences were removed and too little is left to be a message of its own."""
        return self.dropped > 0 and self.words < TRIM_KEEP_MIN_WORDS


_GREETINGS = ("hi", "hello", "hey", "dear", "morning", "good morning", "good afternoon", "good evening", "evening")


def trim_copied(
    message: str, earlier_user: Sequence[str], speaker_names: Sequence[str] = (), contact_names: Sequence[str] = ()
) -> Trimmed:
    """Remove a leading speaker label, a leading greeting to a contact, and the sentences copied
    from the user's earlier messages.

    Issue 12, replayed with ``benchmarks/simulator_replay.py`` on the packaged 1.5B model: at a
    beat change the simulated user wrote its previous message again word for word and put the new
    beat's question after it (A-S51: "Hi Gideon! I just booked Gull Cottage ... Thanks for your
    help! I want to know if there are any workable options for getting to Sallowmouth ..."), and
    it opened messages with the dialogue's own label ("You: I'll ask Colm ..."). Sending such a
    message back for a rewrite (Appendix D.4) mostly drew the same copy again and the turn ended
    invalid; a check that rejected every message holding an earlier one made both replayed
    sessions invalid. So the copy is cut out instead and only the new words are sent.

    This deviates from the paper, which rewrites failed messages and never edits them: the
    harness removes words from the simulated user's message (it adds none). The simulator counts
    each trimmed message (``trimmed_messages``) and the run's warnings show the count.

    Args:
        message: the candidate visible message.
        earlier_user: the user's messages delivered so far in this conversation, oldest first.
        speaker_names: labels besides ``You``, ``Me`` and ``User`` that a leading ``Name:`` may
            use (the persona's name and first name).
        contact_names: the names of the people on the persona's card (full and first names). A
            leading greeting that names one of them ("Hi Gideon! ...") is removed: the message
            goes to the assistant, who is none of them (the packaged 1.5B greeted the assistant
            as User A's depot manager and manager in A-S51 and A-S14 although its prompt says
            the assistant has no name).

    Returns:
        A :class:`Trimmed`. Sentences are split at ``.``, ``!``, ``?`` and line breaks; one is a
        copy when it has :data:`COPY_MIN_WORDS` words or more and occurs as one unbroken run of
        words (case, punctuation and apostrophes aside) inside an earlier message. When every
        sentence is a copy the text is empty.
    """
    names = ["you", "me", "user", *(n.strip().lower() for n in speaker_names if n.strip())]
    label_re = re.compile(r"^\s*(?:" + "|".join(re.escape(n) for n in names) + r")\s*:\s*", re.IGNORECASE)
    text = message
    label = False
    match = label_re.match(text)
    if match and text[match.end():].strip():
        text, label = text[match.end():], True
    greeting = False
    contacts = sorted({n.strip() for n in contact_names if n.strip()}, key=len, reverse=True)
    if contacts:
        # the name must be the one greeted: punctuation or a line break right after it ("Hi Gideon!",
        # "Hi, Gideon -"), never the subject of what follows ("hey ruth wants us to ...",
        # "hi colm's out of the meeting")
        greet_re = re.compile(
            r"^\s*(?:" + "|".join(re.escape(g) for g in _GREETINGS) + r")[ \t]*,?[ \t]+(?:"
            + "|".join(re.escape(n) for n in contacts)
            + r")(?![\w'\u2019\-])[ \t]*(?:[!,.:;\u2014]+|\s-\s|[ \t]*\n)\s*", re.IGNORECASE)
        match = greet_re.match(text)
        if match and text[match.end():].strip():
            text, greeting = text[match.end():], True
    earlier = [_TOKEN.findall(_plain_words(e)) for e in earlier_user]
    kept: list[str] = []
    dropped = 0
    for sentence in _SENTENCES.split(text.strip()):
        if not sentence.strip():
            continue
        words = _TOKEN.findall(_plain_words(sentence))
        if len(words) >= COPY_MIN_WORDS and any(_contains(e, words) for e in earlier):
            dropped += 1
            continue
        kept.append(sentence.strip())
    if dropped:
        text = " ".join(kept)
    text = text.strip()
    return Trimmed(text=text, label=label, greeting=greeting, dropped=dropped,
                   words=len(_TOKEN.findall(_plain_words(text))))


def _contains(haystack: Sequence[str], words: Sequence[str]) -> bool:
    """Whether ``words`` occurs as one unbroken run inside ``haystack`` (word lists)."""
    n = len(words)
    return any(list(haystack[i:i + n]) == list(words) for i in range(len(haystack) - n + 1))


#: Opening of the note for a message copied from the step's instructions or the assistant's words.
COPIED_PROBLEM = "the message copies"

ASSISTANT_COPY_MIN_WORDS = 7
"""A sentence of at least this many words found word for word in the assistant's words is copied."""


def copy_check(message: str, instructions: Sequence[str], assistant_texts: Sequence[str]) -> list[str]:
    """Check whether a candidate message copies the step's instructions or the assistant's words.

    Issue 12, the fresh quick start of 3 December on the packaged 1.5B simulator: in A-S14 the
    user's message for a beat was the beat's own instruction ("Go on from what it did, then end."),
    and another was the body of the email the assistant had drafted ("I hope this email finds you
    well. I just received your email about the summer leaflets. ..."). Neither is what a user
    says. Appendix D.4: the simulator's private instructions must not reach the PA, and a failed
    check is sent back for a rewrite (the words are not edited here).

    Args:
        message: the candidate visible message.
        instructions: the current step's instruction texts (the beat's goal, what it conveys,
            and its decision point's reactions when shown); a message sentence of three words or
            more equal, word for word, to a whole sentence of one of them is a copy.
        assistant_texts: the assistant's replies and the text arguments of its calls in this
            conversation; a message sentence of :data:`ASSISTANT_COPY_MIN_WORDS` words or more
            found word for word inside one of them is a copy.

    Returns:
        ``[]`` or one note opening with :data:`COPIED_PROBLEM`.
    """
    said = [tuple(_TOKEN.findall(_plain_words(s))) for s in _SENTENCES.split(message)]
    said = [s for s in said if s]
    given = {tuple(_TOKEN.findall(_plain_words(s))) for text in instructions for s in _SENTENCES.split(text)}
    if any(len(s) >= 3 and s in given for s in said):
        return [f"{COPIED_PROBLEM} your instructions word for word; write, in your own words, what you "
                "say to the assistant"]
    theirs = [_TOKEN.findall(_plain_words(t)) for t in assistant_texts]
    if any(len(s) >= ASSISTANT_COPY_MIN_WORDS and any(_contains(t, s) for t in theirs) for s in said):
        return [f"{COPIED_PROBLEM} the assistant's words; write your own reply to it, as the user"]
    return []
