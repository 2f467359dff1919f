"""Building a run before it plays: its configuration checked against the world files, and the
PA's fixed prompt prefix (shared by ``mempa run`` and the terminal app, neither of which the runner
imports).
"""

from __future__ import annotations

from pathlib import Path

from mempa_tui.llm.profile import ModelProfile
from mempa_tui.llm.runtime import FixedPrefix
from mempa_tui.runner.config import RunConfig
from mempa_tui.scripts.loader import list_users, load_user

__all__ = ["DATABASE_NAME", "RunSetupError", "build_run_config", "pa_prefix"]

DATABASE_NAME = "mempa.sqlite"
"""The run database's file name inside a saves folder."""


class RunSetupError(ValueError):
    """A run cannot be built as asked (unknown user, missing worlds folder, an invalid field named
    like its command-line option, a timeline without the asked-for part). The user can fix it."""


def pa_prefix() -> FixedPrefix:
    """The PA's fixed prompt prefix: its instructions and every world tool, as the PA sends them.

    Every PA call, in sessions and probes, starts with these (``mempa_tui.agent.prompt``: the
    instructions are the first system message; the chat template writes the tools after it), so
    the embedded server keeps their KV state ready (:func:`~mempa_tui.llm.runtime.prepare_runtime`).
    """
    from mempa_tui.agent.prompt import instructions
    from mempa_tui.llm.types import ChatMessage
    from mempa_tui.tools import default_registry

    return FixedPrefix(messages=[ChatMessage(role="system", content=instructions())],
                       tools=default_registry().specs())


def build_run_config(
    *,
    user: str,
    memory: str,
    profile: ModelProfile,
    worlds: str | Path,
    repeats: int = 3,
    seed: int = 0,
    donor: str | None = None,
    memory_options: dict[str, int | float | bool | str] | None = None,
    probe_concurrency: int = 2,
    slice: bool = False,
    quick: bool = False,
) -> RunConfig:
    """Check the user and its world files, then build the run's :class:`RunConfig`.

    Args:
        user: user label (``worlds/users/<user>``).
        memory: memory condition name.
        profile: the loaded model profile (its models go into the config hash).
        worlds: the worlds folder.
        repeats / seed / donor / memory_options / probe_concurrency: as ``mempa run``.
        slice: play only the timeline's quick-start slice (``mempa run --slice``); dropped for a
            timeline that names no slice (it is its own slice, and keeps its run id).
        quick: play only the timeline's quick start (``mempa run --quick``).

    Raises:
        RunSetupError: unknown user, an invalid field (named like its command-line option), or
            ``slice`` on a full timeline that names no slice, ``quick`` on a timeline without a
            ``quick`` list, or both.
        WorldFileError: the user's world files are invalid (``path:line: message``).
    """
    if not Path(worlds).is_dir():
        raise RunSetupError(f"no worlds folder at {worlds} (run mempa from the repository root, or pass --worlds DIR)")
    users = list_users(worlds)
    if user not in users:
        where = Path(worlds) / "users"
        raise RunSetupError(
            f"unknown user {user!r}: no folder {where / str(user)}"
            + (f" (users: {', '.join(users)})" if users else f" ({where} has no users)")
        )
    bundle = load_user(worlds, user)  # world file errors surface before any server starts
    if quick:
        if slice:
            raise RunSetupError("--quick and --slice pick different parts of the timeline; give one of them")
        try:
            bundle.quick_start()
        except ValueError as exc:
            raise RunSetupError(str(exc)) from None
    if slice:
        try:
            bundle.sliced()
        except ValueError as exc:
            raise RunSetupError(str(exc)) from None
        # A timeline without a slice list is its own slice: the same run, so the same run id.
        slice = bool(bundle.timeline.slice)
    try:
        return RunConfig(
            user=user, profile=profile.name, memory=memory, seed=seed,
            repeats=repeats, worlds_dir=Path(worlds), donor_run=donor,
            memory_options=dict(memory_options or {}), probe_concurrency=probe_concurrency, slice=slice,
            quick=quick,
        ).with_profile(profile)
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        raise RunSetupError(_first_validation_line(exc)) from None



def _first_validation_line(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "config"
        message = str(first["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's own message
        return f"--{field.replace('_', '-')}: {message}"
    return str(exc)
