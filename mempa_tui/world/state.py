"""The world as plain files: an immutable map of relative path -> bytes.

Source: paper Appendix C.2 'Persistent world' and 'Visibility rules' (path rule). A user's world
starts from a fixture tree on disk; a run keeps its persistent world as a :class:`WorldState`; each
step works on a :class:`~mempa_tui.world.working_copy.WorkingCopy` of it and commits the copy's
:meth:`~mempa_tui.world.working_copy.WorkingCopy.to_state` or drops it.

States are cheap to derive: :meth:`WorldState.with_files` shares the ``bytes`` objects (and their
cached digests) of every unchanged file, so a checkpoint store keyed by :meth:`manifest` digests
keeps each unchanged file once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from pydantic_core import core_schema

__all__ = ["NOTES_DIR", "WorldError", "WorldPathError", "WorldState", "check_relative_path"]

#: Folder of construction notes inside a fixture tree; never loaded, never visible to the PA.
NOTES_DIR = "_notes"


class WorldError(Exception):
    """Base of the errors the world package raises."""


class WorldPathError(WorldError, ValueError):
    """A path that is not a plain relative path inside the world (absolute, ``..``, a link)."""


def check_relative_path(path: str) -> str:
    """Validate a world-relative POSIX path and return it unchanged.

    Args:
        path: e.g. ``"email/inbox.yaml"``.

    Returns:
        ``path``.

    Raises:
        WorldPathError: empty, absolute, containing a backslash, ``.``/``..`` or empty segments,
            or pointing into the construction notes folder (paper Appendix C.2, path rule).
    """
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        raise WorldPathError(f"world path {path!r} is not a relative POSIX path")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise WorldPathError(f"world path {path!r} leaves the world or has empty segments")
    if NOTES_DIR in parts:
        raise WorldPathError(f"world path {path!r} is inside the construction notes ({NOTES_DIR}/)")
    return path


class WorldState(Mapping[str, bytes]):
    """An immutable world: relative POSIX path -> file bytes.

    Behaves as a read-only ``Mapping``; two states are equal when they hold the same files with
    the same bytes. Usable as a pydantic field (validated by ``isinstance``).

    Args:
        files: the files; every key must pass :func:`check_relative_path`.

    Raises:
        WorldPathError: a key is not a plain relative path.
        TypeError: a value is not ``bytes``.
    """

    __slots__ = ("_digests", "_files", "_hash")

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        items = dict(files or {})
        for path, data in items.items():
            check_relative_path(path)
            if not isinstance(data, bytes):
                raise TypeError(f"world file {path!r}: content must be bytes, got {type(data).__name__}")
        self._files: dict[str, bytes] = dict(sorted(items.items()))
        self._digests: dict[str, str] = {}
        self._hash: str | None = None

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_directory(cls, directory: str | os.PathLike[str]) -> WorldState:
        """Read a fixture tree from disk.

        Files under any ``_notes/`` folder (construction notes) and dot-files (``.gitkeep``) are
        skipped. Symbolic links are refused, as is anything that resolves outside the tree.

        Args:
            directory: the tree's root folder.

        Returns:
            The state holding every plain file of the tree.

        Raises:
            WorldPathError: the root is missing or not a folder, or the tree holds a symlink or a
                path that resolves outside it.
        """
        root = Path(directory)
        if not root.is_dir():
            raise WorldPathError(f"fixture tree {str(root)!r} is not a folder")
        real_root = root.resolve()
        files: dict[str, bytes] = {}
        for current, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(current)
            for name in list(dirnames):
                if (here / name).is_symlink():
                    raise WorldPathError(f"fixture tree holds a symbolic link: {here / name}")
            dirnames[:] = sorted(d for d in dirnames if d != NOTES_DIR and not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                full = here / name
                if full.is_symlink():
                    raise WorldPathError(f"fixture tree holds a symbolic link: {full}")
                if not full.is_file():
                    raise WorldPathError(f"fixture tree holds something not a plain file: {full}")
                real = full.resolve()
                if not real.is_relative_to(real_root):
                    raise WorldPathError(f"{full} resolves outside the fixture tree {root}")
                rel = PurePosixPath(real.relative_to(real_root)).as_posix()
                files[rel] = real.read_bytes()
        return cls(files)

    def with_files(self, changes: Mapping[str, bytes | None]) -> WorldState:
        """A new state with ``changes`` applied (``None`` removes a file).

        Unchanged files keep their ``bytes`` objects and cached digests.

        Raises:
            WorldPathError: a changed path is not a plain relative path.
        """
        files = dict(self._files)
        for path, data in changes.items():
            check_relative_path(path)
            if data is None:
                files.pop(path, None)
            else:
                files[path] = data
        new = WorldState(files)
        for path, digest in self._digests.items():
            if path in new._files and new._files[path] is self._files[path]:
                new._digests[path] = digest
        return new

    # ---- Mapping ------------------------------------------------------------------------

    def __getitem__(self, path: str) -> bytes:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorldState):
            return NotImplemented
        return self._files == other._files

    def __hash__(self) -> int:
        return hash(self.content_hash())

    def __repr__(self) -> str:
        return f"WorldState({len(self._files)} files, {self.content_hash()[:12]})"

    # ---- views --------------------------------------------------------------------------

    @property
    def files(self) -> Mapping[str, bytes]:
        """Read-only view of path -> bytes, sorted by path."""
        return MappingProxyType(self._files)

    def digest(self, path: str) -> str:
        """sha256 hex digest of one file (cached).

        Raises:
            KeyError: no such file.
        """
        found = self._digests.get(path)
        if found is None:
            found = hashlib.sha256(self._files[path]).hexdigest()
            self._digests[path] = found
        return found

    def manifest(self) -> dict[str, str]:
        """Map of path -> sha256 hex digest of its bytes, sorted by path."""
        return {path: self.digest(path) for path in self._files}

    def content_hash(self) -> str:
        """sha256 hex digest over the manifest (paths and contents); equal states hash equally."""
        if self._hash is None:
            h = hashlib.sha256()
            for path, digest in self.manifest().items():
                h.update(path.encode("utf-8"))
                h.update(b"\x00")
                h.update(digest.encode("ascii"))
                h.update(b"\n")
            self._hash = h.hexdigest()
        return self._hash

    def write_to(self, directory: str | os.PathLike[str]) -> None:
        """Write every file under ``directory`` (created if needed; other files are left alone).

        Raises:
            WorldPathError: a target would resolve outside ``directory`` (e.g. through a link
                already there).
        """
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        real_root = root.resolve()
        for path, data in self._files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.parent.resolve().is_relative_to(real_root) or target.is_symlink():
                raise WorldPathError(f"refusing to write {path!r}: it resolves outside {root}")
            target.write_bytes(data)

    # ---- pydantic -----------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """Let pydantic models hold a state as a field (checked with ``isinstance``)."""
        return core_schema.is_instance_schema(cls)
