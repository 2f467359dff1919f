"""``mempa run``: load the profile, bring up its model server, run, print progress and scores."""

from __future__ import annotations

import argparse
import re
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO


from mempa_tui.cli._errors import UserError
from mempa_tui.llm import LLMClient, ModelProfile, load_profile
from mempa_tui.llm.runtime import prepare_runtime
from mempa_tui.runner import RunConfig, RunEvent, Runner, StepEvent
from mempa_tui.runner.setup import DATABASE_NAME, build_run_config, pa_prefix
from mempa_tui.store import RunStatus, RunStore

__all__ = ["DATABASE_NAME", "ProgressPrinter", "build_run_config", "cmd_run", "database_path", "prepare_runtime"]


def database_path(saves: str | Path) -> Path:
    """The run database inside a saves folder.

    Raises:
        UserError: ``saves`` is a file, not a folder.
    """
    if Path(saves).is_file():
        raise UserError(f"{saves}: the saves folder is a file, not a folder")
    return Path(saves) / DATABASE_NAME


LOG_WAIT_AFTER_S = 30.0
"""Seconds a model call waits before a log (not a terminal) gets a waiting line, and the least
time between two such lines."""


class ProgressPrinter:
    """Prints one line per run-level event (step i/N, status, tokens); episode events are skipped.

    Args:
        out: where to print (stdout by default).
        with_run_id: start each line with the run id.
        finish_line: print the ``run <id> completed`` event; off where the caller prints the
            outcome itself after the run's table (a single ``mempa run``: said once, issue 12.2).
    """

    def __init__(self, out: TextIO | None = None, *, with_run_id: bool = False, finish_line: bool = True) -> None:
        self.out = out or sys.stdout
        self.with_run_id = with_run_id
        """Start each line with the run id (several runs print into one stream)."""
        self.finish_line = finish_line
        """Print the ``run_finished`` event (``run <id> completed``)."""
        self._pending = False
        self._last_wait: float | None = None

    def _log_wait(self, message: str) -> bool:
        """Whether a waiting line goes into a log (not a terminal): only once a call has waited
        :data:`LOG_WAIT_AFTER_S` seconds, then at most one line per that many seconds (a log of a
        quick start held a line every 5 s of every call)."""
        found = re.search(r":\s*(\d+(?:\.\d+)?)\s*s\b", message)
        if found is not None and float(found.group(1)) < LOG_WAIT_AFTER_S:
            return False
        now = time.monotonic()
        if self._last_wait is not None and now - self._last_wait < LOG_WAIT_AFTER_S:
            return False
        self._last_wait = now
        return True

    def _tty(self) -> bool:
        isatty = getattr(self.out, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except (OSError, ValueError):
            return False

    def __call__(self, item: RunEvent | StepEvent) -> None:
        """Print a :class:`RunEvent` as one line.

        ``model_waiting`` (a call still waiting for its reply, every few seconds): on a terminal
        the line is rewritten in place until the next event; elsewhere (a log) a line once the
        call has waited :data:`LOG_WAIT_AFTER_S` seconds, then at most one per that interval.
        """
        if not isinstance(item, RunEvent) or item.kind == "report_written":
            return  # episode events are for the TUI; the report paths are printed at the end
        if item.kind == "model_waiting":
            line = f"[{item.run_id}] {item.message}" if self.with_run_id else item.message
            if self._tty():
                print(f"\r{line}\x1b[K", end="", file=self.out, flush=True)
                self._pending = True
            elif self._log_wait(item.message):
                print(line, file=self.out, flush=True)
            return
        self._last_wait = None
        if self._pending:  # end the rewritten waiting line before the next one
            print("\r\x1b[K", end="", file=self.out)
            self._pending = False
        if item.kind == "run_finished" and not self.finish_line:
            return  # the caller prints the outcome under the table
        if item.kind in ("step_finished", "probe_finished"):
            line = f"{item.message}  [tokens {item.progress.tokens.total:,}]"
        elif item.kind == "warning":  # a message that is itself a warning keeps its own prefix
            line = item.message if item.message.startswith("warning: ") else f"note: {item.message}"
        else:
            line = item.message
        if self.with_run_id and not line.startswith(f"run {item.run_id}"):
            line = f"[{item.run_id}] {line}"
        print(line, file=self.out, flush=True)


def _conditions(args: argparse.Namespace) -> list[str]:
    return list(args.memory) if isinstance(args.memory, list) else [args.memory]


def _config(args: argparse.Namespace, profile: ModelProfile, memory: str, options: dict[str, Any], *,
            several: bool = False) -> RunConfig:
    from mempa_tui.runner.config import PROBE_ONLY_CONDITIONS

    # With several conditions, --donor is for No Memory / Oracle only (the others play the timeline).
    donor = args.donor if not several or memory in PROBE_ONLY_CONDITIONS else None
    return build_run_config(
        user=args.user, memory=memory, profile=profile, worlds=args.worlds, repeats=args.repeats,
        seed=args.seed, donor=donor, memory_options=options,
        probe_concurrency=args.probe_concurrency, slice=args.slice, quick=getattr(args, "quick", False),
    )


def _check_run_arguments(args: argparse.Namespace, memories: list[str]) -> None:
    """Refuse combinations that could only waste a run, before anything is stored or started.

    Raises:
        UserError: ``--fresh`` with ``--probes-only`` for a condition that plays the timeline (the
            fresh run would have no checkpoints to probe from), ``--donor`` with only such
            conditions, or a ``--local-memory`` path that is not a usable folder.
    """
    from mempa_tui.runner.config import PROBE_ONLY_CONDITIONS

    playing = [m for m in memories if m not in PROBE_ONLY_CONDITIONS]
    if args.fresh and args.probes_only and playing:
        raise UserError(f"--fresh with --probes-only would set the stored {', '.join(playing)} run aside and "
                        "probe a new one that has played nothing; drop one of the two")
    if args.donor is not None and len(memories) == 1 and playing:
        raise UserError(f"--donor is for --memory none or oracle (they probe from a donor's checkpoints); "
                        f"{playing[0]} plays the timeline itself")
    local = Path(args.local_memory)
    if local.exists() and not local.is_dir():
        raise UserError(f"--local-memory {local}: a file, not a folder")
    try:  # a file further up, or no permission: said now, not as a failed step of a stored run
        local.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--local-memory {local}: cannot create the folder ({exc.strerror or exc})") from None


async def cmd_run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``mempa run``; returns the exit code.

    A run refused or stopped before anything was stored leaves no new run database behind (finding
    13: a refused run with no donor left an empty ``mempa.sqlite`` in a new saves folder).

    Raises:
        UserError: bad user, profile, world files, config mismatch, server not running.
    """
    database = database_path(args.saves)
    existed, folder_existed = database.exists(), database.parent.exists()
    try:
        return await _cmd_run(args, out)
    except BaseException:
        if not existed:
            _drop_if_empty(database, folder_too=not folder_existed)
        raise


def _drop_if_empty(database: Path, *, folder_too: bool) -> None:
    """Remove a run database this command created when it holds no run (and its SQLite side files;
    with ``folder_too``, the saves folder this command created, when nothing else is in it). A
    database that cannot be read, or that holds a run, is kept."""
    import sqlite3

    if not database.is_file():
        return
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "runs" in tables and db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                return
        db.close()
    except sqlite3.Error:
        return
    for path in (database, database.with_name(database.name + "-wal"), database.with_name(database.name + "-shm")):
        path.unlink(missing_ok=True)
    if not folder_too:
        return
    for folder in (database.parent / "locks", database.parent):  # rmdir: only when empty
        try:
            folder.rmdir()
        except OSError:
            pass


async def _cmd_run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """:func:`cmd_run` itself."""
    from mempa_tui.memory import options_per_condition
    from mempa_tui.runner import batch_donor_problems, runs_already_complete
    from mempa_tui.tools import default_registry

    out = out or sys.stdout
    profile = load_profile(args.model)
    memories = _conditions(args)
    _check_run_arguments(args, memories)
    from mempa_tui.runner import refuse_small_window  # a window the tools do not fit in: refused now (15.6)
    refuse_small_window(LLMClient(profile), default_registry())
    options = options_per_condition(memories, dict(args.memory_option))
    if len(memories) > 1:
        configs = [_config(args, profile, m, options[m], several=True) for m in memories]
        return await _run_several(args, profile, configs, out)
    config = _config(args, profile, memories[0], options[memories[0]])
    from mempa_tui.runner import check_memory_options

    # a bad --memory-option value is refused before the store is opened or a model server starts
    # (finding 10: it was refused only after the weights were joined and both servers started)
    check_memory_options(config, LLMClient(profile), default_registry())
    async with AsyncExitStack() as stack:
        # The store first: a saves folder that cannot be used is reported before a model starts.
        store = await stack.enter_async_context(RunStore(database_path(args.saves), read_only=False))
        await _check_probes_only(store, args, [config])
        await _check_batch_donor(store, args, [config], out)  # donor problems before a model server starts
        if problems := await batch_donor_problems([config], store):
            raise UserError("; ".join(problems))
        if not args.fresh and await runs_already_complete([config], store, profile):
            print(f"run {config.run_id} is already complete: its results follow (no model started)", file=out,
                  flush=True)
        else:
            profile = await prepare_runtime(profile, stack, out, prefix=pa_prefix(config.offered_tool_domains))
        runner = Runner(
            config, store, LLMClient(profile), default_registry(), ProgressPrinter(out, finish_line=False),
            memory_root=Path(args.local_memory), reports_root=Path(args.saves),
            fresh=args.fresh, probes_only=args.probes_only,
        )
        outcome = await runner.run()
    if outcome.report is not None:
        print(file=out)
        print(outcome.report.table, file=out)
        if outcome.report.memory_stats:
            counters = ", ".join(f"{k} {v:g}" for k, v in sorted(outcome.report.memory_stats.items()))
            print(f"\nmemory counters after the last step: {counters}", file=out)
        from mempa_tui.runner._health import health_of_stats

        print(health_of_stats(config.run_id, config.memory, outcome.report.memory_stats).text(), file=out)
        print(f"\nreport: {outcome.report.paths.main_md}\ntables: {outcome.report.paths.main_csv}", file=out)
    if outcome.status is not RunStatus.COMPLETED:
        print(f"run {outcome.run_id} is not complete: " + "; ".join(outcome.notes), file=out)
        return 1
    print(f"run {outcome.run_id} completed", file=out)
    return 0


async def _run_several(args: argparse.Namespace, profile: ModelProfile, configs: list[RunConfig], out: TextIO) -> int:
    """Several memory conditions of one user and profile (``--memory none,file,rag``), then one table.

    The conditions that play the timeline run first, at once (model calls are limited per endpoint
    by the client); No Memory and Oracle then probe from the first of them that completed (paper
    Section 4, 'Reference Condition Runs'), unless ``--donor`` names another. One run's error does
    not stop the others; each is reported, and the exit code is 0 only when every run completed.
    """
    from mempa_tui.cli._errors import user_error_message
    from mempa_tui.cli._results import print_results
    from mempa_tui.runner import (
        ConfigMismatchError,
        RunOutcome,
        batch_donor_problems,
        check_memory_options,
        resume_problems,
        run_is_being_played,
        run_many,
        runs_already_complete,
    )
    from mempa_tui.tools import default_registry

    checking_client = LLMClient(profile)  # builds the memory systems only; no model call
    for config in configs:  # a bad option value: refused before the store opens or a server starts
        check_memory_options(config, checking_client, default_registry())
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(RunStore(database_path(args.saves), read_only=False))
        await _check_probes_only(store, args, configs)
        await _check_batch_donor(store, args, configs, out)
        if problems := await batch_donor_problems(configs, store):  # no File memory donor: refused (11.4)
            raise UserError("; ".join(problems))
        # Everything that would stop one run at its start, before hours of the others: a run that
        # failed here could also leave No Memory without the donor this command was to play.
        for config in configs:
            if run_is_being_played(store.path, config.run_id):
                raise UserError(f"run {config.run_id} is being played by another mempa process; "
                                "wait for it to finish or stop it, then rerun this command")
            stored = None if args.fresh else await store.get_run(config.run_id)
            if stored is not None and (problems := resume_problems(config, stored, profile)):
                raise ConfigMismatchError(config.run_id, problems)
        if args.fresh:  # all at once, so an interrupted --fresh never leaves an old run in the batch
            for config in configs:
                if await store.get_run(config.run_id) is not None:
                    archived = await store.archive_run(config.run_id)
                    print(f"moved the stored run {config.run_id} aside as {archived}", file=out, flush=True)
        if not args.fresh and await runs_already_complete(configs, store, profile):
            print(f"runs {', '.join(c.run_id for c in configs)} are already complete: their results follow "
                  "(no model started)", file=out, flush=True)
        else:
            offers = {c.offered_tool_domains for c in configs}  # one user's runs: one offer (issue 12)
            prefix = pa_prefix(offers.pop() if len(offers) == 1 else None)
            profile = await prepare_runtime(profile, stack, out, prefix=prefix)
        print(f"{len(configs)} runs side by side: {', '.join(c.run_id for c in configs)}", file=out, flush=True)
        printer = ProgressPrinter(out, with_run_id=True)
        results = await run_many(
            configs, store, LLMClient(profile), default_registry(), observer_for=lambda _cfg: printer,
            memory_root=Path(args.local_memory), reports_root=Path(args.saves), probes_only=args.probes_only,
        )
        print(file=out)
        code = 0
        for config, result in zip(configs, results, strict=True):
            if isinstance(result, RunOutcome):
                if result.status is RunStatus.COMPLETED:
                    print(f"run {result.run_id} completed (report: {Path(args.saves) / result.run_id / 'report.md'})",
                          file=out)
                else:
                    print(f"run {result.run_id} is not complete: " + "; ".join(result.notes), file=out)
                    code = max(code, 1)
            else:
                known = user_error_message(result)
                print(f"run {config.run_id} did not finish: "
                      + (known if known is not None else f"{type(result).__name__}: {result}"), file=out)
                code = max(code, 2 if known is not None else 1)
        # Only the runs this command played: a run that did not start keeps older results.
        shown = [r.run_id for r in results if isinstance(r, RunOutcome)]
        if shown:
            print(file=out)
            await print_results(store, shown, out)
    return code


async def _check_probes_only(store: RunStore, args: argparse.Namespace, configs: list[RunConfig]) -> None:
    """``--probes-only`` probes from a memory run's stored checkpoints: refuse it for a memory run
    that has not played a step (never started, or stopped before its first step ended).

    Raises:
        UserError: names the run and what to run instead.
    """
    if not args.probes_only:
        return
    for config in configs:
        if config.accumulates and (await store.get_run(config.run_id) is None
                                   or not await store.steps(config.run_id)):
            raise UserError(f"--probes-only: run {config.run_id} has not played its timeline yet, so it has no "
                            "checkpoints to probe from; run the command without --probes-only")


async def _check_batch_donor(store: RunStore, args: argparse.Namespace, configs: list[RunConfig], out: TextIO) -> None:
    """Check ``--donor`` before any run plays (it is used only after the memory runs).

    Raises:
        UserError: the donor is missing, of another user, a probe-only run, or played another
            timeline (slice vs whole).
    """
    from mempa_tui.runner import donor_problem
    from mempa_tui.runner.config import PROBE_ONLY_CONDITIONS

    if args.donor is None:
        return
    if not any(c.memory in PROBE_ONLY_CONDITIONS for c in configs):
        print(f"note: --donor {args.donor} is ignored: it is for none and oracle, and neither is in --memory",
              file=out, flush=True)
        return
    reference = next(c for c in configs if c.memory in PROBE_ONLY_CONDITIONS)
    why = donor_problem(reference, await store.get_run(args.donor), store.path)
    if why is not None:
        raise UserError(why)
