"""Preference-state memory: our memory condition (SPEC section 6; ``--memory prefstate``).

Write (paper Eq. 1's mechanism A): after each turn the MEMORY-role model reads the user's message
as a reaction to the PA's previous turn and names what it reveals, as items of the public
taxonomy (:mod:`._prefstate_extract`); each valid item updates its own (context, attribute) cell
by the rule in :mod:`._prefstate_state` (latest value per cell, with history; a weak contrary
signal does not override a confident value until it repeats).

Access (mechanism R): the PA gets a compact table of the *current* context's cells and the
latest changes in that context, nothing from the other context and no raw conversation, so it
fits the prompt of a 16k-context model (about 30 tokens per cell; 14 cells at most).

Turns that reveal nothing are not sent to the model: world-event notifications (no user words),
empty messages, and the turns of a probe (the probe branch is discarded anyway, paper Section 3.5).
Stores ``state.json`` and a readable ``TABLE.md`` under ``local_memory/<run>/``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import Role
from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._prefstate_extract import (
    EXTRACTION_SCHEMA,
    extraction_messages,
    read_extraction,
    summarise_pa_turn,
    validate_items,
)
from mempa_tui.memory._prefstate_state import (
    DEFAULT_CONFIDENT_AT,
    KEEP_OBSERVATIONS,
    CellChange,
    CellState,
    PrefStateState,
    PrefStateStats,
    apply_observation,
)
from mempa_tui.memory._reference import SnapshotError
from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)
from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute

__all__ = ["DEFAULT_RECENT_CHANGES", "PrefStateMemory"]

DEFAULT_RECENT_CHANGES = 3
"""Changes of the current context listed under the table."""

_QUOTE_CLIP = 90
_SHOW_OBSERVATIONS = 5
_NOTIFICATION = "[Notification]"
_ORDER = {a.key: i for i, a in enumerate(ATTRIBUTES)}


def _clip(text: str, limit: int = _QUOTE_CLIP) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _cell_line(cell: CellState) -> str:
    a = attribute(cell.attribute)
    quote = f'; they said: "{_clip(cell.quotes[-1])}"' if cell.quotes else ""
    return (
        f"- {a.name} ({a.ix_tool}): {cell.setting} "
        f"(confidence {cell.confidence:.2f}, since {cell.since:%Y-%m-%d}{quote})"
    )


def _change_line(cell: CellState, change: CellChange) -> str:
    return (
        f"- {change.at:%Y-%m-%d}: {attribute(cell.attribute).name} changed from "
        f'{change.old_setting} to {change.new_setting} ("{_clip(change.quote)}")'
    )


class PrefStateMemory(MemorySystem):
    """Preference-state memory (SPEC section 6).

    Args:
        client: the model client; role ``memory`` extracts.
        folder: where ``state.json`` and ``TABLE.md`` are written (``local_memory/<run>/``);
            created on the first write.
        confident_at: confidence in (0, 1] from which one observation supersedes a different
            current value (default 0.6); weaker ones must repeat.
        recent_changes: how many of the current context's latest changes the PA is shown (>= 0).

    Raises:
        ValueError: ``confident_at`` outside (0, 1] or ``recent_changes`` negative.
    """

    name = "prefstate"

    def __init__(
        self,
        client: CompletionClient,
        folder: Path,
        *,
        confident_at: float = DEFAULT_CONFIDENT_AT,
        recent_changes: int = DEFAULT_RECENT_CHANGES,
    ) -> None:
        if not 0.0 < confident_at <= 1.0:
            raise ValueError(f"prefstate: confident_at must be in (0, 1], got {confident_at}")
        if recent_changes < 0:
            raise ValueError(f"prefstate: recent_changes must be 0 or more, got {recent_changes}")
        self.client = client
        self.folder = Path(folder)
        self.confident_at = confident_at
        self.recent_changes = recent_changes
        self._state = PrefStateState()
        self._last: Evidence | None = None
        self._probe_step: str | None = None

    # -- read-only views -----------------------------------------------------------------

    @property
    def stats(self) -> PrefStateStats:
        """A copy of the counters."""
        return self._state.stats.model_copy(deep=True)

    def cell(self, context: Context, attribute_key: str) -> CellState | None:
        """A copy of one cell, or None when nothing has been observed for it."""
        found = self._state.cells.get(f"{context.value}/{attribute_key}")
        return found.model_copy(deep=True) if found else None

    def table(self, context: Context) -> dict[str, str]:
        """The current value of every known cell of ``context``: attribute key -> setting."""
        return {c.attribute: c.setting for c in self._cells(context)}

    def _cells(self, context: Context) -> list[CellState]:
        cells = [c for c in self._state.cells.values() if c.context is context]
        return sorted(cells, key=lambda c: _ORDER.get(c.attribute, 99))

    # -- adapter -------------------------------------------------------------------------

    async def write(self, record: TurnRecord) -> None:
        """Extract what the user's message reveals and update the cells of the turn's context.

        Never raises for model output or a failed model call: both are counted in ``stats``.
        """
        stats = self._state.stats
        stats.turns_written += 1
        previous = self._state.previous_turn
        before = previous[1] if previous is not None and previous[0] == record.step_id else None
        self._state.previous_turn = (record.step_id, summarise_pa_turn(record))
        message = record.user_message.strip()
        if not message or message.startswith(_NOTIFICATION) or record.step_id == self._probe_step:
            stats.turns_skipped += 1
            self._persist()
            return
        stats.turns_extracted += 1
        try:
            got = await complete_json(
                self.client, Role.MEMORY, extraction_messages(record, before),
                schema=EXTRACTION_SCHEMA, read=read_extraction,
                retry_hint=(
                    'Send the answer again as one JSON object {"observations": [...]} - an empty '
                    "array if the message reveals nothing - and nothing else."
                ),
            )
        except LLMError as exc:
            stats.call_errors += 1
            stats.last_failure = f"{record.step_id}#{record.turn_index}: model call failed: {exc}"
            self._persist()
            return
        if got.attempts > 1:
            stats.extraction_retries += 1
        if got.value is None:
            stats.extraction_failures += 1
            stats.last_failure = f"{record.step_id}#{record.turn_index}: {got.error}"
            self._persist()
            return
        check = validate_items(got.value.items, record)
        for reason, count in check.dropped.items():
            stats.drop(reason, count)
        if check.problems:
            stats.last_failure = f"{record.step_id}#{record.turn_index}: {check.problems[-1]}"
        for obs in check.accepted:
            apply_observation(self._state.cells, obs, stats, confident_at=self.confident_at)
            self._state.observations.append(obs)
            stats.items_accepted += 1
        del self._state.observations[:-KEEP_OBSERVATIONS]
        self._persist()

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """The current context's cells and its latest changes; nothing from the other context.

        Each cell and change is an :class:`EvidenceItem` scored by its confidence.
        """
        self._probe_step = session.step_id if session.is_probe else None
        cells = self._cells(session.context)
        items = [
            EvidenceItem(text=_cell_line(c), score=c.confidence, source=f"{c.context.value}/{c.attribute}")
            for c in cells
        ]
        latest: list[tuple[CellState, CellChange]] = []
        for c in cells:  # each cell's newest changes, then the newest of those overall
            mine = [h for h in reversed(c.history) if h.kind == "superseded"][: self.recent_changes]
            latest.extend((c, h) for h in mine)
        changes = sorted(latest, key=lambda pair: pair[1].at, reverse=True)[: self.recent_changes]
        change_items = [
            EvidenceItem(
                text=_change_line(c, h), score=h.confidence,
                source=f"change:{c.context.value}/{c.attribute}@{h.at:%Y-%m-%dT%H:%M}",
            )
            for c, h in changes
        ]
        text = ""
        if items:
            heading = (
                f"How this user wants to be helped in {session.context.value} matters, learned from "
                "their own reactions (the newest rule wins; pass these settings to the interaction "
                "tools):"
            )
            lines = [heading, *(i.text for i in items)]
            if change_items:
                lines += ["Recent changes:", *(i.text for i in change_items)]
            text = "\n".join(lines)
        self._last = Evidence(system_text=text, items=items + change_items)
        return self._last.model_copy(deep=True)

    # -- files and checkpoints -----------------------------------------------------------

    def render_table(self) -> str:
        """Both contexts' cells and histories as Markdown (what ``TABLE.md`` holds)."""
        out = ["# Preference state\n"]
        for context in Context:
            out.append(f"\n## {context.value}\n")
            cells = self._cells(context)
            if not cells:
                out.append("(nothing observed)\n")
            for c in cells:
                out.append(_cell_line(c) + f" [support {c.support}]\n")
                for h in c.history:
                    old = f"{h.old_setting} -> " if h.old_setting and h.kind != "reinforced" else ""
                    out.append(
                        f"    - {h.at:%Y-%m-%d %H:%M} {h.kind}: {old}{h.new_setting} "
                        f'({h.confidence:.2f}, {h.step_id}) "{_clip(h.quote)}"\n'
                    )
        return "".join(out)

    def _persist(self) -> None:
        """Write ``state.json`` and ``TABLE.md`` (each replaced atomically)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        files = {
            "state.json": self._state.model_dump_json(indent=1) + "\n",
            "TABLE.md": self.render_table(),
        }
        for name, text in files.items():
            tmp = self.folder / f".{name}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.folder / name)

    def snapshot(self) -> bytes:
        """The whole state as JSON bytes (cells with histories, observations, counters)."""
        return self._state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the state with a snapshot and rewrite the folder's files to match.

        Raises:
            SnapshotError: ``data`` is not a preference-state snapshot (the message says where).
        """
        try:
            state = PrefStateState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"prefstate memory: bad snapshot at {where}: {first['msg']}") from None
        self._state = state
        self._last = None
        self._probe_step = None
        self._persist()

    def inspect(self) -> MemoryInspection:
        """The state table (both contexts) with each cell's history, the latest observations, the
        last problem, the counters (drops by reason included) and the last evidence handed over."""
        stored: list[str] = []
        for context in Context:
            for c in self._cells(context):
                pending = f" | unconfirmed hint: {c.challenger.setting}" if c.challenger else ""
                stored.append(
                    f"{context.value}/{c.attribute} = {c.setting} ({c.confidence:.2f}, support "
                    f"{c.support}, since {c.since:%Y-%m-%d %H:%M}){pending}"
                )
                stored.extend(
                    f"  history {h.at:%Y-%m-%d %H:%M} {h.kind} "
                    f"{h.old_setting or '-'} -> {h.new_setting} ({h.confidence:.2f}, {h.step_id}): "
                    f'"{_clip(h.quote)}"'
                    for h in c.history
                )
        stored.extend(
            f"observed {o.at:%Y-%m-%d %H:%M} {o.context.value}/{o.attribute} = {o.setting} "
            f'({o.confidence:.2f}, {o.step_id}#{o.turn_index}): "{_clip(o.quote)}"'
            for o in self._state.observations[-_SHOW_OBSERVATIONS:]
        )
        s = self._state.stats
        if s.last_failure:
            stored.append(f"last problem: {s.last_failure}")
        stats = {
            "turns_written": float(s.turns_written),
            "turns_extracted": float(s.turns_extracted),
            "turns_skipped": float(s.turns_skipped),
            "extraction_retries": float(s.extraction_retries),
            "extraction_failures": float(s.extraction_failures),
            "call_errors": float(s.call_errors),
            "items_accepted": float(s.items_accepted),
            "items_dropped": float(sum(s.items_dropped.values())),
            "cells": float(len(self._state.cells)),
            "superseded": float(s.superseded),
            "challenges_held": float(s.challenges_held),
            "history_trimmed": float(s.history_trimmed),
        }
        stats.update({f"dropped_{k}": float(v) for k, v in sorted(s.items_dropped.items())})
        return MemoryInspection(system=self.name, stored=stored, last_evidence=self._last, stats=stats)
