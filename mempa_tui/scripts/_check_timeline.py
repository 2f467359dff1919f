"""``worlds check`` rules across a user's steps: the timeline, probes and change events
(paper Section 3.3, Section 3.5 'Probes', Appendix C.4).
"""

from __future__ import annotations

import difflib
from datetime import datetime, timedelta

from mempa_tui.scripts._check_base import CheckerBase
from mempa_tui.scripts._yamldoc import Loc, YamlDoc
from mempa_tui.scripts.schema import ChangeEvent, ProbeKind
from mempa_tui.taxonomy import ATTRIBUTES, Context
from mempa_tui.world import WorkingCopy

__all__ = ["TimelineRules"]


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
                close = difflib.get_close_matches(sid, known, n=3, cutoff=0.6)
                extra = f" (closest: {', '.join(close)})" if close else ""
                self.add(tdoc, loc, f"step {sid!r} names no session or change event{extra}")
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
                self.add(doc, ("event",), f"event: {probe.event!r} names no change event")
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
                    doc, ("starts_at",), f"step(s) {', '.join(between)} fall between the probe and its event"
                )
        for event in self.scan.events.values():
            if event.id not in pre:
                self.add(self.doc(event.id), ("id",), f"change event {event.id!r} has no pre-event probe")
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
                self.add(doc, ("slot",), f"slot {event.slot} is already used by {slots[event.slot]!r}")
            elif event.slot < last_slot:
                self.add(doc, ("slot",), f"slot {event.slot} comes after slot {last_slot} in time")
            slots.setdefault(event.slot, event.id)
            last_slot = max(last_slot, event.slot)
            if self.scan.matrix is not None:
                current = self.scan.matrix.setting(event.context, event.attribute)
                for earlier in events:
                    if earlier.starts_at < event.starts_at and (earlier.context, earlier.attribute) == (
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
                self.replay(doc, ("transcript", t, "pa", "tool_calls", c), wc, call.tool, call.args)
