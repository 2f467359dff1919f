"""``mempa worlds check``: every rule about the benchmark content that a program can decide.

Source: paper Appendix C.1 (records a decision point needs are visible on the session date),
C.2 (argument checks), C.3 (withheld facts, write locks), C.4 (change events, pre-event probes),
C.5 (Table 8 'Rules' column and 'Rule-based validators'), Section 3.5 (probes).

Rules, each reported at the file and line it concerns:

- every file validates against its schema (:mod:`.loader`); ids are unique across files;
- the fixture tree holds only known collection files, each record valid, no links;
- every timeline step names a session or change event, every session/event file is on the
  timeline, and steps start in strictly increasing time;
- an accumulation session has a beat after its decision point (the reaction beat);
- a beat releases each fact at most once; a write lock's fact is released by some beat;
- every bound record (beat ``records``, world-event ``records``) exists in the fixture tree and
  is visible at the beat's time (the script start, or the latest world event's ``at``); world
  events come after the script start and in order;
- the five write-lock attributes declare ``write_lock`` (sessions and probes); its tool is a
  known write tool, and it refuses at least one of the script's tool steps;
- ``tool_steps`` run in order on a scratch working copy (lock released as at the end of play) and
  succeed unless ``expect_error``; unknown tools are named with the closest names;
- a change event's ``old_setting`` is the cell's setting at the event time, its scripted calls
  replay on a scratch copy, it has a pre-event probe, and slots are unique and in time order;
- a pre-event probe names an existing event, tests the same cell, starts exactly one hour
  before it, and no step falls in that hour; final probes start after the last step, at most
  one per cell, and the cells without one are listed in one violation on ``timeline.yaml``.

- timeline counts by the timeline's ``scope`` (``full``: 94 sessions, 5 events, 3 sessions per
  stable cell, 3 before and 2 after a change, slots 1-3 plus two of 4-6; ``slice``: at least 12
  sessions over 6 attributes and both contexts, 2 per covered cell); sessions of one cell have
  different tasks (:mod:`._check_timeline`);
- across the four users: exactly 18 of 56 user-attribute pairs differ between contexts, at least
  30 of 32 settings used; with every user ``full``, events over at least 9 attributes and in both
  directions (:func:`._check_timeline.check_across_users`);
- no scripted user line names an attribute, or a setting as a preference (:mod:`._filter`,
  Appendix D.4);
- content that would give the target away (:mod:`._check_content`): an update/delete tool step
  targets a record the beats bind or an earlier step created, of the tool's domain; no manner
  feedback in probes (D.2); no setting phrase in reactions or change-event transcripts; no
  scope limiter ('Nothing else.') before a Task Expansion decision; no
  decision-point cue word unbalanced across an attribute's settings (across users); no two
  sessions of a cell above the word 4-gram overlap threshold.

:func:`check_worlds` collects every violation of every user (it never stops at the first) and
returns them sorted by path and line; each prints as ``path:line: message``.
"""

from __future__ import annotations

from pathlib import Path

from mempa_tui.scripts._check_base import Violation
from mempa_tui.scripts._check_content import content_violations
from mempa_tui.scripts._check_scripts import ScriptRules
from mempa_tui.scripts._check_timeline import TimelineRules, check_across_users
from mempa_tui.scripts._filter import filter_user
from mempa_tui.scripts.loader import UserScan, list_users, scan_user
from mempa_tui.tools import ToolRegistry, default_registry

__all__ = ["Violation", "check_user", "check_worlds"]


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
    scans = [scan_user(worlds_dir, label) for label in labels]
    for scan in scans:
        out.extend(_check_scan(scan, registry))
    out.extend(check_across_users(worlds_dir, scans))
    out.extend(content_violations(scans))
    return sorted(out)


def check_user(worlds_dir: str | Path, label: str, registry: ToolRegistry | None = None) -> list[Violation]:
    """Check one user's folder; see the module docstring. Returns violations sorted by path, line."""
    return _check_scan(scan_user(worlds_dir, label), registry)


def _check_scan(scan: UserScan, registry: ToolRegistry | None) -> list[Violation]:
    checker = _UserChecker(scan, registry or default_registry())
    checker.run()
    checker.violations.extend(filter_user(scan))
    return sorted(set(checker.violations))


class _UserChecker(ScriptRules, TimelineRules):
    """Every rule for one user; appends to ``violations``."""

    def run(self) -> None:
        """Apply every rule."""
        self.check_fixtures()
        self.check_timeline()
        for s in self.scan.sessions.values():
            self.check_script(s)
        for p in self.scan.probes.values():
            self.check_script(p)
        for script in [*self.scan.sessions.values(), *self.scan.probes.values(), *self.scan.events.values()]:
            self.check_lines(script)
        self.check_probes()
        self.check_events()
        self.check_counts()
