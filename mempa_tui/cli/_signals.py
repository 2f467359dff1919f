"""Stop a command cleanly on Ctrl-C (SIGINT), SIGTERM or SIGHUP.

Without this, ``kill <pid>`` (or a closed terminal) would end the process at once: the run would
stay marked ``running`` and the embedded llama.cpp server, a child process, would be orphaned.
Here the first signal cancels the command, so the runner records ``stopped`` (shielded), the
embedded server is terminated and the database is closed; rerunning the same command resumes.
Signals that arrive while that clean-up runs (a second Ctrl-C) are answered with a line on
stderr instead of interrupting it half-way. A SIGINT that the process inherited as ignored (a
background job of a non-interactive shell) stays ignored.
"""

from __future__ import annotations

import signal
import sys
import warnings
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["SignalStop", "stop_on_signals"]


class SignalStop(Exception):
    """The command was stopped by a signal; ``code`` is the exit code (128 + signal number)."""

    def __init__(self, signum: int) -> None:
        self.code = 128 + signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _single(first) if isinstance(first, BaseExceptionGroup) else first


async def stop_on_signals(command: Callable[[], Awaitable[int]]) -> int:
    """Run ``command``; on Ctrl-C, SIGTERM or SIGHUP cancel it and raise :class:`SignalStop`.

    Args:
        command: the command's coroutine function; returns the exit code.

    Returns:
        The command's exit code.

    Raises:
        SignalStop: a signal stopped the command (after it cleaned up); code 128 + the signal.
        Exception: whatever the command raised (unwrapped from the task group).
    """
    if sys.platform == "win32":  # no signal receivers there; Ctrl-C still works
        return await command()
    # litellm makes its request coroutine before awaiting it; a stop that cancels the call in
    # between leaves it unawaited, and Python warns at collection. Nothing is lost by it.
    warnings.filterwarnings("ignore", message=r"coroutine '.*async_completion' was never awaited",
                            category=RuntimeWarning)
    watched = [signal.SIGTERM, signal.SIGHUP]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        watched.append(signal.SIGINT)
    caught: list[int] = []
    result: list[int] = []
    command_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                # Outside the command's scope, so it keeps answering signals while the command
                # cleans up; cancelled once the command has returned.
                with anyio.open_signal_receiver(*watched) as signals:
                    async for signum in signals:
                        if not caught:
                            caught.append(int(signum))
                            command_scope.cancel()
                        else:
                            print("mempa: still stopping (saving where the run is); one moment",
                                  file=sys.stderr, flush=True)

            tg.start_soon(watch)
            with command_scope:
                result.append(await command())
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _single(group) from None
    if caught:
        raise SignalStop(caught[0])
    return result[0]
