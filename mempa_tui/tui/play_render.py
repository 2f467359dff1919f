"""Text of the play screens' panels (SPEC §4.11 'Play as the user', 'Play as the PA').

Pure functions from the seats' views to Rich text, so they can be read in tests without an app.
What each seat's panel shows follows Table 9: the user's panel holds the user's own beat,
preferences (acting sheets), released facts and held items, never the PA's selection; the PA's
panel holds the user's message, the date, the memory's evidence and its own calls, never the
user's target (except the Oracle hint in an Oracle probe).
"""

from __future__ import annotations

import json

from rich.text import Text

from mempa_tui.agent.human import PATurnView
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    EpisodeEvent,
    EvidenceEvent,
    IXSelectionEvent,
    ToolCallEvent,
)
from mempa_tui.runner.play import PlayOutcome
from mempa_tui.simulator.human import FidelityPair, UserPanel

__all__ = ["agent_panel_text", "outcome_text", "pair_text", "user_panel_text", "user_sees"]

_RESULT_CHARS = 400
"""Most characters of a tool result shown in the PA panel."""


def user_sees(event: EpisodeEvent) -> bool:
    """Whether the person in the user's seat may see ``event`` (Table 9): no IX selection, no
    evidence, no beat bookkeeping, no call that did not run."""
    if isinstance(event, (IXSelectionEvent, EvidenceEvent, BeatChangeEvent)):
        return False
    return not (isinstance(event, ToolCallEvent) and event.call.status.value != "executed")


def _heading(text: Text, title: str) -> None:
    text.append(f"\n{title}\n", style="bold cyan")


def user_panel_text(panel: UserPanel | None) -> Text:
    """The play-as-user panel: task, beat, acting sheets, released facts, held items."""
    text = Text()
    if panel is None:
        text.append("Choose a user and a session or probe above, then start (ctrl+r).", style="dim")
        return text
    kind = "probe" if panel.mode == "probe" else "session"
    text.append(f"{panel.step_id} ({kind})\n", style="bold")
    text.append(f"Task: {panel.task}\n")
    if panel.beat is None:
        text.append("\nThe session is over.", style="green")
    else:
        _heading(text, f"Beat {panel.beat_index + 1} of {panel.beat_count}: {panel.beat.id}")
        text.append(f"Goal: {panel.beat.goal}\n")
        text.append(f"Convey: {panel.beat.conveys}\n")
        text.append(f"Messages in this beat: {panel.turns_in_beat} (the simulator moves on after "
                    f"{panel.beat.max_turns})\n", style="dim")
    for sheet in panel.acting_sheets:
        _heading(text, "Your preference")
        text.append(sheet + "\n")
    _heading(text, "Facts you can share now")
    if panel.released:
        for fact in panel.released:
            text.append(f"• {fact.text}\n")
    else:
        text.append("(none yet)\n", style="dim")
    if panel.pending:
        _heading(text, "Waiting for your consent")
        for item in panel.pending:
            text.append(f"• {item.id}: {item.text or item.label or item.tool}\n")
    if panel.warnings:
        _heading(text, "Your last message would fail the simulator's checks")
        for warning in panel.warnings:
            text.append(f"• {warning}\n", style="yellow")
    if panel.waiting:
        text.append("\nYour turn: type below (enter sends), ctrl+n next beat, ctrl+o end.", style="bold green")
    return text


def pair_text(pair: FidelityPair) -> Text:
    """One turn side by side: what the person said and what the simulator would have said."""
    text = Text()
    text.append(f"turn {pair.turn + 1} · beat {pair.beat_id}\n", style="bold")
    text.append("you: ", style="bold green")
    text.append(pair.human_message + "\n")
    sim = pair.simulator
    text.append("simulator: ", style="bold magenta")
    if sim.error:
        text.append(f"(no answer: {sim.error})\n", style="yellow")
    else:
        text.append((sim.message or "(no message)") + "\n")
        text.append(f"  its assessment: {sim.assessment or '—'}", style="dim")
        if sim.consent:
            text.append(f"; its consent: {json.dumps(sim.consent)}", style="dim")
        if sim.problems:
            text.append(f"; would be rewritten: {'; '.join(sim.problems)}", style="dim")
        text.append("\n")
    return text


def agent_panel_text(view: PATurnView | None) -> Text:
    """The play-as-PA panel: the turn's input, evidence, notes and this turn's calls."""
    text = Text()
    if view is None:
        text.append("Choose a user and a session or probe above, then start (ctrl+r). Your turns "
                    "open here when the user has spoken.", style="dim")
        return text
    text.append(f"{view.step_id} · turn {view.turn_index + 1} · {view.now:%a %Y-%m-%d %H:%M}\n", style="bold")
    if view.user_message is not None:
        _heading(text, "The user says")
        text.append(view.user_message + "\n")
    if view.notice:
        _heading(text, "Notification (not from the user)")
        text.append(view.notice + "\n")
    for note in view.runtime_notes:
        text.append(f"note: {note}\n", style="yellow")
    if view.oracle is not None:
        _heading(text, "Oracle hint")
        text.append(f"{view.oracle.attribute} = {view.oracle.setting}\n")
    _heading(text, "What your memory handed you")
    text.append((view.evidence.strip() or "(nothing)") + "\n")
    if view.required_ix:
        _heading(text, "Decision point")
        text.append(f"Choose a setting with IX_{view.required_ix} before you reply (ctrl+b).\n")
    if view.selections:
        text.append("Your selections: " + ", ".join(f"{k} = {v}" for k, v in view.selections.items()) + "\n",
                    style="dim")
    if view.outcomes:
        _heading(text, "Your calls this turn")
        for out in view.outcomes:
            style = "green" if out.ok else "red"
            text.append(f"• {out.tool} [{out.status}]\n", style=style)
            text.append(f"  {out.result[:_RESULT_CHARS]}\n", style="dim")
    if view.note:
        text.append(f"\n{view.note}\n", style="bold yellow")
    return text


def outcome_text(outcome: PlayOutcome) -> Text:
    """How the play ended, with the target revealed and any scores."""
    text = Text()
    text.append(f"{outcome.step_id}: {outcome.status}", style="bold green" if outcome.status == "completed" else "bold red")
    if outcome.reason:
        text.append(f" ({outcome.reason})")
    text.append(f"\nstarted from {outcome.source}; stored as {outcome.play_id}\n")
    if outcome.tools_offered:
        text.append(outcome.tools_offered + "\n")
    if outcome.memory_settings:
        text.append(outcome.memory_settings + "\n")
    text.append(f"PA's selection: {outcome.selection or '—'} · the user's setting: {outcome.target or '—'}\n")
    scores = outcome.scores
    if outcome.kind == "probe" and (scores.brs is not None or scores.prs is not None or scores.brs_reason):
        text.append(f"BRS {scores.brs if scores.brs is not None else '—'}: {scores.brs_reason or ''}\n")
        text.append(f"PRS {scores.prs if scores.prs is not None else '—'}: {scores.prs_reason or ''}\n")
    if outcome.simulator_entry:
        _heading(text, "The simulator's diary entry for this session")
        text.append(outcome.simulator_entry + "\n")
    elif outcome.entry_problem:
        text.append(f"no diary entry written: {outcome.entry_problem}\n", style="yellow")
    if outcome.fidelity:
        _heading(text, "You and the simulator, turn by turn")
        for pair in outcome.fidelity:
            text.append(pair_text(pair))
    return text
