"""Where a consolidated MEMORY.md's words come from: the assistant's replies or the user's messages.

Found by a fresh user on the README's quick start (issue 12 follow-up): File memory's one
consolidation, after the change event A-E01, stored a MEMORY.md that was the PA's own venue reply
("Use the Eastbank Community Centre main hall, 18:00 to 20:00 on Thursday 4 June. It seats
120, ...") and nothing of the rule the user stated ("put the realistic ones side by side ... and
i'll make the call"). It passed every form check of :mod:`._consolidation_checks`, and Health read
ok. Paper Section 4 (File memory) keeps facts about the *user*; a file that only copies what the
assistant said carries none of them into the probes (Section 3.5: probes get no raw turns).

The *copies-the-assistant rule* (reason ``copies_assistant``), on the words of a text (lower
case, letters and digits, everything else a break; Markdown marks thus drop out):

* **copied**: the share of the new MEMORY.md's distinct word :data:`NGRAM`-grams (8 words in a
  row), leaving out those already in the old MEMORY.md, that occur word for word in an assistant
  reply of the turns folded in. A note-taker who writes notes compresses; eight words in a row
  that match a reply are a copy, not a coincidence.
* **draws on the user**: the new MEMORY.md holds an :data:`NGRAM`-gram of a user message, or at
  least :data:`MIN_USER_WORDS` distinct *user words*: content words (at least 4 letters, not a
  short list of function words nor the context names ``work`` / ``personal`` that headings use, a
  trailing ``s`` dropped) that occur in the turns' user messages and in none of their assistant
  replies. A paraphrase of what the user said keeps some of their words ("side by side",
  "realistic", "catch"); a copy of the replies, by construction, keeps none. A run of 8 words or
  more that a reply copied out of a user message is the user's, not the reply's, here.
* The reply is unusable when copied is at least :data:`COPY_SHARE` and it does not draw on the
  user. It is not judged when the new part has fewer than :data:`MIN_NEW_NGRAMS` 8-grams (about
  a dozen words: too little to tell a copy from a note) or when the user's messages hold fewer than
  :data:`MIN_USER_WORDS` user words (``ok, thanks``: nothing of theirs to draw on).

Thresholds, from the real failure shape (A-E01's turns as the world scripts them; the cases are
in ``tests/test_consolidation_copy.py``): the PA's venue reply stored as the file, as it is or as
a bulleted list, is 99-100 % copied and holds 0 user words (29 were there to draw on); with a
heading naming the task ("Route 14 info session (Ruth)") 93 % and 3; a paraphrase of the user's
rule 0 % and 8; the reply followed by one sentence of the user's rule 81 % and 4; notes that
quote half a sentence of the reply among their own 7 %. So :data:`COPY_SHARE` 0.5 sits far from
both shapes, and :data:`MIN_USER_WORDS` 4 asks for about a sentence of the user's: a heading's
three words do not rescue a copy. A heuristic: a copy of the replies with one line in the user's
words passes (it drew on the user), and so does a paraphrase that uses none of their words but
copies little.

:func:`file_grounding` carries the same measure over a run (for Health): which 8-grams of the
stored file were copied from a reply when they came in, and which user words it holds, kept for
as long as the file still holds them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.memory.base import TurnRecord

__all__ = [
    "COPY_SHARE",
    "MIN_NEW_NGRAMS",
    "MIN_USER_WORDS",
    "NGRAM",
    "CopyMeasure",
    "FileGrounding",
    "copy_measure",
    "file_grounding",
]

NGRAM = 8
"""Words in a row that make a copied span."""

COPY_SHARE = 0.5
"""Share (0-1) of the new MEMORY.md's 8-grams found in assistant replies at which it counts as copied."""

MIN_USER_WORDS = 4
"""Distinct user words (module doc) a MEMORY.md must hold to draw on the user's messages."""

MIN_NEW_NGRAMS = 4
"""New 8-grams below which a MEMORY.md is not judged by the rule."""

_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset("""
about above after again also because been before being below between both came come could does
doing done down each even every from further give going have having here into just know like make
more most much must need only other over please really same shall should some such sure than
thank thanks that their them then there these they this those through very want wants was were
what when where which while will with would your yours okay yeah well still work personal
""".split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.replace("\u2019", "'").lower())


def _ngrams(words: Sequence[str]) -> set[str]:
    return {" ".join(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def _content(words: Iterable[str]) -> set[str]:
    out = set()
    for w in words:
        if len(w) >= 4 and not w.isdigit() and w not in _STOP:
            out.add(w[:-1] if w.endswith("s") and len(w) > 4 else w)
    return out


def _hash(ngram: str) -> str:
    return hashlib.blake2b(ngram.encode("utf-8"), digest_size=6).hexdigest()


@dataclass(frozen=True)
class _Sources:
    """The turns' words: assistant 8-grams, user 8-grams, and user words (module doc)."""

    assistant: set[str]
    user: set[str]
    user_words: set[str]

    @classmethod
    def of(cls, turns: Sequence[TurnRecord]) -> _Sources:
        replies = [_words(t.reply) for t in turns]
        users = [_words(t.user_message) for t in turns]
        user_grams = set().union(*(_ngrams(w) for w in users)) if users else set()
        # the replies' own words: a run a reply copied out of a user message (a PA that parrots
        # the person) stays the user's (issue 12, fresh user: in A-S14 the 0.5B PA's reply was
        # the user's message word for word, every user word was then "the assistant's", and the
        # rule skipped a MEMORY.md that was the PA's other reply copied)
        said = set().union(*(_content(_own_part(w, user_grams)) for w in replies)) if replies else set()
        mine = set().union(*(_content(w) for w in users)) if users else set()
        return cls(assistant=set().union(*(_ngrams(w) for w in replies)) if replies else set(),
                   user=user_grams, user_words=mine - said)


def _own_part(words: Sequence[str], user_grams: set[str]) -> list[str]:
    """``words`` (a reply's) without every word inside an :data:`NGRAM`-gram of a user message."""
    copied = [False] * len(words)
    for i in range(len(words) - NGRAM + 1):
        if " ".join(words[i:i + NGRAM]) in user_grams:
            copied[i:i + NGRAM] = [True] * NGRAM
    return [w for w, c in zip(words, copied, strict=True) if not c]


@dataclass(frozen=True)
class CopyMeasure:
    """How much of a new MEMORY.md is copied from the assistant, and what it holds of the user.

    Attributes:
        new_ngrams: its distinct word 8-grams not in the old MEMORY.md.
        copied: of them, those found word for word in an assistant reply.
        user_ngrams: its 8-grams found in a user message (old ones included).
        user_words: distinct user words it holds (module doc).
        user_words_available: distinct user words the turns' user messages hold.
    """

    new_ngrams: int
    copied: int
    user_ngrams: int
    user_words: int
    user_words_available: int

    @property
    def share(self) -> float:
        """``copied / new_ngrams`` (0-1; 0 with no new 8-gram)."""
        return self.copied / self.new_ngrams if self.new_ngrams else 0.0

    @property
    def judged(self) -> bool:
        """Whether the rule applies: enough new text, and user words to draw on."""
        return self.new_ngrams >= MIN_NEW_NGRAMS and self.user_words_available >= MIN_USER_WORDS

    @property
    def draws_on_user(self) -> bool:
        """A user message's 8-gram, or at least :data:`MIN_USER_WORDS` user words."""
        return self.user_ngrams > 0 or self.user_words >= MIN_USER_WORDS

    @property
    def copies_assistant(self) -> bool:
        """The rule of the module doc: judged, copied at least :data:`COPY_SHARE`, not drawing on the user."""
        return self.judged and self.share >= COPY_SHARE and not self.draws_on_user


def copy_measure(memory: str, turns: Sequence[TurnRecord], old_memory: str = "") -> CopyMeasure:
    """Measure a consolidation reply's MEMORY.md against the turns it folds in (module doc).

    Args:
        memory: the reply's whole new MEMORY.md.
        turns: the turns folded in (their ``reply`` is the assistant's, ``user_message`` the user's).
        old_memory: the MEMORY.md the reply replaces (its 8-grams are not new).

    Returns:
        The counts; :attr:`CopyMeasure.copies_assistant` is the verdict.
    """
    src = _Sources.of(turns)
    words = _words(memory)
    grams = _ngrams(words)
    new = grams - _ngrams(_words(old_memory))
    return CopyMeasure(new_ngrams=len(new), copied=len(new & src.assistant), user_ngrams=len(grams & src.user),
                       user_words=len(_content(words) & src.user_words),
                       user_words_available=len(src.user_words))


class FileGrounding(BaseModel):
    """Where the stored MEMORY.md's words came from, carried over a run's saves (for Health).

    Attributes:
        ngrams: distinct word 8-grams of the stored MEMORY.md.
        copied: hashes of those that were in an assistant reply of the turns of the save they came in.
        user_words: user words (module doc) of any save's turns that the stored file still holds.
    """

    model_config = ConfigDict(extra="forbid")

    ngrams: int = 0
    copied: list[str] = Field(default_factory=list)
    user_words: list[str] = Field(default_factory=list)

    @property
    def assistant_only(self) -> bool:
        """The stored file draws only on assistant text: at least :data:`MIN_NEW_NGRAMS` 8-grams,
        at least :data:`COPY_SHARE` of them copied, and fewer than :data:`MIN_USER_WORDS` user words."""
        return (self.ngrams >= MIN_NEW_NGRAMS and len(self.copied) >= COPY_SHARE * self.ngrams
                and len(self.user_words) < MIN_USER_WORDS)


def file_grounding(memory: str, turns: Sequence[TurnRecord], before: FileGrounding | None) -> FileGrounding:
    """The grounding of a MEMORY.md just stored by a save of ``turns``.

    Args:
        memory: the stored MEMORY.md.
        turns: the turns that save folded in.
        before: the grounding of the file it replaced (None: not measured, e.g. an older snapshot).

    Returns:
        Its 8-gram count, the copied 8-grams (new copies from ``turns``' replies plus earlier copies
        the file still holds) and the user words it holds (of ``turns`` or kept from earlier saves).
    """
    src = _Sources.of(turns)
    words = _words(memory)
    grams = _ngrams(words)
    hashes = {_hash(g) for g in grams}
    copied = {_hash(g) for g in grams & src.assistant} | (set(before.copied) & hashes if before else set())
    content = _content(words)
    user_words = (content & src.user_words) | (set(before.user_words) & content if before else set())
    return FileGrounding(ngrams=len(grams), copied=sorted(copied), user_words=sorted(user_words))
