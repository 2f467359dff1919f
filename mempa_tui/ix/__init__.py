"""Interaction tools and the IX wrapper (paper Section 3.4, Appendix E)."""

from __future__ import annotations

from mempa_tui.ix._backend import ToolBackend, ToolDefLike, ToolResultLike
from mempa_tui.ix.spec import (
    PAYLOAD_FIELDS,
    ConfidenceNote,
    IXArguments,
    IXArgumentsError,
    TopicBatch,
    ix_tool_spec,
    match_setting,
    parse_ix_arguments,
    required_payload,
)
from mempa_tui.ix.types import (
    CallStatus,
    DeliveredTurn,
    ExecutedCall,
    GateDecision,
    GateResult,
    HeldItem,
    IXCall,
    ReleaseOutcome,
    ScoringTrace,
    SelectResult,
)
from mempa_tui.ix.wrapper import IXWrapper

__all__ = [
    "PAYLOAD_FIELDS",
    "CallStatus",
    "ConfidenceNote",
    "DeliveredTurn",
    "ExecutedCall",
    "GateDecision",
    "GateResult",
    "HeldItem",
    "IXArguments",
    "IXArgumentsError",
    "IXCall",
    "IXWrapper",
    "ReleaseOutcome",
    "ScoringTrace",
    "SelectResult",
    "ToolBackend",
    "ToolDefLike",
    "ToolResultLike",
    "TopicBatch",
    "ix_tool_spec",
    "match_setting",
    "parse_ix_arguments",
    "required_payload",
]
