"""BRS and PRS for a completed final probe (paper Section 3.5; Appendix F.2; Table 9).

* BRS: the judge gets the probe's task, a summary of the world at the probe's start, the public
  dialogue and the actions that ran, and the rubric of the target setting; never the selection.
* PRS: the simulator without accumulated memory re-reads the public exchange with its persona
  card and the acting sheet of the target setting, and rates 1-5 with a reason.

A score that cannot be obtained from the model's output is stored as missing with the reason (the
probe's BRS or PRS is then incomplete, never zero). A failed model call (server down) is raised,
so the run stops and the probe repeat is played again on resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mempa_tui.scripts.schema import Probe
from mempa_tui.world import WorldState

if TYPE_CHECKING:
    from mempa_tui.runner._shared import RunContext

__all__ = ["ProbeScorer", "RealizationScores", "default_scorer"]


@dataclass(frozen=True)
class RealizationScores:
    """BRS and PRS of one probe repeat (None: missing, with the reason)."""

    brs: int | None = None
    brs_reason: str | None = None
    prs: int | None = None
    prs_reason: str | None = None


ProbeScorer = Callable[["RunContext", Probe, str, object, WorldState], Awaitable[RealizationScores]]
"""``(run, probe, target, step_result, world_at_start) -> RealizationScores``."""


async def default_scorer(
    run: RunContext, probe: Probe, target: str, result: object, world: WorldState
) -> RealizationScores:
    """Judge BRS and rate PRS for one completed final probe."""
    raise NotImplementedError("waiting for the episode loop's transcript types")
