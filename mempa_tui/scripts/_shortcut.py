"""Deterministic shortcut classifiers: can the target setting be read off the scripted text?

A benchmark item is only a test of memory when the text a PA sees at the decision does not by
itself give away the user's setting (paper Table 8 condition 3, Appendix C.3; the profile-only
check of Appendix B.4 reports 46.4% against 45.2% chance). This module measures that without a
model, over three kinds of item:

- ``probe``: each final probe's scripted text (facts, beat goals and conveys, every decision-point
  reaction and the falls-short line; not the simulator's skill sheet, which is keyed by setting
  by design); target = the cell's setting at the probe's time;
- ``decision``: each accumulation session's text up to its decision (facts, and goal/conveys of
  the beats up to and including the decision beat); target = the cell's setting at the session;
- ``persona``: a user's whole persona card, one item per (context, attribute) cell; target = the
  starting matrix (the profile-only check).

Two classifiers, both deterministic and free of any model:

- ``definition``: TF-IDF cosine between the item's words and each setting's behaviour text
  (:mod:`mempa_tui.taxonomy`); the highest scoring setting of the item's attribute is the guess;
- ``bag of words``: leave-one-user-out binarised multinomial naive Bayes per attribute, trained on the items of
  the same kind and attribute of the *other* users, with a uniform prior (so that an uneven mix of
  targets is not mistaken for a text cue) and add-one smoothing.

- ``cues``: leave-one-user-out cue voting: the phrases that break the cue-balance rule of
  ``worlds check`` among the other users (:func:`find_cues`) vote for their setting.

Ties are scored as the expected accuracy of breaking them at random (``1/len(tied)`` when the target
is among them), so a classifier that learns nothing scores chance exactly. Chance is the mean over
items of ``1/len(settings)`` (the paper's 45.2% for a set that weighs every attribute equally).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mempa_tui.scripts.loader import UserBundle
from mempa_tui.scripts.schema import AccumulationSession, Probe, ProbeKind
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute, chance_of

__all__ = [
    "CUE_RULE",
    "Cue",
    "ShortcutItem",
    "ShortcutResult",
    "cue_accuracy",
    "decision_items",
    "decision_text",
    "definition_accuracy",
    "find_cues",
    "naive_bayes_accuracy",
    "persona_items",
    "persona_text",
    "probe_items",
    "probe_text",
    "shortcut_results",
    "tokens",
]

_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves it's i'm i've i'll i'd don't can't
    you're you've you'll that's there's let's s t""".split()
)
_WORD = re.compile(r"[a-z][a-z']*")


def _stem(word: str) -> str:
    """A crude suffix strip so that 'options'/'option' and 'checked'/'check' meet."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    """Lower-cased, stop-word-free, crudely stemmed words of ``text`` (in order, repeats kept)."""
    words = _WORD.findall(text.replace("\u2019", "'").lower())
    return [_stem(w.strip("'")) for w in words if w.strip("'") and w not in _STOP]


@dataclass(frozen=True)
class ShortcutItem:
    """One text with the setting it should not give away.

    Attributes:
        user: the user's label.
        id: the script id, or ``persona/<context>/<attribute>``.
        context: the cell's context.
        attribute: the cell's attribute key.
        target: the setting in force for the item.
        text: the scripted text the classifier reads.
    """

    user: str
    id: str
    context: Context
    attribute: str
    target: str
    text: str


@dataclass(frozen=True)
class ShortcutResult:
    """Accuracies of both classifiers on one kind of item.

    Attributes:
        kind: ``probe``, ``decision`` or ``persona``.
        items: number of items.
        chance: mean of ``1/len(settings)`` over the items (fraction, 0-1).
        definition: accuracy of the definition-similarity classifier (fraction, 0-1).
        bag_of_words: accuracy of the leave-one-user-out naive Bayes (fraction, 0-1).
        cues: accuracy of leave-one-user-out cue voting (:func:`cue_accuracy`, fraction, 0-1).
    """

    kind: str
    items: int
    chance: float
    definition: float
    bag_of_words: float
    cues: float


def probe_text(probe: Probe) -> str:
    """A probe's scripted text: facts, every beat's goal and conveys, reactions and falls-short."""
    parts = [f.text for f in probe.facts]
    for beat in probe.beats:
        parts += [beat.goal, beat.conveys]
        if beat.decision_point is not None:
            parts += [*beat.decision_point.reactions.values(), beat.decision_point.falls_short]
    return "\n".join(parts)


def decision_text(session: AccumulationSession) -> str:
    """A session's text up to its decision: facts and the beats up to the decision beat."""
    parts = [f.text for f in session.facts]
    for beat in session.beats:
        parts += [beat.goal, beat.conveys]
        if beat.decision_point is not None:
            break
    return "\n".join(parts)


def persona_text(bundle: UserBundle) -> str:
    """The whole persona card as one text (relationship notes, routines, hobbies included)."""
    p = bundle.persona
    parts = [p.occupation, p.workplace, p.living_arrangement, p.personality, p.speech_style, p.background]
    parts += [f"{r.relation}. {r.notes}" for r in p.relationships]
    parts += [*p.routines, *p.hobbies]
    return "\n".join(parts)


def probe_items(bundles: Iterable[UserBundle]) -> list[ShortcutItem]:
    """One item per final probe of every user; target = the cell's setting at the probe."""
    out: list[ShortcutItem] = []
    for b in bundles:
        for probe in sorted(b.probes.values(), key=lambda p: p.id):
            if probe.probe_kind is not ProbeKind.FINAL:
                continue
            target = b.targets_at(probe.context, probe.starts_at)[probe.attribute]
            out.append(ShortcutItem(b.label, probe.id, probe.context, probe.attribute, target, probe_text(probe)))
    return out


def decision_items(bundles: Iterable[UserBundle]) -> list[ShortcutItem]:
    """One item per accumulation session of every user; target = the cell's setting at the session."""
    out: list[ShortcutItem] = []
    for b in bundles:
        for s in sorted(b.sessions.values(), key=lambda s: s.id):
            target = b.targets_at(s.context, s.starts_at)[s.attribute]
            out.append(ShortcutItem(b.label, s.id, s.context, s.attribute, target, decision_text(s)))
    return out


def persona_items(bundles: Iterable[UserBundle]) -> list[ShortcutItem]:
    """One item per (context, attribute) cell of every user; text = the persona; target = matrix."""
    out: list[ShortcutItem] = []
    for b in bundles:
        text = persona_text(b)
        for ctx in Context:
            for a in ATTRIBUTES:
                target = b.matrix.setting(ctx, a.key)
                out.append(ShortcutItem(b.label, f"persona/{ctx.value}/{a.key}", ctx, a.key, target, text))
    return out


def _tied_score(scores: dict[str, float], target: str) -> float:
    best = max(scores.values())
    tied = [s for s, v in scores.items() if math.isclose(v, best, rel_tol=1e-12, abs_tol=1e-12)]
    return 1.0 / len(tied) if target in tied else 0.0


@lru_cache(maxsize=1)
def _setting_vectors() -> tuple[dict[tuple[str, str], dict[str, float]], dict[str, float]]:
    docs = {(a.key, s.name): Counter(tokens(f"{s.name}. {s.behaviour}")) for a in ATTRIBUTES for s in a.settings}
    df: Counter[str] = Counter()
    for c in docs.values():
        df.update(c.keys())
    n = len(docs)
    idf = {w: math.log((1 + n) / (1 + d)) + 1.0 for w, d in df.items()}
    vectors = {k: _unit({w: tf * idf[w] for w, tf in c.items()}) for k, c in docs.items()}
    return vectors, idf


def _unit(vec: dict[str, float]) -> dict[str, float]:
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {w: v / norm for w, v in vec.items()}


def definition_scores(item: ShortcutItem) -> dict[str, float]:
    """Cosine of the item's TF-IDF vector with each setting of its attribute (setting -> 0..1)."""
    vectors, idf = _setting_vectors()
    counts = Counter(w for w in tokens(item.text) if w in idf)
    vec = _unit({w: tf * idf[w] for w, tf in counts.items()})
    return {
        s: sum(vec.get(w, 0.0) * v for w, v in vectors[(item.attribute, s)].items())
        for s in attribute(item.attribute).setting_names
    }


def definition_accuracy(items: Sequence[ShortcutItem]) -> float:
    """Accuracy (0-1) of picking the setting whose behaviour text is most like the item's text."""
    if not items:
        return 0.0
    return sum(_tied_score(definition_scores(i), i.target) for i in items) / len(items)


def _nb_scores(train: Sequence[ShortcutItem], item: ShortcutItem) -> dict[str, float]:
    """Binarised multinomial naive Bayes log-scores (uniform prior, add-one smoothing)."""
    settings = attribute(item.attribute).setting_names
    counts: dict[str, Counter[str]] = {s: Counter() for s in settings}
    for t in train:
        counts[t.target].update(set(tokens(t.text)))
    vocab = set().union(*(c.keys() for c in counts.values()))
    words = set(tokens(item.text)) & vocab
    scores: dict[str, float] = {}
    for s in settings:
        total = sum(counts[s].values()) + len(vocab)
        scores[s] = sum(math.log((counts[s][w] + 1) / total) for w in words)
    return scores


def naive_bayes_accuracy(items: Sequence[ShortcutItem]) -> float:
    """Accuracy (0-1) of leave-one-user-out binarised multinomial naive Bayes per attribute, uniform prior."""
    if not items:
        return 0.0
    by_attr: dict[str, list[ShortcutItem]] = defaultdict(list)
    for i in items:
        by_attr[i.attribute].append(i)
    total = 0.0
    for i in items:
        train = [t for t in by_attr[i.attribute] if t.user != i.user]
        total += _tied_score(_nb_scores(train, i), i.target) if train else float(chance_of(i.attribute))
    return total / len(items)


def _chance(items: Sequence[ShortcutItem]) -> float:
    if not items:
        return 0.0
    return sum(float(chance_of(i.attribute)) for i in items) / len(items)


@dataclass(frozen=True)
class _CueRule:
    """Thresholds of the cue-balance rule.

    Attributes:
        min_sessions: the phrase occurs in at least this many decision points of the setting.
        min_users: ... of at least this many users (one user's storyline words are not a cue).
        min_share: ... in at least this share of the setting's decision points (0-1).
        ratio: ... and that share is at least this many times its share under the other settings
            (the other share is floored at half a decision point, so absence elsewhere counts).
    """

    min_sessions: int = 5
    min_users: int = 3
    min_share: float = 0.4
    ratio: float = 4.0


CUE_RULE = _CueRule()

@dataclass(frozen=True)
class Cue:
    """A phrase whose presence at decision points predicts one setting of an attribute.

    Attributes:
        attribute: the attribute key.
        setting: the setting it points to.
        phrase: the (stemmed) word or two-word phrase.
        sessions: ids of the setting's decision points holding it.
        share: share of the setting's decision points holding it (0-1).
        other_share: share of the other settings' decision points holding it (0-1).
    """

    attribute: str
    setting: str
    phrase: str
    sessions: tuple[str, ...]
    share: float
    other_share: float


def _features(text: str) -> set[str]:
    words = tokens(text)
    return set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])}


def find_cues(items: Sequence[ShortcutItem], rule: _CueRule | None = None) -> list[Cue]:
    """The phrases that break ``rule`` (default :data:`CUE_RULE`) among ``items``, per attribute."""
    rule = rule or CUE_RULE
    by_attr: dict[str, list[ShortcutItem]] = defaultdict(list)
    for i in items:
        by_attr[i.attribute].append(i)
    out: list[Cue] = []
    for key, group in sorted(by_attr.items()):
        totals: dict[str, int] = defaultdict(int)
        holding: dict[str, dict[str, list[ShortcutItem]]] = defaultdict(lambda: defaultdict(list))
        for i in group:
            totals[i.target] += 1
            for f in _features(i.text):
                holding[f][i.target].append(i)
        for phrase, per_setting in sorted(holding.items()):
            for setting, its in sorted(per_setting.items()):
                others = sum(n for s, n in totals.items() if s != setting)
                if others == 0 or len(its) < rule.min_sessions:
                    continue
                if len({i.user for i in its}) < rule.min_users:
                    continue
                share = len(its) / totals[setting]
                other = sum(len(v) for s, v in per_setting.items() if s != setting) / others
                if share >= rule.min_share and share >= rule.ratio * max(other, 0.5 / others):
                    out.append(Cue(key, setting, phrase, tuple(sorted(i.id for i in its)), share, other))
    return out


def cue_accuracy(items: Sequence[ShortcutItem]) -> float:
    """Accuracy (0-1) of leave-one-user-out cue voting.

    For each item, the cues of :func:`find_cues` are found among the other users' items of its
    attribute (with one user held out, a cue needs one session and one user fewer than
    :data:`CUE_RULE`); each cue present in the item votes for its setting; the most voted settings share
    the guess (no cue present: every setting ties, which scores chance).
    """
    if not items:
        return 0.0
    users = sorted({i.user for i in items})
    held_out = _CueRule(
        min_sessions=CUE_RULE.min_sessions - 1,
        min_users=CUE_RULE.min_users - 1,
        min_share=CUE_RULE.min_share,
        ratio=CUE_RULE.ratio,
    )
    cues_without = {u: find_cues([i for i in items if i.user != u], held_out) for u in users}
    total = 0.0
    for i in items:
        present = _features(i.text)
        votes = {s: 0.0 for s in attribute(i.attribute).setting_names}
        for cue in cues_without[i.user]:
            if cue.attribute == i.attribute and cue.phrase in present:
                votes[cue.setting] += 1.0
        total += _tied_score(votes, i.target)
    return total / len(items)


def shortcut_results(bundles: Sequence[UserBundle]) -> list[ShortcutResult]:
    """Both classifiers on final probes, decision points and personas of ``bundles``."""
    out: list[ShortcutResult] = []
    for kind, items in (
        ("probe", probe_items(bundles)),
        ("decision", decision_items(bundles)),
        ("persona", persona_items(bundles)),
    ):
        out.append(
            ShortcutResult(
                kind=kind,
                items=len(items),
                chance=_chance(items),
                definition=definition_accuracy(items),
                bag_of_words=naive_bayes_accuracy(items),
                cues=cue_accuracy(items),
            )
        )
    return out
