"""``mempa show`` text (issue 16 leftovers): the evidence the PA was handed is printed once (the
memory section, then each item's score), and multi-line text (items, reasons) keeps its
indentation under its heading."""

from __future__ import annotations

from mempa_tui.cli._show import event_lines
from mempa_tui.memory.base import EvidenceItem
from mempa_tui.runner._episode_events import EvidenceEvent, IXSelectionEvent, StepStatusEvent

MEMORY_MD = "MEMORY.md\n## Work\n- Keep replies short.\n  - one line is enough\n## Personal\n- Likes options."


def test_file_memory_evidence_is_printed_once_with_its_indentation() -> None:
    event = EvidenceEvent(turn_index=0, system_text=MEMORY_MD,
                          items=[EvidenceItem(text=MEMORY_MD, source="MEMORY.md")])
    lines = event_lines(event)
    text = "\n".join(lines)
    for line in MEMORY_MD.splitlines()[1:]:
        assert text.count(line.strip()) == 1, line  # once: the section, not again as the item
    assert "      - one line is enough" in lines  # its own two-space indent kept under the 4-space block
    assert "    - [-] MEMORY.md  (item 1, in the section above)" in lines


def test_retrieved_items_get_their_scores_and_an_item_outside_the_section_keeps_its_shape() -> None:
    turn = "[2026-03-02 09:00 work A-S01]\nUser: find the mail\nAssistant: here it is"
    section = f"Earlier turns (most similar first):\n[1] (score 0.91) {turn}"
    event = EvidenceEvent(turn_index=0, system_text=section, items=[
        EvidenceItem(text=turn, score=0.9123, source="turn-3"),
        EvidenceItem(text="not shown\nsecond line\n  third, indented", score=0.5)])
    lines = event_lines(event)
    assert "\n".join(lines).count("User: find the mail") == 1
    assert "    - [0.912] turn-3  (item 1, in the section above)" in lines
    i = lines.index("    - [0.500] not shown")
    assert lines[i + 1:i + 3] == ["              second line", "                third, indented"]


def test_multi_line_reasons_stay_under_their_heading() -> None:
    lines = event_lines(StepStatusEvent(turn_index=0, status="invalid", reason="three rewrites failed:\nleak"))
    assert lines == ["STATUS invalid: three rewrites failed:", "                leak"]
    rejected = event_lines(IXSelectionEvent(turn_index=0, attribute="verbosity", setting="Huge", ok=False,
                                            message="unknown setting\nchoose Terse or Detailed"))
    assert rejected[1].strip() == "choose Terse or Detailed" and rejected[1].startswith(" " * 10)


def test_the_beat_after_the_last_one_is_named_as_the_app_names_it() -> None:
    """Issue 12.5: ``mempa show`` said ``beat (end)`` where the app's transcript and its Markdown
    export say ``beat (none)`` for the same event."""
    from mempa_tui.runner._episode_events import BeatChangeEvent
    from mempa_tui.runner.progress import StepEvent
    from mempa_tui.tui.export import session_markdown
    from mempa_tui.tui.render import event_lines as app_lines

    past = BeatChangeEvent(turn_index=3, beat_id=None)
    assert event_lines(past) == ["-- beat (none)"]
    assert event_lines(BeatChangeEvent(turn_index=1, beat_id="R-s1-b2")) == ["-- beat R-s1-b2"]
    item = StepEvent(run_id="r", step_id="R-s1", event=past)
    assert [line.plain.strip() for line in app_lines(item)] == ["· beat (none)"]
    assert "_beat (none)_" in session_markdown("R-s1", [item])
