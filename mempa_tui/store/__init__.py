"""The run store (SPEC section 4.8): runs, steps, checkpoints with content-addressed world files,
transcript events, probe results and the model-call log, in one SQLite database (aiosqlite, WAL)."""

from mempa_tui.store._schema import SCHEMA_VERSION
from mempa_tui.store.rows import (
    CheckpointData,
    CheckpointRecord,
    LLMCallRow,
    ProbeResultRecord,
    ProbeStatus,
    RoleTokens,
    RunRecord,
    RunStatus,
    RunSummary,
    StepAttemptRecord,
    StepKind,
    StepRecord,
    StepStatus,
    TokenTotals,
    TranscriptEventRecord,
    utc_now,
)
from mempa_tui.store.run_store import RunStore, StepAlreadyStoredError, StoreError

__all__ = [
    "SCHEMA_VERSION",
    "CheckpointData",
    "CheckpointRecord",
    "LLMCallRow",
    "ProbeResultRecord",
    "ProbeStatus",
    "RoleTokens",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "StepAlreadyStoredError",
    "StepAttemptRecord",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "StoreError",
    "TokenTotals",
    "TranscriptEventRecord",
    "utc_now",
]
