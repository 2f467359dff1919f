"""No Memory, Oracle and the memory factory (SPEC 4.7; paper Section 3.5 'Reference Conditions')."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from mempa_tui.ix.types import IXCall
from mempa_tui.memory import (
    FileMemory,
    MemoryConfigError,
    NoMemory,
    OracleMemory,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    default_thresholds,
    make_memory,
)
from mempa_tui.taxonomy import Context, attribute

AT = datetime(2025, 3, 4, 10, 0)


def _turn(i: int = 0) -> TurnRecord:
    return TurnRecord(
        step_id="A-s01",
        context=Context.WORK,
        at=AT,
        turn_index=i,
        user_message=f"please file the invoice number {i}",
        ix_calls=[IXCall(attribute="verbosity", setting="Detailed")],
        reply="Filed it.",
    )


def _session(probe: bool, context: Context = Context.WORK) -> SessionInfo:
    return SessionInfo(step_id="A-p01", context=context, at=AT, is_probe=probe)


async def test_no_memory_stores_nothing_and_round_trips() -> None:
    mem = NoMemory()
    before = mem.snapshot()
    await mem.write(_turn())
    evidence = await mem.retrieve("hello", _session(False))
    assert evidence.system_text == "" and evidence.items == [] and evidence.prior_messages == []
    assert mem.snapshot() == before
    assert mem.inspect().stored == []
    mem.restore(before)
    with pytest.raises(SnapshotError, match="No Memory"):
        mem.restore(b'{"system":"file"}')


async def test_oracle_states_target_only_inside_a_probe() -> None:
    mem = OracleMemory()
    await mem.write(_turn())
    assert (await mem.retrieve("hi", _session(True))).system_text == ""  # no target set
    pre_probe = mem.snapshot()

    mem.set_probe_target("verbosity", "Terse")
    evidence = await mem.retrieve("hi", _session(True))
    terse = attribute("verbosity").setting("Terse")
    assert "Terse" in evidence.system_text
    assert terse.behaviour in evidence.system_text
    assert "Detailed" not in evidence.system_text
    # outside a probe it hands nothing, even with a target set
    assert (await mem.retrieve("hi", _session(False))).system_text == ""

    mem.restore(pre_probe)  # the runner restores the pre-probe snapshot after the probe
    assert mem.probe_target is None
    assert (await mem.retrieve("hi", _session(True))).system_text == ""


async def test_oracle_snapshot_round_trips_a_set_target() -> None:
    mem = OracleMemory()
    mem.set_probe_target("Autonomy Level", "Self-directed")
    data = mem.snapshot()
    other = OracleMemory()
    other.restore(data)
    assert other.snapshot() == data
    assert other.probe_target is not None and other.probe_target.attribute == "autonomy_level"


def test_oracle_rejects_unknown_settings() -> None:
    mem = OracleMemory()
    with pytest.raises(KeyError, match="valid settings"):
        mem.set_probe_target("verbosity", "Chatty")
    with pytest.raises(KeyError, match="unknown attribute"):
        mem.set_probe_target("loudness", "High")
    with pytest.raises(SnapshotError, match="Oracle"):
        mem.restore(b"not json")


def test_default_thresholds_scale_with_the_window() -> None:
    assert default_thresholds(None) == (20_000, 10_000)
    assert default_thresholds(128_000) == (20_000, 10_000)
    assert default_thresholds(8_192) == (4_096, 2_048)
    with pytest.raises(ValueError, match="positive"):
        default_thresholds(0)


class _NoCalls:
    """A client that must not be called (building a memory makes no model call)."""

    async def complete(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("no model call expected")

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_make_memory_builds_each_condition(tmp_path: Path) -> None:
    assert isinstance(make_memory("none", client=None, folder=tmp_path), NoMemory)
    assert isinstance(make_memory("oracle", client=None, folder=tmp_path), OracleMemory)
    file_mem = make_memory("file", client=_NoCalls(), folder=tmp_path / "run", context_window=8192)
    assert isinstance(file_mem, FileMemory)
    assert (file_mem.consolidate_at_tokens, file_mem.consolidate_to_tokens) == (4096, 2048)
    explicit = make_memory(
        "file", client=_NoCalls(), folder=tmp_path, consolidate_at_tokens=300, consolidate_to_tokens=100
    )
    assert isinstance(explicit, FileMemory) and explicit.consolidate_at_tokens == 300
    assert not (tmp_path / "run").exists()  # nothing written before the first turn


def test_make_memory_rejects_bad_names_and_options(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="unknown memory condition 'rga'; valid: none, oracle, file, rag, mem0, memos, prefstate, ours-rag"):
        make_memory("rga", client=None, folder=tmp_path)
    with pytest.raises(MemoryConfigError, match="unknown option.*window"):
        make_memory("file", client=_NoCalls(), folder=tmp_path, window=3)
    with pytest.raises(MemoryConfigError, match="takes no options"):
        make_memory("none", client=None, folder=tmp_path, consolidate_at_tokens=5)
    with pytest.raises(MemoryConfigError, match="needs a model client"):
        make_memory("file", client=None, folder=tmp_path)
    with pytest.raises(MemoryConfigError, match="must be below"):
        make_memory("file", client=_NoCalls(), folder=tmp_path, consolidate_at_tokens=100, consolidate_to_tokens=100)
    with pytest.raises(MemoryConfigError, match="must be an integer"):
        make_memory("file", client=_NoCalls(), folder=tmp_path, consolidate_at_tokens="many")


def test_turn_record_cannot_carry_a_target() -> None:
    fields = set(TurnRecord.model_fields)
    assert not any("target" in f or "withheld" in f or "trace" in f for f in fields)
    record = TurnRecord.model_validate({**_turn().model_dump(), "target": "Terse", "target_setting": "Terse"})
    assert "Terse" not in record.model_dump_json()


def test_file_memory_option_errors_name_the_values_the_run_would_use(tmp_path: Path) -> None:
    """Finding 10: `-5` was answered with the paper's 10000, not the run's scaled 6,700."""
    with pytest.raises(MemoryConfigError) as info:
        make_memory("file", client=_NoCalls(), folder=tmp_path, context_window=26_803, consolidate_at_tokens=-5)
    assert str(info.value) == (
        "memory condition 'file': consolidate_at_tokens must be a positive number of tokens, got -5; without the "
        "option the run would use 13,401 (this run's default, scaled from the paper's 20,000 to the PA's window)")
    with pytest.raises(MemoryConfigError) as info:
        make_memory("file", client=_NoCalls(), folder=tmp_path, context_window=26_803, consolidate_to_tokens=15_000)
    assert ("the run would use consolidate_at_tokens 13,401 (this run's default, scaled from the paper's 20,000 "
            "to the PA's window) and consolidate_to_tokens 15,000 (given)") in str(info.value)
    with pytest.raises(MemoryConfigError, match=r"20,000 \(the paper's default\) and consolidate_to_tokens 25,000"):
        make_memory("file", client=_NoCalls(), folder=tmp_path, consolidate_to_tokens=25_000)
