"""Attribute logged model calls to the step or probe that made them.

Runs and probe repeats share one :class:`~mempa_tui.llm.LLMClient` and run concurrently, so slicing
``client.calls`` by position would mix their calls. Instead the runner swaps the client's call log
for a :class:`RoutingCallLog`, which also hands each new record to the sink of the task that made
the call (a context variable: anyio task groups copy the context into child tasks, and the client
logs a call in the caller's task). The client itself is unchanged and keeps its full log.

The same context-variable path carries the sampling scope (:mod:`mempa_tui.llm.sampling`): the
runner wraps each timeline step attempt in :func:`step_sampling_scope` and each probe repeat
attempt in :func:`probe_sampling_scope`, so every call they make sends a seed of its own.

Memory (issue 16): a record carries the call's prompt and reply (tens of KB for a long PA prompt).
The long-lived log keeps a :meth:`~mempa_tui.llm.types.LLMCallRecord.light` copy without them;
only the sink of the step or probe repeat holds the full record, and the sink is dropped once the
runner has stored that step (where the prompt and reply are kept zlib-compressed).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import SupportsIndex

from mempa_tui.llm.sampling import sampling_scope
from mempa_tui.llm.collect import collecting
from mempa_tui.llm.types import LLMCallRecord

__all__ = [
    "RoutingCallLog",
    "capture_calls",
    "install_call_routing",
    "probe_sampling_scope",
    "step_sampling_scope",
]

_SINK: ContextVar[list[LLMCallRecord] | None] = ContextVar("mempa_call_sink", default=None)


class RoutingCallLog(list[LLMCallRecord]):
    """A call log that also copies each appended record to the current task's sink.

    The log itself keeps each record without its prompt and reply; the sink gets it whole.
    """

    def append(self, item: LLMCallRecord) -> None:
        """Log ``item`` (light) and hand it whole to the active :func:`capture_calls` sink, if any."""
        super().append(item.light())
        sink = _SINK.get()
        if sink is not None:
            sink.append(item)

    def extend(self, items: Iterable[LLMCallRecord]) -> None:
        """Log several records (each routed as by :meth:`append`)."""
        for item in items:
            self.append(item)

    def insert(self, index: SupportsIndex, item: LLMCallRecord) -> None:
        """Insert ``item`` (light; routed whole as by :meth:`append`)."""
        super().insert(index, item.light())
        sink = _SINK.get()
        if sink is not None:
            sink.append(item)


def install_call_routing(client: object) -> bool:
    """Make ``client.calls`` a :class:`RoutingCallLog` (keeping what it holds).

    Args:
        client: an object with a ``calls`` list (the LLM client).

    Returns:
        True when routing is in place; False when the client has no ``calls`` list (then steps
        are stored without their model calls).
    """
    calls = getattr(client, "calls", None)
    if isinstance(calls, RoutingCallLog):
        return True
    if not isinstance(calls, list):
        return False
    client.calls = RoutingCallLog(c.light() for c in calls)  # type: ignore[attr-defined]
    return True


def capture_calls() -> AbstractContextManager[list[LLMCallRecord]]:
    """Collect the model calls the current task (and its children) log inside the block.

    Returns:
        A context manager whose value is the list the calls are appended to, in order of logging.
    """
    return collecting(_SINK)


def step_sampling_scope(run_seed: int, step_id: str, attempt: int) -> AbstractContextManager[str]:
    """The sampling scope of one play of a timeline step (see :mod:`mempa_tui.llm.sampling`).

    Args:
        run_seed: the run's seed (:attr:`~mempa_tui.runner.config.RunConfig.seed`).
        step_id: the session or change event id.
        attempt: 1-based play of the step (a failed step is played again with new draws).

    Returns:
        A context manager; a resumed run replays the same step and attempt with the same seeds.
    """
    return sampling_scope(f"run-seed={run_seed} step={step_id} attempt={attempt}")


def probe_sampling_scope(run_seed: int, probe_id: str, repeat: int, attempt: int = 1) -> AbstractContextManager[str]:
    """The sampling scope of one run of a probe repeat (paper Section 3.5: three repeats, and
    Appendix F.2: a floored repeat is run again; each gets draws of its own).

    Args:
        run_seed: the run's seed.
        probe_id: the probe id.
        repeat: 1-based repeat.
        attempt: 1-based run of that repeat.

    Returns:
        A context manager; the probe stepper replays repeat 1's first run with the same seeds.
    """
    return sampling_scope(f"run-seed={run_seed} probe={probe_id} repeat={repeat} attempt={attempt}")
