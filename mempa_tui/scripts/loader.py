"""Loading one user's benchmark content from ``worlds/users/<label>/``.

Layout: see :mod:`mempa_tui.scripts.schema`. Every YAML file is validated by its pydantic model;
any problem becomes a :class:`WorldFileError` naming the file and the 1-based line of the offending
key or value (``path:line: message``). :func:`scan_user` collects every problem (``worlds check``
uses it); :func:`load_user` raises the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel

from mempa_tui.scripts._yamldoc import WorldFileError, YamlDoc, validate_doc
from mempa_tui.scripts.schema import (
    AccumulationSession,
    ChangeEvent,
    Persona,
    PreferenceMatrix,
    Probe,
    Timeline,
)
from mempa_tui.taxonomy import Context
from mempa_tui.world import WorldState

__all__ = [
    "Script",
    "UserBundle",
    "UserScan",
    "WorldFileError",
    "has_quick",
    "has_slice",
    "list_users",
    "load_user",
    "scan_user",
    "user_dir",
]

M = TypeVar("M", bound=BaseModel)

#: Anything with a script id: an accumulation session, a change event or a probe.
Script = AccumulationSession | ChangeEvent | Probe

_FOLDERS: tuple[tuple[str, type[BaseModel], str], ...] = (
    ("sessions", AccumulationSession, "session"),
    ("events", ChangeEvent, "change event"),
    ("probes", Probe, "probe"),
)


def user_dir(worlds_dir: str | Path, label: str) -> Path:
    """``<worlds_dir>/users/<label>``."""
    return Path(worlds_dir) / "users" / label


def has_slice(worlds_dir: str | Path, label: str) -> bool:
    """Whether the user's ``timeline.yaml`` names a non-empty quick-start ``slice`` (a cheap read of
    that one file, for pickers; an unreadable or missing file counts as no slice, and
    :func:`load_user` reports it properly)."""
    return _names_list(worlds_dir, label, "slice")


def has_quick(worlds_dir: str | Path, label: str) -> bool:
    """Whether the user's ``timeline.yaml`` names a non-empty ``quick`` list (the quick start), read
    as cheaply as :func:`has_slice`."""
    return _names_list(worlds_dir, label, "quick")


def _names_list(worlds_dir: str | Path, label: str, key: str) -> bool:
    path = Path(worlds_dir) / "users" / label / "timeline.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and bool(data.get(key))


def list_users(worlds_dir: str | Path) -> list[str]:
    """Labels of the user folders under ``<worlds_dir>/users`` (sorted; none if it is missing)."""
    root = Path(worlds_dir) / "users"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


@dataclass(frozen=True)
class UserBundle:
    """One user's validated benchmark content.

    Attributes:
        label: the user's label, e.g. ``A``.
        root: the user's folder.
        persona: persona card.
        matrix: preference matrix at the start of the timeline.
        timeline: ordered step ids.
        sessions: accumulation sessions by id.
        events: change events by id.
        probes: probes by id.
        fixture_dir: the fixture tree folder.
        sources: the parsed YAML file of each script id (and ``persona``, ``preferences``,
            ``timeline``), for line numbers in ``worlds check``.
    """

    label: str
    root: Path
    persona: Persona
    matrix: PreferenceMatrix
    timeline: Timeline
    sessions: Mapping[str, AccumulationSession]
    events: Mapping[str, ChangeEvent]
    probes: Mapping[str, Probe]
    fixture_dir: Path
    sources: Mapping[str, YamlDoc] = field(default_factory=dict, repr=False, compare=False)
    _world: dict[str, WorldState] = field(default_factory=dict, repr=False, compare=False)

    def world_state(self) -> WorldState:
        """The fixture tree as a :class:`WorldState` (read once, then cached).

        Raises:
            WorldPathError: the tree is missing or holds a link or an escaping path.
        """
        if "w" not in self._world:
            self._world["w"] = WorldState.from_directory(self.fixture_dir)
        return self._world["w"]

    def step(self, step_id: str) -> AccumulationSession | ChangeEvent:
        """The timeline step ``step_id`` (a session or a change event).

        Raises:
            KeyError: no session or event has that id.
        """
        if step_id in self.sessions:
            return self.sessions[step_id]
        if step_id in self.events:
            return self.events[step_id]
        raise KeyError(f"user {self.label} has no session or change event {step_id!r}")

    def script(self, script_id: str) -> Script:
        """A session, change event or probe by id.

        Raises:
            KeyError: unknown id.
        """
        if script_id in self.probes:
            return self.probes[script_id]
        return self.step(script_id)

    def steps(self) -> list[AccumulationSession | ChangeEvent]:
        """The timeline's steps in order."""
        return [self.step(s) for s in self.timeline.steps]

    def sliced(self) -> UserBundle:
        """The bundle a ``--slice`` run plays: the timeline's ``slice`` steps, the final probes,
        and the sessions and change events in the slice with their pre-event probes. Events
        outside the slice are dropped, so :meth:`targets_at` (and every probe's target) follows
        only the changes the slice plays; the fixture tree is shared. A ``slice``-scope timeline, or one without a scope, without a
        ``slice`` list is its own slice and comes back unchanged.

        Raises:
            ValueError: a ``full`` timeline that names no ``slice`` (names the file to edit).
        """
        if not self.timeline.slice:
            if self.timeline.scope == "full":
                raise ValueError(
                    f"user {self.label}'s timeline is full and names no slice: add a `slice:` list of "
                    f"step ids to {self.root / 'timeline.yaml'}, or run without --slice"
                )
            return self
        kept = set(self.timeline.slice)
        probes = {
            pid: p for pid, p in self.probes.items() if p.event is None or p.event in kept
        }
        # Targets follow only the changes the slice plays: an event left out never happened.
        events = {eid: e for eid, e in self.events.items() if eid in kept}
        sessions = {sid: s for sid, s in self.sessions.items() if sid in kept}
        timeline = self.timeline.model_copy(update={"steps": list(self.timeline.slice)})
        return replace(self, timeline=timeline, probes=probes, events=events, sessions=sessions)

    def quick_start(self) -> UserBundle:
        """The bundle a ``--quick`` run plays: the timeline's ``quick`` steps, and only the probes
        of the cells they test (a cell is a context and an attribute): those cells' final probes
        and the pre-event probes of the change events in the list. Events outside the list are
        dropped (as in :meth:`sliced`); the fixture tree is shared.

        Raises:
            ValueError: the timeline names no ``quick`` list (names the file to edit).
        """
        if not self.timeline.quick:
            raise ValueError(
                f"user {self.label}'s timeline names no quick start: add a `quick:` list of step ids "
                f"to {self.root / 'timeline.yaml'}, or run without --quick"
            )
        kept = set(self.timeline.quick)
        sessions = {sid: s for sid, s in self.sessions.items() if sid in kept}
        events = {eid: e for eid, e in self.events.items() if eid in kept}
        cells = {(s.context, s.attribute) for s in sessions.values()} | {
            (e.context, e.attribute) for e in events.values()}
        probes = {
            pid: p for pid, p in self.probes.items()
            if (p.event in kept if p.event is not None else (p.context, p.attribute) in cells)
        }
        timeline = self.timeline.model_copy(update={"steps": list(self.timeline.quick)})
        return replace(self, timeline=timeline, probes=probes, events=events, sessions=sessions)

    def targets_at(self, context: Context | str, when: datetime) -> dict[str, str]:
        """The user's settings in ``context`` at story time ``when``.

        The matrix with every change event of that context whose ``starts_at <= when`` applied
        in time order (paper Section 3.3 'Timeline and Preference Change').

        Returns:
            attribute key -> setting name, for all 14 attributes.
        """
        ctx = Context(context)
        cells = self.matrix.work if ctx is Context.WORK else self.matrix.personal
        targets = {key: cell.setting for key, cell in cells.items()}
        for event in sorted(self.events.values(), key=lambda e: e.starts_at):
            if event.context is ctx and event.starts_at <= when:
                targets[event.attribute] = event.new_setting
        return targets


@dataclass
class UserScan:
    """Everything readable of one user's folder, with every problem found while reading.

    Fields stay None (or the dicts incomplete) where a file is missing or invalid.
    """

    label: str
    root: Path
    errors: list[WorldFileError] = field(default_factory=list)
    persona: Persona | None = None
    matrix: PreferenceMatrix | None = None
    timeline: Timeline | None = None
    sessions: dict[str, AccumulationSession] = field(default_factory=dict)
    events: dict[str, ChangeEvent] = field(default_factory=dict)
    probes: dict[str, Probe] = field(default_factory=dict)
    sources: dict[str, YamlDoc] = field(default_factory=dict)
    #: ids of script files that failed validation (their problems are in ``errors``)
    invalid_ids: set[str] = field(default_factory=set)

    @property
    def fixture_dir(self) -> Path:
        """The fixture tree folder."""
        return self.root / "fixtures"

    def bundle(self) -> UserBundle:
        """The bundle, if the scan found no problem.

        Raises:
            WorldFileError: the first problem (by path and line), noting how many more there are.
        """
        if self.errors:
            first = min(self.errors, key=lambda e: (e.path, e.line))
            more = len(self.errors) - 1
            suffix = f" (and {more} more; run `mempa worlds check`)" if more else ""
            raise WorldFileError(first.path, first.line, first.message + suffix)
        assert self.persona and self.matrix and self.timeline
        return UserBundle(
            label=self.label,
            root=self.root,
            persona=self.persona,
            matrix=self.matrix,
            timeline=self.timeline,
            sessions=dict(self.sessions),
            events=dict(self.events),
            probes=dict(self.probes),
            fixture_dir=self.fixture_dir,
            sources=dict(self.sources),
        )


def _read(scan: UserScan, path: Path, model: type[M], what: str) -> tuple[M | None, YamlDoc | None]:
    if not path.is_file():
        scan.errors.append(WorldFileError(path, 1, f"missing {what} file"))
        return None, None
    try:
        doc = YamlDoc.read(path)
    except WorldFileError as exc:
        scan.errors.append(exc)
        return None, None
    value, errors = validate_doc(doc, model, what)
    scan.errors.extend(errors)
    return value, doc


def scan_user(worlds_dir: str | Path, label: str) -> UserScan:
    """Read and validate every file of one user, collecting all problems.

    Checks here: each file against its model; the persona's and timeline's label match the
    folder; ids unique across sessions, events and probes; the fixture folder exists.
    Cross-file rules (timeline order, records, tool steps ...) are in :mod:`.check`.
    """
    root = user_dir(worlds_dir, label)
    scan = UserScan(label=label, root=root)
    if not root.is_dir():
        scan.errors.append(WorldFileError(root, 1, f"no folder for user {label!r}"))
        return scan
    scan.persona, doc = _read(scan, root / "persona.yaml", Persona, "persona")
    if doc:
        scan.sources["persona"] = doc
        if scan.persona and scan.persona.label != label:
            scan.errors.append(
                doc.error(("label",), f"label: {scan.persona.label!r} is not the folder's label {label!r}")
            )
    scan.matrix, doc = _read(scan, root / "preferences.yaml", PreferenceMatrix, "preferences")
    if doc:
        scan.sources["preferences"] = doc
    scan.timeline, doc = _read(scan, root / "timeline.yaml", Timeline, "timeline")
    if doc:
        scan.sources["timeline"] = doc
        if scan.timeline and scan.timeline.user != label:
            scan.errors.append(
                doc.error(("user",), f"user: {scan.timeline.user!r} is not the folder's label {label!r}")
            )
    if not scan.fixture_dir.is_dir():
        scan.errors.append(WorldFileError(scan.fixture_dir, 1, "missing fixtures folder (the fixture tree)"))
    seen: dict[str, Path] = {}
    for folder, model, what in _FOLDERS:
        for path in sorted((root / folder).glob("*.yaml")) if (root / folder).is_dir() else []:
            script, doc = _read(scan, path, model, what)
            if script is None or doc is None:
                if doc is not None and isinstance(doc.data, dict) and isinstance(doc.data.get("id"), str):
                    scan.invalid_ids.add(doc.data["id"])
                continue
            sid: str = script.id  # type: ignore[attr-defined]
            if sid in seen:
                scan.errors.append(doc.error(("id",), f"id: duplicate id {sid!r}, also used in {seen[sid]}"))
                continue
            seen[sid] = path
            scan.sources[sid] = doc
            target: dict[str, BaseModel] = {
                "sessions": scan.sessions,
                "events": scan.events,
                "probes": scan.probes,
            }[folder]  # type: ignore[assignment]
            target[sid] = script
    return scan


def load_user(worlds_dir: str | Path, label: str) -> UserBundle:
    """Load one user's validated content.

    Args:
        worlds_dir: the ``worlds/`` folder.
        label: the user's label, e.g. ``A``.

    Returns:
        The :class:`UserBundle`.

    Raises:
        WorldFileError: the first problem found (``path:line: message``); ``mempa worlds check``
            lists them all.
    """
    return scan_user(worlds_dir, label).bundle()
