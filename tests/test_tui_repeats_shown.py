"""A probe's repeat number (r1/r2/r3) on the dashboard (issue 12, found by a fresh user): probes run
concurrently, so the run card names every step and probe repeat in flight, each with its repeat,
and forgets each as it finishes. (The probe stepper names the repeat it replays:
tests/test_tui_stepper.py.)"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Label

from mempa_tui.runner import RunEvent, RunProgress
from mempa_tui.tui import RunBook, RunEntry, RunRequest
from mempa_tui.tui.render import place_text
from mempa_tui.tui.widgets import RunCard

RUN = "R-file-scripted-s0"


def _event(kind: str, step: str | None = None, repeat: int = 0, **extra: Any) -> RunEvent:
    progress = RunProgress(run_id=RUN, phase="probes", steps_total=3, steps_done=3, probes_total=9, probes_done=1)
    return RunEvent(run_id=RUN, kind=kind, message=kind, step_id=step, repeat=repeat,  # type: ignore[arg-type]
                    progress=progress, **extra)


def _playing_entry() -> RunEntry:
    entry = RunBook().add(RunRequest(user="R", memory="file", profile="scripted", repeats=3))
    entry.apply(_event("run_started"))
    for step, repeat in (("R-s3", 0), ("R-final-work-verbosity", 1), ("R-final-work-verbosity", 2),
                         ("R-pre-ev1", 3)):
        entry.apply(_event("probe_started" if repeat else "step_started", step, repeat))
    entry.apply(_event("step_finished", "R-s3"))
    entry.apply(_event("probe_finished", "R-final-work-verbosity", 1, status="completed"))
    return entry


def test_the_entry_keeps_every_step_and_probe_repeat_in_flight() -> None:
    entry = _playing_entry()
    assert entry.playing == [("R-final-work-verbosity", 2), ("R-pre-ev1", 3)]
    assert [place_text(*p) for p in entry.playing] == ["R-final-work-verbosity r2", "R-pre-ev1 r3"]
    assert place_text("R-s1", 0) == "R-s1"
    entry.apply(_event("run_finished", status="completed"))
    assert entry.playing == []


class _CardApp(App[None]):
    def __init__(self, entry: RunEntry) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        yield RunCard(self.entry)


async def test_the_run_card_names_each_probe_in_flight_with_its_repeat() -> None:
    entry = _playing_entry()
    app = _CardApp(entry)
    async with app.run_test(size=(160, 10)) as pilot:
        await pilot.pause()
        stats = str(app.query_one(".run-stats", Label).render())
        assert "now R-final-work-verbosity r2, R-pre-ev1 r3" in stats, stats
        entry.apply(_event("probe_finished", "R-pre-ev1", 3, status="completed"))
        app.query_one(RunCard).show()
        await pilot.pause()
        stats = str(app.query_one(".run-stats", Label).render())
        assert stats.endswith("now R-final-work-verbosity r2"), stats
