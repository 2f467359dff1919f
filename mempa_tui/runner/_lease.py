"""One process plays a run at a time: an advisory file lock per run beside the run database.

SPEC §4.8 (resume with nothing done twice). Two ``mempa`` processes playing the same run would
both write its steps and probes; the lease makes the second one stop at once with a clear
message instead. The lock is the operating system's (``flock`` through the ``filelock``
library), so a process killed with SIGKILL releases it with its file descriptors, and a run
whose stored status is still ``running`` but whose lease is free was interrupted.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import TracebackType
from typing import Self

from filelock import FileLock, Timeout

__all__ = ["RunBusyError", "RunLease", "lease_path", "run_is_being_played"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.~-]")


class RunBusyError(RuntimeError):
    """Another process holds the run's lease (it is playing that run right now)."""

    def __init__(self, run_id: str, path: Path) -> None:
        self.run_id = run_id
        self.path = path
        super().__init__(
            f"run {run_id} is being played by another mempa process (lock {path}); "
            "wait for it to finish, or stop it and rerun the same command to resume"
        )


def lease_path(database: Path, run_id: str) -> Path:
    """The lock file of ``run_id`` for the run database at ``database``.

    Args:
        database: path of the run database (``saves/mempa.sqlite``).
        run_id: the run's id; characters outside ``[A-Za-z0-9_.~-]`` become ``_``.

    Returns:
        ``<database folder>/locks/<run_id>.lock``.
    """
    return database.parent / "locks" / f"{_UNSAFE.sub('_', run_id)}.lock"


class RunLease:
    """The exclusive right to play one run; an async context manager that never waits.

    Args:
        database: path of the run database.
        run_id: the run to hold.

    Raises:
        RunBusyError: on entry, when another process (or another lease in this one) holds it.
    """

    def __init__(self, database: Path, run_id: str) -> None:
        self.run_id = run_id
        self.path = lease_path(database, run_id)
        self._lock: FileLock | None = None

    async def __aenter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path, timeout=0, is_singleton=False, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            raise RunBusyError(self.run_id, self.path) from None
        self._lock = lock
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def run_is_being_played(database: Path, run_id: str) -> bool:
    """Whether some process holds ``run_id``'s lease right now (a probe: takes and drops it).

    Args:
        database: path of the run database.
        run_id: the run's id.

    Returns:
        True when the lease is held elsewhere; False when it is free, was never taken, or cannot
        be probed because the saves folder is read-only (then nobody can be writing the run there).
    """
    path = lease_path(database, run_id)
    if not path.exists():
        return False
    lock = FileLock(path, timeout=0, is_singleton=False, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False
