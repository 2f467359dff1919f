"""The runner (SPEC section 4.8): run configuration, the timeline with checkpoints and resume,
probes on isolated branches, reports; and the episode loop (``episode.py``) it drives.

Public face::

    config = RunConfig(user="A", profile="embedded", memory="file")
    async with RunStore("saves/mempa.sqlite") as store:
        outcome = await Runner(config, store, LLMClient(profile), default_registry()).run()

The episode loop's names (``EpisodeContext``, ``StepResult``, ``EpisodeEvent``,
``run_accumulation``, ``run_probe``, ``replay_change_event``) are re-exported lazily from
:mod:`mempa_tui.runner.episode`.
"""

from __future__ import annotations

from typing import Any

from mempa_tui.runner._lease import (
    RunBusyError,
    RunLease,
    lease_path,
    run_is_being_played,
)
from mempa_tui.runner._shared import EpisodeFunctions
from mempa_tui.runner.config import (
    PROBE_ONLY_CONDITIONS,
    ConfigMismatchError,
    RunConfig,
    config_diff,
    profile_fingerprint,
    worlds_digest,
)
from mempa_tui.runner.progress import (
    RunEvent,
    RunEventKind,
    RunObserver,
    RunPhase,
    RunProgress,
    StepEvent,
)
from mempa_tui.runner.report import RunReport, outcome_of, write_run_report
from mempa_tui.runner._budget import WindowTooSmallError, refuse_small_window
from mempa_tui.runner._settings import settings_lines
from mempa_tui.runner.runner import (
    DONOR_CONDITION,
    DonorError,
    Runner,
    RunOutcome,
    batch_donor_problems,
    check_memory_options,
    donor_problem,
    filled_config,
    resume_problems,
    run_many,
    runs_already_complete,
)

__all__ = [
    "DONOR_CONDITION",
    "PROBE_ONLY_CONDITIONS",
    "ConfigMismatchError",
    "DonorError",
    "EpisodeContext",
    "EpisodeEvent",
    "EpisodeFunctions",
    "RunBusyError",
    "RunConfig",
    "RunEvent",
    "RunEventKind",
    "RunLease",
    "RunObserver",
    "RunOutcome",
    "RunPhase",
    "RunProgress",
    "RunReport",
    "Runner",
    "StepEvent",
    "StepResult",
    "WindowTooSmallError",
    "batch_donor_problems",
    "check_memory_options",
    "config_diff",
    "donor_problem",
    "filled_config",
    "lease_path",
    "outcome_of",
    "profile_fingerprint",
    "refuse_small_window",
    "replay_change_event",
    "resume_problems",
    "run_accumulation",
    "run_is_being_played",
    "run_many",
    "run_probe",
    "runs_already_complete",
    "settings_lines",
    "worlds_digest",
    "write_run_report",
]

_EPISODE_NAMES = frozenset(
    {"EpisodeContext", "EpisodeEvent", "StepResult", "run_accumulation", "run_probe", "replay_change_event"}
)


def __getattr__(name: str) -> Any:
    """Re-export the episode loop's names on first use (keeps imports of the runner light)."""
    if name in _EPISODE_NAMES:
        from mempa_tui.runner import episode

        return getattr(episode, name)
    raise AttributeError(f"module 'mempa_tui.runner' has no attribute {name!r}")
