"""Preference-state memory: the stored state and the rule that updates a cell (SPEC section 6).

The state is a table of cells, one per (context, attribute) pair of the public taxonomy (paper
Section 3.1-3.2), each holding the latest setting the user's reactions revealed, the evidence
behind it, and the cell's history of changes. Nothing here calls a model.

Update rule (:func:`apply_observation`), applied to one cell at a time:

1. An observation only ever touches the cell of its own context; the other context's cell is
   never read or written (a change event at work leaves the personal value alone; paper Section
   3.3 'Timeline and Preference Change', Finding 5 on cross-context spill).
2. An empty cell takes the first observation, whatever its confidence.
3. An observation of the setting already held reinforces it: the support count grows, the
   confidence becomes the larger of the two, and a pending challenger is dropped (the history
   logs a reinforcement only then, so it stays a short list of changes).
4. A different setting with confidence at or above ``confident_at`` (default 0.6) supersedes the
   current value at once, and the change is logged. A stated rule ("from now on ...") is meant
   to arrive here.
5. A different setting below ``confident_at`` replaces a value that is itself below
   ``confident_at`` (the newer weak signal wins over an older weak one), but against a confident
   value it is only kept as a *challenger*. A second weak observation of the same challenger (in
   a later turn) supersedes the value; a weak observation of yet another setting replaces the
   challenger. Why: one faint or ambiguous reaction - a user who merely lets something pass -
   should not undo a rule the user stated plainly, while a pattern of reactions should, because
   preferences do drift without an announcement.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.taxonomy import Context

__all__ = [
    "DEFAULT_CONFIDENT_AT",
    "KEEP_HISTORY",
    "KEEP_OBSERVATIONS",
    "CellChange",
    "CellState",
    "ChangeKind",
    "Observation",
    "PrefStateState",
    "PrefStateStats",
    "apply_observation",
    "cell_key",
]

DEFAULT_CONFIDENT_AT = 0.6
"""Confidence from which a single observation supersedes a different current value."""

KEEP_OBSERVATIONS = 50
"""Accepted observations kept in the state's log (for the side panel), newest last."""

KEEP_HISTORY = 40
"""History entries kept per cell, newest last (older ones are counted in ``history_trimmed``), so
a cell that flips often cannot grow checkpoints without bound (SPEC section 7: about 1 MB/step)."""

_KEEP_QUOTES = 3
"""Evidence quotes kept per cell value (most recent last)."""


def cell_key(context: Context, attribute_key: str) -> str:
    """The state table's key of a cell, ``"<context>/<attribute key>"`` (e.g. ``work/verbosity``)."""
    return f"{context.value}/{attribute_key}"


class Observation(BaseModel):
    """One validated item the extractor found in a turn.

    Attributes:
        context: the turn's context (taken from the turn record, never from the model).
        attribute: attribute key of the public taxonomy, e.g. ``verbosity``.
        setting: a setting name of that attribute, spelled as in Table 4, e.g. ``Terse``.
        quote: the user's own words the item rests on (a verbatim span of the user message).
        at: story time of the turn.
        confidence: the extractor's confidence in [0, 1].
        step_id: the step the turn belongs to. turn_index: the turn's index in that step.
    """

    model_config = ConfigDict(extra="forbid")

    context: Context
    attribute: str
    setting: str
    quote: str
    at: datetime
    confidence: float = Field(ge=0.0, le=1.0)
    step_id: str
    turn_index: int


ChangeKind = Literal["set", "superseded", "reinforced", "challenged"]
"""What an entry of a cell's history records."""


class CellChange(BaseModel):
    """One entry of a cell's history.

    Attributes:
        at: story time of the observation that caused the entry.
        kind: ``set`` (empty cell filled), ``superseded`` (a new value replaced the old one),
            ``reinforced`` (the same value observed again), ``challenged`` (a weak contrary
            observation held back).
        old_setting: the value before (None when the cell was empty).
        new_setting: the observed setting.
        confidence: the observation's confidence.
        quote: the observation's evidence quote.
        step_id: where the observation came from.
    """

    model_config = ConfigDict(extra="forbid")

    at: datetime
    kind: ChangeKind
    old_setting: str | None = None
    new_setting: str
    confidence: float
    quote: str
    step_id: str


class CellState(BaseModel):
    """One (context, attribute) cell.

    Attributes:
        context / attribute: the cell.
        setting: the current value.
        confidence: the current value's confidence (largest seen since it was set).
        since: story time the current value was set.
        updated: story time of the latest observation supporting it.
        support: observations supporting the current value.
        quotes: the latest evidence quotes for the current value (at most three).
        challenger: a weak contrary observation held back (rule 5), if any.
        history: every change to the cell, oldest first.
    """

    model_config = ConfigDict(extra="forbid")

    context: Context
    attribute: str
    setting: str
    confidence: float
    since: datetime
    updated: datetime
    support: int = 1
    quotes: list[str] = Field(default_factory=list)
    challenger: Observation | None = None
    history: list[CellChange] = Field(default_factory=list)


class PrefStateStats(BaseModel):
    """Counters shown in ``inspect().stats``; every dropped item and failed call is counted."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    turns_extracted: int = 0
    """Turns sent to the extractor."""
    turns_skipped: int = 0
    """Turns with nothing to read: notifications, empty user messages, probe turns."""
    extraction_retries: int = 0
    """Turns whose first reply was unusable and needed the retry."""
    extraction_failures: int = 0
    """Turns with no usable reply even after the retry (nothing stored from them)."""
    call_errors: int = 0
    """Turns whose model call itself failed (connection, timeout, provider error)."""
    items_accepted: int = 0
    items_dropped: dict[str, int] = Field(default_factory=dict)
    """Dropped items by reason (``unknown_attribute``, ``unknown_setting``, ``quote_not_in_turn``,
    ``confidence_out_of_range``, ``malformed_item``, ``duplicate_attribute``, ``too_many``)."""
    superseded: int = 0
    challenges_held: int = 0
    history_trimmed: int = 0
    """Oldest history entries dropped to keep each cell's history at :data:`KEEP_HISTORY`."""
    last_failure: str | None = None

    def drop(self, reason: str, count: int = 1) -> None:
        """Count ``count`` dropped items under ``reason``."""
        self.items_dropped[reason] = self.items_dropped.get(reason, 0) + count


class PrefStateState(BaseModel):
    """Everything a preference-state snapshot holds (serialised as JSON bytes).

    Attributes:
        cells: cell key (:func:`cell_key`) -> cell.
        observations: the latest accepted observations, oldest first (at most
            :data:`KEEP_OBSERVATIONS`; the cells' histories keep every change).
        previous_turn: the PA's side of the last turn written, so the next user message can be
            read as a reaction to it: ``(step_id, summary text)``; None at the start.
        stats: the counters.
    """

    model_config = ConfigDict(extra="forbid")

    system: Literal["prefstate"] = "prefstate"
    cells: dict[str, CellState] = Field(default_factory=dict)
    observations: list[Observation] = Field(default_factory=list)
    previous_turn: tuple[str, str] | None = None
    stats: PrefStateStats = Field(default_factory=PrefStateStats)


def _remember_quote(cell: CellState, quote: str) -> None:
    if quote not in cell.quotes:
        cell.quotes.append(quote)
    del cell.quotes[:-_KEEP_QUOTES]


def _change(kind: ChangeKind, old: str | None, obs: Observation) -> CellChange:
    return CellChange(
        at=obs.at,
        kind=kind,
        old_setting=old,
        new_setting=obs.setting,
        confidence=obs.confidence,
        quote=obs.quote,
        step_id=obs.step_id,
    )


def _fresh(obs: Observation, history: list[CellChange]) -> CellState:
    return CellState(
        context=obs.context,
        attribute=obs.attribute,
        setting=obs.setting,
        confidence=obs.confidence,
        since=obs.at,
        updated=obs.at,
        quotes=[obs.quote],
        history=history,
    )


def apply_observation(
    cells: dict[str, CellState],
    obs: Observation,
    stats: PrefStateStats,
    *,
    confident_at: float = DEFAULT_CONFIDENT_AT,
) -> ChangeKind:
    """Apply one observation to its own cell by the module's update rule.

    Args:
        cells: the state table, changed in place (only ``cell_key(obs.context, obs.attribute)``).
        obs: a validated observation.
        stats: counters to update (``superseded``, ``challenges_held``, ``history_trimmed``).
        confident_at: confidence from which one observation supersedes a different value.

    Returns:
        What happened: ``set``, ``reinforced``, ``superseded`` or ``challenged``.
    """
    kind = _apply(cells, obs, stats, confident_at)
    cell = cells[cell_key(obs.context, obs.attribute)]
    extra = len(cell.history) - KEEP_HISTORY
    if extra > 0:
        del cell.history[:extra]
        stats.history_trimmed += extra
    return kind


def _apply(
    cells: dict[str, CellState], obs: Observation, stats: PrefStateStats, confident_at: float
) -> ChangeKind:
    key = cell_key(obs.context, obs.attribute)
    cell = cells.get(key)
    if cell is None:
        cells[key] = _fresh(obs, [_change("set", None, obs)])
        return "set"
    if obs.setting == cell.setting:
        cell.support += 1
        cell.confidence = max(cell.confidence, obs.confidence)
        cell.updated = max(cell.updated, obs.at)
        _remember_quote(cell, obs.quote)
        if cell.challenger is not None:  # logged only when it sets a challenger aside
            cell.challenger = None
            cell.history.append(_change("reinforced", cell.setting, obs))
        return "reinforced"
    repeated = (
        cell.challenger is not None
        and cell.challenger.setting == obs.setting
        and (cell.challenger.step_id, cell.challenger.turn_index) != (obs.step_id, obs.turn_index)
    )
    if obs.confidence >= confident_at or cell.confidence < confident_at or repeated:
        support = 2 if repeated else 1
        old = cell.setting
        new = _fresh(obs, [*cell.history, _change("superseded", old, obs)])
        if repeated and cell.challenger is not None:
            new.confidence = max(obs.confidence, cell.challenger.confidence)
            new.quotes = [cell.challenger.quote, obs.quote] if cell.challenger.quote != obs.quote else [obs.quote]
        new.support = support
        cells[key] = new
        stats.superseded += 1
        return "superseded"
    cell.challenger = obs
    cell.history.append(_change("challenged", cell.setting, obs))
    stats.challenges_held += 1
    return "challenged"
