"""``mempa worlds stats`` and ``mempa worlds review`` (``worlds check`` is in :mod:`._commands`)."""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TextIO

from mempa_tui.cli._errors import UserError

__all__ = ["cmd_worlds_review", "cmd_worlds_stats"]


def _worlds_folder(value: str) -> Path:
    folder = Path(value)
    if not (folder / "users").is_dir():
        raise UserError(f"{folder}: not a worlds folder (no users/ inside)")
    return folder


def cmd_worlds_stats(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the per-user and cross-user counts; exit 1 when some user's files do not load."""
    from mempa_tui.scripts._stats import format_stats, world_stats

    out = out or sys.stdout
    stats = world_stats(_worlds_folder(args.dir))
    print(format_stats(stats), file=out)
    return 1 if stats.unreadable else 0


async def cmd_worlds_review(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Ask the profile's judge role for the five viability verdicts of each script; write YAML.

    Exit 0 when every script got a verdict, 1 when some reply was unusable or a call failed
    (recorded in the file as ``error``). Closed scripts do not change the exit code: the verdicts
    are for a person to read.

    Raises:
        UserError: bad worlds folder, unknown user or script id, bad profile, model server down.
    """
    from mempa_tui.cli._run import prepare_runtime
    from mempa_tui.llm import LLMClient, Role, load_profile
    from mempa_tui.scripts._review import ScriptReview, review_user, write_reviews
    from mempa_tui.scripts.loader import list_users, load_user

    out = out or sys.stdout
    folder = _worlds_folder(args.dir)
    labels = list_users(folder)
    users = args.user or labels
    unknown = [u for u in users if u not in labels]
    if unknown:
        raise UserError(
            f"--user: no user {', '.join(unknown)} in {folder / 'users'} (have {', '.join(labels)})"
        )
    bundles = [load_user(folder, u) for u in users]
    profile = load_profile(args.model)

    def show(review: ScriptReview) -> None:
        verdict = review.error and f"error: {review.error}" or ("live" if review.live else "closed")
        failed = [c for c, v in review.conditions.items() if not v.ok]
        print(
            f"{review.script_id}: {verdict}" + (f" ({', '.join(failed)})" if failed else ""),
            file=out,
            flush=True,
        )

    reviews: list[ScriptReview] = []
    async with AsyncExitStack() as stack:
        profile = await prepare_runtime(profile, stack, out)
        client = LLMClient(profile)
        for bundle in bundles:
            only = [s for s in (args.script or []) if s.startswith(f"{bundle.label}-")] or None
            if args.script and only is None:
                continue
            try:
                reviews += await review_user(client, bundle, only, progress=show)
            except KeyError as exc:
                raise UserError(f"--script: {exc.args[0]}") from None
    if not reviews:
        raise UserError("--script: no script of the chosen users matches")
    path = write_reviews(reviews, args.out, f"{profile.name}: {profile.spec_for(Role.JUDGE).model}")
    live = sum(1 for r in reviews if r.live)
    errors = sum(1 for r in reviews if r.error is not None)
    print(
        f"{len(reviews)} script(s) reviewed: {live} live, {len(reviews) - live - errors} closed, "
        f"{errors} without a verdict; verdicts in {path}",
        file=out,
    )
    return 1 if errors else 0
