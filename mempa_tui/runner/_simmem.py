"""The simulator memory as the runner carries it between steps (paper Appendix D.3, C.4).

The episode gets a private copy of the memory at the step's start. The simulator may write its
session entry into that copy itself (``write_session_entry`` updates in place); the step's
``simulator_entry`` is added by the runner only when the copy does not hold it yet, so an entry is
never lost and never doubled. A discarded step's copy is dropped.
"""

from __future__ import annotations

from datetime import datetime

from mempa_tui.simulator import MemoryEntry, SimulatorMemory

__all__ = [
    "SimulatorMemoryState",
    "apply_step_entry",
    "copy_simulator_memory",
    "dump_simulator_memory",
    "load_simulator_memory",
    "new_simulator_memory",
]

SimulatorMemoryState = SimulatorMemory
"""The type the runner stores in checkpoints."""


def new_simulator_memory() -> SimulatorMemory:
    """An empty memory (the run's start)."""
    return SimulatorMemory()


def copy_simulator_memory(memory: SimulatorMemory) -> SimulatorMemory:
    """A deep copy for one step attempt."""
    return memory.model_copy(deep=True)


def dump_simulator_memory(memory: SimulatorMemory) -> str:
    """Serialise for a checkpoint."""
    return memory.model_dump_json()


def load_simulator_memory(text: str) -> SimulatorMemory:
    """Restore from a checkpoint.

    Raises:
        pydantic.ValidationError: the text is not a stored simulator memory.
    """
    return SimulatorMemory.model_validate_json(text)


def apply_step_entry(memory: SimulatorMemory, result: object, when: datetime) -> SimulatorMemory:
    """Make sure a completed step's entry is in ``memory`` (the step's own copy) and return it.

    Args:
        memory: the copy the step ran with (possibly already holding its entry).
        result: the step's ``StepResult`` (``kind``, ``simulator_entry``).
        when: the step's story time (the entry's date).

    Returns:
        ``memory``, with the entry added when it was missing.
    """
    text = getattr(result, "simulator_entry", None)
    if not text or not str(text).strip():
        return memory
    text = " ".join(str(text).split())
    if any(" ".join(e.text.split()) == text for e in memory.entries):
        return memory
    if getattr(result, "kind", "") == "change_event":
        memory.entries.append(MemoryEntry(on=when.date(), kind="change_note", text=text))
    else:
        memory.entries.append(MemoryEntry(on=when.date(), kind="session", text=text))
    return memory
