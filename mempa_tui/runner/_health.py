"""Memory health: a memory system's counted failures become a run problem (SPEC 4.7, issue 16).

Every memory adapter counts what it swallowed (malformed model replies, dropped items, failed
consolidation rounds...) in ``inspect().stats``; the runner stores those counters with each
settled timeline step (``memory_stats`` in the step's result JSON, read back by
:func:`~mempa_tui.runner.report.last_memory_stats`). This module turns the counters of a run's last
step into a :class:`MemoryHealth` verdict, so that a memory that silently stored nothing is never
shown as an ordinary result: ``mempa runs``, ``mempa report`` and every results table carry it.

The stated rule (documented in the README, section "Memory health"):

* A **failure rate** is computed for each kind of counted failure the memory reports, over the
  writes it could have failed on (see :data:`FAILURE_RULES`). A run whose rate is above
  :data:`BROKEN_RATE` (20 %) for any kind is **broken**.
* A memory that received at least :data:`EMPTY_AFTER_WRITES` (5) turn records but holds no item
  (``memories_stored``, ``turns_stored``, ``cells`` or File memory's history plus pending turns
  all 0) is **broken** ("empty store").
* File memory whose MEMORY.md was never written (turns pending, no consolidation, no history
  entry) after at least :data:`EMPTY_AFTER_WRITES` turn records is **broken** too: probes get no
  raw turns (paper Section 3.5), so its probes were handed an empty memory.
* File memory whose MEMORY.md is empty at the end (``memory_md_chars`` 0) although rounds were
  consolidated, after at least :data:`EMPTY_AFTER_WRITES` turn records, is **broken** as well
  (issue 12): its probes were handed an empty memory just the same. Runs stored before the
  counter existed are not judged by this rule.
* File memory whose final MEMORY.md draws only on the assistant's replies is **broken** too
  (``memory_md_ngrams``, ``memory_md_copied_ngrams``, ``memory_md_user_words``; rule and
  thresholds in :mod:`mempa_tui.memory._consolidation_copy`): half or more of its word 8-grams were
  copied from the PA's replies and it holds fewer than 4 of the user's own words, so its probes
  were handed what the PA said, not what the user said (a fresh user's quick start: the one
  consolidation stored the PA's venue reply of A-E01 with Health ok). Runs stored before the
  counters are not judged by this rule. A run whose every round was refused for copying the
  assistant (``copies_assistant``) is broken by the failure rate, its reason named.
* File memory's failed consolidation rounds are shown by reason (issue 12: cut at the completion
  cap, text repeats itself, empty-file placeholder, prompt copied, refusal, the assistant's replies
  copied, no usable JSON object, blank memory
  that would erase the file, model call failed; ``consolidation_unusable_<reason>`` counters), so a
  run where most rounds failed reads, for example, ``BROKEN - 3/4 consolidation rounds failed
  (75%; text repeats itself 2, cut at the completion cap 1)``.
* Any counted failure below the rate is a **warning**: shown, not marked.
* Conditions without a store (No Memory, Oracle) and runs stored before the counters existed are
  ``n/a``: nothing to judge.

Broken runs keep their rows (their probes did run), but every table marks them and names the run
and the reason, so they are never averaged in silently.

Next to the memory's health stands one problem of the PA's own (issue 12): **repeated calls**, tool
calls identical (name and arguments) to an earlier call of the same user turn, counted per step and
probe repeat (``pa_repeated_calls`` on the stored ``step_status`` event; a run stored before they
were counted reads 0). :class:`PARepeats` sums them for a run; any is a **warning** ("PA repeated an
identical call N times in M turns"), never broken: the run's scores stand, but its model time went
on calls that could not help, and its steps look more valid than they were.

Beside them, **echoed replies**: PA replies that only repeated text the harness wrote into the PA's
conversation (the repeat guard's note, a reminder, an IX answer, an error text; rule in
:mod:`mempa_tui.agent.echo`). They were withheld: never shown to the user, stored or judged; each
was asked for once more, and a turn that echoed again failed (``pa_echoed_replies`` on the stored
``step_status`` event). Any is a warning too ("PA echoed a harness note as its reply N times
(withheld: never shown to the user or judged)"): the run's model time went on them, and steps or
probes failed because of them.

And **interaction-tool text withheld**: sentences of accumulation-session replies that named an
``IX_`` tool or a selected attribute with its setting, withheld so the simulated user never reads
the selection (``pa_ix_text_withheld``; :mod:`mempa_tui.runner._episode_session`). A warning too.
A probe whose reply carries such text is not counted here: it is floored (``interaction-tool text
in the reply``), counted in the floored column and shown with its reason like the arguments case.

Then the **simulated user's messages sent back** (``simulator_checks`` on the stored
``step_status`` event: :data:`~mempa_tui.simulator.CHECK_COUNT_KEYS`, Appendix D.4): attempts of
the user simulator that failed a check and were sent back for a rewrite, with how many of them
stalled (put off a detail nobody asked for), repeated an earlier user message word for word, were
cut at the completion cap (``cut_replies``) or were written as the assistant (``assistant_voice``),
and the turns that failed every attempt and were invalid ("simulated user's message sent back 4
times (2 stalled, 1 repeated, 1 other), 1 turn invalid"). A warning too: a run whose user kept
stalling looks clean otherwise (issue 12: on the packaged 1.5B simulator the user said "I'll get
to it in a moment." in every beat of the quick start). Runs stored before the counts were carried
read none.

Last, **judge replies cut** (``judge_replies_cut``): BRS judge and PRS rater replies that ran to a
cap (the completion token cap, or a text field's length cap in the reply schema, mid-sentence)
and stayed cut after their one retry (:func:`mempa_tui.llm.structured.cut_reason`). Their scores
are kept; their stored reasons open with
:data:`~mempa_tui.runner._scoring.CUT_MARK`, which is what is counted. A warning: the scores
stand, but they rest on a reason that was cut off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel

from mempa_tui.memory._consolidation_checks import REASON_TEXT
from mempa_tui.memory._consolidation_copy import COPY_SHARE, MIN_NEW_NGRAMS, MIN_USER_WORDS
from mempa_tui.scoring import ConditionScores, ProbeOutcome
from mempa_tui.store import RunRecord, RunStore

__all__ = [
    "BROKEN_RATE",
    "EMPTY_AFTER_WRITES",
    "FAILURE_RULES",
    "FailureCount",
    "HealthState",
    "MemoryHealth",
    "PARepeats",
    "RowAnnotations",
    "SIMULATOR_COUNT_KEYS",
    "cut_phrase",
    "echoes_phrase",
    "health_of_stats",
    "ix_withheld_phrase",
    "not_counted",
    "pa_problem_phrases",
    "health_summary",
    "repeats_note",
    "repeats_phrase",
    "row_annotations",
    "run_health",
    "run_pa_repeats",
    "runs_health",
    "runs_pa_repeats",
    "simulator_counts",
    "simulator_phrase",
    "stored_count",
    "stored_phrase",
]

BROKEN_RATE = 0.20
"""A failure rate above this (a fraction of the writes that could fail) marks a run broken."""

EMPTY_AFTER_WRITES = 5
"""A store still empty after at least this many written turn records marks a run broken."""

HealthState = Literal["ok", "warning", "broken", "n/a"]
"""``ok``: counters present, no failure; ``warning``: failures at or below the rate; ``broken``:
above the rate or an empty store; ``n/a``: no counters (no store, or stored before counters)."""

FAILURE_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # (failure counter, counters whose sum is the denominator, what failed)
    ("turns_archived_raw", ("turns_written",), "turns archived raw after a failed consolidation"),
    ("consolidation_failures", ("consolidations", "consolidation_failures"), "consolidation rounds failed"),
    ("extraction_failures", ("turns_extracted",), "turns with no usable extraction reply"),
    ("call_errors", ("turns_extracted",), "turns whose model call failed"),
    ("items_dropped", ("items_accepted", "items_dropped"), "extracted items dropped"),
    ("decision_failures", ("candidates",), "memory decisions unusable"),
    ("malformed_replies", ("model_calls",), "malformed memory-model replies"),
    ("failed_writes", ("turns_written",), "turn writes that ended in an error"),
    ("model_errors", ("model_calls",), "memory-model calls that failed"),
)
"""Known failure counters. When a denominator counter is missing (``extraction_failures`` of the
Mem0-style memory has no ``turns_extracted``), ``turns_written`` is used; a counter with no
usable denominator is still shown as a count. Another counter whose name says ``fail``,
``error``, ``malformed`` or ``dropped`` (a memory system added later) is counted over
``turns_written`` the same way."""

_STORE_COUNTERS = ("memories_stored", "turns_stored", "cells")
_REASON_PREFIX = "consolidation_unusable_"
"""File memory's failed rounds per reason code (:data:`~mempa_tui.memory._consolidation_checks.REASON_TEXT`)."""
_FAILURE_WORDS = ("fail", "error", "malformed", "dropped")


class FailureCount(BaseModel):
    """One kind of counted failure."""

    counter: str
    """The memory's counter name (``malformed_replies``...)."""
    what: str
    """What failed, in words."""
    failures: int
    """How many."""
    out_of: int | None
    """The writes that could have failed (None: no denominator counter)."""
    reasons: dict[str, int] = {}
    """Why they failed, in words -> how many (File memory's consolidation rounds; else empty)."""

    @property
    def rate(self) -> float | None:
        """``failures / out_of`` (0-1), None without a denominator."""
        return None if not self.out_of else min(1.0, self.failures / self.out_of)

    def text(self) -> str:
        """``66/66 malformed memory-model replies (100%)``; with reasons ``3/4 consolidation rounds
        failed (75%; text repeats itself 2, cut at the completion cap 1)``."""
        why = ", ".join(f"{k} {n}" for k, n in sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        if self.out_of:
            return f"{self.failures}/{self.out_of} {self.what} ({100 * (self.rate or 0):.0f}%{'; ' + why if why else ''})"
        return f"{self.failures} {self.what}" + (f" ({why})" if why else "")


class MemoryHealth(BaseModel):
    """The health of one run's memory, from its last step's counters."""

    run_id: str
    """The run."""
    memory: str
    """Its memory condition."""
    state: HealthState
    """The verdict (see the module docstring for the rule)."""
    writes: int | None = None
    """Turn records the memory received (``turns_written``), if counted."""
    stored: int | None = None
    """Items the store holds, if the memory reports it (what is counted: :func:`stored_phrase`)."""
    stored_words: str | None = None
    """:attr:`stored` in words that name what is counted (:func:`stored_phrase`)."""
    failures: list[FailureCount] = []
    """Every kind of failure with a count above 0."""
    problems: list[str] = []
    """Why the run is broken (empty unless ``state`` is ``broken``)."""

    @property
    def broken(self) -> bool:
        """True when the run must be marked in every table."""
        return self.state == "broken"

    def short(self) -> str:
        """A table cell: ``ok``, ``n/a``, ``warn: 3 failures``, ``BROKEN``."""
        if self.state == "broken":
            return "BROKEN"
        if self.state == "warning":
            return f"warn: {sum(f.failures for f in self.failures)} failure(s)"
        return self.state

    def text(self) -> str:
        """One line: the verdict, the problems and every counted failure."""
        if self.state == "n/a":
            return "memory health: n/a (no memory counters: a condition without a store, or a run stored before them)"
        parts = [f"memory health: {self.state.upper() if self.broken else self.state}"]
        if self.writes is not None:
            parts.append(f"{self.writes} turn(s) written")
        if self.stored_words is not None:
            parts.append(f"{self.stored_words} stored after the last step")
        elif self.stored is not None:
            parts.append(f"{self.stored} item(s) stored after the last step")
        line = ", ".join(parts)
        if self.problems:
            line += f" - {'; '.join(self.problems)}"
        others = [f.text() for f in self.failures if not any(f.text() in p for p in self.problems)]
        if others:
            line += f" (counted: {'; '.join(others)})"
        return line


def _int(stats: Mapping[str, float], key: str) -> int | None:
    value = stats.get(key)
    return None if value is None else int(value)


def stored_count(stats: Mapping[str, float]) -> int | None:
    """The items a memory's store holds by its counters (:func:`stored_phrase` says which);
    None when the counters have no store count."""
    for key in _STORE_COUNTERS:
        if key in stats:
            return int(stats[key])
    if "history_entries" in stats or "pending_turns" in stats:  # File memory
        return int(stats.get("history_entries", 0) + stats.get("pending_turns", 0))
    return None


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


_NOT_COUNTED = {
    "memories_stored": "failure notes",
    "cells": "each cell's history, the latest observations and the last problem",
    "file": "MEMORY.md and the last consolidation failure",
}
"""What a memory's listing (``inspect().stored``, ``mempa show --memory-store``) shows besides
the items its store count counts, by that count's counter (``file``: File memory)."""


def stored_phrase(stats: Mapping[str, float]) -> str | None:
    """What a memory's store count counts, in words, from its ``inspect().stats``.

    The count (:attr:`MemoryHealth.stored`) is ``memories_stored`` (Mem0, MemOS), ``turns_stored``
    (Simple RAG), ``cells`` (preference state) or, for File memory, its history entries plus its
    pending turns; MEMORY.md and failure notes are never counted (fresh-user check: "1 item(s)
    stored" beside a ``--memory-store`` listing of MEMORY.md and one history entry).

    Returns:
        ``"0 history entries and 9 pending turns (MEMORY.md empty)"``, ``"3 memories"``,
        ``"10 turns"``, ``"4 preference cells"``; None when the counters have no store count.
    """
    if "memories_stored" in stats:
        return _plural(int(stats["memories_stored"]), "memory", "memories")
    if "turns_stored" in stats:
        return _plural(int(stats["turns_stored"]), "turn", "turns")
    if "cells" in stats:
        return _plural(int(stats["cells"]), "preference cell", "preference cells")
    if "history_entries" in stats or "pending_turns" in stats:
        pending = _plural(int(stats.get("pending_turns", 0)), "pending turn", "pending turns")
        history = _plural(int(stats.get("history_entries", 0)), "history entry", "history entries")
        md = "MEMORY.md apart" if int(stats.get("memory_md_chars", 1)) else "MEMORY.md empty"
        return f"{history} and {pending} ({md})"
    return None


def not_counted(stats: Mapping[str, float]) -> str | None:
    """What a memory's listing shows that :func:`stored_phrase` does not count (None: nothing)."""
    for key in ("memories_stored", "turns_stored", "cells"):
        if key in stats:
            return _NOT_COUNTED.get(key)
    if "history_entries" in stats or "pending_turns" in stats:
        return _NOT_COUNTED["file"]
    return None


def _file_memory_never_consolidated(stats: Mapping[str, float]) -> bool:
    """File memory's counters with turns pending but no consolidation and no history entry: its
    MEMORY.md is empty, and a probe (which gets no raw turns) is handed nothing (issue 12: the
    quick start's two sessions stayed below the 13,401-token threshold, so File memory's row was
    No Memory's under another name while its health read ok)."""
    return ("pending_turns" in stats and "consolidations" in stats
            and int(stats.get("consolidations", 0)) == 0 and int(stats.get("history_entries", 0)) == 0
            and int(stats.get("pending_turns", 0)) > 0)


def _file_memory_empty_at_end(stats: Mapping[str, float]) -> bool:
    """File memory's counters with rounds consolidated but an empty MEMORY.md (``memory_md_chars``
    0; issue 12: a model that answered every round with a blank file). False without the counter."""
    return ("memory_md_chars" in stats and "consolidations" in stats
            and int(stats.get("consolidations", 0)) > 0 and int(stats["memory_md_chars"]) == 0)


def _file_memory_assistant_only(stats: Mapping[str, float]) -> bool:
    """File memory's final MEMORY.md draws only on the assistant's replies: at least
    ``MIN_NEW_NGRAMS`` 8-grams, ``COPY_SHARE`` or more of them copied from replies, fewer than
    ``MIN_USER_WORDS`` user words (:class:`~mempa_tui.memory._consolidation_copy.FileGrounding`).
    False without the counters (runs stored before them) or with an empty file."""
    if not all(k in stats for k in ("memory_md_ngrams", "memory_md_copied_ngrams", "memory_md_user_words")):
        return False
    ngrams = int(stats["memory_md_ngrams"])
    return (int(stats.get("memory_md_chars", 1)) > 0 and ngrams >= MIN_NEW_NGRAMS
            and int(stats["memory_md_copied_ngrams"]) >= COPY_SHARE * ngrams
            and int(stats["memory_md_user_words"]) < MIN_USER_WORDS)


def _consolidation_reasons(stats: Mapping[str, float]) -> dict[str, int]:
    """File memory's failed rounds per reason, in words (``consolidation_unusable_<code>``)."""
    return {REASON_TEXT.get(k[len(_REASON_PREFIX):], k[len(_REASON_PREFIX):].replace("_", " ")): int(v)
            for k, v in stats.items() if k.startswith(_REASON_PREFIX) and int(v)}


def health_of_stats(run_id: str, memory: str, stats: Mapping[str, float]) -> MemoryHealth:
    """Judge one memory's counters by the module's rule.

    Args:
        run_id / memory: which run and condition the counters belong to.
        stats: the memory's ``inspect().stats`` (counter name -> value); empty means ``n/a``.

    Returns:
        The verdict with every counted failure and, when broken, the reasons.
    """
    if not stats:
        return MemoryHealth(run_id=run_id, memory=memory, state="n/a")
    writes = _int(stats, "turns_written")
    failures: list[FailureCount] = []
    known = set()
    for counter, over, what in FAILURE_RULES:
        known.add(counter)
        count = _int(stats, counter)
        if not count:
            continue
        if all(k in stats for k in over):
            out_of: int | None = int(sum(stats[k] for k in over))
        else:
            out_of = writes
        reasons = _consolidation_reasons(stats) if counter == "consolidation_failures" else {}
        failures.append(FailureCount(counter=counter, what=what, failures=count, out_of=out_of or None,
                                     reasons=reasons))
    for counter in sorted(stats):
        if (counter in known or counter.startswith(("dropped_", _REASON_PREFIX))
                or not any(w in counter for w in _FAILURE_WORDS)):
            continue
        count = _int(stats, counter)
        if count:
            failures.append(FailureCount(counter=counter, what=counter.replace("_", " "), failures=count,
                                         out_of=writes or None))
    stored = stored_count(stats)
    problems = [f.text() for f in failures if f.rate is not None and f.rate > BROKEN_RATE]
    if stored == 0 and (writes or 0) >= EMPTY_AFTER_WRITES:
        problems.append(f"empty store after {writes} turn(s) written")
    elif _file_memory_never_consolidated(stats) and (writes or 0) >= EMPTY_AFTER_WRITES:
        pending = int(stats.get("pending_turns", 0))
        failed = int(stats.get("consolidation_failures", 0))
        if failed:  # rounds ran (at a session end or the threshold) and none gave a usable file
            why = ", ".join(f"{k} {n}" for k, n in sorted(_consolidation_reasons(stats).items(),
                                                             key=lambda kv: (-kv[1], kv[0])))
            remedy = (f"consolidation ran {failed} round(s) and every one failed: the memory model's output "
                      f"was unusable ({why or 'reasons not counted'}); a lower threshold would not help, "
                      "try a larger memory model (roles.memory in the profile)")
        else:
            remedy = (f"consolidation starts at {int(stats.get('consolidate_at_tokens', 0)):,} tokens of PA "
                      f"prompt, the run reached {int(stats.get('prompt_tokens_estimate', 0)):,} (more sessions, "
                      "or --memory-option consolidate_at_tokens=N)")
        problems.append(
            f"MEMORY.md never written: all {pending} turn(s) still wait for a consolidation, and probes "
            f"see no raw turns (paper 3.5), so its probes got an empty memory; {remedy}")
    elif _file_memory_empty_at_end(stats) and (writes or 0) >= EMPTY_AFTER_WRITES:
        problems.append(
            f"MEMORY.md empty after {writes} turn(s) written and {int(stats.get('consolidations', 0))} "
            "consolidation(s): probes see no raw turns (paper 3.5), so its probes got an empty memory")
    if _file_memory_assistant_only(stats):
        ngrams = int(stats["memory_md_ngrams"])
        copied = int(stats["memory_md_copied_ngrams"])
        problems.append(
            f"MEMORY.md draws only on the assistant's replies: {copied} of its {ngrams} 8-word spans "
            f"({100 * copied / ngrams:.0f}%) are copied from them and it holds {int(stats['memory_md_user_words'])} "
            "of the user's own words, so its probes got what the PA said, not what the user said")
    state: HealthState = "broken" if problems else ("warning" if failures else "ok")
    return MemoryHealth(run_id=run_id, memory=memory, state=state, writes=writes, stored=stored,
                        stored_words=stored_phrase(stats), failures=failures, problems=problems)


async def run_health(store: RunStore, run: RunRecord) -> MemoryHealth:
    """The memory health of a stored run, from the counters of its last settled timeline step.

    Raises:
        StoreError: a stored step result is not JSON.
    """
    import json

    from mempa_tui.runner.report import last_memory_stats

    last = await store.last_step(run.id)
    if last is None:
        return health_of_stats(run.id, run.memory, {})
    try:
        stats = json.loads(last.result_json).get("memory_stats") if last.result_json else None
    except (json.JSONDecodeError, AttributeError):
        stats = None
    if stats:  # the usual case: the last step carries the counters (one row read)
        return health_of_stats(run.id, run.memory, {str(k): float(v) for k, v in stats.items()})
    return health_of_stats(run.id, run.memory, await last_memory_stats(store, run.id))


async def runs_health(store: RunStore, runs: Iterable[RunRecord]) -> dict[str, MemoryHealth]:
    """:func:`run_health` of each run, keyed by run id."""
    return {run.id: await run_health(store, run) for run in runs}


def repeats_phrase(calls: int, turns: int) -> str:
    """``PA repeated an identical call 28 times in 4 turns`` (singular for 1)."""
    times = "time" if calls == 1 else "times"
    return f"PA repeated an identical call {calls} {times} in {turns} turn{'' if turns == 1 else 's'}"


ECHOES_WITHHELD = "(withheld: never shown to the user or judged)"
"""What happened to echoed replies, as the warnings say it (issue 12: "none delivered" read as if
nothing had reached the user)."""


def echoes_phrase(echoes: int) -> str:
    """``PA echoed a harness note as its reply 3 times (withheld: never shown to the user or
    judged)`` (singular for 1)."""
    return f"PA echoed a harness note as its reply {echoes} time{'' if echoes == 1 else 's'} {ECHOES_WITHHELD}"


def ix_withheld_phrase(sentences: int) -> str:
    """``PA named its interaction-tool selection in 2 reply sentences (withheld: never shown to
    the user or stored)`` (singular for 1)."""
    return (f"PA named its interaction-tool selection in {sentences} reply sentence"
            f"{'' if sentences == 1 else 's'} (withheld: never shown to the user or stored)")


def cut_phrase(replies: int) -> str:
    """``judge or rater reply cut at its cap 2 times (scores kept, reasons marked)``."""
    return (f"judge or rater reply cut at its cap {replies} time{'' if replies == 1 else 's'} "
            "(scores kept, reasons marked)")


SIMULATOR_COUNT_KEYS: tuple[str, ...] = ("rejected_attempts", "stalled_messages", "repeated_messages",
                                         "invalid_turns", "cut_replies", "assistant_voice", "trimmed_messages")
"""The :data:`~mempa_tui.simulator.CHECK_COUNT_KEYS` the warnings show, in the order of
:func:`simulator_counts` and of :func:`simulator_phrase`'s arguments."""


def simulator_counts(checks: Mapping[str, int] | None) -> tuple[int, int, int, int, int, int, int]:
    """``(sent back, stalled, repeated, invalid turns, cut at the cap, as the assistant, trimmed)`` from a
    step's simulator check counts (``UserSimulator.check_counts``: :data:`SIMULATOR_COUNT_KEYS`);
    missing keys (a person's seat, an older run) read 0."""
    checks = checks or {}
    return tuple(int(checks.get(k, 0) or 0) for k in SIMULATOR_COUNT_KEYS)  # type: ignore[return-value]


def simulator_phrase(sent_back: int, stalled: int = 0, repeated: int = 0, invalid: int = 0,
                     cut: int = 0, assistant: int = 0, trimmed: int = 0) -> str:
    """``simulated user's message sent back 6 times (2 stalled, 1 repeated, 1 cut at its cap,
    1 as the assistant, 1 other), 1 turn invalid``, or ``""`` when nothing was sent back and no
    turn was invalid.

    Args:
        sent_back: the simulator's attempts that failed a check and were rewritten or, after the
            last rewrite, made the turn invalid (``rejected_attempts``).
        stalled / repeated: those that put off a detail nobody asked for / repeated an earlier
            user message word for word.
        invalid: turns that failed every attempt (Appendix D.4).
        cut: those whose model call stopped at its completion cap (``cut_replies``).
        assistant: those written as the assistant, not the user (``assistant_voice``).
        trimmed: messages sent with a speaker label or sentences copied from the user's earlier
            messages removed (``trimmed_messages``; a deviation from Appendix D.4, which only
            rewrites: :func:`~mempa_tui.simulator._leaks.trim_copied`). Shown even when nothing
            was sent back: ``simulated user: 2 messages trimmed of words copied from earlier ones or a
            greeting to a contact``.

    One attempt can have several of these reasons (a stalled message can also be a repeat), so
    ``other`` (format, leak, manner or checker problems) is what is left of ``sent_back`` after
    all of them, never below 0.
    """
    parts = []
    if sent_back:
        named = ((stalled, "stalled"), (repeated, "repeated"), (cut, "cut at its cap"), (assistant, "as the assistant"))
        other = max(0, sent_back - sum(n for n, _ in named))
        reasons = [f"{n} {what}" for n, what in (*named, (other, "other")) if n]
        parts.append(f"simulated user's message sent back {sent_back} time{'' if sent_back == 1 else 's'}"
                     + (f" ({', '.join(reasons)})" if reasons else ""))
    if invalid:
        parts.append(f"{invalid} turn{'' if invalid == 1 else 's'} invalid")
    if trimmed:
        parts.append(f"{trimmed} message{'' if trimmed == 1 else 's'} trimmed of words copied from earlier ones "
                     "or a greeting to a contact")
    if not parts:
        return ""
    return ", ".join(parts) if sent_back else "simulated user: " + ", ".join(parts)


def pa_problem_phrases(calls: int, turns: int, echoes: int, ix_withheld: int = 0,
                       simulator: Mapping[str, int] | None = None) -> list[str]:
    """The phrases of a step's counted problems with a count above 0: the PA's repeated calls,
    echoes and sentences withheld for interaction-tool text, then the simulated user's messages
    sent back (``simulator``: the step's ``simulator_checks``; :func:`simulator_phrase`)."""
    sim = simulator_phrase(*simulator_counts(simulator))
    return (([repeats_phrase(calls, turns)] if calls else []) + ([echoes_phrase(echoes)] if echoes else [])
            + ([ix_withheld_phrase(ix_withheld)] if ix_withheld else []) + ([sim] if sim else []))


def repeats_note(result: object) -> str:
    """`` (warning: PA repeated an identical call 4 times in 4 turns; PA echoed a harness note as
    its reply 1 time (withheld: never shown to the user or judged); simulated user's message sent
    back 4 times (4 stalled))`` for a step's progress line (a
    :class:`~mempa_tui.runner.episode.StepResult`'s ``pa_repeated_calls``, ``pa_echoed_replies``,
    ``pa_ix_text_withheld`` and ``simulator_checks``), ``""`` when none happened."""
    phrases = pa_problem_phrases(int(getattr(result, "pa_repeated_calls", 0) or 0),
                                 int(getattr(result, "pa_repeat_turns", 0) or 0),
                                 int(getattr(result, "pa_echoed_replies", 0) or 0),
                                 int(getattr(result, "pa_ix_text_withheld", 0) or 0),
                                 getattr(result, "simulator_checks", None) or {})
    return f" (warning: {'; '.join(phrases)})" if phrases else ""


class PARepeats(BaseModel):
    """A run's problems beside its memory health: repeated PA tool calls, echoed replies, withheld
    interaction-tool text, the simulated user's messages sent back and cut judge/rater replies
    (see the module docstring): a warning, never broken."""

    run_id: str
    """The run."""
    calls: int = 0
    """Tool calls identical to an earlier call of their turn, over the run's stored steps and
    probe repeats."""
    turns: int = 0
    """PA turns with at least one such call."""
    where: dict[str, int] = {}
    """Step id (``probe r2`` for a probe repeat) -> its repeated calls, for steps with any."""
    echoes: int = 0
    """PA replies that echoed the harness's own text, over the run's stored steps and probe
    repeats (withheld: never shown to the user or judged)."""
    echo_where: dict[str, int] = {}
    """Step id (``probe r2`` for a probe repeat) -> its echoed replies, for steps with any."""
    ix_withheld: int = 0
    """Accumulation-session reply sentences withheld for carrying interaction-tool text."""
    ix_where: dict[str, int] = {}
    """Step id -> its withheld sentences, for steps with any."""
    judge_replies_cut: int = 0
    """BRS judge and PRS rater replies kept although cut at a cap after their retry (their stored
    reasons open with :data:`~mempa_tui.runner._scoring.CUT_MARK`)."""
    cut_where: dict[str, int] = {}
    """``probe r<repeat>`` -> its cut judge/rater replies, for probe repeats with any."""
    sim_sent_back: int = 0
    """The user simulator's attempts sent back for a rewrite (``rejected_attempts``), over the
    run's stored steps and probe repeats."""
    sim_stalled: int = 0
    """Of them, those that put off a detail nobody asked for (``stalled_messages``)."""
    sim_repeated: int = 0
    """Of them, those that repeated an earlier user message word for word (``repeated_messages``)."""
    sim_invalid: int = 0
    """Simulator turns that failed every attempt (``invalid_turns``)."""
    sim_cut: int = 0
    """Of the attempts sent back, those cut at the completion cap (``cut_replies``)."""
    sim_assistant: int = 0
    """Of the attempts sent back, those written as the assistant (``assistant_voice``)."""
    sim_trimmed: int = 0
    """Messages sent with words copied from earlier ones removed (``trimmed_messages``)."""
    sim_where: dict[str, int] = {}
    """Step id (``probe r2`` for a probe repeat) -> its messages sent back (its invalid turns
    when none was), for steps with any."""

    @property
    def any(self) -> bool:
        """Whether there is anything to show: a repeated call, an echoed reply, withheld IX text,
        a simulated user's message sent back or an invalid turn, or a cut judge/rater reply."""
        return bool(self.calls or self.echoes or self.ix_withheld or self.judge_replies_cut
                    or self.sim_sent_back or self.sim_invalid or self.sim_trimmed)

    @property
    def state(self) -> Literal["ok", "warning"]:
        """``warning`` when anything of :attr:`any` happened, else ``ok`` (never broken)."""
        return "warning" if self.any else "ok"

    def text(self) -> str:
        """``PA repeated an identical call 28 times in 4 turns (warning; A-S51 28); PA echoed a
        harness note as its reply 2 times (withheld: never shown to the user or judged) (warning;
        A-S14 2)``, or ``""`` when none happened."""
        parts = []
        if self.calls:
            parts.append(f"{repeats_phrase(self.calls, self.turns)} (warning; {_worst(self.where)})")
        if self.echoes:
            parts.append(f"{echoes_phrase(self.echoes)} (warning; {_worst(self.echo_where)})")
        if self.ix_withheld:
            parts.append(f"{ix_withheld_phrase(self.ix_withheld)} (warning; {_worst(self.ix_where)})")
        sim = simulator_phrase(self.sim_sent_back, self.sim_stalled, self.sim_repeated, self.sim_invalid,
                               self.sim_cut, self.sim_assistant, self.sim_trimmed)
        if sim:
            parts.append(f"{sim} (warning; {_worst(self.sim_where)})")
        if self.judge_replies_cut:
            parts.append(f"{cut_phrase(self.judge_replies_cut)} (warning; {_worst(self.cut_where)})")
        return "; ".join(parts)


def _worst(where: Mapping[str, int]) -> str:
    """``A-S51 28, A-S14 3, +2 more``: the four steps with the most, then how many others."""
    worst = sorted(where.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {n}" for k, n in worst[:4]) + (f", +{len(worst) - 4} more" if len(worst) > 4 else "")


async def run_pa_repeats(store: RunStore, run: RunRecord) -> PARepeats:
    """The repeated PA calls and echoed replies of a stored run, from each step's and probe repeat's stored
    ``step_status`` event (one small row each; events stored before the count read 0), the
    withheld IX sentences and the simulator's messages sent back the same way, and the cut
    judge/rater replies from its probe results.

    Unreadable events are skipped here: ``mempa show RUN STEP`` counts and names them.
    """
    from pydantic import ValidationError

    from mempa_tui.runner._episode_events import StepStatusEvent

    calls = turns = echoes = withheld = 0
    where: dict[str, int] = {}
    echo_where: dict[str, int] = {}
    ix_where: dict[str, int] = {}
    sim = [0] * len(SIMULATOR_COUNT_KEYS)  # sent back, stalled, repeated, invalid, cut, as the assistant, trimmed
    sim_where: dict[str, int] = {}
    for step_id, repeat, row in await store.events_of_kind(run.id, "step_status"):
        try:
            event = StepStatusEvent.model_validate_json(row.event_json)
        except ValidationError:
            continue
        name = f"{step_id} r{repeat}" if repeat else step_id
        if event.pa_repeated_calls:
            calls += event.pa_repeated_calls
            turns += event.pa_repeat_turns
            where[name] = where.get(name, 0) + event.pa_repeated_calls
        if event.pa_echoed_replies:
            echoes += event.pa_echoed_replies
            echo_where[name] = echo_where.get(name, 0) + event.pa_echoed_replies
        if event.pa_ix_text_withheld:
            withheld += event.pa_ix_text_withheld
            ix_where[name] = ix_where.get(name, 0) + event.pa_ix_text_withheld
        counts = simulator_counts(event.simulator_checks)
        if counts[0] or counts[3] or counts[6]:
            sim = [a + b for a, b in zip(sim, counts, strict=True)]
            sim_where[name] = sim_where.get(name, 0) + (counts[0] or counts[3] or counts[6])
    from mempa_tui.runner._scoring import is_cut_marked

    cut_where: dict[str, int] = {}
    for probe in await store.probe_results(run.id):
        n = int(is_cut_marked(probe.brs_reason)) + int(is_cut_marked(probe.prs_reason))
        if n:
            name = f"{probe.probe_id} r{probe.repeat}"
            cut_where[name] = cut_where.get(name, 0) + n
    return PARepeats(run_id=run.id, calls=calls, turns=turns, where=where, echoes=echoes, echo_where=echo_where,
                     ix_withheld=withheld, ix_where=ix_where, judge_replies_cut=sum(cut_where.values()),
                     cut_where=cut_where, sim_sent_back=sim[0], sim_stalled=sim[1], sim_repeated=sim[2],
                     sim_invalid=sim[3], sim_cut=sim[4], sim_assistant=sim[5], sim_trimmed=sim[6], sim_where=sim_where)


async def runs_pa_repeats(store: RunStore, runs: Iterable[RunRecord]) -> dict[str, PARepeats]:
    """:func:`run_pa_repeats` of each run, keyed by run id."""
    return {run.id: await run_pa_repeats(store, run) for run in runs}


def health_summary(healths: Sequence[MemoryHealth]) -> str:
    """A results-table cell for the runs pooled in one row: ``ok``, ``n/a``, ``warn``, or
    ``BROKEN 1/2`` (broken runs of the row's runs)."""
    if not healths:
        return "n/a"
    broken = sum(h.broken for h in healths)
    if broken:
        return f"BROKEN {broken}/{len(healths)}"
    if any(h.state == "warning" for h in healths):
        return "warn"
    if all(h.state == "n/a" for h in healths):
        return "n/a"
    return "ok"



class RowAnnotations(BaseModel):
    """What a results table adds to its rows: a ``Health`` and a ``Covers`` column, and the notes
    printed under it (broken runs with their reasons; rows that pool different users, probes or
    repeat counts)."""

    health: dict[tuple[str, ...], str]
    """(memory condition, model) -> the Health cell (:func:`health_summary` of the row's runs);
    also (memory condition, model, user) -> that user's runs' cell."""
    covers: dict[tuple[str, ...], str]
    """(memory condition, model) -> the Covers cell (``A+B 66x3``; ``*`` marks a row that covers
    other users, probes or repeats than most rows); with rows per user also (memory condition,
    model, user) -> that user's cell, compared among that user's rows."""
    notes: list[str]
    """Lines to print under the table."""

    def columns(self) -> dict[str, Callable[[ConditionScores], str]]:
        """The extra columns for :func:`~mempa_tui.runner._results.results_text`."""
        return {
            "Health": lambda r: self.health.get((r.memory, r.model, r.breakdown or ""))
            or self.health.get((r.memory, r.model), "n/a"),
            "Covers": lambda r: self.covers.get((r.memory, r.model, r.breakdown or ""))
            or self.covers.get((r.memory, r.model), ""),
        }


def row_annotations(runs: Sequence[RunRecord], healths: Mapping[str, MemoryHealth],
                    outcomes: Sequence[ProbeOutcome], *, by: str = "condition",
                    repeats: Mapping[str, PARepeats] | None = None) -> RowAnnotations:
    """Health and coverage of each (memory condition, model) row of one results table.

    Args:
        runs: the table's runs.
        healths: :func:`runs_health` of them.
        outcomes: the table's probe outcomes.
        by: the table's grouping; with ``user`` each row's Covers cell is its user's coverage
            (other groupings show the condition's whole coverage).
        repeats: :func:`runs_pa_repeats` of them (None: not read; no note).

    Returns:
        The cells and notes; a note names each broken run with its reasons, one names each run
        whose PA repeated identical calls or echoed harness notes (a warning), and one says which rows pool different
        users, probes or repeat counts.
    """
    from mempa_tui.runner._pooling import coverage_by_row, mixed_coverage
    from mempa_tui.runner.report import backbone_label, memory_label

    by_row: dict[tuple[str, ...], list[MemoryHealth]] = {}
    by_user: dict[tuple[str, ...], list[MemoryHealth]] = {}
    for run in runs:
        if run.id in healths:  # keyed as the rows are: a plugin's row is its `<import path> <version>`
            by_row.setdefault((memory_label(run), backbone_label(run)), []).append(healths[run.id])
            by_user.setdefault((memory_label(run), backbone_label(run), run.user), []).append(healths[run.id])
    coverage = coverage_by_row(outcomes)
    mixed = mixed_coverage(coverage)
    covers: dict[tuple[str, ...], str] = {k: c.text() + (" *" if k in mixed else "") for k, c in coverage.items()}
    if by == "user":
        mixed = set()
        for user in sorted({o.user for o in outcomes}):
            mine = coverage_by_row([o for o in outcomes if o.user == user])
            odd = mixed_coverage(mine)
            mixed |= odd
            covers.update({(*k, user): c.text() + (" *" if k in odd else "") for k, c in mine.items()})
    notes = [f"BROKEN memory in {h.run_id}: {'; '.join(h.problems)} - its row is marked, read its "
             "scores as a broken memory's, not the condition's" for hs in by_row.values() for h in hs if h.broken]
    if notes:  # a fresh user could not tell what the 1 of 'BROKEN 1/1' counted
        notes.append("Health 'BROKEN k/n': k of the row's n runs have a broken memory")
    notes += [f"{run.id}: {repeats[run.id].text()}" for run in runs
              if repeats is not None and run.id in repeats and repeats[run.id].any]
    if mixed:
        notes.append("rows marked * in Covers pool other users, probes or repeat counts (users probes x repeats) "
                     "than the rest: their scores are not over the same probes")
    return RowAnnotations(
        health={k: health_summary(v) for k, v in (by_row | (by_user if by == "user" else {})).items()},
        covers=covers,
        notes=notes,
    )
