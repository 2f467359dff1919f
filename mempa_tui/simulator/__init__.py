"""The user simulator (paper Section 3.4, Appendix D): preference skills, the simulator itself,
leak checks, simulator memory and the PRS rating.

Public face::

    sim = UserSimulator(client, persona, mode="accumulation", memory=SimulatorMemory())
    sim.start(script, targets)                # targets: attribute key -> current setting
    turn = await sim.next_turn(None)          # then next_turn(delivered) after each PA turn
    await sim.write_session_entry(day)        # after an accumulation session
    score, reason = await rate_probe(client, persona, "verbosity", "Terse", transcript)
"""

from mempa_tui.simulator._blocks import Assessment, ParsedTurn, parse_turn
from mempa_tui.simulator._checker import CheckerOutcome, ModelClient, check_message
from mempa_tui.simulator._dialogue import DialogueEntry, entry_from_delivered, render_dialogue
from mempa_tui.simulator._leaks import EARLIER_SESSION_PHRASES, LeakRules, rule_check
from mempa_tui.simulator._manner import MANNER_PROBLEM, MannerRequest, find_manner_requests
from mempa_tui.simulator._memory import (
    MemoryEntry,
    SessionEntryResult,
    SimulatorMemory,
    entry_problems,
    write_session_entry,
)
from mempa_tui.simulator._prompt import ActiveSkill, TurnPromptInput, build_turn_messages, render_persona
from mempa_tui.simulator._prs import PRSError, rate_probe, read_rating
from mempa_tui.simulator._seat import RejectedAttempt, SimulatorStateError, UserSeat, UserTurn
from mempa_tui.simulator._simulator import CHECK_COUNT_KEYS, UserSimulator
from mempa_tui.simulator._skills import (
    PreferenceSkill,
    Reception,
    SkillBook,
    SkillExamples,
    SkillFileError,
    acting_sheet,
    default_skills,
    load_skills,
)

__all__ = [
    "CHECK_COUNT_KEYS",
    "EARLIER_SESSION_PHRASES",
    "MANNER_PROBLEM",
    "ActiveSkill",
    "Assessment",
    "CheckerOutcome",
    "DialogueEntry",
    "LeakRules",
    "MannerRequest",
    "MemoryEntry",
    "ModelClient",
    "PRSError",
    "ParsedTurn",
    "PreferenceSkill",
    "Reception",
    "RejectedAttempt",
    "SessionEntryResult",
    "SimulatorMemory",
    "SimulatorStateError",
    "SkillBook",
    "SkillExamples",
    "SkillFileError",
    "TurnPromptInput",
    "UserSeat",
    "UserSimulator",
    "UserTurn",
    "acting_sheet",
    "build_turn_messages",
    "check_message",
    "default_skills",
    "entry_from_delivered",
    "entry_problems",
    "find_manner_requests",
    "load_skills",
    "parse_turn",
    "rate_probe",
    "read_rating",
    "render_dialogue",
    "render_persona",
    "rule_check",
    "write_session_entry",
]
