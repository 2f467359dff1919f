"""A results table warns when a No Memory run beside a File memory run did not probe from it."""

from __future__ import annotations

import json

from mempa_tui.runner._settings import donor_mismatches
from mempa_tui.store import RunRecord, RunStatus


def _run(run_id: str, memory: str, donor: str | None = None) -> RunRecord:
    config = {"user": "A", "memory": memory, "profile": "demo", "donor_run": donor}
    return RunRecord(id=run_id, user="A", profile="demo", memory=memory, seed=0, repeats=1,
                     config_json=json.dumps(config), config_hash="x", status=RunStatus.COMPLETED, total_probes=1)


def test_a_reference_run_whose_donor_was_moved_aside_is_named() -> None:
    file_run = _run("A-file-demo-s0", "file")
    paired = _run("A-none-demo-s0", "none", donor="A-file-demo-s0")
    assert donor_mismatches([file_run, paired]) == []
    stale = _run("A-none-demo-s0", "none", donor="A-file-demo-s0~1")  # the File run was played again with --fresh
    (line,) = donor_mismatches([file_run, stale])
    assert "A-none-demo-s0 probed from donor A-file-demo-s0~1" in line and "--donor A-file-demo-s0" in line
    assert donor_mismatches([stale]) == []  # no File memory run in the table: nothing to pair against
