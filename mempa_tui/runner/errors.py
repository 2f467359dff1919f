"""Errors a front end turns into one line (the CLI: exit code 2; the app: a message), never a traceback.

They live in the runner layer so that both front ends share them: the command line
(``mempa_tui.cli``) and the terminal app (``mempa_tui.tui``, which must not import the command line)
re-use one wording of every user-fixable error.
"""

from __future__ import annotations

__all__ = ["UserError", "unwritable", "user_error_message"]


class UserError(Exception):
    """A problem the user can fix (argument, user, profile, world file, server); exit code 2."""


def unwritable(exc: OSError, what: str) -> UserError:
    """The error for files that could not be written (a read-only saves folder, a full disk).

    Args:
        exc: the failed write.
        what: what was being written, e.g. ``"the report"``.
    """
    where = f" to {exc.filename}" if exc.filename else ""
    return UserError(f"cannot write {what}{where} ({exc.strerror or exc}); pass --out DIR with a folder "
                     "you can write to")


def user_error_message(exc: BaseException) -> str | None:
    """One line for a known user-fixable error, or None when ``exc`` is not one.

    Known: :class:`UserError`, world file errors (``path:line: message``), profile errors, config
    mismatches on resume, a run another process is playing, donor problems, memory option errors, store errors.
    """
    from mempa_tui.llm.profile import ProfileError
    from mempa_tui.memory import MemoryConfigError
    from mempa_tui.runner import ConfigMismatchError, DonorError, RunBusyError
    from mempa_tui.runner.setup import RunSetupError
    from mempa_tui.scripts.loader import WorldFileError
    from mempa_tui.store import StoreError
    from mempa_tui.world import WorldPathError

    if isinstance(exc, (UserError, ProfileError, ConfigMismatchError, DonorError, MemoryConfigError,
                        StoreError, WorldPathError, RunBusyError, RunSetupError)):
        return str(exc)
    if isinstance(exc, WorldFileError):
        return str(exc)
    return None
