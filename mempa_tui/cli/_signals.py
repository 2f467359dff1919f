"""Stop a command cleanly on SIGTERM or SIGHUP, as Ctrl-C does.

Without this, ``kill <pid>`` (or a closed terminal) would end the process at once: the run would
stay marked ``running`` and the embedded llama.cpp server, a child process, would be orphaned.
Here the signal cancels the command, so the runner records ``stopped`` (shielded), the embedded
server is terminated and the database is closed; rerunning the same command resumes.
"""

from __future__ import annotations

import signal
import sys
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
    """Run ``command``; on SIGTERM or SIGHUP cancel it and raise :class:`SignalStop`.

    Args:
        command: the command's coroutine function; returns the exit code.

    Returns:
        The command's exit code.

    Raises:
        SignalStop: a signal stopped the command (after it cleaned up).
        Exception: whatever the command raised (unwrapped from the task group).
    """
    if sys.platform == "win32":  # no signal receivers there; Ctrl-C still works
        return await command()
    caught: list[int] = []
    result: list[int] = []
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                    async for signum in signals:
                        caught.append(int(signum))
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            result.append(await command())
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _single(group) from None
    if caught:
        raise SignalStop(caught[0])
    return result[0]
