"""SQL schema of the run store and its version (SPEC section 4.8).

Design notes:

* ``steps`` holds one row per settled timeline step: ``UNIQUE(run_id, step_id)`` (and the primary
  key on the index) make a step impossible to store twice. Discarded attempts that were played
  again live in ``step_attempts``.
* ``checkpoints`` stores the world as a manifest (path -> sha256); file bytes live once in
  ``blobs``, shared by every checkpoint and every run that holds the same bytes. Memory snapshots
  and simulator memories are blobs too, so an unchanged store costs nothing.
* ``transcript_events`` and ``llm_calls`` are keyed by (run, step id, repeat); repeat is 0 for
  timeline steps and 1.. for probe repeats.
* ``llm_calls.prompt`` / ``llm_calls.reply`` hold zlib-compressed JSON: the prompt as
  :class:`~mempa_tui.store._sql.PromptRefs` (the offered tool names and the blob keys of its
  messages: each message's JSON is a blob, stored once however many calls and runs send it) and
  the :class:`~mempa_tui.llm.types.CallReply`; NULL when not stored (a call logged before schema
  3; ``reply`` also for a failed call). Listing calls never reads them; one call is read on
  demand. :meth:`~mempa_tui.store.RunStore.delete_unreferenced_blobs` keeps the message blobs.
* Every child table cascades on delete and on update of the run id, so a run can be archived
  under a new id (``--fresh``) or deleted as a whole.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_SQL", "SCHEMA_VERSION"]

SCHEMA_VERSION = 3
"""Bumped with every change to :data:`SCHEMA_SQL`; older databases are migrated on open.

History: 1, the first schema; 2, run status ``cancelled`` (a run cancelled from the app); 3,
``llm_calls.prompt`` and ``llm_calls.reply`` (each call's messages and reply for the run browser,
issue 16; NULL on calls stored before)."""

_SCHEMA_TEMPLATE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER NOT NULL
);

{runs_table}
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, profile, memory, status);

CREATE TABLE IF NOT EXISTS blobs (
    sha256  TEXT PRIMARY KEY,
    size    INTEGER NOT NULL,
    codec   TEXT NOT NULL CHECK (codec IN ('raw', 'zlib')),
    data    BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS steps (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    idx          INTEGER NOT NULL CHECK (idx >= 0),
    step_id      TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('accumulation', 'change_event')),
    status       TEXT NOT NULL CHECK (status IN ('completed', 'invalid', 'failed', 'floored')),
    reason       TEXT,
    attempts     INTEGER NOT NULL DEFAULT 1,
    selection    TEXT,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    tokens_json  TEXT NOT NULL,
    result       BLOB,
    PRIMARY KEY (run_id, idx),
    UNIQUE (run_id, step_id)
);

CREATE TABLE IF NOT EXISTS step_attempts (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    step_id      TEXT NOT NULL,
    attempt      INTEGER NOT NULL CHECK (attempt >= 1),
    status       TEXT NOT NULL,
    reason       TEXT,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    tokens_json  TEXT NOT NULL,
    PRIMARY KEY (run_id, step_id, attempt)
);

CREATE TABLE IF NOT EXISTS checkpoints (
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    step_idx        INTEGER NOT NULL CHECK (step_idx >= -1),
    step_id         TEXT,
    story_time      TEXT,
    world_manifest  TEXT NOT NULL,
    memory_blob     TEXT REFERENCES blobs (sha256),
    simulator_blob  TEXT REFERENCES blobs (sha256),
    tokens_json     TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (run_id, step_idx)
);

CREATE TABLE IF NOT EXISTS transcript_events (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    step_id     TEXT NOT NULL,
    repeat      INTEGER NOT NULL DEFAULT 0,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    event_json  TEXT NOT NULL,
    PRIMARY KEY (run_id, step_id, repeat, seq)
);

CREATE TABLE IF NOT EXISTS probe_results (
    run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    probe_id          TEXT NOT NULL,
    repeat            INTEGER NOT NULL CHECK (repeat >= 1),
    kind              TEXT NOT NULL CHECK (kind IN ('final', 'pre_event')),
    context           TEXT NOT NULL,
    attribute         TEXT NOT NULL,
    target            TEXT NOT NULL,
    selection         TEXT,
    status            TEXT NOT NULL CHECK (status IN ('completed', 'invalid', 'failed', 'floored')),
    reason            TEXT,
    attempts          INTEGER NOT NULL DEFAULT 1,
    checkpoint_run    TEXT,
    checkpoint_index  INTEGER,
    brs               INTEGER CHECK (brs BETWEEN 1 AND 5),
    brs_reason        TEXT,
    prs               INTEGER CHECK (prs BETWEEN 1 AND 5),
    prs_reason        TEXT,
    started_at        TEXT NOT NULL,
    finished_at       TEXT NOT NULL,
    tokens_json       TEXT NOT NULL,
    result            BLOB,
    PRIMARY KEY (run_id, probe_id, repeat)
);

CREATE TABLE IF NOT EXISTS llm_calls (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id                TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE ON UPDATE CASCADE,
    step_id               TEXT NOT NULL,
    repeat                INTEGER NOT NULL DEFAULT 0,
    seq                   INTEGER NOT NULL,
    role                  TEXT NOT NULL,
    model                 TEXT NOT NULL,
    prompt_tokens         INTEGER NOT NULL,
    completion_tokens     INTEGER NOT NULL,
    reused_prefix_tokens  INTEGER NOT NULL,
    latency_s             REAL NOT NULL,
    ok                    INTEGER NOT NULL,
    error                 TEXT,
    prompt                BLOB,
    reply                 BLOB
);
CREATE INDEX IF NOT EXISTS llm_calls_by_step ON llm_calls (run_id, step_id, repeat);
"""

_RUNS_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    id            TEXT PRIMARY KEY,
    user          TEXT NOT NULL,
    profile       TEXT NOT NULL,
    memory        TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    repeats       INTEGER NOT NULL CHECK (repeats >= 1),
    config_json   TEXT NOT NULL,
    config_hash   TEXT NOT NULL,
    donor_run     TEXT,
    status        TEXT NOT NULL
                  CHECK (status IN ('created', 'running', 'stopped', 'completed', 'failed', 'cancelled')),
    error         TEXT,
    total_steps   INTEGER NOT NULL DEFAULT 0,
    total_probes  INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
"""

SCHEMA_SQL = _SCHEMA_TEMPLATE.replace("{runs_table}", _RUNS_TABLE.strip().replace("{name}", "runs"))
"""Every table of version :data:`SCHEMA_VERSION`; idempotent (``IF NOT EXISTS``)."""

MIGRATIONS: dict[int, str] = {
    # 1 -> 2: SQLite cannot alter a CHECK constraint, so ``runs`` is rebuilt with the wider status
    # list (SQLite's documented table-rebuild procedure; the caller turns foreign keys off around
    # it, so the child tables' rows stay and keep pointing at ``runs`` by name).
    1: _RUNS_TABLE.replace("{name}", "runs_v2")
    + """
INSERT INTO runs_v2 SELECT id, user, profile, memory, seed, repeats, config_json, config_hash, donor_run,
    status, error, total_steps, total_probes, created_at, updated_at FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, profile, memory, status);
""",
    # 2 -> 3: the prompt and reply of each model call (nullable: older calls read "not stored").
    2: """
ALTER TABLE llm_calls ADD COLUMN prompt BLOB;
ALTER TABLE llm_calls ADD COLUMN reply BLOB;
""",
}
"""SQL that brings a database of version ``v`` to ``v + 1`` (run in one transaction, foreign keys off)."""
