"""The world: fixture trees as immutable file maps, and the per-step working copy.

Paper Section 3.3 'World and Tools' and Appendix C.2. See :mod:`mempa_tui.world.records` for the
record types of each collection.
"""

from __future__ import annotations

from mempa_tui.world._fixture_io import FixtureError, collection_issues, collection_path, to_plain
from mempa_tui.world.records import COLLECTIONS, ID_PREFIXES, Record
from mempa_tui.world.state import NOTES_DIR, WorldError, WorldPathError, WorldState, check_relative_path
from mempa_tui.world.working_copy import (
    CallLogEntry,
    Change,
    UnknownCollectionError,
    WorkingCopy,
    strip_tool_prefix,
)

__all__ = [
    "COLLECTIONS",
    "ID_PREFIXES",
    "NOTES_DIR",
    "CallLogEntry",
    "Change",
    "FixtureError",
    "Record",
    "UnknownCollectionError",
    "WorkingCopy",
    "WorldError",
    "WorldPathError",
    "WorldState",
    "check_relative_path",
    "collection_issues",
    "collection_path",
    "strip_tool_prefix",
    "to_plain",
]
