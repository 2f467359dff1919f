"""The ``mempa`` command line: argument parser (argparse)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import NoReturn

__all__ = ["UsageError", "build_parser"]


class UsageError(Exception):
    """Bad command-line arguments; printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line naming the command and its ``--help``."""

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError` instead of printing usage and exiting."""
        # print_error already says "mempa:"; a subcommand is named once ("mempa: error: mcp: ...").
        where = "" if self.prog == "mempa" else f"{self.prog.removeprefix('mempa ')}: "
        raise UsageError(f"{where}{message} (see `{self.prog} --help`)")


def _memory_option(text: str) -> tuple[str, int | float | bool | str]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    value: int | float | bool | str
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        value = lowered == "true"
    else:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
    return key.strip(), value


def _conditions(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty condition name")
    if any(".py:" in n for n in names):  # one plugin spelt two ways is one condition
        from mempa_tui.memory._plugin import canonical_plugin_name

        names = [canonical_plugin_name(n) for n in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{text!r} names {', '.join(repeated)} more than once")
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


MAX_RESAMPLES = 100_000
"""Most bootstrap resamples ``--resamples`` takes (each holds one row per probe cluster in memory)."""


def _resamples(text: str) -> int:
    value = _positive(text)
    if value < 100:
        raise argparse.ArgumentTypeError(f"{value} is too few for a 95% interval; use at least 100 (the paper: 5000)")
    if value > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_RESAMPLES:,}, which already fixes a 95% "
                                         "interval far below the printed precision (the paper: 5000)")
    return value


def _seed(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a seed is 0 or more")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _story_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date-time like 2026-03-10T09:00") from None
    if value.tzinfo is not None:
        raise argparse.ArgumentTypeError(f"{text!r} has a time zone; story times are local, e.g. 2026-03-10T09:00")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``mempa`` command."""
    parser = _Parser(prog="mempa", description="MemPABench playground: run, resume and score memory runs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    run = sub.add_parser("run", help="play a user's timeline, run the probes, score (resumes a stopped run)")
    run.add_argument("--user", required=True, help="user label, e.g. A (worlds/users/A)")
    run.add_argument("--memory", default="file", type=_conditions,
                     help="memory condition: none, oracle, file, rag, mem0, memos (the paper's), "
                          "prefstate, ours-rag (ours) (default file), a plugin (pkg.module:ClassName, an "
                          "entry point listed by `mempa memory list`) or a memory server (mcp:PROFILE); "
                          "several, comma-separated, run side by side and print one table "
                          "(e.g. none,file,rag,mem0,memos,prefstate)")
    run.add_argument("--model", default="embedded", metavar="PROFILE",
                     help="model profile name (models/<name>.yaml) or a YAML path (default embedded)")
    run.add_argument("--repeats", type=_positive, default=3, help="repeats per probe (default 3)")
    run.add_argument("--seed", type=_seed, default=0, help="run seed, part of the run id (default 0)")
    run.add_argument("--worlds", default="worlds", metavar="DIR", help="worlds folder (default worlds)")
    run.add_argument("--saves", default="saves", metavar="DIR", help="run database and reports (default saves)")
    run.add_argument("--local-memory", default="local_memory", metavar="DIR",
                     help="memory stores, one folder per run (default local_memory)")
    run.add_argument("--fresh", action="store_true",
                     help="move a stored run with the same id aside (as <id>~N) and start over")
    run.add_argument("--donor", metavar="RUN", help="No Memory / Oracle: probe from this run's checkpoints")
    run.add_argument("--probes-only", action="store_true", help="skip the timeline; probe from stored checkpoints")
    run.add_argument("--slice", action="store_true",
                     help="play only the timeline's quick-start slice (its `slice:` steps) and the "
                          "probes that go with it; the run id gets a -slice suffix")
    run.add_argument("--quick", action="store_true",
                     help="play only the timeline's quick start (its `quick:` steps: one attribute in both "
                          "contexts and its change event) and the probes of those cells; the run id gets a "
                          "-quick suffix")
    run.add_argument("--memory-option", action="append", type=_memory_option, default=[], metavar="KEY=VALUE",
                     help="memory option, e.g. consolidate_at_tokens=20000 (repeatable)")
    run.add_argument("--probe-concurrency", type=_positive, default=2, metavar="N",
                     help="probe repeats run at once (default 2; on the embedded server at most its "
                          "slots, so that probes do not evict each other's cached prompts)")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="print every model call (role, tokens, reused prefix, seconds) to stderr")

    worlds = sub.add_parser("worlds", help="benchmark content tools")
    wsub = worlds.add_subparsers(dest="worlds_command", metavar="ACTION", parser_class=_Parser)
    wsub.required = True
    check = wsub.add_parser("check", help="check every rule of the world files; path:line: message per problem")
    check.add_argument("dir", nargs="?", default="worlds", help="worlds folder (default worlds)")
    stats = wsub.add_parser("stats", help="per-user counts: cells differing by context, settings, sessions, events")
    stats.add_argument("dir", nargs="?", default="worlds", help="worlds folder (default worlds)")
    review = wsub.add_parser("review", help="a model judges the five viability conditions of each script (YAML)")
    review.add_argument("dir", nargs="?", default="worlds", help="worlds folder (default worlds)")
    review.add_argument("--model", required=True, metavar="PROFILE", help="model profile (its judge role reviews)")
    review.add_argument("--user", action="append", metavar="LABEL", help="review only this user (repeatable)")
    review.add_argument("--script", action="append", metavar="ID", help="review only this script id (repeatable)")
    review.add_argument("--out", default="worlds-review.yaml", metavar="FILE",
                        help="verdicts file (default worlds-review.yaml)")

    runs = sub.add_parser("runs", help="list stored runs with their progress")
    runs.add_argument("--saves", default="saves", metavar="DIR", help="run database folder (default saves)")
    runs.add_argument("--plays", action="store_true", help="also list plays (play-* runs, a person in a seat)")

    report = sub.add_parser("report", help="score a stored run again and write its report")
    report.add_argument("run_id", metavar="RUN", help="run id, as `mempa runs` lists it")
    report.add_argument("--saves", default="saves", metavar="DIR", help="run database folder (default saves)")
    report.add_argument("--out", metavar="DIR",
                        help="write the report to DIR/<run>/ instead of <saves>/<run>/ (e.g. read-only saves)")

    results = sub.add_parser(
        "results", help="side-by-side scores of stored runs, with each condition's difference from No Memory")
    results.add_argument("run_ids", nargs="*", metavar="RUN",
                         help="runs to compare, as `mempa runs` lists them (default: every stored run)")
    results.add_argument("--saves", default="saves", metavar="DIR", help="run database folder (default saves)")
    results.add_argument("--user", action="append", metavar="LABEL",
                         help="only runs of this user (repeatable)")
    results.add_argument("--by", choices=("condition", "user", "dimension", "group"), default="condition",
                         help="rows per memory condition and model (default), or also per user, "
                              "dimension or reply-vs-action group")
    results.add_argument("--resamples", type=_resamples, default=5000, metavar="N",
                         help="bootstrap resamples of the intervals (default 5000, as the paper)")
    results.add_argument("--export", action="store_true",
                         help="also write Markdown and CSV tables to <saves>/results-<UTC time>/")
    results.add_argument("--out", metavar="DIR",
                         help="export to DIR/results-<UTC time>/ instead of the saves folder (implies --export)")
    results.add_argument("--plays", action="store_true",
                         help="also include plays (play-* runs, a person in a seat) when no run is named")
    results.add_argument("--plot", metavar="DIR",
                         help="also write the paper-style figures (per condition with 95%% intervals, per "
                              "dimension, carry-over) as PNG and SVG into DIR (needs matplotlib: "
                              "pip install -e \".[plot]\")")

    show = sub.add_parser(
        "show", help="a stored run's steps and probes, one in full (transcript, model calls, evidence, "
                     "scores), or runs compared probe by probe (--compare)")
    show.add_argument("targets", nargs="+", metavar="RUN [STEP|PROBE]",
                      help="a run (lists its steps and probes) and optionally a step or probe id (prints it "
                           "in full); with --compare, two or more runs of one user")
    show.add_argument("--saves", default="saves", metavar="DIR", help="run database folder (default saves)")
    show.add_argument("--repeat", type=_positive, metavar="N", help="only this repeat of the probe (with --compare: of every probe)")
    show.add_argument("--context", choices=("work", "personal"), help="only probes of this context")
    show.add_argument("--attribute", metavar="NAME", help="only probes of this attribute (key or name)")
    show.add_argument("--dimension", metavar="NAME", help="only probes of this dimension (name or its start)")
    show.add_argument("--outcome", choices=("correct", "wrong", "floored", "incomplete"),
                      help="only probe repeats with this outcome (with --compare: in any compared run)")
    show.add_argument("--memory-store", action="store_true",
                      help="with STEP|PROBE: also list what the memory held at its checkpoint (after the "
                           "step; where the probe started), rebuilt from the snapshot")
    show.add_argument("--call", metavar="N|all",
                      help="with STEP|PROBE: also print model call N of the listing (or all of them) in full: "
                           "the prompt's messages as sent, the offered tools and the reply")
    show.add_argument("--compare", action="store_true",
                      help="per probe and repeat: each run's selection, target, BRS, PRS and evidence")
    show.add_argument("--where", metavar="FILTER",
                      help="with --compare: e.g. \"file right, none wrong\" (RUN [not] right|wrong|floored|"
                           "incomplete|missing; RUN is a run id, #N, or a part naming one run)")
    show.add_argument("--out", metavar="FILE", help="with --compare: also write the comparison as Markdown")

    models = sub.add_parser("models", help="model profiles")
    msub = models.add_subparsers(dest="models_command", metavar="ACTION", parser_class=_Parser)
    msub.required = True
    msub.add_parser("list", help="list the profiles in models/")
    mcheck = msub.add_parser("check", help="check that a profile's models can be reached")
    mcheck.add_argument("profile", metavar="PROFILE", help="profile name or YAML path")

    tools = sub.add_parser("tools", help="the world tools of Table 7")
    tsub = tools.add_subparsers(dest="tools_command", metavar="ACTION", parser_class=_Parser)
    tsub.required = True
    tlist = tsub.add_parser("list", help="the catalog by domain: read/write, outward, write tags")
    tlist.add_argument("--json", action="store_true", help="print the catalog as JSON")

    mcp = sub.add_parser("mcp", help="serve a user's world tools over MCP (stdio) on a working copy")
    mcp.add_argument("--user", required=True, help="user label, e.g. A (worlds/users/A/fixtures)")
    mcp.add_argument("--at", required=True, type=_story_time, metavar="DATETIME",
                     help="story time, ISO YYYY-MM-DDTHH:MM; later records stay hidden")
    mcp.add_argument("--worlds", default="worlds", metavar="DIR", help="worlds folder (default worlds)")
    mcp.add_argument("--world", metavar="DIR", help="serve this fixture tree instead of the user's")
    mcp.add_argument("--commit", action="store_true",
                     help="on a clean exit, write the changes back into the fixture tree (default: discard)")
    mcp.add_argument("--log", metavar="FILE", help="on exit, write every call and record change as JSON to FILE")

    memory = sub.add_parser("memory", help="memory conditions: built-in, plugins, MCP memory servers")
    memory_sub = memory.add_subparsers(dest="memory_command", metavar="SUBCOMMAND", parser_class=_Parser)
    memory_sub.required = True
    memory_sub.add_parser("list", help="list built-in conditions, mempa.memory entry points and MCP profiles")

    tui = sub.add_parser("tui", help="open the terminal app")
    tui.add_argument("--worlds", default="worlds", metavar="DIR", help="worlds folder (default worlds)")
    tui.add_argument("--models", default="models", metavar="DIR", help="model profiles folder (default models)")
    tui.add_argument("--saves", default="saves", metavar="DIR", help="run database and reports (default saves)")
    tui.add_argument("--local-memory", default="local_memory", metavar="DIR",
                     help="memory stores, one folder per run (default local_memory)")
    tui.add_argument("--memory", action="append", default=[], metavar="PLUGIN",
                     help="also offer this memory plugin (pkg.module:ClassName) in the launcher (repeatable)")
    return parser


def print_error(message: str) -> None:
    """Print one error line to stderr."""
    print(f"mempa: error: {message}", file=sys.stderr)
