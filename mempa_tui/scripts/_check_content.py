"""``worlds check`` rules about what the content gives away (paper Table 8 condition 3, C.3, D.2).

The structural rules (:mod:`._check_scripts`, :mod:`._check_timeline`) make sure a script can be
played; these make sure that playing it tests memory, not reading:

- **target record** (:meth:`ContentRules.check_target_record`): a tool step that updates or
  deletes a record (a write tool whose name ends in ``_update`` or ``_delete``) must name, in its
  record key (the first ``*_id`` argument of the tool, e.g. ``event_id``), a record of the tool's own domain that the script's beats bind
  (``records`` of a beat or of a world event) or that an earlier tool step of the same script
  created. An id that merely exists in the fixture tree is not enough (it would let the PA be
  scored against the wrong record).
- **manner feedback in probes** (:func:`manner_feedback`): a probe's scripted user lines carry no
  feedback on the manner of a reply (paper D.2: in probes only the production side of the skill
  applies); the patterns are in :data:`MANNER_PATTERNS`.
- **setting words in reactions** (:func:`setting_words`): decision-point reactions, falls-short
  lines and change-event transcripts do not use a setting's own words (e.g. 'formal', 'one at a
  time', 'step by step', 'full narration'); :data:`SETTING_WORDS` lists the phrases, over all 14
  attributes, since a phrase of one attribute leaks into another's (A-E04's 'one step at a time').
- **scope limiters** (:data:`SCOPE_LIMITERS`): no 'Nothing else.' / 'Just that.' before a Task
  Expansion decision (it rules the High setting out before the PA acts; Table 8 condition 3).
- **cue balance** (:func:`cue_violations`, across all users): at decision points, no word or
  two-word phrase occurs much more often under one setting of an attribute than under the others
  (thresholds in :data:`CUE_RULE`); such a word tells the PA the target without any memory.
- **within-cell similarity** (:func:`similar_siblings`): two sessions of one cell whose scripted
  text shares more than :data:`SIBLING_MAX_OVERLAP` of its word 4-grams (Jaccard) are reported: a
  memory could learn the task type instead of the context (Section 3.3: sessions of a cell differ
  in task and domain).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mempa_tui.scripts._check_base import CheckerBase, Violation
from mempa_tui.scripts._check_timeline import FULL_COUNTS
from mempa_tui.scripts._shortcut import CUE_RULE, Cue, decision_items, find_cues
from mempa_tui.scripts._yamldoc import Loc, YamlDoc
from mempa_tui.scripts.loader import UserBundle, UserScan, WorldFileError
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Probe, ToolStep
from mempa_tui.tools import ToolResult

__all__ = [
    "CUE_RULE",
    "MANNER_PATTERNS",
    "SCOPE_LIMITERS",
    "SETTING_WORDS",
    "SIBLING_MAX_OVERLAP",
    "SIBLING_REVIEW_OVERLAP",
    "ContentRules",
    "Cue",
    "content_violations",
    "cue_violations",
    "find_cues",
    "manner_feedback",
    "setting_words",
    "similar_siblings",
]

_ID = re.compile(r"^[a-z]+_[0-9]+$")

#: Phrases that name a setting (all 14 attributes). Setting names that are everyday words
#: ('High', 'Low', 'Show', 'Hide', 'Express', 'Infer', 'Assumed') are left out on purpose.
SETTING_WORDS: tuple[str, ...] = (
    r"formal(?:ly)?",
    r"casual(?:ly)?",
    r"consultative",
    r"terse(?:ly)?",
    r"detailed",
    r"(?:one|a) (?:thing |step |question |item |point )?at a time",
    r"step[- ]by[- ]step",
    r"full narration",
    r"narrat(?:e|ion|ing)",
    r"bookend(?:s|ed)?",
    r"silent(?:ly)?",
    r"self[- ]directed",
    r"autonomous(?:ly)?",
    r"reactive(?:ly)?",
    r"structured",
    r"iterative(?:ly)?",
    r"relationship[- ]focused",
    r"task[- ]focused",
    r"suggest alternatives",
    r"hand(?:ed|s)? (?:it )?off",
    r"organi[sz]e(?:d)?",
    r"guided",
)
_SETTING_RE = re.compile(r"\b(?:" + "|".join(SETTING_WORDS) + r")\b", re.IGNORECASE)

#: Feedback on the manner of a reply, which D.2 rules out in probes: lengths, counts of options,
#: how much is explained, the order or pacing of items, warmth, checking back.
MANNER_PATTERNS: tuple[str, ...] = (
    r"\btoo (?:long|short|much|brief|wordy|formal|casual|curt|blunt|cold|chatty|detailed)\b",
    r"\b(?:shorter|longer|briefer|wordier)\b",
    r"\b(?:all|both|the)(?: (?:two|three|four))?(?: of them)? at once\b",
    r"\bat a time\b",
    r"\bwanted (?:it |them |the )?(?:all|both|just|only|more|less|fewer|one)\b",
    r"\b(?:more|less) (?:detail|explanation|options|choices|context|warmth|sympathy)\b",
    r"\bkind word\b",
    r"\bwithout (?:the|all the) (?:explanation|reasoning|fuss|padding|sympathy|options)\b",
    r"\b(?:didn't|did not|don't|do not) need (?:the|all the|an?) (?:explanation|reasoning|options|list|steps|sympathy|update)\b",
    r"\bshould have (?:asked|checked|told|explained|said|warned|listed)\b",
    r"\b(?:wish|would have liked|would've liked) (?:it|you|the assistant) (?:had|to)\b",
    r"\b(?:only|just) needed\b",
    r"\bcould have (?:picked|guessed|assumed|chosen|decided|just)\b",
    r"\b(?:instead of|without) asking\b",
    r"\bexpected to be asked\b",
    r"\ba lot at once\b",
    r"\b(?:wanted|wished|meant) to (?:read|see|check|approve) [^.]{0,40}\bbefore\b",
    r"\bthe case for it\b",
)
_MANNER_RE = re.compile("|".join(MANNER_PATTERNS), re.IGNORECASE)

#: Scope limiters that, at a Task Expansion decision point, leave the High setting no reasonable
#: role (Table 8 condition 3): the user has already said nothing beyond the request is wanted.
SCOPE_LIMITERS = re.compile(
    r"\b(?:nothing else|nothing more|just that|only that|that's all|that is all|no more than that|"
    r"only the \w+\.)",
    re.IGNORECASE,
)


#: Word 4-gram Jaccard overlap above which two sessions of one cell fail ``worlds check``.
SIBLING_MAX_OVERLAP = 0.15
#: Lower overlap above which ``worlds stats`` lists a pair for review (not a failure).
SIBLING_REVIEW_OVERLAP = 0.10


def setting_words(text: str) -> list[str]:
    """The setting phrases (:data:`SETTING_WORDS`) in ``text``, lower-cased, in order."""
    return [m.group(0).lower() for m in _SETTING_RE.finditer(text.replace("\u2019", "'"))]


def manner_feedback(text: str) -> list[str]:
    """The manner-feedback phrases (:data:`MANNER_PATTERNS`) in ``text``, lower-cased, in order."""
    return [m.group(0).lower() for m in _MANNER_RE.finditer(text.replace("\u2019", "'"))]


def _ids(value: object) -> Iterable[str]:
    if isinstance(value, str):
        if _ID.match(value):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _ids(v)
    elif isinstance(value, list):
        for v in value:
            yield from _ids(v)


class ContentRules(CheckerBase):
    """Per-script content rules; the target-record rule is fed by the tool-step replay."""

    def bound_records(self, script: AccumulationSession | Probe) -> dict[str, set[str]]:
        """Record id -> the domains (collection folder) it is bound under in the script's beats."""
        out: dict[str, set[str]] = defaultdict(set)
        for beat in script.beats:
            refs = list(beat.records) + (list(beat.event.records) if beat.event is not None else [])
            for ref in refs:
                collection, _, rid = ref.partition(":")
                out[rid].add(collection.split("/", 1)[0])
        return out

    def check_target_record(
        self,
        doc: YamlDoc | None,
        loc: Loc,
        step: ToolStep,
        bound: dict[str, set[str]],
        created: dict[str, set[str]],
    ) -> None:
        """An update/delete step must target a bound or created record of its own domain."""
        tdef = self.registry.get(step.tool)
        if tdef is None or not tdef.write or not re.search(r"_(update|delete)$", step.tool):
            return
        keys = [k for k in tdef.args_model.model_fields if k.endswith("_id")][:1]
        for key in keys:
            value = step.args.get(key)
            if not isinstance(value, str):
                continue
            domains = bound.get(value, set()) | created.get(value, set())
            if tdef.domain in domains:
                continue
            if domains:
                why = f"is bound only as a {'/'.join(sorted(domains))} record, not {tdef.domain}"
            else:
                why = "is neither bound by a beat's records nor created by an earlier tool step"
            self.add(
                doc,
                (*loc, "args", key),
                f"tool step {step.tool!r} changes {key}={value!r}, which {why}; "
                "name the record the session is about",
            )

    @staticmethod
    def note_created(step: ToolStep, domain: str, result: ToolResult, created: dict[str, set[str]]) -> None:
        """Remember the ids a successful create step returned (for :meth:`check_target_record`)."""
        if result.ok and "_create" in step.tool:
            for rid in _ids(result.data):
                created.setdefault(rid, set()).add(domain)

    def check_lines(self, script: AccumulationSession | Probe | ChangeEvent) -> None:
        """Setting words in reactions and event transcripts; manner feedback in probes."""
        doc = self.doc(script.id)
        if isinstance(script, ChangeEvent):
            for t, turn in enumerate(script.transcript):
                for hit in setting_words(turn.user):
                    self.add(doc, ("transcript", t, "user"), f"user turn uses the setting phrase {hit!r}")
            return
        dp_index = script.decision_beat_index()
        if script.attribute == "task_expansion":
            upto = [(("facts", f, "text"), fact.text) for f, fact in enumerate(script.facts)]
            for b, beat in enumerate(script.beats[: dp_index + 1]):
                upto += [(("beats", b, "goal"), beat.goal), (("beats", b, "conveys"), beat.conveys)]
            for loc, text in upto:
                for m in SCOPE_LIMITERS.finditer(text.replace("\u2019", "'")):
                    self.add(
                        doc,
                        loc,
                        f"scope limiter {m.group(0)!r} before a Task Expansion decision leaves the "
                        "other setting no role (Table 8 condition 3)",
                    )
        for b, beat in enumerate(script.beats):
            dp = beat.decision_point
            if dp is not None:
                lines: list[tuple[Loc, str]] = [
                    (("beats", b, "decision_point", "reactions", name), text) for name, text in dp.reactions.items()
                ]
                lines.append((("beats", b, "decision_point", "falls_short"), dp.falls_short))
                for loc, text in lines:
                    for hit in setting_words(text):
                        self.add(doc, loc, f"reaction uses the setting phrase {hit!r}")
            if isinstance(script, Probe):
                lines = [(("beats", b, "goal"), beat.goal), (("beats", b, "conveys"), beat.conveys)]
                if dp is not None:
                    lines += [
                        (("beats", b, "decision_point", "reactions", name), text)
                        for name, text in dp.reactions.items()
                    ]
                    lines.append((("beats", b, "decision_point", "falls_short"), dp.falls_short))
                for loc, text in lines:
                    for hit in manner_feedback(text):
                        self.add(
                            doc, loc, f"probe line gives feedback on the manner of a reply ({hit!r}); D.2"
                        )


# ---- across a user's sessions and across users ------------------------------------------


def cue_violations(bundles: Sequence[UserBundle], sources: dict[str, YamlDoc]) -> list[Violation]:
    """Cue-balance violations over every user's decision points, one per cue at each session."""
    out: list[Violation] = []
    for cue in find_cues(decision_items(bundles)):
        for sid in cue.sessions:
            doc = sources.get(sid)
            path = str(doc.path) if doc is not None else sid
            line = doc.line(("attribute",)) if doc is not None else 1
            out.append(
                Violation(
                    path,
                    line,
                    f"decision-point cue {cue.phrase!r}: in {cue.share:.0%} of {cue.attribute} decision points "
                    f"whose target is {cue.setting} against {cue.other_share:.0%} of the others "
                    "(cue balance; Table 8 condition 3)",
                )
            )
    return out


def _grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.replace("\u2019", "'").lower())
    return {tuple(words[i : i + 4]) for i in range(len(words) - 3)}


def sibling_text(session: AccumulationSession) -> str:
    """The text compared between siblings: task, facts, every beat's goal and conveys.

    Beats with id ``reaction`` are left out: they answer the PA's manner, not the task.
    """
    parts = [session.task, *(f.text for f in session.facts)]
    for beat in session.beats:
        if beat.id == "reaction":
            continue
        parts += [beat.goal, beat.conveys]
    return "\n".join(parts)


def similar_siblings(bundle: UserBundle, threshold: float = SIBLING_MAX_OVERLAP) -> list[tuple[str, str, float]]:
    """Pairs of sessions of one cell whose word 4-gram Jaccard overlap exceeds ``threshold``.

    Returns:
        ``(first id, second id, overlap 0-1)`` per pair, ids in order.
    """
    cells: dict[tuple[str, str], list[AccumulationSession]] = defaultdict(list)
    for s in bundle.sessions.values():
        cells[(s.context.value, s.attribute)].append(s)
    out: list[tuple[str, str, float]] = []
    for sessions in cells.values():
        for x, y in itertools.combinations(sorted(sessions, key=lambda s: s.id), 2):
            gx, gy = _grams(sibling_text(x)), _grams(sibling_text(y))
            overlap = len(gx & gy) / len(gx | gy) if gx | gy else 0.0
            if overlap > threshold:
                out.append((x.id, y.id, overlap))
    return out


def content_violations(scans: Sequence[UserScan]) -> list[Violation]:
    """The rules over many sessions: within-cell similarity per user, cue balance across users.

    Cue balance needs the whole benchmark (four users, every timeline ``full``), as the other
    cross-user rules do (:func:`._check_timeline.check_across_users`): over fewer sessions, or over
    copies of one user, every storyline word looks like a cue.
    """
    bundles: list[UserBundle] = []
    sources: dict[str, YamlDoc] = {}
    for scan in scans:
        try:
            bundle = scan.bundle()
        except WorldFileError:
            continue  # an unloadable user is reported by the per-user rules
        bundles.append(bundle)
        sources.update({k: v for k, v in scan.sources.items() if k in bundle.sessions})
    out: list[Violation] = []
    for bundle in bundles:
        for a, b, overlap in similar_siblings(bundle):
            doc = sources.get(b)
            out.append(
                Violation(
                    str(doc.path) if doc is not None else b,
                    doc.line(("task",)) if doc is not None else 1,
                    f"sessions {a} and {b} of one cell share {overlap:.0%} of their word 4-grams "
                    f"(above {SIBLING_MAX_OVERLAP:.0%}): give them different tasks and domains",
                )
            )
    full = len(scans) == FULL_COUNTS["users"] and all(
        s.timeline is not None and s.timeline.scope == "full" for s in scans
    )
    if full and len(bundles) == len(scans):
        out.extend(cue_violations(bundles, sources))
    return out
