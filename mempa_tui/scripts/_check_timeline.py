"""``worlds check`` rules across a user's steps: the timeline, probes and change events
(paper Section 3.3, Section 3.5 'Probes', Appendix C.4), the timeline counts of a slice or a full
user, and the rules that hold across all users (:func:`check_across_users`).

Count rules per user (:meth:`TimelineRules.check_counts`), by the timeline's ``scope`` (none
when the timeline declares no scope, as small test trees do; sessions of one cell need different
tasks in every case):

- ``full`` (Section 3.3, Appendix C.1): 94 accumulation sessions and 5 change events; each of the
  23 stable cells in exactly 3 sessions, each of the 5 changing cells in 3 sessions before its
  event and 2 after; the sessions of one cell have different tasks; the events use slots 1, 2, 3
  and two of 4-6; 5 pre-event probes.
- ``slice`` (the first end-to-end slice): at least 12 accumulation sessions over at least 6
  attributes and both contexts; each covered cell in at least 2 sessions with different tasks;
  at least one change event.

Across users (:func:`check_across_users`, Appendix B.4 and C.4): with four users, exactly 18 of
the 56 user-attribute pairs differ between work and personal and at least 30 of the 32 settings
occur in the matrices; when every user is ``full``, the 20 events cover at least 9 attributes and
change in both directions (towards a later and towards an earlier setting of the attribute's
list). No event is Proactive Outreach and every setting has a reaction and a probe expectation:
both are schema rules of every file (:mod:`.schema`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from mempa_tui.scripts._check_base import CheckerBase, Violation, closest_hint
from mempa_tui.scripts._yamldoc import Loc, YamlDoc
from mempa_tui.scripts.loader import UserScan
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, ProbeKind
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute
from mempa_tui.world import WorkingCopy

__all__ = [
    "FULL_COUNTS",
    "SLICE_COUNTS",
    "TimelineRules",
    "change_direction",
    "check_across_users",
    "differing_pairs",
    "settings_used",
]

#: Counts of a complete user (paper Section 3.3, Appendix C.1).
FULL_COUNTS: dict[str, int] = {
    "sessions": 94,
    "events": 5,
    "stable_sessions": 3,
    "before_event": 3,
    "after_event": 2,
    "users": 4,
    "differing_pairs": 18,
    "min_settings_used": 30,
    "min_event_attributes": 9,
}
#: Minimums of a slice user (issue 2: the first end-to-end slice).
SLICE_COUNTS: dict[str, int] = {
    "sessions": 12,
    "attributes": 6,
    "per_cell": 2,
    "events": 1,
}

_WORK_SLOTS = frozenset({1, 2, 3})
_PERSONAL_SLOTS = frozenset({4, 5, 6})


def _context_cells() -> list[tuple[Context, str]]:
    return [(ctx, a.key) for ctx in Context for a in ATTRIBUTES]


class TimelineRules(CheckerBase):
    """Rules that relate several steps, probes and events of one user."""

    # ---- timeline -----------------------------------------------------------------------

    def step_time(self, step_id: str) -> datetime | None:
        """Start time of a session or change event, None if unknown."""
        found = self.scan.sessions.get(step_id) or self.scan.events.get(step_id)
        return found.starts_at if found is not None else None

    def check_timeline(self) -> None:
        """Every step exists, once, in strictly increasing time; every step file is listed."""
        timeline, tdoc = self.scan.timeline, self.doc("timeline")
        if timeline is None:
            return
        on_timeline: set[str] = set()
        previous: tuple[str, datetime] | None = None
        known = sorted([*self.scan.sessions, *self.scan.events])
        for i, sid in enumerate(timeline.steps):
            loc: Loc = ("steps", i)
            if sid in on_timeline:
                self.add(tdoc, loc, f"step {sid!r} is listed twice")
                continue
            on_timeline.add(sid)
            when = self.step_time(sid)
            if when is None and sid in self.scan.invalid_ids:
                continue  # its file is invalid; reported there
            if when is None:
                self.add(tdoc, loc, f"step {sid!r} names no session or change event{closest_hint(sid, known)}")
                continue
            if previous is not None and when <= previous[1]:
                self.add(
                    tdoc,
                    loc,
                    f"step {sid!r} starts at {when:%Y-%m-%dT%H:%M}, not after the previous "
                    f"step {previous[0]!r} at {previous[1]:%Y-%m-%dT%H:%M}",
                )
            previous = (sid, when)
        for sid in known:
            if sid not in on_timeline:
                self.add(self.doc(sid), ("id",), f"id: {sid!r} is not on the timeline")

    # ---- probes -------------------------------------------------------------------------

    def check_probes(self) -> None:
        """Final and pre-event probe timing, one final probe per cell, a pre-event probe per event."""
        steps = [
            t
            for t in (self.step_time(s) for s in (self.scan.timeline.steps if self.scan.timeline else []))
            if t
        ]
        last = max(steps, default=None)
        finals: dict[tuple[Context, str], str] = {}
        pre: dict[str, str] = {}
        for probe in sorted(self.scan.probes.values(), key=lambda p: p.id):
            doc = self.doc(probe.id)
            if probe.probe_kind is ProbeKind.FINAL:
                if last is not None and probe.starts_at <= last:
                    self.add(
                        doc,
                        ("starts_at",),
                        f"starts_at: a final probe must start after the last step ({last:%Y-%m-%dT%H:%M})",
                    )
                cell = (probe.context, probe.attribute)
                if cell in finals:
                    self.add(
                        doc,
                        ("attribute",),
                        f"cell {probe.context.value}/{probe.attribute} already has "
                        f"a final probe {finals[cell]!r}",
                    )
                else:
                    finals[cell] = probe.id
                continue
            event = self.scan.events.get(probe.event or "")
            if event is None and probe.event in self.scan.invalid_ids:
                continue
            if event is None:
                self.add(doc, ("event",), f"event: {probe.event!r} names no change event"
                         + closest_hint(probe.event or "", self.scan.events))
                continue
            if probe.event in pre:
                self.add(
                    doc,
                    ("event",),
                    f"event {probe.event!r} already has a pre-event probe {pre[probe.event]!r}",
                )
            pre.setdefault(event.id, probe.id)
            if probe.starts_at != event.starts_at - timedelta(hours=1):
                self.add(
                    doc,
                    ("starts_at",),
                    f"starts_at: a pre-event probe starts exactly one hour before its "
                    f"event ({event.starts_at - timedelta(hours=1):%Y-%m-%dT%H:%M})",
                )
            if (probe.context, probe.attribute) != (event.context, event.attribute):
                self.add(
                    doc,
                    ("attribute",),
                    f"the probe tests {probe.context.value}/{probe.attribute} but its event "
                    f"changes {event.context.value}/{event.attribute}",
                )
            between = [
                s
                for s in (self.scan.timeline.steps if self.scan.timeline else [])
                if (t := self.step_time(s)) is not None and probe.starts_at <= t < event.starts_at
            ]
            if between:
                self.add(
                    doc,
                    ("starts_at",),
                    f"step(s) {', '.join(between)} fall between the probe and its event",
                )
        for event in self.scan.events.values():
            if event.id not in pre:
                self.add(
                    self.doc(event.id),
                    ("id",),
                    f"change event {event.id!r} has no pre-event probe",
                )
        missing = [f"{c.value}/{a}" for c, a in _context_cells() if (c, a) not in finals]
        if missing:
            self.add(
                self.doc("timeline"),
                (),
                f"{len(missing)} of 28 cells have no final probe: " + ", ".join(missing),
                fallback=self.scan.root / "timeline.yaml",
            )

    # ---- change events ------------------------------------------------------------------

    def check_events(self) -> None:
        """Slots, old settings against the matrix as of the event, scripted calls replayed."""
        events = sorted(self.scan.events.values(), key=lambda e: e.starts_at)
        slots: dict[int, str] = {}
        last_slot = 0
        for event in events:
            doc = self.doc(event.id)
            if event.slot in slots:
                self.add(
                    doc,
                    ("slot",),
                    f"slot {event.slot} is already used by {slots[event.slot]!r}",
                )
            elif event.slot < last_slot:
                self.add(
                    doc,
                    ("slot",),
                    f"slot {event.slot} comes after slot {last_slot} in time",
                )
            slots.setdefault(event.slot, event.id)
            last_slot = max(last_slot, event.slot)
            if self.scan.matrix is not None:
                current = self.scan.matrix.setting(event.context, event.attribute)
                for earlier in events:
                    if earlier.starts_at < event.starts_at and (
                        earlier.context,
                        earlier.attribute,
                    ) == (
                        event.context,
                        event.attribute,
                    ):
                        current = earlier.new_setting
                if event.old_setting != current:
                    self.add(
                        doc,
                        ("old_setting",),
                        f"old_setting {event.old_setting!r} is not the cell's setting "
                        f"{current!r} at {event.starts_at:%Y-%m-%dT%H:%M}",
                    )
            self.replay_event(event, doc)

    def replay_event(self, event: ChangeEvent, doc: YamlDoc | None) -> None:
        """Replay an event's scripted tool calls on a scratch copy at the event time."""
        if self.state is None or self.bad_collections:
            return
        wc = WorkingCopy(self.state, event.starts_at)
        for t, turn in enumerate(event.transcript):
            for c, call in enumerate(turn.pa.tool_calls if turn.pa else []):
                self.replay(
                    doc,
                    ("transcript", t, "pa", "tool_calls", c),
                    wc,
                    call.tool,
                    call.args,
                )

    # ---- counts ---------------------------------------------------------------------------

    def timeline_sessions(self) -> list[AccumulationSession]:
        """The accumulation sessions on the timeline, in timeline order (unknown ids skipped)."""
        steps = self.scan.timeline.steps if self.scan.timeline else []
        return [self.scan.sessions[s] for s in steps if s in self.scan.sessions]

    def check_counts(self) -> None:
        """Session, event and per-cell counts of a ``full`` or a ``slice`` timeline (module docstring)."""
        timeline = self.scan.timeline
        if timeline is None:
            return
        tdoc = self.doc("timeline")
        sessions = self.timeline_sessions()
        events = sorted(
            (self.scan.events[s] for s in timeline.steps if s in self.scan.events),
            key=lambda e: e.starts_at,
        )
        by_cell: dict[tuple[Context, str], list[AccumulationSession]] = defaultdict(list)
        for s in sessions:
            by_cell[(s.context, s.attribute)].append(s)
        for cell, group in sorted(by_cell.items(), key=lambda kv: (kv[0][0].value, kv[0][1])):
            seen: dict[str, str] = {}
            for s in group:
                task = " ".join(s.task.lower().split())
                if task in seen:
                    self.add(
                        self.doc(s.id),
                        ("task",),
                        f"task: same task as {seen[task]!r}; sessions of cell {cell[0].value}/{cell[1]} "
                        "need different tasks",
                    )
                seen.setdefault(task, s.id)
        if timeline.scope == "full":
            self._full_counts(tdoc, sessions, events, by_cell)
        elif timeline.scope == "slice":
            self._slice_counts(tdoc, sessions, events, by_cell)

    def _slice_counts(
        self,
        tdoc: YamlDoc | None,
        sessions: Sequence[AccumulationSession],
        events: Sequence[ChangeEvent],
        by_cell: dict[tuple[Context, str], list[AccumulationSession]],
    ) -> None:
        where = self.scan.root / "timeline.yaml"
        if len(sessions) < SLICE_COUNTS["sessions"]:
            self.add(
                tdoc,
                ("steps",),
                f"scope slice: {len(sessions)} accumulation sessions on the timeline, "
                f"at least {SLICE_COUNTS['sessions']} needed",
                fallback=where,
            )
        attrs = {a for _, a in by_cell}
        if len(attrs) < SLICE_COUNTS["attributes"]:
            self.add(
                tdoc,
                ("steps",),
                f"scope slice: sessions cover {len(attrs)} attributes, at least "
                f"{SLICE_COUNTS['attributes']} needed",
                fallback=where,
            )
        contexts = {c for c, _ in by_cell}
        if sessions and len(contexts) < 2:
            self.add(
                tdoc,
                ("steps",),
                "scope slice: sessions cover only one context",
                fallback=where,
            )
        for (ctx, key), group in sorted(by_cell.items(), key=lambda kv: (kv[0][0].value, kv[0][1])):
            if len(group) < SLICE_COUNTS["per_cell"]:
                self.add(
                    self.doc(group[0].id),
                    ("attribute",),
                    f"scope slice: cell {ctx.value}/{key} has {len(group)} session(s), at least "
                    f"{SLICE_COUNTS['per_cell']} needed",
                )
        if len(events) < SLICE_COUNTS["events"]:
            self.add(
                tdoc,
                ("steps",),
                "scope slice: no change event on the timeline",
                fallback=where,
            )

    def _full_counts(
        self,
        tdoc: YamlDoc | None,
        sessions: Sequence[AccumulationSession],
        events: Sequence[ChangeEvent],
        by_cell: dict[tuple[Context, str], list[AccumulationSession]],
    ) -> None:
        where = self.scan.root / "timeline.yaml"
        if len(sessions) != FULL_COUNTS["sessions"]:
            self.add(
                tdoc,
                ("steps",),
                f"scope full: {len(sessions)} accumulation sessions on the timeline, "
                f"{FULL_COUNTS['sessions']} needed",
                fallback=where,
            )
        if len(events) != FULL_COUNTS["events"]:
            self.add(
                tdoc,
                ("steps",),
                f"scope full: {len(events)} change events on the timeline, {FULL_COUNTS['events']} needed",
                fallback=where,
            )
        slots = {e.slot for e in events}
        if not _WORK_SLOTS <= slots or len(slots & _PERSONAL_SLOTS) != 2:
            self.add(
                tdoc,
                ("steps",),
                f"scope full: events use slots {sorted(slots)}; need 1, 2, 3 and two of 4, 5, 6",
                fallback=where,
            )
        changing: dict[tuple[Context, str], ChangeEvent] = {}
        for e in events:
            cell = (e.context, e.attribute)
            if cell in changing:
                self.add(
                    self.doc(e.id),
                    ("attribute",),
                    f"scope full: cell {e.context.value}/{e.attribute} already changes in "
                    f"{changing[cell].id!r}; each event changes a different cell",
                )
            changing.setdefault(cell, e)
        for ctx, key in _context_cells():
            group = by_cell.get((ctx, key), [])
            name = f"{ctx.value}/{key}"
            if (ctx, key) in changing:
                event = changing[(ctx, key)]
                before = sum(1 for s in group if s.starts_at < event.starts_at)
                after = len(group) - before
                if (before, after) != (
                    FULL_COUNTS["before_event"],
                    FULL_COUNTS["after_event"],
                ):
                    self.add(
                        self.doc(event.id),
                        ("attribute",),
                        f"scope full: changing cell {name} has {before} session(s) before the event "
                        f"and {after} after; {FULL_COUNTS['before_event']} and "
                        f"{FULL_COUNTS['after_event']} needed",
                    )
            elif len(group) != FULL_COUNTS["stable_sessions"]:
                self.add(
                    tdoc,
                    ("steps",),
                    f"scope full: stable cell {name} has {len(group)} session(s), "
                    f"{FULL_COUNTS['stable_sessions']} needed",
                    fallback=where,
                )
        pre = [p for p in self.scan.probes.values() if p.probe_kind is ProbeKind.PRE_EVENT]
        if len(pre) != FULL_COUNTS["events"]:
            self.add(
                tdoc,
                ("steps",),
                f"scope full: {len(pre)} pre-event probes, {FULL_COUNTS['events']} needed",
                fallback=where,
            )


# ---- across users ---------------------------------------------------------------------------


def differing_pairs(scans: Sequence[UserScan]) -> list[tuple[str, str]]:
    """(user label, attribute key) pairs whose work and personal settings differ at the start.

    Users whose matrix did not load are skipped.
    """
    out: list[tuple[str, str]] = []
    for scan in scans:
        if scan.matrix is None:
            continue
        for a in ATTRIBUTES:
            if scan.matrix.setting(Context.WORK, a.key) != scan.matrix.setting(Context.PERSONAL, a.key):
                out.append((scan.label, a.key))
    return out


def settings_used(scans: Sequence[UserScan]) -> set[tuple[str, str]]:
    """(attribute key, setting) pairs that occur in the users' starting matrices."""
    used: set[tuple[str, str]] = set()
    for scan in scans:
        if scan.matrix is None:
            continue
        for ctx in Context:
            for a in ATTRIBUTES:
                used.add((a.key, scan.matrix.setting(ctx, a.key)))
    return used


def change_direction(event: ChangeEvent) -> int:
    """+1 when the new setting comes later in the attribute's setting list than the old one, else -1.

    The lists run from less to more of the behaviour (Table 4), e.g. Low -> High is +1.
    """
    names = attribute(event.attribute).setting_names
    return 1 if names.index(event.new_setting) > names.index(event.old_setting) else -1


def check_across_users(worlds_dir: str | Path, scans: Sequence[UserScan]) -> list[Violation]:
    """Rules over all users of a worlds folder (module docstring).

    Args:
        worlds_dir: the ``worlds/`` folder (violations are reported on ``users/`` line 1, or on
            a user's ``preferences.yaml`` when one user's matrix is at fault).
        scans: every user's scan.

    Returns:
        Violations; none when fewer than four users exist (a partial benchmark).
    """
    where = str(Path(worlds_dir) / "users")
    if len(scans) != FULL_COUNTS["users"] or any(s.matrix is None for s in scans):
        return []
    out: list[Violation] = []
    pairs = differing_pairs(scans)
    if len(pairs) != FULL_COUNTS["differing_pairs"]:
        per_user = ", ".join(f"{s.label}: {sum(1 for u, _ in pairs if u == s.label)}" for s in scans)
        out.append(
            Violation(
                where,
                1,
                f"{len(pairs)} of 56 user-attribute pairs differ between work and personal "
                f"({per_user}); exactly {FULL_COUNTS['differing_pairs']} needed",
            )
        )
    used = settings_used(scans)
    if len(used) < FULL_COUNTS["min_settings_used"]:
        unused = [f"{a.key}={s}" for a in ATTRIBUTES for s in a.setting_names if (a.key, s) not in used]
        out.append(
            Violation(
                where,
                1,
                f"the matrices use {len(used)} of 32 settings, at least {FULL_COUNTS['min_settings_used']} "
                f"needed; unused: {', '.join(unused)}",
            )
        )
    if all(s.timeline is not None and s.timeline.scope == "full" for s in scans):
        events = [e for s in scans for e in s.events.values()]
        attrs = {e.attribute for e in events}
        if len(attrs) < FULL_COUNTS["min_event_attributes"]:
            out.append(
                Violation(
                    where,
                    1,
                    f"the change events cover {len(attrs)} attributes, at least "
                    f"{FULL_COUNTS['min_event_attributes']} needed",
                )
            )
        directions = {change_direction(e) for e in events}
        if events and len(directions) < 2:
            way = "up the setting list" if 1 in directions else "down the setting list"
            out.append(Violation(where, 1, f"every change event moves {way}; both directions needed"))
    return out
