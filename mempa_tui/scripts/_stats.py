"""``mempa worlds stats``: the benchmark's counts per user and across users.

The numbers the paper reports for its dataset (Section 3.3, Appendices B.4 and C.1): cells that
differ between work and personal, settings used, sessions per cell, change events and their slots,
probes, and the size of the sessions. Exchanges and tool calls are those *planned by the scripts*
(beats and ``tool_steps``); the measured numbers of a played run come from its store.

The totals list the pairs of sessions of one cell whose scripted task text overlaps above the
review threshold (:data:`._check_content.SIBLING_REVIEW_OVERLAP`). The last block is the shortcut check (:mod:`._shortcut`): how well two deterministic text
classifiers predict the target setting from the final probes' scripted text, from the text up to
each accumulation session's decision point, and from the persona alone (paper Appendix B.4:
46.4% against 45.2% chance), each next to chance.

Users whose files do not load are listed with the first problem instead of numbers
(``mempa worlds check`` lists them all).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from mempa_tui.scripts._check_timeline import FULL_COUNTS, change_direction
from mempa_tui.scripts._check_content import SIBLING_MAX_OVERLAP, SIBLING_REVIEW_OVERLAP, similar_siblings
from mempa_tui.scripts._shortcut import ShortcutResult, shortcut_results
from mempa_tui.scripts.loader import UserBundle, WorldFileError, list_users, load_user
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import ATTRIBUTES, Context

__all__ = [
    "EventStats",
    "UserStats",
    "WorldStats",
    "format_stats",
    "user_stats",
    "world_stats",
]


class EventStats(BaseModel):
    """One change event as the stats table shows it."""

    id: str
    slot: int
    cell: str = Field(description="'<context>/<attribute key>'.")
    change: str = Field(description="'<old> -> <new>'.")
    direction: int = Field(description="+1 up the attribute's setting list, -1 down (Table 4 order).")


class UserStats(BaseModel):
    """Counts of one user (paper Section 3.3)."""

    label: str
    name: str
    scope: str = Field(description="The timeline's scope: 'full', 'slice' or 'none'.")
    differing: list[str] = Field(description="Attribute keys whose work and personal settings differ.")
    settings_used: list[str] = Field(description="'<attribute key>=<setting>' in the starting matrix.")
    sessions: int
    sessions_per_cell: dict[str, int] = Field(description="'<context>/<attribute key>' -> sessions.")
    events: list[EventStats]
    final_probes: int
    pre_event_probes: int
    mean_beats: float = Field(description="Mean beats (planned user turns) per accumulation session.")
    mean_tool_steps: float = Field(description="Mean scripted tool steps per accumulation session.")


class WorldStats(BaseModel):
    """Counts of every user and across users."""

    users: list[UserStats]
    unreadable: dict[str, str] = Field(default_factory=dict, description="Label -> first problem.")
    similar_siblings: list[tuple[str, str, float]] = Field(
        default_factory=list,
        description="Sessions of one cell above the review overlap (first id, second id, 0-1).",
    )
    shortcut: list[ShortcutResult] = Field(
        default_factory=list, description="Shortcut classifiers over the loaded users (:mod:`._shortcut`)."
    )

    @property
    def differing_pairs(self) -> int:
        """User-attribute pairs that differ between contexts (paper: 18 of 56)."""
        return sum(len(u.differing) for u in self.users)

    @property
    def settings_used(self) -> set[str]:
        """Settings used in any user's starting matrix (paper: at least 30 of 32)."""
        return {s for u in self.users for s in u.settings_used}

    @property
    def event_attributes(self) -> set[str]:
        """Attributes that change in some event (paper: at least 9)."""
        return {e.cell.split("/", 1)[1] for u in self.users for e in u.events}


def user_stats(bundle: UserBundle) -> UserStats:
    """The counts of one loaded user."""
    matrix = bundle.matrix
    differing = [
        a.key
        for a in ATTRIBUTES
        if matrix.setting(Context.WORK, a.key) != matrix.setting(Context.PERSONAL, a.key)
    ]
    used = sorted({f"{a.key}={matrix.setting(c, a.key)}" for c in Context for a in ATTRIBUTES})
    sessions = [bundle.sessions[s] for s in bundle.timeline.steps if s in bundle.sessions]
    per_cell = Counter(f"{s.context.value}/{s.attribute}" for s in sessions)
    events = [
        EventStats(
            id=e.id,
            slot=e.slot,
            cell=f"{e.context.value}/{e.attribute}",
            change=f"{e.old_setting} -> {e.new_setting}",
            direction=change_direction(e),
        )
        for e in sorted(bundle.events.values(), key=lambda e: e.starts_at)
    ]
    kinds = Counter(p.probe_kind for p in bundle.probes.values())
    n = len(sessions) or 1
    return UserStats(
        label=bundle.label,
        name=bundle.persona.name,
        scope=bundle.timeline.scope or "none",
        differing=differing,
        settings_used=used,
        sessions=len(sessions),
        sessions_per_cell=dict(sorted(per_cell.items())),
        events=events,
        final_probes=kinds[ProbeKind.FINAL],
        pre_event_probes=kinds[ProbeKind.PRE_EVENT],
        mean_beats=round(sum(len(s.beats) for s in sessions) / n, 2),
        mean_tool_steps=round(sum(len(s.tool_steps) for s in sessions) / n, 2),
    )


def world_stats(worlds_dir: str | Path) -> WorldStats:
    """Counts of every user under ``<worlds_dir>/users``; unreadable users are listed, not counted."""
    users: list[UserStats] = []
    bundles: list[UserBundle] = []
    unreadable: dict[str, str] = {}
    for label in list_users(worlds_dir):
        try:
            bundle = load_user(worlds_dir, label)
        except WorldFileError as exc:
            unreadable[label] = str(exc)
            continue
        bundles.append(bundle)
        users.append(user_stats(bundle))
    pairs = [p for b in bundles for p in similar_siblings(b, SIBLING_REVIEW_OVERLAP)]
    return WorldStats(
        users=users,
        unreadable=unreadable,
        similar_siblings=sorted(pairs, key=lambda p: -p[2]),
        shortcut=shortcut_results(bundles),
    )


def _cells_line(per_cell: dict[str, int]) -> str:
    by_count = Counter(per_cell.values())
    spread = ", ".join(f"{count} cell(s) x {k}" for k, count in sorted(by_count.items(), reverse=True))
    return f"{len(per_cell)} of 28 cells have sessions ({spread})" if per_cell else "no sessions"


def format_stats(stats: WorldStats) -> str:
    """The stats as plain text: a block per user, then the totals with the paper's targets."""
    lines: list[str] = []
    for u in stats.users:
        lines += [
            f"User {u.label} - {u.name} (scope {u.scope})",
            f"  cells differing by context: {len(u.differing)} of 14 ({', '.join(u.differing) or 'none'})",
            f"  settings used: {len(u.settings_used)}",
            f"  accumulation sessions: {u.sessions}; {_cells_line(u.sessions_per_cell)}",
        ]
        for cell, count in u.sessions_per_cell.items():
            lines.append(f"    {cell}: {count}")
        lines.append(f"  change events: {len(u.events)}")
        for e in u.events:
            way = "up" if e.direction > 0 else "down"
            lines.append(f"    {e.id} slot {e.slot}: {e.cell} {e.change} ({way})")
        lines += [
            f"  probes: {u.final_probes} final, {u.pre_event_probes} pre-event",
            f"  per session (scripted): {u.mean_beats} beats, {u.mean_tool_steps} tool steps",
            "",
        ]
    for label, problem in stats.unreadable.items():
        lines += [f"User {label}: not loaded - {problem}", ""]
    ups = sum(1 for u in stats.users for e in u.events if e.direction > 0)
    downs = sum(1 for u in stats.users for e in u.events if e.direction < 0)
    pairs = (
        f"  user-attribute pairs differing by context: {stats.differing_pairs} of {14 * len(stats.users)} "
        f"(benchmark: {FULL_COUNTS['differing_pairs']} of 56)"
    )
    events = (
        f"  change events: {sum(len(u.events) for u in stats.users)} over {len(stats.event_attributes)} "
        f"attribute(s), {ups} up / {downs} down (benchmark: 20 over at least "
        f"{FULL_COUNTS['min_event_attributes']}, both directions)"
    )
    lines += [
        "All users",
        f"  users: {len(stats.users)} (benchmark: {FULL_COUNTS['users']})",
        pairs,
        f"  settings used: {len(stats.settings_used)} of 32 (benchmark: at least {FULL_COUNTS['min_settings_used']})",
        events,
    ]
    if stats.users:
        lines.append(
            f"  sessions of one cell sharing over {SIBLING_REVIEW_OVERLAP:.0%} of their word 4-grams "
            f"(review; worlds check fails over {SIBLING_MAX_OVERLAP:.0%}): {len(stats.similar_siblings)}"
        )
        for a, b, overlap in stats.similar_siblings:
            lines.append(f"    {a} / {b}: {overlap:.1%}")
    if stats.shortcut:
        lines += ["", "Shortcut check (target setting from text alone; should be near chance)"]
        names = {
            "probe": "final probes (facts, beats, reactions)",
            "decision": "decision points (text up to the decision)",
            "persona": "persona alone, per cell (benchmark: 46.4% vs 45.2% chance)",
        }
        for r in stats.shortcut:
            lines.append(
                f"  {names.get(r.kind, r.kind)}: {r.items} items, chance {r.chance:.1%}, "
                f"definition similarity {r.definition:.1%}, leave-one-user-out bag of words {r.bag_of_words:.1%}, "
                f"leave-one-user-out cue words {r.cues:.1%}"
            )
    return "\n".join(lines)
