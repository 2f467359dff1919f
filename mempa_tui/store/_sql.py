"""Row <-> model conversion and prepared statements of the run store (pure; no I/O).

Every write of :class:`~mempa_tui.store.RunStore` is a list of :data:`Statement` values run in one
transaction; every read turns ``sqlite3.Row`` values back into the typed rows of
:mod:`mempa_tui.store.rows`.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from mempa_tui.llm.types import CallPrompt, CallReply
from mempa_tui.store import _codec
from mempa_tui.store.rows import (
    CheckpointData,
    CheckpointRecord,
    LLMCallRow,
    ProbeResultRecord,
    RunRecord,
    RunStatus,
    StepAttemptRecord,
    StepRecord,
    TokenTotals,
    TranscriptEventRecord,
    utc_now,
)

__all__ = [
    "CALL_LIST_COLUMNS",
    "PromptRefs",
    "Statement",
    "attempt_from_row",
    "attempt_insert",
    "blob_insert",
    "call_from_row",
    "calls_insert",
    "checkpoint_from_row",
    "checkpoint_insert",
    "checkpoint_keys",
    "events_insert",
    "insert",
    "probe_from_row",
    "probe_insert",
    "prompt_blobs",
    "prompt_refs",
    "run_from_row",
    "run_insert",
    "step_from_row",
    "step_insert",
]

Statement = tuple[str, Sequence[Any] | list[Sequence[Any]], bool]
"""(sql, parameters, many): one statement of a write transaction."""


def insert(table: str, columns: Sequence[str], rows: list[Sequence[Any]], *, or_: str = "") -> Statement:
    """An ``INSERT`` of one or more rows (``or_``: ``IGNORE`` or ``REPLACE``)."""
    verb = f"INSERT OR {or_}" if or_ else "INSERT"
    marks = ", ".join("?" * len(columns))
    return (f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows, True)


# ---- runs ----------------------------------------------------------------------------------

_RUN_COLUMNS = (
    "id", "user", "profile", "memory", "seed", "repeats", "config_json", "config_hash", "donor_run",
    "status", "error", "total_steps", "total_probes", "created_at", "updated_at",
)


def run_insert(run: RunRecord) -> Statement:
    """Insert a run row."""
    return insert("runs", _RUN_COLUMNS, [(
        run.id, run.user, run.profile, run.memory, run.seed, run.repeats, run.config_json,
        run.config_hash, run.donor_run, run.status.value, run.error, run.total_steps,
        run.total_probes, _codec.to_iso(run.created_at), _codec.to_iso(run.updated_at),
    )])


def run_from_row(row: sqlite3.Row) -> RunRecord:
    """A ``runs`` row as a :class:`RunRecord`."""
    return RunRecord(
        id=row["id"], user=row["user"], profile=row["profile"], memory=row["memory"],
        seed=row["seed"], repeats=row["repeats"], config_json=row["config_json"],
        config_hash=row["config_hash"], donor_run=row["donor_run"], status=RunStatus(row["status"]),
        error=row["error"], total_steps=row["total_steps"], total_probes=row["total_probes"],
        created_at=_codec.when(row["created_at"]), updated_at=_codec.when(row["updated_at"]),
    )


# ---- blobs and checkpoints -------------------------------------------------------------------


def checkpoint_keys(ckpt: CheckpointData) -> tuple[dict[str, bytes], str | None, str | None]:
    """The blobs a checkpoint refers to (digest -> bytes), its memory key and simulator key."""
    blobs: dict[str, bytes] = {}
    for path, digest in ckpt.world_manifest.items():
        blobs.setdefault(digest, ckpt.world_files[path])
    memory_key = sim_key = None
    if ckpt.memory_snapshot is not None:
        memory_key = _codec.sha256_hex(ckpt.memory_snapshot)
        blobs.setdefault(memory_key, ckpt.memory_snapshot)
    if ckpt.simulator_memory_json:
        sim_bytes = ckpt.simulator_memory_json.encode("utf-8")
        sim_key = _codec.sha256_hex(sim_bytes)
        blobs.setdefault(sim_key, sim_bytes)
    return blobs, memory_key, sim_key


def blob_insert(items: Mapping[str, bytes]) -> Statement:
    """Insert blobs not stored yet (compressed where that pays; existing keys are ignored)."""
    rows: list[Sequence[Any]] = []
    for digest in sorted(items):
        codec, stored = _codec.encode_blob(items[digest])
        rows.append((digest, len(items[digest]), codec, stored))
    return insert("blobs", ("sha256", "size", "codec", "data"), rows, or_="IGNORE")


def checkpoint_insert(run_id: str, ckpt: CheckpointData, memory_key: str | None, sim_key: str | None) -> Statement:
    """Insert a checkpoint row (the world as its manifest)."""
    return insert(
        "checkpoints",
        ("run_id", "step_idx", "step_id", "story_time", "world_manifest", "memory_blob",
         "simulator_blob", "tokens_json", "created_at"),
        [(
            run_id, ckpt.step_index, ckpt.step_id, _codec.to_iso(ckpt.story_time),
            json.dumps(ckpt.world_manifest, sort_keys=True, separators=(",", ":")),
            memory_key, sim_key, ckpt.tokens.model_dump_json(), _codec.to_iso(utc_now()),
        )],
    )


def checkpoint_from_row(row: sqlite3.Row) -> CheckpointRecord:
    """A ``checkpoints`` row as a :class:`CheckpointRecord`."""
    return CheckpointRecord(
        run_id=row["run_id"], step_index=row["step_idx"], step_id=row["step_id"],
        story_time=_codec.from_iso(row["story_time"]), world_manifest=json.loads(row["world_manifest"]),
        memory_blob=row["memory_blob"], simulator_blob=row["simulator_blob"],
        tokens=TokenTotals.model_validate_json(row["tokens_json"]),
        created_at=_codec.when(row["created_at"]),
    )


# ---- steps --------------------------------------------------------------------------------------


def step_insert(run_id: str, step: StepRecord) -> Statement:
    """Insert a settled step (its result JSON compressed)."""
    return insert(
        "steps",
        ("run_id", "idx", "step_id", "kind", "status", "reason", "attempts", "selection",
         "started_at", "finished_at", "tokens_json", "result"),
        [(
            run_id, step.index, step.step_id, step.kind, step.status, step.reason, step.attempts,
            step.selection, _codec.to_iso(step.started_at), _codec.to_iso(step.finished_at),
            step.tokens.model_dump_json(),
            _codec.pack_text(step.result_json) if step.result_json else None,
        )],
    )


def step_from_row(row: sqlite3.Row, *, with_result: bool) -> StepRecord:
    """A ``steps`` row as a :class:`StepRecord` (``result_json`` only when asked for)."""
    return StepRecord(
        index=row["idx"], step_id=row["step_id"], kind=row["kind"], status=row["status"],
        reason=row["reason"], attempts=row["attempts"], selection=row["selection"],
        started_at=_codec.when(row["started_at"]), finished_at=_codec.when(row["finished_at"]),
        tokens=TokenTotals.model_validate_json(row["tokens_json"]),
        result_json=_codec.unpack_text(row["result"]) if with_result else "",
    )


def attempt_insert(run_id: str, attempt: StepAttemptRecord) -> Statement:
    """Insert (or replace) a discarded attempt."""
    return insert(
        "step_attempts",
        ("run_id", "step_id", "attempt", "status", "reason", "started_at", "finished_at", "tokens_json"),
        [(
            run_id, attempt.step_id, attempt.attempt, attempt.status, attempt.reason,
            _codec.to_iso(attempt.started_at), _codec.to_iso(attempt.finished_at),
            attempt.tokens.model_dump_json(),
        )],
        or_="REPLACE",
    )


def attempt_from_row(row: sqlite3.Row) -> StepAttemptRecord:
    """A ``step_attempts`` row as a :class:`StepAttemptRecord`."""
    return StepAttemptRecord(
        step_id=row["step_id"], attempt=row["attempt"], status=row["status"], reason=row["reason"],
        started_at=_codec.when(row["started_at"]), finished_at=_codec.when(row["finished_at"]),
        tokens=TokenTotals.model_validate_json(row["tokens_json"]),
    )


# ---- transcripts and model calls -------------------------------------------------------------


def events_insert(run_id: str, step_id: str, repeat: int, events: Sequence[TranscriptEventRecord]) -> Statement:
    """Insert a step's (or probe repeat's) transcript events."""
    return insert(
        "transcript_events", ("run_id", "step_id", "repeat", "seq", "kind", "event_json"),
        [(run_id, step_id, repeat, e.seq, e.kind, e.event_json) for e in events],
    )


CALL_LIST_COLUMNS = (
    "id, step_id, repeat, seq, role, model, prompt_tokens, completion_tokens, reused_prefix_tokens,"
    " latency_s, ok, error, prompt IS NOT NULL AS prompt_stored"
)
"""The ``llm_calls`` columns a listing reads: everything but the compressed prompt and reply."""


def _pack_model(value: BaseModel | None) -> bytes | None:
    """zlib-compressed JSON of ``value`` (fields left at their defaults omitted); None stays None."""
    return None if value is None else _codec.pack_text(value.model_dump_json(exclude_defaults=True))


class PromptRefs(BaseModel):
    """What ``llm_calls.prompt`` holds (zlib-compressed JSON): the prompt's messages as blob keys,
    in order, and the offered tool names.

    Consecutive calls re-send most of their messages (the system prompt, the history so far), so
    each message's JSON is a content-addressed blob stored once for every call and run that sends
    it; a call's own row only lists the keys.
    """

    messages: list[str] = Field(default_factory=list)
    """sha256 keys of the messages' JSON (``ChatMessage`` without default fields), in order."""
    tools: list[str] = Field(default_factory=list)
    """Names of the offered tools, in order."""
    seed: int | None = None
    """The sampling seed sent (:attr:`~mempa_tui.llm.types.CallPrompt.seed`); None: none sent, or
    stored before seeds were (left out of the JSON when None, so no schema change)."""


def prompt_blobs(calls: Sequence[LLMCallRow]) -> tuple[dict[str, bytes], list[bytes | None]]:
    """Split the calls' prompts into message blobs and the compressed :class:`PromptRefs` column.

    Returns:
        ``(blobs, columns)``: key -> message JSON bytes for every message sent, and per call the
        ``prompt`` column's value (None when the record holds no prompt).
    """
    blobs: dict[str, bytes] = {}
    columns: list[bytes | None] = []
    for c in calls:
        prompt = c.call.prompt
        if prompt is None:
            columns.append(None)
            continue
        keys = []
        for message in prompt.messages:
            data = message.model_dump_json(exclude_defaults=True).encode("utf-8")
            key = _codec.sha256_hex(data)
            blobs.setdefault(key, data)
            keys.append(key)
        columns.append(_pack_model(PromptRefs(messages=keys, tools=list(prompt.tools), seed=prompt.seed)))
    return blobs, columns


def prompt_refs(stored: bytes) -> PromptRefs:
    """Undo the ``prompt`` column of :func:`prompt_blobs`.

    Raises:
        ValueError: corrupt data.
    """
    try:
        return PromptRefs.model_validate_json(_codec.unpack_text(stored))
    except (zlib.error, UnicodeDecodeError, ValidationError) as exc:
        raise ValueError(f"the stored prompt cannot be read ({exc})") from exc


def calls_insert(run_id: str, calls: Sequence[LLMCallRow], prompts: Sequence[bytes | None]) -> Statement:
    """Insert logged model calls: ``prompts`` are their ``prompt`` columns from
    :func:`prompt_blobs`, each reply is zlib-compressed JSON (NULL when the record holds none)."""
    if len(prompts) != len(calls):
        raise ValueError(f"{len(calls)} calls given with {len(prompts)} prompt columns")
    return insert(
        "llm_calls",
        ("run_id", "step_id", "repeat", "seq", "role", "model", "prompt_tokens", "completion_tokens",
         "reused_prefix_tokens", "latency_s", "ok", "error", "prompt", "reply"),
        [
            (
                run_id, c.step_id, c.repeat, c.seq, c.call.role.value, c.call.model,
                c.call.prompt_tokens, c.call.completion_tokens, c.call.reused_prefix_tokens,
                c.call.latency_s, int(c.call.ok), c.call.error, prompt, _pack_model(c.call.reply),
            )
            for c, prompt in zip(calls, prompts, strict=True)
        ],
    )


def call_from_row(row: sqlite3.Row, *, prompt: CallPrompt | None = None, with_reply: bool = False) -> LLMCallRow:
    """An ``llm_calls`` row as an :class:`LLMCallRow`.

    Args:
        row: a row with :data:`CALL_LIST_COLUMNS` (and ``reply`` when ``with_reply``).
        prompt: the call's prompt, rebuilt by the caller from its blobs (None: not read).
        with_reply: decompress the reply into ``call.reply``.

    Raises:
        ValueError: a stored reply is corrupt (names the call's row id).
    """
    reply: CallReply | None = None
    if with_reply and row["reply"] is not None:
        try:
            reply = CallReply.model_validate_json(_codec.unpack_text(row["reply"]))
        except (zlib.error, UnicodeDecodeError, ValidationError) as exc:
            raise ValueError(f"llm_calls row {row['id']}: the stored reply cannot be read ({exc})") from exc
    return LLMCallRow.model_validate({
        "step_id": row["step_id"], "repeat": row["repeat"], "seq": row["seq"],
        "call_id": row["id"], "prompt_stored": bool(row["prompt_stored"]),
        "call": {
            "role": row["role"], "model": row["model"], "prompt_tokens": row["prompt_tokens"],
            "completion_tokens": row["completion_tokens"],
            "reused_prefix_tokens": row["reused_prefix_tokens"], "latency_s": row["latency_s"],
            "ok": bool(row["ok"]), "error": row["error"], "prompt": prompt, "reply": reply,
        },
    })


# ---- probes ---------------------------------------------------------------------------------------


def probe_insert(run_id: str, result: ProbeResultRecord) -> Statement:
    """Insert one probe x repeat result (its result JSON compressed)."""
    return insert(
        "probe_results",
        ("run_id", "probe_id", "repeat", "kind", "context", "attribute", "target", "selection",
         "status", "reason", "attempts", "checkpoint_run", "checkpoint_index", "brs", "brs_reason",
         "prs", "prs_reason", "started_at", "finished_at", "tokens_json", "result"),
        [(
            run_id, result.probe_id, result.repeat, result.kind, result.context, result.attribute,
            result.target, result.selection, result.status, result.reason, result.attempts,
            result.checkpoint_run, result.checkpoint_index, result.brs, result.brs_reason,
            result.prs, result.prs_reason, _codec.to_iso(result.started_at),
            _codec.to_iso(result.finished_at), result.tokens.model_dump_json(),
            _codec.pack_text(result.result_json) if result.result_json else None,
        )],
    )


def probe_from_row(row: sqlite3.Row, *, with_result: bool) -> ProbeResultRecord:
    """A ``probe_results`` row as a :class:`ProbeResultRecord`."""
    return ProbeResultRecord(
        probe_id=row["probe_id"], repeat=row["repeat"], kind=row["kind"], context=row["context"],
        attribute=row["attribute"], target=row["target"], selection=row["selection"],
        status=row["status"], reason=row["reason"], attempts=row["attempts"],
        checkpoint_run=row["checkpoint_run"], checkpoint_index=row["checkpoint_index"],
        brs=row["brs"], brs_reason=row["brs_reason"], prs=row["prs"], prs_reason=row["prs_reason"],
        started_at=_codec.when(row["started_at"]), finished_at=_codec.when(row["finished_at"]),
        tokens=TokenTotals.model_validate_json(row["tokens_json"]),
        result_json=_codec.unpack_text(row["result"]) if with_result else "",
    )
