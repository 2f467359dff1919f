"""The quick-start slice of a full timeline (``slice:`` in timeline.yaml, ``mempa run --slice``).

A full user timeline has 94 sessions and 5 change events (paper Section 3.3); the quick start
plays a named subset of it. These tests use a copy of User D (a full timeline) with a slice added.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from mempa_tui.cli.main import main
from mempa_tui.runner import RunConfig
from mempa_tui.runner.config import config_diff
from mempa_tui.scripts.loader import has_slice, load_user
from mempa_tui.scripts.schema import Timeline

WORLDS = Path(__file__).resolve().parents[1] / "worlds"


def _worlds_with_slice(tmp_path: Path, size: int) -> tuple[Path, list[str]]:
    """A copy of User D whose timeline names its first ``size`` steps as the slice (0: none)."""
    shutil.copytree(WORLDS / "users" / "D", tmp_path / "users" / "D")
    path = tmp_path / "users" / "D" / "timeline.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["slice"] = data["steps"][:size]  # size 0: no slice
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return tmp_path, data["slice"]


def test_sliced_bundle_keeps_the_slice_steps_finals_and_their_events_pre_event_probes(tmp_path: Path) -> None:
    full = load_user(WORLDS, "D")
    assert full.timeline.scope == "full"
    size = next(i for i, s in enumerate(full.timeline.steps) if s in full.events) + 1  # through the first event
    worlds, chosen = _worlds_with_slice(tmp_path, size)
    sliced = load_user(worlds, "D").sliced()
    assert sliced.timeline.steps == chosen
    first_event = chosen[-1]
    pre = [p for p in sliced.probes.values() if p.event is not None]
    assert [p.event for p in pre] == [first_event]
    assert sum(1 for p in sliced.probes.values() if p.event is None) == 28
    assert len(full.probes) == 33 and len(sliced.probes) == 29
    # the final probes' targets follow only the slice's one change, not the four left out
    assert list(sliced.events) == [first_event]
    end = max(p.starts_at for p in full.probes.values())
    left_out = [e for e in full.events.values() if e.id != first_event]
    assert len(left_out) == 4
    for e in left_out:
        assert full.targets_at(e.context, end)[e.attribute] == e.new_setting
        assert sliced.targets_at(e.context, end)[e.attribute] == e.old_setting


def test_a_full_timeline_without_a_slice_refuses_slice_runs_with_the_file_to_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worlds, _ = _worlds_with_slice(tmp_path, 0)
    with pytest.raises(ValueError, match=r"names no slice: add a `slice:` list of step ids to .*timeline.yaml"):
        load_user(worlds, "D").sliced()
    assert main(["run", "--user", "D", "--slice", "--worlds", str(worlds), "--model", "embedded"]) == 2
    err = capsys.readouterr().err
    assert "names no slice" in err and "Traceback" not in err


def test_every_shipped_user_has_a_slice_with_its_first_event() -> None:
    for label in ("A", "B", "C", "D"):
        sliced = load_user(WORLDS, label).sliced()
        assert list(sliced.events) == [f"{label}-E01"] and len(sliced.timeline.steps) >= 13, label


def test_a_slice_scope_timeline_is_its_own_slice() -> None:
    full = load_user(WORLDS, "D")
    partial = replace(full, timeline=full.timeline.model_copy(update={"scope": "slice", "slice": []}))
    assert partial.sliced() is partial


@pytest.mark.parametrize(
    ("slice_ids", "message"),
    [(["S9"], "slice: 'S9' is not a step of the timeline"), (["S2", "S1"], "slice: 'S1' is repeated or out of")],
)
def test_slice_must_name_steps_in_timeline_order(slice_ids: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Timeline(user="Q", steps=["S1", "S2", "S3"], slice=slice_ids)


def test_slice_is_in_the_run_id_and_hash_but_old_configs_still_match() -> None:
    whole = RunConfig(user="A", profile="embedded", memory="file")
    part = whole.model_copy(update={"slice": True})
    assert whole.run_id == "A-file-embedded-s0" and part.run_id == "A-file-embedded-s0-slice"
    assert whole.config_hash() != part.config_hash()
    stored_before_the_field = whole.model_dump_json(exclude={"slice"})
    assert config_diff(stored_before_the_field, whole) == []
    assert config_diff(stored_before_the_field, part) == ["slice: None -> True"]


def test_has_slice_reads_only_the_timeline(tmp_path: Path) -> None:
    assert has_slice(WORLDS, "A")
    worlds, _ = _worlds_with_slice(tmp_path, 0)
    assert not has_slice(worlds, "D") and not has_slice(worlds, "Z")
    (worlds / "users" / "D" / "timeline.yaml").write_text("slice: [unclosed")
    assert not has_slice(worlds, "D")  # load_user reports the broken file


# -- the quick start (``quick:`` in timeline.yaml, ``mempa run --quick``) ---------------------------


def test_every_shipped_user_has_a_quick_start_of_one_attribute_in_both_contexts_and_its_event() -> None:
    for label in ("A", "B", "C", "D"):
        full = load_user(WORLDS, label)
        quick = full.quick_start()
        assert quick.timeline.steps == full.timeline.quick and len(quick.timeline.steps) <= 5, label
        assert list(quick.events) == [f"{label}-E01"], label
        event = quick.events[f"{label}-E01"]
        tested = {(s.context, s.attribute) for s in quick.sessions.values()}
        assert {a for _, a in tested} == {event.attribute}, label  # one attribute ...
        assert len({c for c, _ in tested}) == 2, label  # ... in both contexts
        # the probes those cells need: both final probes and the event's pre-event probe, nothing else
        finals = sorted((p.context.value, p.attribute) for p in quick.probes.values() if p.event is None)
        assert finals == sorted((c.value, a) for c, a in tested), label
        assert [p.event for p in quick.probes.values() if p.event is not None] == [event.id], label
        # the slice and the whole timeline stay as they are
        assert len(full.timeline.steps) == 99 and len(full.probes) == 33, label


def test_a_timeline_without_a_quick_list_refuses_quick_runs_with_the_file_to_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worlds, _ = _worlds_with_slice(tmp_path, 3)
    path = worlds / "users" / "D" / "timeline.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("quick", None)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r"names no quick start: add a `quick:` list of step ids to .*timeline.yaml"):
        load_user(worlds, "D").quick_start()
    assert main(["run", "--user", "D", "--quick", "--worlds", str(worlds), "--model", "embedded"]) == 2
    err = capsys.readouterr().err
    assert "names no quick start" in err and "Traceback" not in err


def test_quick_and_slice_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--user", "A", "--quick", "--slice", "--worlds", str(WORLDS), "--model", "embedded"]) == 2
    assert "--quick and --slice" in capsys.readouterr().err


def test_quick_must_name_steps_in_timeline_order() -> None:
    with pytest.raises(ValueError, match="quick: 'S1' is repeated or out of"):
        Timeline(user="Q", steps=["S1", "S2", "S3"], quick=["S2", "S1"])
    with pytest.raises(ValueError, match="quick: 'S9' is not a step"):
        Timeline(user="Q", steps=["S1", "S2", "S3"], quick=["S9"])


def test_quick_is_in_the_run_id_and_hash_but_old_configs_still_match() -> None:
    whole = RunConfig(user="A", profile="embedded", memory="file")
    quick = whole.model_copy(update={"quick": True})
    assert quick.run_id == "A-file-embedded-s0-quick" and quick.timeline_kind == "quick start"
    assert whole.config_hash() != quick.config_hash()
    stored_before_the_field = whole.model_dump_json(exclude={"quick"})
    assert config_diff(stored_before_the_field, whole) == []
    assert config_diff(stored_before_the_field, quick) == ["quick: None -> True"]


def test_a_quick_run_does_not_probe_from_a_whole_timeline_donor() -> None:
    from datetime import UTC, datetime

    from mempa_tui.runner.runner import donor_problem
    from mempa_tui.store import RunRecord, RunStatus

    donor_config = RunConfig(user="A", profile="embedded", memory="file")
    now = datetime.now(UTC)
    donor = RunRecord(id=donor_config.run_id, user="A", memory="file", profile="embedded", seed=0, repeats=3,
                      config_hash=donor_config.config_hash(), config_json=donor_config.model_dump_json(),
                      status=RunStatus.COMPLETED, created_at=now, updated_at=now)
    reference = RunConfig(user="A", profile="embedded", memory="none", quick=True, donor_run=donor.id)
    why = donor_problem(reference, donor)
    assert why is not None and "played the whole timeline" in why and "quick start (--quick)" in why
