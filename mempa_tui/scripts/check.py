"""``mempa worlds check``: every rule about the benchmark content that a program can decide.

Source: paper Appendix C.1 (records a decision point needs are visible on the session date),
C.2 (argument checks), C.3 (withheld facts, write locks), C.4 (change events, pre-event probes),
C.5 (Table 8 'Rules' column and 'Rule-based validators'), Section 3.5 (probes).

:func:`check_worlds` collects every violation of every user (it never stops at the first) and
returns them sorted by path and line; each prints as ``path:line: message``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from mempa_tui.scripts._yamldoc import Loc, WorldFileError, YamlDoc
from mempa_tui.scripts.loader import UserScan, list_users, scan_user
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Probe, ProbeKind, ToolStep
from mempa_tui.taxonomy import ATTRIBUTES, Context
from mempa_tui.tools import ToolRegistry, default_registry
from mempa_tui.world import (
    COLLECTIONS,
    FixtureError,
    Record,
    WorkingCopy,
    WorldError,
    WorldState,
    collection_issues,
)

__all__ = ["Violation", "check_user", "check_worlds"]


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule, located in a file.

    Attributes:
        path: the file (as reached from the ``worlds`` folder given).
        line: 1-based line of the offending key or value (1 for a whole-file problem).
        message: what is wrong.
    """

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def check_worlds(worlds_dir: str | Path, registry: ToolRegistry | None = None) -> list[Violation]:
    """Check every user under ``<worlds_dir>/users``.

    Args:
        worlds_dir: the ``worlds/`` folder.
        registry: the tools that scripted calls must name (default: :func:`default_registry`).

    Returns:
        All violations, sorted by path, then line.
    """
    labels = list_users(worlds_dir)
    if not labels:
        return [Violation(str(Path(worlds_dir) / "users"), 1, "no user folders found")]
    out: list[Violation] = []
    for label in labels:
        out.extend(check_user(worlds_dir, label, registry))
    return sorted(out)


def check_user(worlds_dir: str | Path, label: str, registry: ToolRegistry | None = None) -> list[Violation]:
    """Check one user's folder; see the module docstring. Returns violations sorted by path, line."""
    scan = scan_user(worlds_dir, label)
    checker = _UserChecker(scan, registry or default_registry())
    checker.run()
    return sorted(set(checker.violations))


def _context_cells() -> list[tuple[Context, str]]:
    return [(ctx, a.key) for ctx in Context for a in ATTRIBUTES]


class _UserChecker:
    """The cross-file rules for one user; appends to :attr:`violations`."""

    def __init__(self, scan: UserScan, registry: ToolRegistry) -> None:
        self.scan = scan
        self.registry = registry
        self.violations: list[Violation] = [Violation(e.path, e.line, e.message) for e in scan.errors]
        self.state: WorldState | None = None
        self.index: dict[str, dict[str, Record]] = {}
        self.bad_collections: set[str] = set()

    # ---- helpers ------------------------------------------------------------------------

    def add(self, doc: YamlDoc | None, loc: Loc, message: str, fallback: Path | None = None) -> None:
        if doc is not None:
            self.violations.append(Violation(str(doc.path), doc.line(loc), message))
        else:
            self.violations.append(Violation(str(fallback or self.scan.root), 1, message))

    def doc(self, key: str) -> YamlDoc | None:
        return self.scan.sources.get(key)

    def run(self) -> None:
        self.check_fixtures()
        self.check_timeline()
        for s in self.scan.sessions.values():
            self.check_script(s)
        for p in self.scan.probes.values():
            self.check_script(p)
        self.check_probes()
        self.check_events()

    # ---- fixture tree -------------------------------------------------------------------

    def check_fixtures(self) -> None:
        fdir = self.scan.fixture_dir
        if not fdir.is_dir():
            return  # reported by the scan
        try:
            self.state = WorldState.from_directory(fdir)
        except WorldError as exc:
            self.violations.append(Violation(str(fdir), 1, str(exc)))
            return
        known = {f"{c}.yaml": c for c in COLLECTIONS}
        for path, data in self.state.items():
            collection = known.get(path)
            if collection is None:
                self.violations.append(
                    Violation(
                        str(fdir / path),
                        1,
                        "not a known collection file; expected one of " + ", ".join(sorted(known)),
                    )
                )
                continue
            issues = collection_issues(collection, data)
            if issues:
                self.bad_collections.add(collection)
            for issue in issues:
                self.violations.append(self._fixture_violation(fdir / path, data, issue))
        wc = WorkingCopy(self.state, datetime.max)
        for collection in COLLECTIONS:
            if collection not in self.bad_collections:
                self.index[collection] = {r.id: r for r in wc._all_records(collection)}

    @staticmethod
    def _fixture_violation(path: Path, data: bytes, issue: FixtureError) -> Violation:
        line = issue.line or 1
        if issue.index is not None:
            try:
                doc: YamlDoc | None = YamlDoc.parse(path, data.decode("utf-8"))
            except (WorldFileError, UnicodeDecodeError):
                doc = None
            if doc is not None:
                line = doc.line((issue.index, *(issue.field.split(".") if issue.field else ())))
        message = str(issue).removeprefix(issue.path).lstrip(": ")
        return Violation(str(path), line, message)

    def check_ref(self, doc: YamlDoc | None, loc: Loc, ref: str, when: datetime, what: str) -> None:
        """A bound record must exist in the fixture tree and be visible at ``when``."""
        collection, _, rid = ref.partition(":")
        if collection not in COLLECTIONS:
            self.add(
                doc,
                loc,
                f"{what} {ref!r}: unknown collection {collection!r}; known: "
                + ", ".join(sorted(COLLECTIONS)),
            )
            return
        if collection in self.bad_collections or self.state is None:
            return  # the fixture problem is reported already
        record = self.index.get(collection, {}).get(rid)
        if record is None:
            self.add(doc, loc, f"{what} {ref!r}: no such record in the fixture tree")
        elif record.entered_at > when:
            self.add(
                doc,
                loc,
                f"{what} {ref!r} enters the world at {record.entered_at:%Y-%m-%dT%H:%M}, "
                f"after the beat's time {when:%Y-%m-%dT%H:%M}",
            )

    # ---- timeline -----------------------------------------------------------------------

    def step_time(self, step_id: str) -> datetime | None:
        found = self.scan.sessions.get(step_id) or self.scan.events.get(step_id)
        return found.starts_at if found is not None else None

    def check_timeline(self) -> None:
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

    # ---- sessions and probes ------------------------------------------------------------

    def check_script(self, script: AccumulationSession | Probe) -> None:
        doc = self.doc(script.id)
        attr = script.attr
        dp = script.decision_beat_index()
        if isinstance(script, AccumulationSession) and dp == len(script.beats) - 1:
            self.add(
                doc,
                ("beats", dp, "decision_point"),
                "the decision point is the last beat; the next beat must carry the user's reaction",
            )
        released: dict[str, str] = {}
        for i, beat in enumerate(script.beats):
            for j, fid in enumerate(beat.releases):
                if fid in released:
                    self.add(
                        doc,
                        ("beats", i, "releases", j),
                        f"fact {fid!r} is already released at beat {released[fid]!r}",
                    )
                else:
                    released[fid] = beat.id
        # bound records and world events, each at the beat's time
        when = script.starts_at
        for i, beat in enumerate(script.beats):
            if beat.event is not None:
                at = beat.event.at
                if at <= script.starts_at:
                    self.add(
                        doc,
                        ("beats", i, "event", "at"),
                        f"event.at {at:%Y-%m-%dT%H:%M} is not after the "
                        f"session start {script.starts_at:%Y-%m-%dT%H:%M}",
                    )
                elif at < when:
                    self.add(
                        doc,
                        ("beats", i, "event", "at"),
                        f"event.at {at:%Y-%m-%dT%H:%M} is before an "
                        f"earlier beat's event at {when:%Y-%m-%dT%H:%M}",
                    )
                when = max(when, at)
                for k, ref in enumerate(beat.event.records):
                    self.check_ref(doc, ("beats", i, "event", "records", k), ref, at, "event record")
            for k, ref in enumerate(beat.records):
                self.check_ref(doc, ("beats", i, "records", k), ref, when, "record")
        # write lock (Appendix C.3, mechanism 3)
        lock = script.write_lock
        if attr.write_lock and lock is None:
            self.add(doc, ("attribute",), f"{attr.name} is tested with a write lock: declare write_lock")
        if lock is not None:
            tdef = self.registry.get(lock.tool)
            if tdef is None:
                self.add(
                    doc,
                    ("write_lock", "tool"),
                    f"write_lock.tool: {self.registry.unknown_tool_message(lock.tool)}",
                )
            elif not tdef.write:
                self.add(
                    doc,
                    ("write_lock", "tool"),
                    f"write_lock.tool {lock.tool!r} is a read tool; a lock needs a write tool",
                )
            if lock.unlocked_by not in released:
                self.add(
                    doc,
                    ("write_lock", "unlocked_by"),
                    f"write_lock.unlocked_by {lock.unlocked_by!r} is never released by a beat",
                )
        self.run_tool_steps(script, doc, when, set(released))

    def run_tool_steps(
        self, script: AccumulationSession | Probe, doc: YamlDoc | None, when: datetime, released: set[str]
    ) -> None:
        """Run the intended path on a scratch copy (Table 8, condition 1).

        The clock is the script's start, or its last world event's time. The write lock is in
        place and every fact the beats release is released, as by the end of play; a declared lock
        must also refuse at least one of the steps while its fact is still withheld.
        """
        if self.state is None or self.bad_collections:
            return
        lock = script.write_lock
        wc = WorkingCopy(self.state, when)
        locked = WorkingCopy(self.state, when)
        if lock is not None:
            wc.add_write_lock(lock)
            locked.add_write_lock(lock)
        for fid in released:
            wc.release_fact(fid)
        lock_bites = False
        for k, step in enumerate(script.tool_steps):
            if lock is not None and self._refused_by_lock(locked, step):
                lock_bites = True
            self.replay(doc, ("tool_steps", k), wc, step.tool, step.args, step.expect_error)
        if lock is not None and script.tool_steps and not lock_bites:
            self.add(
                doc,
                ("write_lock",),
                "write_lock matches none of the tool_steps, so it would never "
                "refuse the write the user must dictate",
            )
        if lock is not None and not script.tool_steps:
            self.add(
                doc,
                ("write_lock",),
                "write_lock is declared but there are no tool_steps with the locked write",
            )

    def _refused_by_lock(self, wc: WorkingCopy, step: ToolStep) -> bool:
        tdef = self.registry.get(step.tool)
        if tdef is None or not tdef.write:
            return False
        try:
            parsed = tdef.args_model.model_validate(step.args)
        except ValueError:
            return False  # the replay reports the bad arguments
        values = {k: getattr(parsed, k) for k in tdef.args_model.model_fields}
        return wc.locked_by(tdef.name, values) is not None

    def replay(
        self,
        doc: YamlDoc | None,
        loc: Loc,
        wc: WorkingCopy,
        tool: str,
        args: dict[str, object],
        expect_error: bool = False,
    ) -> None:
        """Run one scripted call through the real tools; report an unexpected outcome."""
        if self.registry.get(tool) is None:
            self.add(doc, (*loc, "tool"), f"tool: {self.registry.unknown_tool_message(tool)}")
            return
        try:
            result = self.registry.call(wc, tool, args)
        except FixtureError:
            return  # reported with the fixture tree
        if not result.ok and not expect_error:
            self.add(doc, loc, f"tool step fails: {result.error}")
        elif result.ok and expect_error:
            self.add(doc, loc, f"tool step {tool!r} was expected to fail (expect_error) but succeeded")

    # ---- probes -------------------------------------------------------------------------

    def check_probes(self) -> None:
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
        if self.state is None or self.bad_collections:
            return
        wc = WorkingCopy(self.state, event.starts_at)
        for t, turn in enumerate(event.transcript):
            for c, call in enumerate(turn.pa.tool_calls if turn.pa else []):
                self.replay(doc, ("transcript", t, "pa", "tool_calls", c), wc, call.tool, call.args)
