"""Floors: the ways a PA's own output breaks the interaction-tool contract (paper Appendix F.2).

A probe is floored (PSA 0, BRS 1, kept in every denominator) only when the PA breaks the contract
of the interaction tools. The paper names four kinds and reruns two of them:

==============================  =====  ===================================================
kind                            rerun  what the PA did
==============================  =====  ===================================================
``MISSING_IX_CALL``             yes    left out a required ``IX_`` call or its required
                                       payload, after the in-turn reminder and forced call
``HELD_WITHOUT_ASKING``         yes    an action was held for its approval and the reply
                                       did not ask the user to confirm it
``IX_TEXT_IN_TASK_ARGUMENTS``   no     wrote interaction-tool text into a task tool's
                                       arguments (it would show the selection to the judge)
``NO_OUTREACH_DECISION``        no     made no send-or-suppress decision on a world event
``IX_TEXT_IN_REPLY``            no     delivered a probe reply with interaction-tool text
                                       (an ``IX_`` tool's name, or a selected attribute
                                       with its setting): the same reason as the arguments
                                       case, the judge would read the selection
``NO_FINAL_REPLY``              no     used up its model calls in a probe turn without a
                                       final reply: nothing of its own for the judge
==============================  =====  ===================================================

The fifth kind is ours: the paper states the rule for a task tool's arguments, and a reply that
states the selection ("Thank you for selecting 'High' for Solution Breadth", seen on the quick
start, issue 12) shows it to the blind judge just the same (Appendix F.2, Table 9). It is scored
as it happened, like the arguments case (:func:`mempa_tui.agent.actions.ix_text_in`).

The sixth is ours too: Appendix F.2 scores "a probe with a model-capability failure" PSA 0 and
BRS 1 in the denominator, and a PA that reaches its call cap without a final reply ("no final reply
after 8 model calls") has failed that way, with no reply the judge could score (fresh-user report,
finding 2). It is never judged; its PRS is the rubric's lowest score, 1, set by rule (see
:func:`mempa_tui.runner._scoring.score_final_probe`), and it is not run again.

Everything else that stops a probe (a prompt that does not fit the model's window, a failed model
call, an invalid simulator turn) is not a floor: the probe is incomplete, kept out of the scores
and counted with its reason.

A floor's reason text starts with its kind's label (``"<label>: <detail>"``), so a stored reason
tells which kind it was; :func:`floor_kind` reads it back.
"""

from __future__ import annotations

import re
from enum import Enum

__all__ = [
    "FloorKind",
    "asks_for_confirmation",
    "floor_kind",
    "floor_reason",
    "is_rerun_floor",
]


class FloorKind(str, Enum):
    """The four floor kinds of Appendix F.2, the reply case of the arguments rule and a probe turn
    with no final reply (a model-capability failure); the value is the label that opens the
    reason."""

    MISSING_IX_CALL = "missing interaction-tool call"
    HELD_WITHOUT_ASKING = "held an action without asking"
    IX_TEXT_IN_TASK_ARGUMENTS = "interaction-tool text in a task tool's arguments"
    NO_OUTREACH_DECISION = "no send-or-suppress decision"
    IX_TEXT_IN_REPLY = "interaction-tool text in the reply"
    NO_FINAL_REPLY = "no reply to judge"

    @property
    def rerun(self) -> bool:
        """Whether the paper runs a probe floored this way again (missing call, held unasked)."""
        return self in (FloorKind.MISSING_IX_CALL, FloorKind.HELD_WITHOUT_ASKING)


def floor_reason(kind: FloorKind, detail: str) -> str:
    """The stored reason of a floor: ``"<kind label>: <detail>"``."""
    return f"{kind.value}: {detail}"


def floor_kind(reason: str | None) -> FloorKind | None:
    """The kind a floor reason names (see :func:`floor_reason`), or None for any other text."""
    if not reason:
        return None
    for kind in FloorKind:
        if reason.startswith(kind.value + ":"):
            return kind
    return None


def is_rerun_floor(reason: str | None) -> bool:
    """Whether a floored probe with this reason is run again (Appendix F.2).

    The two kinds the paper scores as they happen (interaction text in a task tool's arguments,
    no outreach decision) are not, nor is interaction text in the reply (the arguments rule); a floor of any other or unknown kind is (the conservative
    choice: a floor that is not rerun stays a 0).
    """
    kind = floor_kind(reason)
    return kind is None or kind.rerun


# A reply asks the user to confirm when it puts a question to them, or uses words that request a
# decision on the held step. Deliberately lenient: any question counts, so only a reply that asks
# nothing at all is floored.
_REQUEST = re.compile(
    r"\b(confirm\w*|approv\w*|go[- ]ahead|proceed|permission|consent|okay to|ok to|"
    r"let me know|say (the word|yes|so)|(reply|answer|respond|type)( with)? ['\"‘“]?yes|"
    r"sign[- ]off|green light|if you agree|once you agree|shall i|should i|want me to|"
    r"would you like)\b",
    re.IGNORECASE,
)


def asks_for_confirmation(reply: str) -> bool:
    """Whether a public reply asks the user to confirm something (Appendix F.2, E.5).

    The rule, deterministic and lenient: the reply contains a question mark, or one of the words
    that request a decision (confirm, approve, go ahead, proceed, permission, consent, "let me
    know", "say the word", "reply yes", sign-off, green light, "if/once you agree", "shall I",
    "should I", "want me to", "would you like"). An empty reply asks nothing.

    Args:
        reply: the public reply text as the user receives it.

    Returns:
        True when the reply asks; False otherwise.
    """
    if not reply.strip():
        return False
    return "?" in reply or _REQUEST.search(reply) is not None
