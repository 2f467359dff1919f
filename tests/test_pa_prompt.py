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


def test_probes_on_other_dates_share_the_memory_section_as_a_prompt_prefix() -> None:
    """Issue 12: the second system message puts the memory (or Oracle) section before the story
    date, so two probes after the same sessions, or two Oracle probes of one cell, differ only
    from the date on and a prompt cache reuses the memory section between them."""
    from datetime import datetime

    from mempa_tui.agent.prompt import context_prompt, system_prompt
    from mempa_tui.agent.seat import OracleHint
    from mempa_tui.memory.base import Evidence

    memory = Evidence(system_text="# MEMORY.md\n- Ingrid wants one clear recommendation at work.")
    first = context_prompt(datetime(2026, 6, 30, 10, 30), memory)
    second = context_prompt(datetime(2026, 7, 2, 19, 15), memory)
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert first[:shared].startswith("What your memory holds about this person\n# MEMORY.md\n")
    assert memory.system_text in first[:shared]
    assert first[:shared].endswith("\n\nCurrent date and time\nIt is T")  # Tuesday / Thursday: only the date differs
    assert first.endswith("It is Tuesday, 2026-06-30, 10:30.")
    oracle = OracleHint(attribute="solution_breadth", setting="High")
    a, b = (context_prompt(when, Evidence(), oracle) for when in (datetime(2026, 6, 30), datetime(2026, 7, 2)))
    assert a.split("\n\nCurrent date and time")[0] == b.split("\n\nCurrent date and time")[0]
    assert a.startswith("What this person wants for the decision at hand\n")
    assert system_prompt(datetime(2026, 6, 30), memory).index("What your memory holds") < \
        system_prompt(datetime(2026, 6, 30), memory).index("Current date and time")
