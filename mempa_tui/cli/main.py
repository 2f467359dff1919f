"""Entry point of the ``mempa`` console script (``mempa_tui.cli.main:main``).

Exit codes: 0 success; 1 the command ran but found problems (world violations, an incomplete
run, an unreachable model server for ``models check``) or a run stopped on an error; 2 bad
arguments, unknown user or profile, broken world files, a config mismatch on resume; 130 stopped
with Ctrl-C, 143 / 129 stopped by SIGTERM / SIGHUP (rerunning the same command resumes).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import anyio

from mempa_tui.cli._errors import user_error_message
from mempa_tui.cli._parser import UsageError, build_parser, print_error
from mempa_tui.cli._signals import SignalStop

__all__ = ["main"]


async def _dispatch(args: argparse.Namespace) -> int:
    from mempa_tui.cli import _commands
    from mempa_tui.cli._run import cmd_run
    from mempa_tui.cli._signals import stop_on_signals

    if args.command == "run":
        if getattr(args, "verbose", False):
            import logging

            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("  model call: %(message)s"))
            llm_log = logging.getLogger("mempa_tui.llm.client")
            llm_log.addHandler(handler)
            llm_log.setLevel(logging.INFO)
        return await stop_on_signals(lambda: cmd_run(args))
    if args.command == "runs":
        return await _commands.cmd_runs(args)
    if args.command == "report":
        return await _commands.cmd_report(args)
    if args.command == "results":
        from mempa_tui.cli._results import cmd_results

        return await cmd_results(args)
    if args.command == "show":
        from mempa_tui.cli._show import cmd_show

        return await cmd_show(args)
    if args.command == "models":
        return await _commands.cmd_models(args)
    if args.command == "worlds":
        from mempa_tui.cli import _worlds

        if args.worlds_command == "stats":
            return _worlds.cmd_worlds_stats(args)
        if args.worlds_command == "review":
            return await _worlds.cmd_worlds_review(args)
        return _commands.cmd_worlds_check(args)
    if args.command == "tools":
        return _commands.cmd_tools(args)
    if args.command == "memory":
        from mempa_tui.cli._memory import cmd_memory_list

        return cmd_memory_list(args)
    if args.command == "mcp":
        return await _commands.cmd_mcp(args)
    raise UsageError(f"mempa: unknown command {args.command!r}")


def _resume_hint(args: argparse.Namespace) -> str:
    """How to resume: the same command, less ``--fresh`` (which would start over once more)."""
    if getattr(args, "fresh", False):
        return "run the same command again without --fresh to resume"
    return "run the same command again to resume"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``mempa`` command.

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (see the module docstring).
    """
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print_error(str(exc))
        return 2
    try:
        if args.command == "tui":
            from mempa_tui.cli._commands import cmd_tui

            return cmd_tui(args)
        return anyio.run(_dispatch, args)
    except KeyboardInterrupt:
        print(f"\nmempa: stopped; {_resume_hint(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `mempa tools list | head`: the reader left; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # keep the interpreter's final flush from failing again
        return 0
    except SignalStop as exc:
        print(f"mempa: {exc}; {_resume_hint(args)}", file=sys.stderr)
        return exc.code
    except UsageError as exc:
        print_error(str(exc))
        return 2
    except Exception as exc:
        message = user_error_message(exc)
        if message is not None:
            print_error(message)
            return 2
        from mempa_tui.llm import LLMError

        if isinstance(exc, LLMError):
            print_error(f"a model call failed: {exc}; the run is saved, rerun the same command to resume")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
