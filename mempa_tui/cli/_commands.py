"""``mempa worlds check``, ``runs``, ``report``, ``models list|check``, ``tools list``, ``mcp`` and ``tui``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import TextIO

from mempa_tui.cli._errors import UserError, unwritable
from mempa_tui.cli._run import database_path

__all__ = ["cmd_mcp", "cmd_models", "cmd_report", "cmd_runs", "cmd_tools", "cmd_tui", "cmd_worlds_check"]


def cmd_worlds_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print ``path:line: message`` per violation; exit 1 if any, else 0 with a summary line."""
    out = out or sys.stdout
    folder = Path(args.dir)
    if not (folder / "users").is_dir():
        raise UserError(f"{folder}: not a worlds folder (no users/ inside)")
    try:
        check = importlib.import_module("mempa_tui.scripts.check")
    except ModuleNotFoundError as exc:
        if exc.name != "mempa_tui.scripts.check":
            raise
        raise UserError("the world checker (mempa_tui.scripts.check) is not available in this build") from None
    violations = check.check_worlds(folder)
    for violation in violations:
        print(str(violation), file=out)
    if violations:
        print(f"{len(violations)} problem(s) in {folder}", file=sys.stderr)
        return 1
    from mempa_tui.scripts.loader import list_users

    users = list_users(folder)
    print(f"{folder}: {len(users)} user(s) ({', '.join(users) or 'none'}) checked, no problems", file=out)
    return 0


def _need_database(saves: str) -> Path:
    path = database_path(saves)
    if not path.is_file():
        raise UserError(f"no run database at {path} (start a run with `mempa run`, or pass --saves DIR)")
    return path


def _shown_status(database: Path, run_id: str, status: str) -> str:
    """A stored ``running`` whose lease nobody holds was interrupted (killed, or the machine stopped)."""
    from mempa_tui.runner import run_is_being_played

    if status == "running" and not run_is_being_played(database, run_id):
        return "interrupted"
    return status


def _interrupted_hint(config_json: str) -> str:
    """What to do about an interrupted run: a runner's run resumes with its ``mempa run`` command;
    a play (a person in a seat, stored with its ``PlayRequest``) has none and is played again from
    the step's start with ``r`` in the app's Saved runs list (issue 6.2)."""
    from pydantic import ValidationError

    from mempa_tui.runner.play import PlayRequest

    try:
        PlayRequest.model_validate_json(config_json)
    except ValidationError:
        return "interrupted while running (killed?); rerun its `mempa run` command to resume"
    return ("play left unfinished (the app was closed or crashed, or it is still being played); "
            "in `mempa tui`, r on it in the launcher's Saved runs plays the step again from its start")


async def cmd_runs(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """List stored runs with their progress."""
    from mempa_tui.store import RunStore

    out = out or sys.stdout
    database = database_path(args.saves)
    if not database.is_file():
        print(f"no runs yet (no run database at {database}; start one with `mempa run`)", file=out)
        return 0
    from mempa_tui.runner._health import runs_health, runs_pa_repeats
    from mempa_tui.runner._pooling import is_play
    from mempa_tui.store import RunStatus

    async with RunStore(database) as store:
        summaries = await store.summaries()
        # finished plays are hidden unless --plays; an unfinished one stays listed with its hint
        plays = [s for s in summaries if is_play(s.run.id) and s.run.status is RunStatus.COMPLETED]
        if not getattr(args, "plays", False):
            summaries = [s for s in summaries if s not in plays]
        health = await runs_health(store, [s.run for s in summaries])
        repeats = await runs_pa_repeats(store, [s.run for s in summaries])
    if not summaries:
        print("no runs yet" + (f" ({len(plays)} play(s); --plays lists them)" if plays else ""), file=out)
        return 0
    from mempa_tui.runner.config import PROBE_ONLY_CONDITIONS

    rows = [["RUN", "STATUS", "STEPS", "PROBES", "TOKENS", "MEMORY", "UPDATED"]]
    for s in summaries:
        run = s.run
        # a reference run plays no steps of its own (it probes from its donor's checkpoints): '-', not 0/0
        steps = "-" if run.memory in PROBE_ONLY_CONDITIONS and not s.steps_done else (
            f"{s.steps_done}/{run.total_steps}"
            + (f" ({s.steps_done - s.steps_completed} discarded)" if s.steps_done > s.steps_completed else ""))
        rows.append([
            run.id, _shown_status(database, run.id, run.status.value), steps, f"{s.probes_done}/{run.total_probes}",
            f"{s.tokens.total:,}", health[run.id].short(), f"{run.updated_at:%Y-%m-%d %H:%M}",
        ])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)
    if any(r[2] == "-" for r in rows[1:]):
        print("STEPS -: a No Memory or Oracle run plays no steps; it probes from its donor's checkpoints "
              "(paper Section 4)", file=out)
    if any(s.steps_done > s.steps_completed for s in summaries):
        print("(N discarded): steps that ended invalid, failed or floored after every attempt; they were "
              "not committed and the run went on from the step before (Appendix C.3)", file=out)
    for s in summaries:
        if health[s.run.id].broken:
            print(f"{s.run.id}: {health[s.run.id].text()}", file=out)
        if repeats[s.run.id].any:  # a warning of the PA's, beside the memory's health (issue 12)
            print(f"{s.run.id}: {repeats[s.run.id].text()}", file=out)
    if plays and not getattr(args, "plays", False):
        print(f"not shown: {len(plays)} finished play(s) (a person in a seat); --plays lists them", file=out)
    for s in summaries:
        if s.run.error:
            print(f"{s.run.id}: {s.run.error}", file=out)
        elif _shown_status(database, s.run.id, s.run.status.value) == "interrupted":
            print(f"{s.run.id}: {_interrupted_hint(s.run.config_json)}", file=out)
    return 0


async def cmd_report(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Score a stored run again, write its report, print the table."""
    from mempa_tui.runner import write_run_report
    from mempa_tui.store import RunStore

    out = out or sys.stdout
    async with RunStore(_need_database(args.saves)) as store:
        run = await store.get_run(args.run_id)
        if run is None:
            known = [r.id for r in await store.list_runs()]
            raise UserError(f"no run {args.run_id!r} in {database_path(args.saves)}"
                            + (f" (runs: {', '.join(known)})" if known else ""))
        try:
            report = await write_run_report(store, args.run_id, Path(args.out or args.saves))
        except OSError as exc:
            raise unwritable(exc, f"the report of {args.run_id}") from exc
    if report is None:
        print(f"run {args.run_id} has no probe results yet; nothing to report", file=out)
        return 1
    print(report.table, file=out)
    if report.memory_stats:
        counters = ", ".join(f"{k} {v:g}" for k, v in sorted(report.memory_stats.items()))
        print(f"\nmemory counters after the last step: {counters}", file=out)
    from mempa_tui.runner._health import health_of_stats

    health = health_of_stats(run.id, run.memory, report.memory_stats)
    print(("\n" if not report.memory_stats else "") + health.text(), file=out)
    print(f"\nreport: {report.paths.main_md}\ntables: {report.paths.main_csv}", file=out)
    return 0


def _profile_files() -> list[Path]:
    from mempa_tui.llm.profile import _REPO_MODELS_DIR

    folder = Path("models") if Path("models").is_dir() else _REPO_MODELS_DIR
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


async def cmd_models(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``models list``: the profiles; ``models check PROFILE``: can its models be reached."""
    from mempa_tui.llm import ProfileError, Role, load_profile

    out = out or sys.stdout
    if args.models_command == "list":
        files = _profile_files()
        if not files:
            print("no profiles found (models/*.yaml)", file=out)
            return 0
        for path in files:
            try:
                profile = load_profile(path)
            except ProfileError as exc:
                print(f"{path.stem:<16} INVALID: {exc}", file=out)
                continue
            pa = profile.spec_for(Role.PA).model
            # roles on another model than the PA are named (e.g. a larger simulator, issue 12)
            others = ", ".join(f"{r.value} {profile.spec_for(r).model}" for r in Role
                               if profile.spec_for(r).model != pa)
            models = f"{pa} ({others})" if others else pa
            print(f"{path.stem:<16} {profile.runtime:<18} {models}  {profile.description}".rstrip(), file=out)
        return 0
    profile = load_profile(args.profile)
    for role in Role:
        spec = profile.spec_for(role)
        print(f"{role.value:<10} {spec.model}  temperature={spec.temperature} context={spec.context_window}", file=out)
    if profile.runtime == "ollama":
        from mempa_tui.llm.ollama_check import check_ollama, ollama_models

        check = await check_ollama(profile.options.ollama_url, ollama_models(profile))
        print(check.message, file=out)
        return 0 if check.ok else 1
    if profile.runtime == "embedded":
        import anyio

        from mempa_tui.llm.embedded import EmbeddedError, ensure_weights, model_for, role_models

        # the default spec's model and each other model a role names (each gets its own server)
        aliases = [profile.default.model.split("/", 1)[-1]]
        try:
            aliases += list(role_models(profile).values())
            for alias in dict.fromkeys(aliases):
                model = model_for(alias)
                weights = await anyio.to_thread.run_sync(
                    lambda m=model: ensure_weights(profile.options.embedded.weights_dir, model=m))
                print(f"embedded weights verified: {weights}", file=out)
        except EmbeddedError as exc:
            print(f"embedded model not ready: {exc}", file=out)
            return 1
        return 0
    missing = sorted({s.api_key_env for s in profile.all_specs() if s.api_key_env and not os.environ.get(s.api_key_env)})
    if missing:
        print(f"missing API key variable(s): {', '.join(missing)}", file=out)
        return 1
    from mempa_tui.llm.endpoint_check import check_endpoints

    checks = await check_endpoints(profile)
    for check in checks:
        print(check.text(), file=out)
    down = [c for c in checks if not c.ok]
    if down:
        print(f"{len(down)} of {len(checks)} endpoint(s) of profile {profile.name} did not answer; start the "
              "server(s) above or fix their api_base / model in the profile, then check again", file=out)
        return 1
    print(f"profile {profile.name} ({profile.runtime}): all {len(checks)} endpoint(s) answered", file=out)
    return 0


def cmd_tui(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Open the Textual app from :mod:`mempa_tui.tui` (if it is built)."""
    out = out or sys.stdout
    try:
        tui = importlib.import_module("mempa_tui.tui")
    except ModuleNotFoundError as exc:
        raise UserError(f"the terminal app cannot start: {exc}") from None
    if getattr(args, "memory", None):  # plugins offered by the launcher (memory_choices reads it)
        from mempa_tui.memory._plugin import PLUGINS_ENV

        os.environ[PLUGINS_ENV] = ",".join([*filter(None, os.environ.get(PLUGINS_ENV, "").split(",")), *args.memory])
    launch = getattr(tui, "run_app", None) or getattr(tui, "main", None)
    app_class = getattr(tui, "MempaApp", None)
    if callable(launch):
        folders = {
            key: getattr(args, key)
            for key in ("worlds", "models", "saves", "local_memory")
            if getattr(args, key, None) is not None
        }
        result = launch(**folders)
        return result if isinstance(result, int) else 0
    if app_class is not None:
        app_class().run()
        return 0
    print("the terminal app (mempa_tui.tui) is not written yet; use `mempa run` and `mempa runs`", file=out)
    return 1


def cmd_tools(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``tools list``: the catalog by Table 7 domain, each tool read or write with its write tag."""
    import json

    from mempa_tui.tools import DOMAINS, catalog

    out = out or sys.stdout
    rows = catalog()
    if args.json:
        print(json.dumps([r.model_dump() for r in rows], indent=2), file=out)
        return 0
    width = max((len(r.name) for r in rows), default=0)
    for key, title in DOMAINS:
        mine = [r for r in rows if r.domain == key]
        writes = sum(r.write for r in mine)
        print(f"{title} ({len(mine)}: {len(mine) - writes} read, {writes} write)", file=out)
        for r in mine:
            kind = f"write  {r.tag}" if r.write else "read"
            print(f"  {r.name:<{width}}  {kind}", file=out)
    writes = sum(r.write for r in rows)
    outward = sum(r.outward for r in rows)
    domains = len({r.domain for r in rows})
    print(f"{len(rows)} tools in {domains} domains: {len(rows) - writes} read, {writes} write "
          f"({outward} outward)", file=out)
    return 0


async def cmd_mcp(args: argparse.Namespace) -> int:
    """``mcp``: serve a user's world tools over stdio; discard or (``--commit``) write back on exit."""
    from mempa_tui.mcp import WorldSession, serve_stdio
    from mempa_tui.scripts.loader import list_users, user_dir
    from mempa_tui.world import FixtureError

    if args.world:
        folder = Path(args.world)
    else:
        folder = user_dir(args.worlds, args.user) / "fixtures"
        if not folder.is_dir():
            known = list_users(args.worlds)
            raise UserError(f"no fixture tree for user {args.user!r} at {folder}"
                            + (f" (users: {', '.join(known)})" if known else ""))
    try:
        session = WorldSession(folder, args.at)
    except FixtureError as exc:
        raise UserError(f"{folder}: {exc}") from None
    await serve_stdio(session)
    report = session.finish(commit=args.commit)
    if args.log:
        try:
            session.write_log(Path(args.log))
        except OSError as exc:
            raise UserError(f"cannot write the call log to {args.log}: {exc}") from None
    print(f"mempa mcp: {report.summary(folder)}", file=sys.stderr)
    return 0
