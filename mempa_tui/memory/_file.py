"""File memory: nanobot-style MEMORY.md + HISTORY.md with LLM consolidation (paper Section 4 ❶).

State:

- ``MEMORY.md``: long-term facts about the user, rewritten by the MEMORY-role model.
- ``HISTORY.md``: a dated log, one entry per consolidation (or per failed one, as a plain
  summary of the archived turns).
- pending turns: raw turns not yet consolidated (``pending.jsonl``).

Evidence: the whole MEMORY.md in the PA's system prompt; in accumulation sessions the pending raw
turns as chat messages before the current session; in probes no raw conversation at all (paper
Section 3.5, 'Probes').

Consolidation (Section 4): when the estimated PA prompt passes ``consolidate_at_tokens``, the
oldest turns are consolidated until it is below ``consolidate_to_tokens``. The PA prompt counted is
what the paper counts: the PA's system prompt (its fixed instructions, the date, the memory
section; ``base_prompt_tokens`` plus MEMORY.md) and the conversation (the pending turns). The tool
schemas sit beside it in every call and are not counted; :func:`default_thresholds` scales the
paper's 20k -> 10k down where the window cannot hold them next to the tools (50% -> 25% of what
the window leaves after the tools and the reply).

Session-end consolidation (issue 12, a quick-start deviation): with ``consolidate_at_session_end``
every pending turn is also consolidated when an accumulation or change-event session ends
(:meth:`FileMemory.end_session`), whatever the estimate. The paper's rule alone never fires in a
run as short as the quick start (three steps, about 3k tokens of PA prompt against a threshold
of 13k-20k), and probes get no raw turns, so its File memory probes would be handed nothing;
the quick start sets this option and says so in its output. The threshold rule still applies.

Failures (issue 15.2): turns leave the PA's view only when the consolidation that holds them
succeeded. A failed consolidation leaves them pending (the PA still sees them, up to the client's
window rule), counts the failure and keeps its reason; the next write tries again. A reply that
parses is still a failure when it was cut at the completion cap, repeats itself, is an
empty-file placeholder or a refusal, copies the prompt, or copies the assistant's replies and
draws on none of the user's messages (issue 12, rules in
:mod:`mempa_tui.memory._consolidation_checks`); failed rounds are counted per reason code
(``consolidation_unusable_<reason>`` in the stats). Where the stored MEMORY.md's words came from
is carried over the saves (:func:`~mempa_tui.memory._consolidation_copy.file_grounding`) and shown
as ``memory_md_ngrams``, ``memory_md_copied_ngrams`` and ``memory_md_user_words``, so Health can
tell a final file that draws only on the assistant's replies.

Fit (issue 15.6): a MEMORY.md that alone would take more than ``consolidate_at_tokens`` of the PA
prompt (e.g. restored from an old store) is cut to fit in what the PA is handed, whole lines from
the top, with a marked note saying how much was left out; each cut is counted. The stored file is
not changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.llm.types import ChatMessage
from mempa_tui.memory._consolidation import CompletionClient, consolidate
from mempa_tui.memory._consolidation_copy import FileGrounding, file_grounding
from mempa_tui.memory._reference import SnapshotError
from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)

__all__ = ["FileMemory", "FileMemoryState", "FileMemoryStats", "HistoryEntry", "default_thresholds"]

PAPER_CONSOLIDATE_AT = 20_000
"""Paper Section 4: consolidation starts once the PA prompt reaches about 20k tokens..."""
PAPER_CONSOLIDATE_TO = 10_000
"""...and goes on until it is below 10k."""


def default_thresholds(context_window: int | None) -> tuple[int, int]:
    """Consolidation thresholds for a PA model's context window.

    Rule: start at 50% of the window and consolidate down to 25%, capped at the paper's
    20,000 -> 10,000 tokens; no window known means the paper's values.

    Args:
        context_window: tokens of the PA's window left for memory and conversation (the runner
            passes the window less the tool schemas and the reply), or None.

    Returns:
        ``(consolidate_at_tokens, consolidate_to_tokens)``.

    Raises:
        ValueError: ``context_window`` is not positive.
    """
    if context_window is None:
        return PAPER_CONSOLIDATE_AT, PAPER_CONSOLIDATE_TO
    if context_window <= 0:
        raise ValueError(f"context_window must be positive, got {context_window}")
    return (
        min(PAPER_CONSOLIDATE_AT, context_window // 2),
        min(PAPER_CONSOLIDATE_TO, context_window // 4),
    )


class HistoryEntry(BaseModel):
    """One HISTORY.md entry.

    Attributes:
        at: story time of the oldest turn the entry covers.
        text: the entry (the model's history_entry, or the archive summary on failure).
        consolidated: False when the model's reply could not be used.
    """

    model_config = ConfigDict(extra="forbid")

    at: str = Field(description="'YYYY-MM-DD HH:MM' of the oldest turn covered.")
    text: str
    consolidated: bool = True


class FileMemoryStats(BaseModel):
    """Counters shown in ``inspect().stats``; every failure is counted, none is silent."""

    model_config = ConfigDict(extra="forbid")

    turns_written: int = 0
    consolidations: int = 0
    """Consolidation rounds whose reply was used."""
    consolidation_failures: int = 0
    """Rounds whose reply could not be used even after the retry (their turns stay pending)."""
    consolidation_retries: int = 0
    """Rounds that needed the second call."""
    turns_consolidated: int = 0
    turns_archived_raw: int = 0
    """Turns archived without consolidation by older versions (kept so old snapshots load)."""
    turns_kept_after_failure: int = 0
    """Pending turns left in the PA's view by the last failed round."""
    memory_cuts: int = 0
    """Times MEMORY.md was cut to fit the PA prompt (issue 15.6)."""
    last_cut_tokens: int = 0
    """Tokens left out by the last cut."""
    last_failure: str | None = None
    """``<reason code>: <why>`` of the last failed round (codes in
    :data:`~mempa_tui.memory._consolidation_checks.REASON_TEXT`)."""
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    """Failed rounds per reason code (issue 12); their sum is ``consolidation_failures`` for rounds
    failed since the codes were counted."""


class FileMemoryState(BaseModel):
    """Everything a File memory snapshot holds (serialised as JSON bytes)."""

    model_config = ConfigDict(extra="forbid")

    system: Literal["file"] = "file"
    memory_md: str = ""
    history: list[HistoryEntry] = Field(default_factory=list)
    pending: list[TurnRecord] = Field(default_factory=list)
    stats: FileMemoryStats = Field(default_factory=FileMemoryStats)
    grounding: FileGrounding | None = None
    """Where MEMORY.md's words came from, carried over the saves; None until a save measured it
    (and in snapshots stored before it was)."""


def _turn_messages(turn: TurnRecord) -> list[ChatMessage]:
    """A pending turn as the user / assistant messages the PA sees in accumulation."""
    user = f"[{turn.at:%Y-%m-%d %H:%M}, {turn.context.value}] {turn.user_message}"
    notes: list[str] = []
    for call in turn.tool_calls:
        outcome = "error" if call.error else "ok"
        notes.append(f"{call.tool} ({outcome})")
    for ix in turn.ix_calls:
        notes.append(f"{ix.attribute} = {ix.setting}")
    reply = turn.reply
    if notes:
        reply = f"(earlier activity: {'; '.join(notes)})\n{reply}"
    return [ChatMessage(role="user", content=user), ChatMessage(role="assistant", content=reply)]


def _render_history(history: list[HistoryEntry]) -> str:
    return "".join(f"[{h.at}] {h.text.strip()}\n\n" for h in history)


class FileMemory(MemorySystem):
    """nanobot-style File memory (paper Section 4 ❶, Table 11 first row).

    Args:
        client: the model client; the ``memory`` role consolidates.
        folder: where MEMORY.md, HISTORY.md, pending.jsonl and stats.json are written
            (``local_memory/<run>/``); created on the first write.
        consolidate_at_tokens: consolidation starts when the estimated PA prompt passes this.
        consolidate_to_tokens: consolidation goes on until the estimate is below this.
        token_counter: text -> estimated tokens (default: ``client.count_tokens``).
        base_prompt_tokens: tokens of the PA's system prompt without the memory (its fixed
            instructions, date and section heading); counted into the PA prompt. The runner sets
            it from the PA's real prompt; 0 counts only MEMORY.md and the turns.
        consolidate_at_session_end: also consolidate every pending turn when a session ends
            (not a probe's); False is the paper's rule (Section 4) alone. See the module docstring.

    Raises:
        ValueError: thresholds not positive or ``to`` not below ``at``.
    """

    name = "file"

    def __init__(
        self,
        client: CompletionClient,
        folder: Path,
        *,
        consolidate_at_tokens: int = PAPER_CONSOLIDATE_AT,
        consolidate_to_tokens: int = PAPER_CONSOLIDATE_TO,
        token_counter: Callable[[str], int] | None = None,
        base_prompt_tokens: int = 0,
        consolidate_at_session_end: bool = False,
    ) -> None:
        if consolidate_to_tokens <= 0 or consolidate_at_tokens <= 0:
            raise ValueError(
                "File memory: consolidate_at_tokens and consolidate_to_tokens must be positive, "
                f"got {consolidate_at_tokens} and {consolidate_to_tokens}"
            )
        if consolidate_to_tokens >= consolidate_at_tokens:
            raise ValueError(
                f"File memory: consolidate_to_tokens ({consolidate_to_tokens}) must be below "
                f"consolidate_at_tokens ({consolidate_at_tokens})"
            )
        self.client = client
        self.folder = Path(folder)
        self.consolidate_at_tokens = consolidate_at_tokens
        self.consolidate_to_tokens = consolidate_to_tokens
        if base_prompt_tokens < 0:
            raise ValueError(f"File memory: base_prompt_tokens must not be negative, got {base_prompt_tokens}")
        self.base_prompt_tokens = base_prompt_tokens
        """Tokens of the PA's system prompt without the memory, counted into the PA prompt."""
        self.consolidate_at_session_end = consolidate_at_session_end
        """Consolidate all pending turns at each session's end too (quick start, issue 12)."""
        self._count = token_counter or client.count_tokens
        self._state = FileMemoryState()
        self._last: Evidence | None = None

    # -- read-only views -----------------------------------------------------------------

    @property
    def memory_md(self) -> str:
        """The current MEMORY.md text."""
        return self._state.memory_md

    @property
    def history_md(self) -> str:
        """The current HISTORY.md text."""
        return _render_history(self._state.history)

    @property
    def pending(self) -> list[TurnRecord]:
        """Copies of the turns not yet consolidated, oldest first."""
        return [t.model_copy(deep=True) for t in self._state.pending]

    @property
    def stats(self) -> FileMemoryStats:
        """A copy of the counters."""
        return self._state.stats.model_copy()

    def prompt_tokens(self) -> int:
        """Estimated tokens of the PA prompt (paper Section 4): the system prompt without memory
        (``base_prompt_tokens``), MEMORY.md, and the pending turns as messages. Tool schemas are
        not counted (see the module docstring)."""
        return self._tokens(self._state.memory_md, self._state.pending)

    def _tokens(self, memory_md: str, turns: list[TurnRecord]) -> int:
        total = self.base_prompt_tokens + (self._count(memory_md) if memory_md else 0)
        for turn in turns:
            total += sum(self._count(m.content) + 4 for m in _turn_messages(turn))
        return total

    # -- adapter -------------------------------------------------------------------------

    async def write(self, record: TurnRecord) -> None:
        """Append the turn to the pending turns; consolidate if the estimate passes the threshold."""
        self._state.pending.append(record.model_copy(deep=True))
        self._state.stats.turns_written += 1
        if self.prompt_tokens() > self.consolidate_at_tokens:
            await self._consolidate_down()
        self._persist()

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """MEMORY.md in the system prompt; pending raw turns as messages unless in a probe.

        Pending turns of the current step are left out: the PA already holds this session's
        history, so handing them back would put each of them in its prompt twice.
        """
        memory_md = self._fitted_memory_md()
        items = [EvidenceItem(text=memory_md, source="MEMORY.md")] if memory_md.strip() else []
        prior: list[ChatMessage] = []
        if not session.is_probe:
            for turn in self._state.pending:
                if turn.step_id != session.step_id:
                    prior.extend(_turn_messages(turn))
        self._last = Evidence(system_text=memory_md, items=items, prior_messages=prior)
        return self._last.model_copy(deep=True)

    def _fitted_memory_md(self) -> str:
        """MEMORY.md as the PA gets it: whole, or cut to ``consolidate_at_tokens`` less the base
        prompt (whole lines from the top, then a marked note) when it alone would not fit."""
        memory_md = self._state.memory_md
        budget = max(64, self.consolidate_at_tokens - self.base_prompt_tokens)
        total = self._count(memory_md) if memory_md else 0
        if total <= budget:
            return memory_md
        kept: list[str] = []
        used = 0
        for line in memory_md.splitlines():
            cost = self._count(line) + 1
            if used + cost > budget - 32:  # room for the note
                break
            kept.append(line)
            used += cost
        left_out = total - used
        stats = self._state.stats
        stats.memory_cuts += 1
        stats.last_cut_tokens = left_out
        note = (f"[MEMORY.md continues: about {left_out} more tokens were left out here so the prompt "
                f"fits the model's window]")
        return "\n".join([*kept, note]) + "\n"

    async def _consolidate_down(self) -> None:
        """Consolidate the oldest pending turns until the estimate is below the lower threshold.

        A round whose reply cannot be used ends the loop and leaves its turns pending (counted,
        with its reason): they leave the PA's view only once a save holds them.
        """
        while self._state.pending and self.prompt_tokens() >= self.consolidate_to_tokens:
            pending = self._state.pending
            memory_md = self._state.memory_md
            cut = 1
            while cut < len(pending) and self._tokens(memory_md, pending[cut:]) >= (
                self.consolidate_to_tokens
            ):
                cut += 1
            if not await self._consolidate_oldest(cut):
                return  # the turns stay pending and in the PA's view; the next write tries again

    async def _consolidate_oldest(self, cut: int) -> bool:
        """One consolidation round over the ``cut`` oldest pending turns.

        Returns:
            True when the reply was used (the turns left the pending list); False when it could
            not be used (counted with its reason; every pending turn stays).
        """
        pending = self._state.pending
        chunk = pending[:cut]
        outcome = await consolidate(self.client, self._state.memory_md, chunk)
        stats = self._state.stats
        at = f"{chunk[0].at:%Y-%m-%d %H:%M}"
        if outcome.attempts > 1:
            stats.consolidation_retries += 1
        if outcome.reply is None:
            reason = outcome.reason or "unreadable"
            stats.consolidation_failures += 1
            stats.failure_reasons[reason] = stats.failure_reasons.get(reason, 0) + 1
            stats.turns_kept_after_failure = len(pending)
            stats.last_failure = f"{reason}: {outcome.error or 'unknown'}"
            return False
        self._state.memory_md = outcome.reply.memory.strip() + "\n"
        self._state.grounding = file_grounding(self._state.memory_md, chunk, self._state.grounding)
        self._state.history.append(HistoryEntry(at=at, text=outcome.reply.history_entry.strip()))
        stats.consolidations += 1
        stats.turns_consolidated += len(chunk)
        self._state.pending = pending[cut:]
        return True

    async def end_session(self, session: SessionInfo) -> None:
        """With ``consolidate_at_session_end``: consolidate every pending turn in one round when a
        session (not a probe) ends, so the next probe's MEMORY.md holds it (quick start, issue 12).

        Raises:
            LLMError: the memory model's call failed (the runner restores the step's start).
        """
        if not self.consolidate_at_session_end or session.is_probe or not self._state.pending:
            return
        await self._consolidate_oldest(len(self._state.pending))
        self._persist()

    # -- files and checkpoints -----------------------------------------------------------

    def _persist(self) -> None:
        """Write the state to the folder (each file replaced atomically)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        files = {
            "MEMORY.md": self._state.memory_md,
            "HISTORY.md": self.history_md,
            "pending.jsonl": "".join(t.model_dump_json() + "\n" for t in self._state.pending),
            "stats.json": self._state.stats.model_dump_json(indent=2) + "\n",
        }
        for name, text in files.items():
            tmp = self.folder / f".{name}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.folder / name)

    def snapshot(self) -> bytes:
        """The whole state as JSON bytes (MEMORY.md, history entries, pending turns, counters)."""
        return self._state.model_dump_json().encode("utf-8")

    def restore(self, data: bytes) -> None:
        """Replace the state with a snapshot and rewrite the folder's files to match.

        Raises:
            SnapshotError: ``data`` is not a File memory snapshot (the message says which field).
        """
        try:
            state = FileMemoryState.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "snapshot"
            raise SnapshotError(f"File memory: bad snapshot at {where}: {first['msg']}") from None
        self._state = state
        self._last = None
        self._persist()

    def _grounding_stats(self) -> dict[str, float]:
        """``memory_md_ngrams``, ``memory_md_copied_ngrams``, ``memory_md_user_words`` once a save
        measured them (none before: older runs' stats stay as they were)."""
        g = self._state.grounding
        if g is None:
            return {}
        return {"memory_md_ngrams": float(g.ngrams), "memory_md_copied_ngrams": float(len(g.copied)),
                "memory_md_user_words": float(len(g.user_words))}

    def inspect(self) -> MemoryInspection:
        """MEMORY.md, the history entries and the pending turns; counters; the last evidence."""
        stored: list[str] = []
        if self._state.memory_md.strip():
            stored.append("MEMORY.md\n" + self._state.memory_md.strip())
        stored.extend(
            f"HISTORY [{h.at}]{'' if h.consolidated else ' (archived raw)'} {h.text}"
            for h in self._state.history
        )
        stored.extend("PENDING " + t.as_text() for t in self._state.pending)
        s = self._state.stats
        if s.last_failure:
            stored.append(f"last consolidation failure: {s.last_failure}")
        stats = {
            "turns_written": float(s.turns_written),
            "pending_turns": float(len(self._state.pending)),
            "history_entries": float(len(self._state.history)),
            "consolidations": float(s.consolidations),
            "consolidation_failures": float(s.consolidation_failures),
            "consolidation_retries": float(s.consolidation_retries),
            "turns_consolidated": float(s.turns_consolidated),
            "turns_archived_raw": float(s.turns_archived_raw),
            "turns_kept_after_failure": float(s.turns_kept_after_failure),
            "memory_cuts": float(s.memory_cuts),
            "memory_md_chars": float(len(self._state.memory_md.strip())),
            **{f"consolidation_unusable_{k}": float(v) for k, v in sorted(s.failure_reasons.items())},
            **self._grounding_stats(),
            "base_prompt_tokens": float(self.base_prompt_tokens),
            "prompt_tokens_estimate": float(self.prompt_tokens()),
            "consolidate_at_tokens": float(self.consolidate_at_tokens),
            "consolidate_to_tokens": float(self.consolidate_to_tokens),
        }
        if self.consolidate_at_session_end:  # only then: older runs' stats stay as they were
            stats["consolidate_at_session_end"] = 1.0
        return MemoryInspection(
            system=self.name, stored=stored, last_evidence=self._last, stats=stats
        )
