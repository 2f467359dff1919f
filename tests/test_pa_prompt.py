"""The PA's fixed instructions (paper Section 3.4, Appendix E.1, E.5; issue 11 point 4).

The wrapper writes no words of its own, so the instructions must leave asking to the PA: an
ordinary clarifying question in the reply is allowed when no interaction tool is on offer, and
asking the person to approve a held change is the PA's own job - said in words that name no
setting.
"""

from __future__ import annotations

import re

from mempa_tui.agent.prompt import instructions
from mempa_tui.taxonomy import ATTRIBUTES


def test_questions_in_the_reply_are_not_forbidden_when_no_ix_tool_is_offered() -> None:
    text = " ".join(instructions().split())
    # the old rule sent every question into IX_ fields, even with no IX_ tool on offer
    assert "not in your reply text" not in text
    assert "when no IX_ tool is offered, ask whatever you need to ask in your reply" in text


def test_asking_for_approval_of_a_held_change_is_the_pas_job() -> None:
    text = " ".join(instructions().split())
    assert "the harness adds no words to your reply" in text
    assert "asking them for that approval is up to you, in your reply" in text


def test_the_instructions_name_no_setting() -> None:
    text = instructions()
    named = [
        f"{a.key}={s}"
        for a in ATTRIBUTES
        for s in a.setting_names
        if re.search(rf"\b{re.escape(s)}\b", text)
    ]
    assert named == []
