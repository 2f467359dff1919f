"""Telling a PA reply that only repeats the harness's own words (issue 12, validity).

The harness writes text into the PA's conversation that no person wrote: the instructions, its
marked notes (the repeat guard's note, the IX reminder, the empty-reply reminder, feedback on held
items), the IX wrapper's tool results, and the error texts of rejected or failed tool calls. A
small model may hand one of them back as its reply. Such a reply is not the PA's answer to the
person: delivered, it would put the harness's words in the PA's mouth, in front of the simulated
user, into memory as the assistant's turn, and before the judge (SPEC section 8: "the reply text
is the PA's"; paper Section 3.4: the wrapper adds no words of its own).

The rule (:func:`harness_echo`): both texts are reduced to their words (case folded, every run of
characters other than letters and digits is a break, so whitespace, punctuation and quoting do not
matter). A word of the reply is *covered* when it lies in a run of at least :data:`ECHO_RUN`
consecutive words (or the whole reply, when it is shorter) that also occurs, in the same order,
in one of the harness texts. A reply of at least :data:`ECHO_MIN_WORDS` words is an echo when at
least :data:`ECHO_SHARE` of its words are covered. JSON inside a harness text (the result of a
held call the user released, quoted in the harness's feedback) is world data, not the harness's
words, and is left out of it. So "The result you got then still holds. Work
from what you have and finish the turn." (a tail of the repeat guard's note) is an echo, while a
reply that quotes a tool's error inside its own account of what went wrong ("I could not make the
draft: in_reply_to 'none' names no email in the inbox, so which email is it?") is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

__all__ = [
    "ECHO_MIN_WORDS", "ECHO_RUN", "ECHO_SHARE", "EchoMatch", "harness_echo", "own_sentences", "own_words",
    "without_echoed_sentences", "words",
]

ECHO_RUN = 4
"""Shortest run of consecutive words shared with a harness text that counts as copied."""

ECHO_SHARE = 0.75
"""Share (0-1) of the reply's words that must be copied for the reply to be an echo."""

ECHO_MIN_WORDS = 3
"""Replies with fewer words are never called echoes (``OK.``, ``Done, thanks.``)."""

_WORD = re.compile(r"[^\W_]+")
_JSON = re.compile(r"\{.*\}", re.DOTALL)


def words(text: str) -> list[str]:
    """The words of ``text``, case folded; anything but letters and digits separates them."""
    return _WORD.findall(text.casefold())


class EchoMatch(BaseModel):
    """Why a reply was taken for an echo of harness text."""

    share: float
    """Share (0-1) of the reply's words that lie in runs copied from harness texts."""
    words: int
    """The reply's word count."""
    source: str
    """The start of the harness text the reply copied most from (operator view only)."""
    excerpt: str
    """The start of the reply (operator view only: it never reaches the user or the judge)."""


def _covered(reply: str, harness_texts: Iterable[str]) -> tuple[list[bool], str]:
    """Per word of ``reply``: whether it lies in a run copied from a harness text; and the start
    of the harness text it copied most from."""
    mine = words(reply)
    n = len(mine)
    covered = [False] * n
    if n < ECHO_MIN_WORDS:
        return covered, ""
    run = min(ECHO_RUN, n)
    best_source, best_count = "", 0
    for text in harness_texts:
        theirs = words(_JSON.sub(" ", text))
        if len(theirs) < run:
            continue
        grams = {tuple(theirs[i : i + run]) for i in range(len(theirs) - run + 1)}
        mine_here = [False] * n
        for i in range(n - run + 1):
            if tuple(mine[i : i + run]) in grams:
                for j in range(i, i + run):
                    mine_here[j] = True
        count = sum(mine_here)
        if count > best_count:
            best_source, best_count = text, count
        covered = [a or b for a, b in zip(covered, mine_here, strict=True)]
    return covered, best_source


def own_words(reply: str, harness_texts: Iterable[str]) -> str:
    """``reply`` with every run copied from a harness text left out: the PA's own words only.

    Each copied run is cut from its first character to its last, with the punctuation that
    follows it up to the next word; what is left is joined with single spaces and stripped.
    E.g. "I can't do that. You already called X with exactly these arguments earlier in this
    turn, ..." keeps "I can't do that.".

    Args:
        reply: the PA's reply text.
        harness_texts: every text the harness wrote into the PA's conversation so far.

    Returns:
        The remaining text ('' when every word was copied).
    """
    covered, _source = _covered(reply, harness_texts)
    spans = [m.span() for m in _WORD.finditer(reply)]  # positions in the text as written
    if len(spans) != len(covered):  # casefold changed the word count (rare ligatures): keep all
        return reply.strip()
    keep: list[str] = []
    pos = 0
    for (start, _end), copied, nxt in zip(spans, covered, [*spans[1:], (len(reply), len(reply))], strict=True):
        if copied:
            keep.append(reply[pos:start])
            pos = nxt[0]  # the copied word and what follows it up to the next word
    keep.append(reply[pos:])
    return " ".join("".join(keep).split())


_SENTENCE = re.compile(r"(?:[^.!?\n\u3002\uff01\uff1f]|[.!?]+(?![\s\"')\]]|$))*(?:[.!?]+[\"')\]]*|[\u3002\uff01\uff1f]+|\n|$)")
"""A sentence: up to ``.``, ``!`` or ``?`` followed by a space, a closing quote or bracket, or the
end, up to a full-width ``。！？``, or up to a line break; a point inside a word
(``colm.averill@wendlink.example``, ``3.5``) does not end it."""


def own_sentences(reply: str, harness_texts: Iterable[str]) -> str:
    """The sentences of ``reply`` that hold no word copied from a harness text (finding 7).

    Stricter than :func:`own_words`: a sentence (it ends at ``.``, ``!``, ``?``, a line break or
    the end of the reply) with any copied word is left out whole, so cutting a copied run out of
    the middle of a sentence never leaves a fragment behind ("The person has" of "The person has
    already called X with exactly these arguments earlier in this turn, ...", or "Thank you for
    choosing '" of a sentence that went on in the harness's words). What the caller delivers is
    therefore made of whole sentences the PA wrote, or nothing.

    Args:
        reply: the PA's reply text.
        harness_texts: every text the harness wrote into the PA's conversation so far.

    Returns:
        The kept sentences joined with single spaces ('' when every sentence copied something).
    """
    sentences = _sentences_covered(reply, harness_texts)
    if sentences is None:  # casefold changed the word count (rare ligatures): keep all
        return reply.strip()
    keep = [piece for piece, inside in sentences if inside and not any(inside)]
    return " ".join(" ".join(keep).split())


def _sentences_covered(reply: str, harness_texts: Iterable[str]) -> list[tuple[str, list[bool]]] | None:
    """The sentences of ``reply`` (:data:`_SENTENCE`, as written) with, per word of each, whether
    it lies in a run copied from a harness text; None when the words cannot be lined up with the
    text (case folding changed their count)."""
    covered, _source = _covered(reply, harness_texts)
    spans = [m.span() for m in _WORD.finditer(reply)]  # positions in the text as written
    if len(spans) != len(covered):
        return None
    out: list[tuple[str, list[bool]]] = []
    index = 0  # the next word of the reply
    for match in _SENTENCE.finditer(reply):
        start, end = match.span()
        if start == end:
            continue
        inside: list[bool] = []
        while index < len(spans) and spans[index][0] < end:
            inside.append(covered[index])
            index += 1
        out.append((match.group(0), inside))
    return out


def without_echoed_sentences(reply: str, harness_texts: Iterable[str]) -> str:
    """``reply`` without its echoed sentences: each sentence (as :func:`own_sentences` cuts them)
    of at least :data:`ECHO_MIN_WORDS` words of which :data:`ECHO_SHARE` or more lie in runs
    copied from a harness text is left out whole; every other sentence is kept as written.

    The whole-reply rule (:func:`harness_echo`) lets through a reply whose echo is one sentence
    among its own: measured on the quick start (issue 12, A-S14), "... Please ask me what you
    found this turn and finish the turn." reached the user, the tail of the harness's re-ask and
    repeat-guard notes.

    Args:
        reply: the PA's reply text.
        harness_texts: every text the harness wrote into the PA's conversation so far.

    Returns:
        The kept sentences as written, the joins where one was left out closed (one space, or at
        most one blank line); ``reply`` stripped when none is left out.
    """
    sentences = _sentences_covered(reply, harness_texts)
    if sentences is None:
        return reply.strip()
    out = ""
    dropped = False
    gap = False  # a sentence was left out since the last kept one
    pending = ""  # blank lines since that cut
    for piece, inside in sentences:
        if len(inside) >= ECHO_MIN_WORDS and sum(inside) >= ECHO_SHARE * len(inside):
            dropped = gap = True
            continue
        if gap and not piece.strip():
            pending += piece  # blank lines after a cut belong to the join
            continue
        if gap and out:
            out = _join_at_cut(out, pending + piece)
        else:
            out += (pending + piece).lstrip(" \t\n") if gap else piece
        gap, pending = False, ""
    # the kept sentences exactly as written; only the joins where a sentence was left out change
    return out.strip() if dropped else reply.strip()


def _join_at_cut(left: str, right: str) -> str:
    """``left + right`` where a sentence between them was left out: the spaces at the join become
    one space, or the line breaks on either side of it the larger of the two runs, at most one
    blank line (a left-out list item leaves no gap in the list)."""
    left, right = left.rstrip(" \t"), right.lstrip(" \t")
    before = len(left) - len(left.rstrip("\n"))
    after = len(right) - len(right.lstrip("\n"))
    if before or after:
        return left.rstrip("\n") + "\n" * min(2, max(before, after)) + right.lstrip("\n")
    return f"{left} {right}"


def harness_echo(reply: str, harness_texts: Iterable[str]) -> EchoMatch | None:
    """Whether ``reply`` is (mostly) a copy of harness text (see the module docstring's rule).

    Args:
        reply: the PA's reply text as it would be delivered.
        harness_texts: every text the harness wrote into the PA's conversation so far.

    Returns:
        The match when the reply is an echo, else None.
    """
    n = len(words(reply))
    if n < ECHO_MIN_WORDS:
        return None
    covered, best_source = _covered(reply, harness_texts)
    share = sum(covered) / n
    if share < ECHO_SHARE:
        return None
    return EchoMatch(share=share, words=n, source=_cut(best_source), excerpt=_cut(reply))


def _cut(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters with ``...``."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
