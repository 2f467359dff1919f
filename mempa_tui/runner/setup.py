"""Building a run before it plays: its configuration checked against the world files, and the
PA's fixed prompt prefix (shared by ``mempa run`` and the terminal app, neither of which the runner
imports).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mempa_tui.llm.profile import ModelProfile
from mempa_tui.llm.runtime import FixedPrefix
from mempa_tui.runner.config import RunConfig
from mempa_tui.scripts.loader import list_users, load_user

if TYPE_CHECKING:
    from mempa_tui.scripts.loader import UserBundle
    from mempa_tui.tools import ToolRegistry

__all__ = ["DATABASE_NAME", "RunSetupError", "build_run_config", "pa_prefix", "quick_tool_domains"]

DATABASE_NAME = "mempa.sqlite"
"""The run database's file name inside a saves folder."""


class RunSetupError(ValueError):
    """A run cannot be built as asked (unknown user, missing worlds folder, an invalid field named
    like its command-line option, a timeline without the asked-for part). The user can fix it."""


def pa_prefix(domains: Sequence[str] | None = None) -> FixedPrefix:
    """The PA's fixed prompt prefix: its instructions and the world tools it is offered.

    Every PA call, in sessions and probes, starts with these (``mempa_tui.agent.prompt``: the
    instructions are the first system message; the chat template writes the tools after it), so
    the embedded server keeps their KV state ready (:func:`~mempa_tui.llm.runtime.prepare_runtime`).

    Args:
        domains: the run's ``offered_tool_domains`` (a quick start's, :func:`quick_tool_domains`);
            None: every world tool. The prefix cache's key covers the tools, so a quick start's
            smaller offer is saved under its own key.
    """
    from mempa_tui.agent.prompt import instructions
    from mempa_tui.llm.types import ChatMessage
    from mempa_tui.tools import default_registry

    return FixedPrefix(messages=[ChatMessage(role="system", content=instructions())],
                       tools=default_registry().restricted(domains).specs())


def quick_tool_domains(bundle: UserBundle, registry: ToolRegistry | None = None) -> tuple[str, ...]:
    """The tool domains a user's quick start offers the PA (issue 12, item 4).

    The quick start may offer only the domains its scripts touch, so that the tool block fits a
    small CPU's time budget; the slice and the whole timeline always offer every tool. A domain is
    touched when a script of the quick start (its accumulation sessions, its change events and
    every probe it plays: :meth:`UserBundle.quick_start`) names a record of it in a beat or a beat's
    world event (``maps_places/routes:route_0001`` -> ``maps_places``; paper Appendix C.3, beats
    bind records), runs one of its tools on the intended path (``tool_steps``) or behind a write
    lock, or, in a change event's fixed transcript, replays one of its tools (Appendix C.4). The
    IX interaction tools are not world tools and are offered as always.

    Args:
        bundle: the user's whole bundle (``load_user``); its ``quick`` list picks the scripts.
        registry: the tools that name domains (default: every world tool).

    Returns:
        Domain keys in Table 7 order, without repeats.

    Raises:
        ValueError: the timeline has no ``quick`` list; a record's collection or a tool names no
            domain (names the script and the value).
    """
    from mempa_tui.tools import DOMAINS, default_registry

    tools = registry or default_registry()
    quick = bundle.quick_start()
    keys = {key for key, _ in DOMAINS}
    used: set[str] = set()

    def record(script: str, ref: str) -> None:
        domain = ref.split(":", 1)[0].split("/", 1)[0]
        if domain not in keys:
            raise ValueError(f"{script}: record {ref!r} is in no tool domain (collections start with one of "
                             f"{', '.join(sorted(keys))})")
        used.add(domain)

    def tool(script: str, name: str) -> None:
        tdef = tools.get(name)
        if tdef is None:
            raise ValueError(f"{script}: {tools.unknown_tool_message(name)}")
        used.add(tdef.domain)

    for script in [*quick.sessions.values(), *quick.probes.values()]:
        for beat in script.beats:
            for ref in beat.records:
                record(script.id, ref)
            for ref in beat.event.records if beat.event is not None else ():
                record(script.id, ref)
        for step in script.tool_steps:
            tool(script.id, step.tool)
        if script.write_lock is not None:
            tool(script.id, script.write_lock.tool)
    for event in quick.events.values():
        for turn in event.transcript:
            for call in turn.pa.tool_calls if turn.pa is not None else ():
                tool(event.id, call.tool)
    return tuple(key for key, _ in DOMAINS if key in used)


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
        quick: play only the timeline's quick start (``mempa run --quick``); the PA is then
            offered only the tool domains of :func:`quick_tool_domains` (``offered_tool_domains``),
            and File memory gets ``consolidate_at_session_end=True`` unless the options set it.

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
            offered: tuple[str, ...] | None = quick_tool_domains(bundle)
        except ValueError as exc:
            raise RunSetupError(str(exc)) from None
    else:
        offered = None  # the slice and the whole timeline offer every tool (issue 12)
    options = dict(memory_options or {})
    if quick and memory == "file":
        # Issue 12: the quick start's three steps never reach File memory's threshold and probes
        # get no raw turns (paper 3.5), so without this its probes would see an empty memory.
        options.setdefault("consolidate_at_session_end", True)
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
            memory_options=options, probe_concurrency=probe_concurrency, slice=slice,
            quick=quick, offered_tool_domains=offered,
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
