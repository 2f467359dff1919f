"""Rule filter over every scripted user line (paper Appendix D.4, rule-based checks).

A scripted user never names the kind of preference being tested and never states a setting as a
preference: the PA must learn the preference from how the user reacts, not from the taxonomy's
vocabulary. The filter reads each line the simulator is given to say or to act on:

- a session's or probe's beat ``goal`` and ``conveys``, its facts, and the decision point's
  ``reactions`` and ``falls_short``;
- a change event's user messages (its ``transcript[*].user``).

Two kinds of hit, each a :class:`~mempa_tui.scripts._check_base.Violation` at the line's
``path:line``:

- an attribute's name or key (e.g. 'autonomy level', 'solution_breadth') anywhere in the line;
- a setting name of an attribute active in the script (e.g. 'Terse', 'Full narration') in the
  same sentence as a preference phrase ('I prefer', 'from now on', 'always', ...).

``worlds check`` requires zero hits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mempa_tui.scripts._check_base import Violation
from mempa_tui.scripts._yamldoc import Loc, YamlDoc
from mempa_tui.scripts.loader import UserScan
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Probe
from mempa_tui.taxonomy import ATTRIBUTES, attribute

__all__ = ["filter_line", "filter_user", "user_lines"]

_PREFERENCE = re.compile(
    r"\b(i prefer|i'd prefer|i would prefer|i'd rather|i would rather|i want it|i like it when|"
    r"i like things|my preference|from now on|in future|in the future|going forward|next time|"
    r"always|never again|please be|be more|be less)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?;:])\s+|\n+")


def _phrase(name: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in re.split(r"[\s_&-]+", name.lower()) if w and w != "and"]
    joint = r"(?:[\s_-]+|\s*(?:&|and)\s*)"
    return re.compile(r"\b" + joint.join(words) + r"\b", re.IGNORECASE)


_ATTRIBUTE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (a.name, _phrase(a.name)) for a in ATTRIBUTES
) + tuple((a.name, _phrase(a.key)) for a in ATTRIBUTES)


def filter_line(text: str, attribute_keys: tuple[str, ...]) -> list[str]:
    """Hits of one scripted user line.

    Args:
        text: the line.
        attribute_keys: attributes active in the script; only their setting names are matched.

    Returns:
        One note per hit; empty when the line is clean.
    """
    hits: list[str] = []
    lowered = text.replace("\u2019", "'").lower()
    named: set[str] = set()
    for name, pattern in _ATTRIBUTE_PATTERNS:
        if name not in named and pattern.search(lowered):
            named.add(name)
            hits.append(f"names the attribute '{name}'")
    settings = sorted({s for key in attribute_keys for s in attribute(key).setting_names})
    for sentence in _SENTENCES.split(lowered):
        phrase = _PREFERENCE.search(sentence)
        if phrase is None:
            continue
        for name in settings:
            if _phrase(name).search(sentence):
                hits.append(f"states the setting '{name}' as a preference (with '{phrase.group(0)}')")
    return hits


def user_lines(
    script: AccumulationSession | Probe | ChangeEvent,
) -> Iterator[tuple[Loc, str]]:
    """Every scripted user line of a script with its location in the file."""
    if isinstance(script, ChangeEvent):
        for t, turn in enumerate(script.transcript):
            yield ("transcript", t, "user"), turn.user
        return
    for f, fact in enumerate(script.facts):
        yield ("facts", f, "text"), fact.text
    for b, beat in enumerate(script.beats):
        yield ("beats", b, "goal"), beat.goal
        yield ("beats", b, "conveys"), beat.conveys
        dp = beat.decision_point
        if dp is not None:
            for name, reaction in dp.reactions.items():
                yield ("beats", b, "decision_point", "reactions", name), reaction
            yield ("beats", b, "decision_point", "falls_short"), dp.falls_short


def _active(script: AccumulationSession | Probe | ChangeEvent) -> tuple[str, ...]:
    if isinstance(script, ChangeEvent):
        return (script.attribute,)
    return tuple(sorted({script.attribute, *(a for b in script.beats for a in b.active_attributes)}))


def filter_user(scan: UserScan) -> list[Violation]:
    """Apply the filter to every valid session, probe and change event of one user.

    Returns:
        One violation per hit, at the line's ``path:line``.
    """
    out: list[Violation] = []
    scripts: list[AccumulationSession | Probe | ChangeEvent] = [
        *scan.sessions.values(),
        *scan.probes.values(),
        *scan.events.values(),
    ]
    for script in scripts:
        doc: YamlDoc | None = scan.sources.get(script.id)
        keys = _active(script)
        for loc, text in user_lines(script):
            for hit in filter_line(text, keys):
                line = doc.line(loc) if doc is not None else 1
                path = str(doc.path) if doc is not None else str(scan.root)
                out.append(Violation(path, line, f"scripted user line {hit} (Appendix D.4)"))
    return out
