"""The list a context variable holds for a block (mempa_tui.llm.collect): shared by the cut-reply
watch and the runner's model-call capture."""

from __future__ import annotations

from contextvars import ContextVar

import anyio
import pytest

from mempa_tui.llm.collect import collecting

SINK: ContextVar[list[int] | None] = ContextVar("test_sink", default=None)


def _note(n: int) -> None:
    sink = SINK.get()
    if sink is not None:
        sink.append(n)


async def test_a_block_collects_from_its_tasks_an_inner_block_takes_over_and_a_raise_restores() -> None:
    _note(0)  # outside every block: nothing collects
    with collecting(SINK) as outer:
        _note(1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_async_note, 2)
        with collecting(SINK) as inner:
            _note(3)
        _note(4)
        with pytest.raises(RuntimeError), collecting(SINK):
            raise RuntimeError("boom")
        _note(5)
    assert outer == [1, 2, 4, 5] and inner == [3] and SINK.get() is None


async def _async_note(n: int) -> None:
    _note(n)
