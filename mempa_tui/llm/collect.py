"""A list that a context variable holds for the length of a block.

Two places collect what the calls inside a block make, per task: the cut judge and rater replies
kept (:func:`~mempa_tui.llm.structured.watch_cut_replies`) and a step's model calls
(:func:`mempa_tui.runner._calls.capture_calls`). Each hands the block a new list that a
:class:`~contextvars.ContextVar` holds inside it (so the tasks started there append to it too),
and puts back what the variable held before, also when the block raises. It lives here, the
lowest layer that uses it, so the runner shares it without the model layer importing the runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["collecting"]

T = TypeVar("T")


@contextmanager
def collecting(var: ContextVar[list[T] | None]) -> Iterator[list[T]]:
    """Make a new empty list what ``var`` holds inside the block (and in tasks started there).

    Args:
        var: the context variable (None outside every block: nothing collects).

    Yields:
        The list; whoever reads ``var`` inside the block appends to it. An inner ``collecting``
        of the same variable takes over until it ends.
    """
    found: list[T] = []
    token = var.set(found)
    try:
        yield found
    finally:
        var.reset(token)
