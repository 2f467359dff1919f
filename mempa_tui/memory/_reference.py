"""The two reference conditions: No Memory and Oracle (paper Section 3.5 'Reference Conditions',
Appendix F.1, Table 9 note a).

Both run probes only, from a donor run's checkpoints with the memory cleared (SPEC 4.8); neither
stores anything that is written to it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)
from mempa_tui.taxonomy import attribute

__all__ = ["NoMemory", "OracleMemory", "OracleTarget", "SnapshotError"]


class SnapshotError(ValueError):
    """Bytes handed to ``restore`` are not a snapshot of this memory system.

    The message names the system and what is wrong with the bytes.
    """


class NoMemory(MemorySystem):
    """The lower reference: stores nothing and hands the PA empty evidence.

    Under No Memory the PA's selections show the backbone's own defaults (paper Appendix G.3).
    """

    name = "none"

    def __init__(self) -> None:
        self._last: Evidence | None = None
        self._ignored_turns = 0

    async def write(self, record: TurnRecord) -> None:
        """Discard the turn (counted for the side panel only)."""
        self._ignored_turns += 1

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Return empty evidence."""
        self._last = Evidence()
        return self._last

    def snapshot(self) -> bytes:
        """The store is always empty: a constant marker."""
        return b'{"system":"none"}'

    def restore(self, data: bytes) -> None:
        """Accept only the marker :meth:`snapshot` writes.

        Raises:
            SnapshotError: ``data`` is not a No Memory snapshot.
        """
        if data != self.snapshot():
            raise SnapshotError(f"No Memory: not a No Memory snapshot: {data[:80]!r}")
        self._last = None

    def inspect(self) -> MemoryInspection:
        """Nothing stored; the last (empty) evidence."""
        return MemoryInspection(
            system=self.name,
            last_evidence=self._last,
            stats={"ignored_turns": float(self._ignored_turns)},
        )


class OracleTarget(BaseModel):
    """The probed cell's target as the runner hands it to Oracle inside a probe.

    Attributes:
        attribute: attribute key, e.g. ``verbosity``.
        setting: the target setting's name as Table 4 spells it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    attribute: str
    setting: str


class _OracleState(BaseModel):
    """What an Oracle snapshot holds: only the probe target, if one is set."""

    model_config = ConfigDict(extra="forbid")

    system: str = "oracle"
    target: OracleTarget | None = None


class OracleMemory(MemorySystem):
    """The upper reference: an empty store that, inside a probe, states the target setting.

    The runner calls :meth:`set_probe_target` only inside an Oracle probe. While a target is set
    and the session is a probe, :meth:`retrieve` returns the target setting of the probed cell and
    its definition (taxonomy ``behaviour``); at every other time it returns empty evidence. Writes
    are discarded. Restoring the snapshot taken before the probe clears the target again.
    """

    name = "oracle"

    def __init__(self) -> None:
        self._target: OracleTarget | None = None
        self._last: Evidence | None = None

    def set_probe_target(self, attribute_key: str, setting: str) -> None:
        """Set the probed cell's target for the probe that is about to run.

        Args:
            attribute_key: the probed attribute's key or display name.
            setting: the target setting's name.

        Raises:
            KeyError: unknown attribute or a setting the attribute does not have (the message
                lists the valid ones).
        """
        attr = attribute(attribute_key)
        attr.setting(setting)
        self._target = OracleTarget(attribute=attr.key, setting=setting)

    def clear_probe_target(self) -> None:
        """Forget the probe target (the runner calls this, or restores a snapshot, after a probe)."""
        self._target = None

    @property
    def probe_target(self) -> OracleTarget | None:
        """The target currently set, if any."""
        return self._target

    async def write(self, record: TurnRecord) -> None:
        """Discard the turn: Oracle keeps no history."""

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Return the target and its definition inside a probe with a target set; else nothing."""
        if self._target is None or not session.is_probe:
            self._last = Evidence()
            return self._last
        attr = attribute(self._target.attribute)
        setting = attr.setting(self._target.setting)
        text = (
            f"Known preference of this user for the current ({session.context.value}) context.\n"
            f"Attribute: {attr.name} - {attr.question}\n"
            f"Required setting: {setting.name}\n"
            f"What that means in practice: {setting.behaviour}\n"
            f"When you call {attr.ix_tool}, choose {setting.name} and carry it out."
        )
        self._last = Evidence(
            system_text=text,
            items=[EvidenceItem(text=text, source=f"oracle:{attr.key}")],
        )
        return self._last

    def snapshot(self) -> bytes:
        """JSON of the (possibly empty) probe target."""
        return _OracleState(target=self._target).model_dump_json().encode()

    def restore(self, data: bytes) -> None:
        """Replace the state with a snapshot taken by :meth:`snapshot`.

        Raises:
            SnapshotError: ``data`` is not an Oracle snapshot.
        """
        try:
            state = _OracleState.model_validate_json(data)
        except ValidationError as exc:
            raise SnapshotError(f"Oracle: not an Oracle snapshot: {exc.errors()[0]['msg']}") from None
        if state.system != "oracle":
            raise SnapshotError(f"Oracle: snapshot belongs to {state.system!r}")
        self._target = state.target
        self._last = None

    def inspect(self) -> MemoryInspection:
        """No stored entries; the probe target (if set) and the last evidence."""
        stored = (
            [f"probe target: {self._target.attribute} = {self._target.setting}"]
            if self._target
            else []
        )
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last)
