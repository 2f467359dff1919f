"""The personal agent (PA) seat: the model-driven tool loop and the seat protocol (SPEC 4.5)."""

from __future__ import annotations

from mempa_tui.agent.actions import TurnActions, ix_text_in_arguments
from mempa_tui.agent.personal import MAX_MODEL_CALLS, ChatClient, PersonalAgent
from mempa_tui.agent.prompt import system_prompt
from mempa_tui.agent.seat import (
    AgentSeat,
    AgentSessionStart,
    AgentTurnInput,
    AgentTurnResult,
    OracleHint,
    TurnStatus,
)

__all__ = [
    "MAX_MODEL_CALLS",
    "AgentSeat",
    "AgentSessionStart",
    "AgentTurnInput",
    "AgentTurnResult",
    "ChatClient",
    "OracleHint",
    "PersonalAgent",
    "TurnActions",
    "TurnStatus",
    "ix_text_in_arguments",
    "system_prompt",
]
