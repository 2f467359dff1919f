"""The app's only door to the engine: choices for the launcher, running a request, saved runs.

Imports nothing from Textual (like toolong's ``log_file.py``), so it can be driven from a script
or a test. A run is built exactly as ``mempa run`` builds it: :func:`~mempa_tui.runner.setup.
build_run_config` checks the user and its world files, :func:`~mempa_tui.llm.runtime.open_runtime`
starts the embedded server or checks Ollama (once per profile; each request then warms the PA prefix
of the tools it offers), then :class:`~mempa_tui.runner.Runner` plays it.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field, ValidationError

from mempa_tui.agent.human import HumanAgentSeat
from mempa_tui.runner.errors import user_error_message
from mempa_tui.llm import LLMClient, ModelProfile, ProfileError, load_profile
from mempa_tui.llm.runtime import PreparedRuntime, open_runtime
from mempa_tui.llm.types import ChatMessage, Completion, Role, ToolSpec
from mempa_tui.memory import MemoryInspection, make_memory, memory_choices
from mempa_tui.runner import (
    RunConfig,
    Runner,
    RunObserver,
    RunOutcome,
    StepEvent,
    run_is_being_played,
)
from mempa_tui.runner._browse import (
    NOT_STORED,
    OUTCOMES,
    BrowseError,
    CompareCell,
    CompareRow,
    MemoryView,
    ModelCallDetail,
    ModelCallLine,
    ProbeFilter,
    ProbeLine,
    RunListing,
    StepDetail,
    StepLine,
    checkpoint_memory,
    compare_markdown,
    compare_runs,
    filter_compare,
    model_call,
    parse_where,
    run_listing,
    step_details,
)
from mempa_tui.runner._episode_events import EpisodeEvent, episode_event_adapter
from mempa_tui.runner._health import MemoryHealth, RowAnnotations, row_annotations, runs_health, runs_pa_repeats
from mempa_tui.runner._results import partial_runs, stored_outcomes, timeline_kind_of
from mempa_tui.runner._scoring import ProbeScorer
from mempa_tui.runner._stepper import (
    ProbeStepper,
    StepperChoices,
    StepperError,
    stepper_choices,
)
from mempa_tui.runner._settings import thresholds_text
from mempa_tui.runner._validity import validity_lines
from mempa_tui.runner.config import offered_tools_text
from mempa_tui.runner.play import PlayOutcome, PlayRequest, play_memory, play_offer, play_step
from mempa_tui.runner.setup import DATABASE_NAME, build_run_config, pa_prefix
from mempa_tui.scoring import ProbeOutcome
from mempa_tui.scripts.loader import list_users
from mempa_tui.simulator.human import HumanUserSeat
from mempa_tui.store import RunRecord, RunStatus, RunStore, RunSummary, utc_now
from mempa_tui.tools import default_registry
from mempa_tui.tui.book import RunRequest
from mempa_tui.tui.settings import AppSettings

__all__ = [
    "NOT_STORED",
    "OUTCOMES",
    "BrowseError",
    "BrowsedRun",
    "CompareCell",
    "CompareChoice",
    "CompareRow",
    "Comparison",
    "LauncherChoices",
    "MemoryView",
    "ModelCallDetail",
    "ModelCallLine",
    "ProbeFilter",
    "ProbeLine",
    "ProfileChoice",
    "RunListing",
    "RunService",
    "RunnerOptions",
    "StepDetail",
    "StepLine",
    "StoredEvent",
    "checkpoint_words",
    "compare_choices",
    "compare_stored",
    "discover_choices",
    "empty_pickers",
    "error_line",
    "export_comparison",
    "memory_thresholds",
    "play_from_record",
    "request_from_record",
    "results_annotations",
    "results_validity",
    "where_choices",
]


class ProfileChoice(BaseModel):
    """A model profile file as the launcher offers it."""

    name: str
    """The file's stem (what ``--model`` takes)."""
    description: str = ""
    """The profile's description, or why it cannot be used."""
    valid: bool = True
    """False when the file does not load (``description`` says why)."""


class LauncherChoices(BaseModel):
    """What the launcher's pickers offer."""

    users: list[str] = Field(default_factory=list)
    """User labels under ``worlds/users``."""
    memories: list[str] = Field(default_factory=list)
    """Registered memory conditions."""
    profiles: list[ProfileChoice] = Field(default_factory=list)
    """Profiles under the models folder."""


@dataclass(frozen=True)
class RunnerOptions:
    """Runner settings the app does not show (tests substitute the scorer and fewer resamples).

    Attributes:
        scorer: computes BRS and PRS of final probes (None: the runner's judge and rater).
        resamples: bootstrap resamples of the report (paper: 5,000).
    """

    scorer: ProbeScorer | None = None
    resamples: int = 5000


class BrowsedRun(BaseModel):
    """One stored run as the run browser lists it (issue 16: every stored run, any status)."""

    run_id: str
    """The run's id."""
    user: str
    """User label."""
    memory: str
    """Memory condition."""
    profile: str
    """Model profile name."""
    played: str
    """What it played: ``whole timeline``, ``quick-start slice``, ``quick start``, ``probes only
    (<timeline>)`` (No Memory / Oracle, from :attr:`donor`'s checkpoints of that timeline) or ``play (<seat> seat, <step>)`` for a
    person's play."""
    donor: str | None = None
    """The run whose checkpoints its probes start from (No Memory and Oracle), if any."""
    status: str
    """As :meth:`RunService.shown_status` shows it (``interrupted`` for a dead ``running``)."""
    steps: str
    """Timeline steps stored of planned (``3/3``), ``-`` for a run without a timeline."""
    probes: str
    """Probe repeats stored of planned (``6/6``)."""
    health: str
    """The memory's health as a table cell (``ok``, ``n/a``, ``warn: ...``, ``BROKEN``;
    :meth:`~mempa_tui.runner._health.MemoryHealth.short`)."""
    health_text: str
    """The health in one line with its counted failures."""


def _played(run: RunRecord) -> str:
    """What a stored run played (see :attr:`BrowsedRun.played`)."""
    play = play_from_record(run.config_json)
    if play is not None:
        return f"play ({play.seat} seat, {play.step_id})"
    from mempa_tui.runner._pooling import is_play

    if is_play(run.id):
        return "play"
    try:
        config = RunConfig.model_validate_json(run.config_json)
    except ValidationError:
        return "unreadable configuration"
    if run.donor_run or not config.accumulates:
        return f"probes only ({config.timeline_kind})"
    return config.timeline_kind


class StoredEvent(BaseModel):
    """An event row that is not a known episode event (shown by its kind only)."""

    kind: str
    """The stored kind tag."""
    text: str
    """The stored JSON, as text."""


def discover_choices(settings: AppSettings) -> LauncherChoices:
    """List users, memory conditions and profiles (file reads only; no server is contacted)."""
    profiles: list[ProfileChoice] = []
    folder = settings.models_dir
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        try:
            profile = load_profile(path)
        except ProfileError as exc:
            profiles.append(ProfileChoice(name=path.stem, description=str(exc), valid=False))
            continue
        profiles.append(ProfileChoice(name=path.stem, description=profile.description))
    return LauncherChoices(
        users=list_users(settings.worlds_dir), memories=memory_choices(settings.models_dir), profiles=profiles
    )


def empty_pickers(settings: AppSettings, choices: LauncherChoices) -> list[str]:
    """Why the launcher's pickers are empty (issue 15.7): one line per empty user or profile list,
    naming the folder that was read (absolute) and what is missing there; ``[]`` when both
    have choices."""
    users, profiles = choices.users, choices.profiles
    problems: list[str] = []
    worlds, models = settings.worlds_dir.resolve(), settings.models_dir.resolve()
    if not users:
        if not worlds.is_dir():
            problems.append(f"no users: the worlds folder {worlds} does not exist "
                            "(start mempa where worlds/ is, or pass --worlds)")
        elif not (worlds / "users").is_dir():
            problems.append(f"no users: {worlds} has no users/ folder")
        else:
            problems.append(f"no users: {worlds / 'users'} holds no user folder")
    if not profiles:
        if not models.is_dir():
            problems.append(f"no model profiles: the models folder {models} does not exist "
                            "(start mempa where models/ is, or pass --models)")
        else:
            problems.append(f"no model profiles: {models} holds no *.yaml profile")
    return problems


def checkpoint_words(run_id: str, index: int | None, listing: RunListing | None = None, *,
                     step_id: str | None = None) -> str:
    """A checkpoint in the probe stepper's words and numbering (1-based step position in the
    played timeline): ``after step 15 (A-E01) of A-file-demo-s0-slice``, ``the start of <run>``
    (index -1), ``a checkpoint of <run>`` (index unknown). The step id is named when ``listing``
    is of that run and holds the step, or when given as ``step_id``."""
    if index is None:
        return f"a checkpoint of {run_id}"
    if index < 0:
        return f"the start of {run_id}"
    step = step_id
    if step is None and listing is not None and listing.run.id == run_id:
        step = next((s.step_id for s in listing.steps if s.index == index), None)
    return f"after step {index + 1}" + (f" ({step})" if step else "") + f" of {run_id}"


def error_line(exc: BaseException) -> str:
    """One line for an error: the CLI's wording for user-fixable errors, else type and message."""
    known = user_error_message(exc)
    return known if known is not None else f"{type(exc).__name__}: {exc}"


# ---- probe-by-probe comparison and results annotations (issue 16) ----------------------------


class CompareChoice(BaseModel):
    """A stored run as the comparison screen's picker offers it (runs with probe results only)."""

    run_id: str
    """The run's id."""
    user: str
    """Its user label."""
    memory: str
    """Its memory condition."""
    profile: str
    """Its model profile."""
    timeline: str
    """``whole timeline``, ``quick-start slice`` or ``quick start`` (runs compare only within one;
    :func:`~mempa_tui.runner._results.timeline_kind_of`)."""
    probes_done: int
    """Probe repeats stored."""
    status: str
    """Its status as shown (:meth:`RunService.shown_status`)."""
    health: str
    """Its memory health cell (``ok``, ``n/a``, ``warn: N failure(s)``, ``BROKEN``)."""


@dataclass(frozen=True)
class Comparison:
    """Runs compared probe by probe (paper Section 3.5 outcomes; issue 16).

    Attributes:
        run_ids: the compared runs, in column order (``#1``, ``#2``...).
        rows: one row per probe and repeat stored by any of them, unfiltered.
        health: run id -> its memory health (a broken memory's outcomes are not its condition's).
    """

    run_ids: tuple[str, ...]
    rows: tuple[CompareRow, ...]
    health: dict[str, MemoryHealth]

    def filtered(self, where: str) -> list[CompareRow]:
        """The rows that pass ``where`` (``"file right, none wrong"``; blank keeps every row).

        Raises:
            BrowseError: the clause does not parse or names no compared run (the message says which).
        """
        if not where.strip():
            return list(self.rows)
        return filter_compare(self.rows, parse_where(where, self.run_ids))


async def compare_choices(service: RunService) -> list[CompareChoice]:
    """Every stored run with at least one probe result, grouped by user then newest first; none
    without a database. Archived runs (``<id>~N``) and plays are offered too: naming them is the
    person's choice, and :func:`compare_stored` refuses pairs that cannot be compared.

    Raises:
        StoreError: the database is not readable.
    """
    summaries = [s for s in await service.saved_runs() if s.probes_done]
    if not summaries:
        return []
    healths = await runs_health(await service.store(), [s.run for s in summaries])
    out = [CompareChoice(run_id=s.run.id, user=s.run.user, memory=s.run.memory, profile=s.run.profile,
                         timeline=timeline_kind_of(s.run), probes_done=s.probes_done, status=service.shown_status(s.run),
                         health=healths[s.run.id].short())
           for s in summaries]
    return sorted(out, key=lambda c: c.user)  # stable: newest first within a user


async def compare_stored(service: RunService, run_ids: Sequence[str]) -> Comparison:
    """Compare stored runs probe by probe (:func:`~mempa_tui.runner._browse.compare_runs`) with
    each run's memory health.

    Args:
        service: the app's engine service.
        run_ids: two or more runs of one user and one kind of timeline, in column order.

    Raises:
        BrowseError: fewer than two runs, an unknown run, runs of different users or timelines
            (the engine's message, naming each run's user or timeline).
        StoreError: the database is not readable.
    """
    if service._store is None and not service.database.is_file():
        raise BrowseError(f"no run database at {service.database}: finish a run's probes first")
    store = await service.store()
    rows = await compare_runs(store, run_ids)
    ids = tuple(dict.fromkeys(run_ids))
    records = [r for r in await store.list_runs() if r.id in ids]
    return Comparison(run_ids=ids, rows=tuple(rows), health=await runs_health(store, records))


def where_choices(run_ids: Sequence[str], memories: Sequence[str]) -> list[tuple[str, str]]:
    """The common filters of a comparison: every run right while another is wrong, as
    ``(label, clause)`` pairs for :func:`~mempa_tui.runner._browse.parse_where`, the first being
    ``("every probe repeat", "")``.

    Args:
        run_ids: the compared runs, in column order.
        memories: each run's memory condition (same order); a condition held by one run only
            names it (``file right, none wrong``), else the run is named ``#N``.

    Raises:
        ValueError: ``memories`` is not as long as ``run_ids``.
    """
    if len(memories) != len(run_ids):
        raise ValueError(f"{len(memories)} memory conditions for {len(run_ids)} runs")
    names = []
    for i, (run_id, memory) in enumerate(zip(run_ids, memories, strict=True), 1):
        unique = memories.count(memory) == 1
        try:
            unique = unique and parse_where(f"{memory} right", run_ids)[0].run_id == run_id
        except BrowseError:
            unique = False
        names.append(memory if unique else f"#{i}")
    out = [("every probe repeat", "")]
    for a, first in enumerate(names):
        for b, second in enumerate(names):
            if a != b:
                clause = f"{first} right, {second} wrong"
                out.append((clause, clause))
    for name in names:
        out.append((f"{name} floored", f"{name} floored"))
    return out


def export_comparison(comparison: Comparison, rows: Sequence[CompareRow], where: str, folder: Path) -> Path:
    """Write the shown comparison rows as Markdown
    (:func:`~mempa_tui.runner._browse.compare_markdown`) to ``folder/compare-<UTC time>.md``.

    Args:
        comparison: what was compared (its runs name the columns).
        rows: the rows shown (already filtered).
        where: the filter they were shown by (``""``: none), put in the title.
        folder: where to write (created if missing; the app's saves folder).

    Returns:
        The written file's path.

    Raises:
        OSError: the folder or file cannot be written.
    """
    title = "Probe-by-probe comparison" + (f" where {where.strip()}" if where.strip() else "")
    text = compare_markdown(rows, comparison.run_ids, title=title)
    broken = [rid for rid, h in comparison.health.items() if h.broken]
    if broken:
        text += "".join(f"\n{rid}: its memory is BROKEN ({'; '.join(comparison.health[rid].problems)}); its "
                        "outcomes are a broken memory's, not the condition's\n" for rid in broken)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"compare-{utc_now().strftime('%Y%m%d-%H%M%S')}.md"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"compare-{utc_now().strftime('%Y%m%d-%H%M%S')}-{n}.md"
    path.write_text(text, encoding="utf-8")
    return path


async def results_annotations(
    service: RunService, outcomes: Sequence[ProbeOutcome], by: str = "condition",
    *, run_ids: Sequence[str] | None = None,
) -> RowAnnotations:
    """The Health and Covers cells of the Results screen's rows, and the notes under the table
    (:func:`~mempa_tui.runner._health.row_annotations`, as ``mempa results`` prints them): a run
    whose memory is broken is marked on its row and named in a note, never averaged in silently;
    a row that pools other users, probes or repeat counts than the rest is marked ``*``.

    Args:
        service: the app's engine service.
        outcomes: the probe outcomes the screen shows (of :meth:`RunService.outcomes`).
        by: the screen's grouping.
        run_ids: the runs the outcomes come from (one timeline's group); default every run of
            :meth:`RunService.result_run_ids`.

    Raises:
        StoreError: the database is not readable.
    """
    if not outcomes or (service._store is None and not service.database.is_file()):
        return RowAnnotations(health={}, covers={}, notes=[])
    store = await service.store()
    wanted = set(run_ids if run_ids is not None else await service.result_run_ids())
    runs = [r for r in await store.list_runs() if r.id in wanted]
    return row_annotations(runs, await runs_health(store, runs), outcomes, by=by,
                           repeats=await runs_pa_repeats(store, runs))


async def results_validity(
    service: RunService, outcomes: Sequence[ProbeOutcome], *, run_ids: Sequence[str] | None = None,
) -> list[str]:
    """The lines under the Results screen's table on what its scores could reach without memory
    and the Oracle check (:func:`~mempa_tui.runner._validity.validity_lines`, as ``mempa results``
    prints them): the random-selection reference, a fixed choice that scores PSA and CS 100, runs
    whose PA picked one setting throughout an attribute, and the Oracle run's hit rate or the
    command that plays one.

    Args:
        service: the app's engine service.
        outcomes: the probe outcomes the screen shows.
        run_ids: the runs they come from (one timeline's group); default every shown run.

    Returns:
        The lines; empty without outcomes or a database.

    Raises:
        StoreError: the database is not readable.
    """
    if not outcomes or (service._store is None and not service.database.is_file()):
        return []
    store = await service.store()
    wanted = set(run_ids if run_ids is not None else await service.result_run_ids())
    runs = [r for r in await store.list_runs() if r.id in wanted]
    return await validity_lines(store, runs, outcomes)


def play_from_record(config_json: str) -> PlayRequest | None:
    """The play a stored run records, or None when it is a runner's run.

    A play (``play-<seat>-<step>-<time>``, :func:`~mempa_tui.runner.play.play_step`) stores its
    :class:`~mempa_tui.runner.play.PlayRequest` as the run configuration; a runner's run stores a
    :class:`~mempa_tui.runner.RunConfig`, which has no ``seat`` and so never reads as a play.
    """
    try:
        return PlayRequest.model_validate_json(config_json)
    except ValidationError:
        return None


def request_from_record(config_json: str, repeats: int | None = None, *, run_id: str | None = None) -> RunRequest:
    """The request that resumes or shows a stored run (same user, condition, profile, seed, options).

    Args:
        config_json: the run record's ``config_json``.
        repeats: replaces the stored repeats when given.
        run_id: the stored run's id; a play's request is keyed by it (``RunRequest.stored_id``).

    Returns:
        A runner request, or for a play a request carrying ``play`` (never handed to the runner).

    Raises:
        ValueError: the stored configuration is neither a run's nor a play's (names the first problem).
    """
    try:
        config = RunConfig.model_validate_json(config_json)
    except ValidationError as exc:
        play = play_from_record(config_json)
        if play is not None:
            return RunRequest(user=play.user, memory=play.memory, profile=play.profile, repeats=1,
                              play=play, stored_id=run_id)
        raise ValueError(f"stored run configuration is not readable: {exc.errors()[0]['msg']}") from None
    return RunRequest(
        user=config.user, memory=config.memory, profile=config.profile,
        repeats=repeats or config.repeats, seed=config.seed,
        memory_options=dict(config.memory_options), donor_run=config.donor_run, slice=config.slice,
        quick=config.quick,
    )


def _stored_offer(config_json: str) -> tuple[str, ...] | None:
    """A stored run's ``offered_tool_domains`` (None: every tool, or not a run's configuration:
    whoever opens the run reports that)."""
    try:
        return RunConfig.model_validate_json(config_json).offered_tool_domains
    except ValidationError:
        return None


def _stored_budget(config_json: str) -> tuple[dict[str, int], str] | None:
    """A stored run's ``file_memory_budget`` and what it played (``timeline_kind``; None: not a
    run's configuration)."""
    try:
        config = RunConfig.model_validate_json(config_json)
    except ValidationError:
        return None
    return config.file_memory_budget, config.timeline_kind


def _stored_donor(config_json: str) -> str | None:
    """A stored run's configured ``donor_run`` (None: none, or not a run's configuration)."""
    try:
        return RunConfig.model_validate_json(config_json).donor_run
    except ValidationError:
        return None


def memory_thresholds(run: RunRecord, donor: RunRecord | None) -> str:
    """File memory's thresholds as a stored run used them, for the memory panel (issue 12).

    The values are the run's stored ``file_memory_budget`` (scaled to the window, or set by
    ``--memory-option``), worded by :func:`mempa_tui.runner._settings.thresholds_text`; never the
    File memory defaults (20,000 -> 10,000), which a run on a small window does not use.

    Args:
        run: the stored run.
        donor: for a No Memory or Oracle run, the File memory run it probes from (None: none stored).

    Returns:
        ``File memory consolidates at 13,401 -> 6,700 tokens of PA prompt (...)`` for a File memory
        run, ``donor's File memory consolidates at ...`` for a reference run with a stored donor,
        and ``""`` for other conditions (no thresholds) or a configuration that is not a run's.
    """
    if run.memory == "file":
        stored = _stored_budget(run.config_json)
        return thresholds_text(stored[0], kind=stored[1]) if stored is not None else ""
    if run.memory in ("none", "oracle") and donor is not None:
        stored = _stored_budget(donor.config_json)
        return "donor's " + thresholds_text(stored[0], kind=stored[1]) if stored is not None else ""
    return ""


class _LineSink(io.StringIO):
    """A text stream that hands each complete line to a callback (the runtime's progress lines)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__()
        self._say = say
        self._partial = ""

    def write(self, text: str) -> int:
        """Forward complete lines; keep the rest until its newline arrives."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self._say(line.strip())
        return len(text)


class _NoModel:
    """The model client of a memory rebuilt only to be inspected: it must never be called."""

    async def complete(
        self, role: Role, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None, json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Refuse: inspecting a checkpoint makes no model call."""
        raise RuntimeError("inspecting a stored memory makes no model call")

    def count_tokens(self, text: str) -> int:
        """A rough token estimate (four characters a token) for the inspection's counters."""
        return (len(text) + 3) // 4


class RunService:
    """Opens the run store, brings up model runtimes once per profile, and plays requests.

    Args:
        settings: the app's folders.
        options: runner settings the app does not show.

    Use :meth:`aclose` when the app ends (closes the store, stops embedded servers).
    """

    def __init__(self, settings: AppSettings, options: RunnerOptions | None = None) -> None:
        self.settings = settings
        self.options = options or RunnerOptions()
        self._store: RunStore | None = None
        self._stack = AsyncExitStack()
        self._lock = anyio.Lock()
        self._runtime_lock = anyio.Lock()
        self._clients: dict[str, LLMClient] = {}
        self._runtimes: dict[str, PreparedRuntime] = {}
        """Profile name -> its runtime as brought up (the embedded server, warmed per offer)."""
        self._live_plays: list[tuple[PlayRequest, datetime]] = []
        """Plays in progress in this app: the request and when it was handed to the engine."""

    @property
    def database(self) -> Path:
        """The run database's path (a saves path that is a file is reported when the store opens)."""
        return Path(self.settings.saves_dir) / DATABASE_NAME

    async def store(self) -> RunStore:
        """The open run store (opened, and created if missing, on first use).

        Raises:
            StoreError: the file is not a usable run database.
        """
        async with self._lock:
            if self._store is None:
                self._store = await RunStore(self.database).open()
            return self._store

    async def saved_runs(self) -> list[RunSummary]:
        """Stored runs with their progress, newest first; none when no database exists yet."""
        if self._store is None and not self.database.is_file():
            return []
        store = await self.store()
        summaries = await store.summaries()
        return sorted(summaries, key=lambda s: s.run.updated_at, reverse=True)

    async def _client(self, profile_name: str, say: Callable[[str], None],
                      offer: tuple[str, ...] | None = None) -> LLMClient:
        """One client per profile, its runtime prepared once (embedded server kept running), with
        the PA prefix of ``offer`` ready on it.

        The embedded server keeps the KV state of the PA's fixed prefix (instructions and the
        offered tools, :func:`~mempa_tui.runner.setup.pa_prefix`). A request warms the prefix of
        the offer its PA will see: a quick start's domains (about 5,000 tokens for user A) rather
        than all 83 tools (about 19,350 tokens, minutes of CPU when first read). A later request
        with another offer warms that one on the server already running; no second server starts.

        Args:
            profile_name: the profile file's stem.
            say: receives progress lines.
            offer: the request's ``offered_tool_domains`` (None: every tool).
        """
        async with self._runtime_lock:
            client = self._clients.get(profile_name)
            prefix = pa_prefix(offer)
            if client is None:
                profile: ModelProfile = load_profile(profile_name, self.settings.models_dir)
                runtime = await open_runtime(profile, self._stack, _LineSink(say), prefix=prefix)
                self._runtimes[profile_name] = runtime
                client = self._clients[profile_name] = LLMClient(runtime.profile)
            else:
                await self._runtimes[profile_name].warm(prefix, _LineSink(say))
            return client

    async def execute(
        self, request: RunRequest, observer: RunObserver, say: Callable[[str], None]
    ) -> RunOutcome:
        """Play one request to its end (or until cancelled: the run is then stored as stopped).

        Args:
            request: what to run.
            observer: receives the runner's events (must not block).
            say: receives progress lines while the runtime comes up.

        Returns:
            The run's outcome.

        Raises:
            RunSetupError / WorldFileError / ProfileError / ConfigMismatchError / DonorError /
            StoreError / LLMError: as ``mempa run`` raises them (see :func:`error_line`).
        """
        profile = load_profile(request.profile, self.settings.models_dir)
        config = await anyio.to_thread.run_sync(lambda: build_run_config(
            user=request.user, memory=request.memory, profile=profile, worlds=self.settings.worlds_dir,
            repeats=request.repeats, seed=request.seed, donor=request.donor_run,
            memory_options=dict(request.memory_options),
            probe_concurrency=self.settings.probe_concurrency, slice=request.slice, quick=request.quick,
        ))
        client = await self._client(request.profile, say, config.offered_tool_domains)
        store = await self.store()
        extra: dict[str, Any] = {"resamples": self.options.resamples}
        if self.options.scorer is not None:
            extra["scorer"] = self.options.scorer
        runner = Runner(
            config, store, client, default_registry(), observer,
            memory_root=self.settings.local_memory_dir, reports_root=self.settings.saves_dir,
            fresh=request.fresh, **extra,
        )
        return await runner.run()

    async def play(
        self,
        request: PlayRequest,
        *,
        user_seat: HumanUserSeat | None = None,
        agent_seat: HumanAgentSeat | None = None,
        observer: Callable[[EpisodeEvent], None] | None = None,
        say: Callable[[str], None] = lambda _line: None,
    ) -> PlayOutcome:
        """Play one step with a person in a seat (see :func:`mempa_tui.runner.play.play_step`).

        Args:
            request: what to play (its ``worlds_dir`` is replaced by the app's worlds folder).
            user_seat / agent_seat: the person's seat.
            observer: receives every episode event as it happens.
            say: receives progress lines while the runtime comes up, then the tools the PA is
                offered (:func:`~mempa_tui.runner.play.play_offer`: a quick start's step played
                from that quick start's checkpoint offers its domains; otherwise all 83), whose
                PA prefix is the one warmed on the embedded server, and the memory options the
                play carries from its source run (:func:`~mempa_tui.runner.play.play_memory`).

        Raises:
            ProfileError / WorldFileError / ValueError / LLMError / StoreError: as
            :func:`~mempa_tui.runner.play.play_step` raises them (see :func:`error_line`).
        """
        request = request.model_copy(update={"worlds_dir": self.settings.worlds_dir})
        store = await self.store()
        offer = await play_offer(request, store)
        client = await self._client(request.profile, say, offer)
        memory = await play_memory(request, store)
        say(offered_tools_text(offer) + (f"; {memory.text}" if memory.text else ""))
        live = (request, utc_now())
        self._live_plays.append(live)
        try:
            return await play_step(
                request, store, client,
                default_registry(), user_seat=user_seat, agent_seat=agent_seat, observer=observer,
                memory_root=self.settings.local_memory_dir, scorer=self.options.scorer,
            )
        finally:
            self._live_plays.remove(live)

    def shown_status(self, run: RunRecord, *, active_here: bool = False) -> str:
        """The status to show for stored run ``run``: its stored status, except that a stored
        ``running`` that nobody plays any more reads ``interrupted`` (issue 6.2).

        A runner's run is live while some process holds its lease (or ``active_here``: this app's
        dashboard plays it); a play is live while this app plays the same seat, user and step and
        the stored play was created after that play began.

        Args:
            run: the stored run.
            active_here: the app's run book has the run preparing or playing.

        Returns:
            ``running``, ``interrupted`` or the stored status's value.
        """
        if run.status is not RunStatus.RUNNING:
            return run.status.value
        play = play_from_record(run.config_json)
        if play is None:
            live = active_here or run_is_being_played(self.database, run.id)
        else:
            live = any(
                (p.seat, p.user, p.step_id) == (play.seat, play.user, play.step_id) and run.created_at >= began
                for p, began in self._live_plays
            )
        return "running" if live else "interrupted"

    async def mark_cancelled(self, run_id: str, message: str) -> bool:
        """Store run ``run_id`` as ``cancelled`` with ``message`` (its steps and checkpoints stay).

        Returns:
            False when the store has no such run (it was cancelled before its record was written).

        Raises:
            StoreError: the database cannot be written.
        """
        store = await self.store()
        if await store.get_run(run_id) is None:
            return False
        await store.update_run(run_id, status=RunStatus.CANCELLED, error=message)
        return True

    async def stored_events(self, run_id: str, last_steps: int = 3) -> list[StepEvent | StoredEvent]:
        """The stored transcript of a run's last ``last_steps`` timeline steps, in order.

        Rows that are not episode events come back as :class:`StoredEvent`.
        A run without timeline steps (a probe played by a person, a No Memory or Oracle run)
        shows its last ``last_steps`` probe results' transcripts instead.
        """
        store = await self.store()
        places: list[tuple[str, int]] = [(s.step_id, 0) for s in (await store.steps(run_id))[-last_steps:]]
        if not places:
            places = [(p.probe_id, p.repeat) for p in (await store.probe_results(run_id))[-last_steps:]]
        out: list[StepEvent | StoredEvent] = []
        for step_id, repeat in places:
            for row in await store.transcript(run_id, step_id, repeat):
                try:
                    event = episode_event_adapter.validate_json(row.event_json)
                except ValidationError:
                    out.append(StoredEvent(kind=row.kind, text=row.event_json))
                    continue
                out.append(StepEvent(run_id=run_id, step_id=step_id, repeat=repeat, event=event))
        return out

    async def checkpoint_memory(self, run_id: str) -> tuple[MemoryInspection, str] | None:
        """The memory as stored in the run's latest checkpoint, and which step that was.

        The memory is rebuilt in a scratch folder (the run's own folder is left alone) from the
        stored snapshot and inspected; no model is called.

        Returns:
            ``(inspection, origin)``, or None when the run has no checkpoint with a memory.

        Raises:
            MemoryConfigError / SnapshotError: the stored condition or snapshot is unusable.
            ValueError: the stored configuration is neither a run's nor a play's.
        """
        store = await self.store()
        record = await store.get_run(run_id)
        checkpoint = await store.latest_checkpoint(run_id)
        if record is None or checkpoint is None or checkpoint.memory_blob is None:
            return None
        request = request_from_record(record.config_json, run_id=run_id)
        blob = await store.load_blob(checkpoint.memory_blob)

        options: dict[str, Any] = dict(request.memory_options)
        if request.memory == "file":  # the run's thresholds (scaled to its window), not the defaults
            stored = _stored_budget(record.config_json)
            budget = stored[0] if stored is not None else {}
            for key in ("consolidate_at_tokens", "consolidate_to_tokens"):
                if key in budget:
                    options.setdefault(key, budget[key])

        def rebuild() -> MemoryInspection:
            with tempfile.TemporaryDirectory(prefix="mempa-inspect-") as folder:
                memory = make_memory(request.memory, client=_NoModel(), folder=Path(folder), **options)
                memory.restore(blob)
                return memory.inspect()

        inspection = await anyio.to_thread.run_sync(rebuild)
        where = "the start" if checkpoint.step_index < 0 else f"step {checkpoint.step_index + 1} ({checkpoint.step_id})"
        return inspection, f"checkpoint after {where}"

    async def memory_thresholds(self, run_id: str) -> str:
        """File memory's thresholds the stored run used (a reference run: its donor's), worded
        for the memory panel by :func:`memory_thresholds`; ``""`` for an unknown run, a
        condition without thresholds, or no database."""
        if self._store is None and not self.database.is_file():
            return ""
        store = await self.store()
        record = await store.get_run(run_id)
        if record is None:
            return ""
        donor_id = record.donor_run or _stored_donor(record.config_json)
        donor = await store.get_run(donor_id) if donor_id else None
        return memory_thresholds(record, donor)

    # ---- run browser (issue 16) ------------------------------------------------------------

    async def browse_runs(self, active: Sequence[str] = ()) -> list[BrowsedRun]:
        """Every stored run (archived ``~N`` copies and plays included), newest first, with what
        it played and its memory health; none without a database.

        Args:
            active: run ids this app is playing now (their status reads ``running``).

        Raises:
            StoreError: the database is not a usable run database.
        """
        summaries = await self.saved_runs()
        if not summaries:
            return []
        store = await self.store()
        health = await runs_health(store, [s.run for s in summaries])
        out = []
        for s in summaries:
            run = s.run
            h = health[run.id]
            out.append(BrowsedRun(
                run_id=run.id, user=run.user, memory=run.memory, profile=run.profile, played=_played(run),
                donor=run.donor_run,
                status=self.shown_status(run, active_here=run.id in active),
                steps=f"{s.steps_done}/{run.total_steps}" if run.total_steps else "-",
                probes=f"{s.probes_done}/{run.total_probes}", health=h.short(), health_text=h.text(),
            ))
        return out

    async def run_listing(self, run_id: str) -> RunListing:
        """A stored run's timeline steps and probe repeats with outcomes and health
        (:func:`mempa_tui.runner._browse.run_listing`).

        Raises:
            BrowseError: no such run (the message lists the stored runs).
        """
        return await run_listing(await self.store(), run_id)

    async def step_details(self, run_id: str, step_id: str, repeat: int | None = None) -> list[StepDetail]:
        """One step, or a probe's repeats (all, or ``repeat``), in full: stored transcript, model
        calls, selection, target and scores (:func:`mempa_tui.runner._browse.step_details`).

        Raises:
            BrowseError: no such run, step or probe repeat.
        """
        return await step_details(await self.store(), run_id, step_id, repeat)

    async def model_call(self, run_id: str, call_id: int) -> ModelCallDetail:
        """One stored model call with its prompt and reply, read and decompressed on demand
        (:func:`mempa_tui.runner._browse.model_call`).

        Raises:
            BrowseError: no such run or call, or its stored prompt cannot be read.
        """
        return await model_call(await self.store(), run_id, call_id)

    async def step_memory(self, run_id: str, step_id: str, repeat: int | None = None) -> MemoryView:
        """The memory's contents at the checkpoint a step ended with or a probe started from
        (:func:`mempa_tui.runner._browse.checkpoint_memory`; rebuilt in a scratch folder, no
        model call; a failure to rebuild comes back as the view's ``note``).

        Raises:
            BrowseError: no such run, step or probe repeat.
        """
        store = await self.store()
        return await checkpoint_memory(store, run_id, step_id, repeat)

    async def stepper_choices(self, run_id: str) -> StepperChoices:
        """The probes and checkpoints a stored run offers the probe stepper (store reads only).

        Raises:
            StepperError / WorldFileError: unknown run, unreadable configuration or world files.
        """
        return await stepper_choices(await self.store(), run_id, worlds_dir=self.settings.worlds_dir)

    async def open_stepper(
        self, run_id: str, probe_id: str, checkpoint_index: int | None, say: Callable[[str], None]
    ) -> ProbeStepper:
        """A probe stepper on a private branch of a stored run (enter it to start).

        The run's profile is brought up like a run's (one client per profile, shared); the
        scorer is the app's (:attr:`RunnerOptions.scorer`, else the runner's judge and rater).

        Raises:
            StepperError / WorldFileError / ProfileError / LLMError: as the stepper and runtime do.
        """
        store = await self.store()
        record = await store.get_run(run_id)
        if record is None:
            raise StepperError(f"no run {run_id!r} in {store.path}")
        client = await self._client(record.profile, say, _stored_offer(record.config_json))
        return await ProbeStepper.open(
            store, run_id, probe_id, client=client, checkpoint_index=checkpoint_index,
            worlds_dir=self.settings.worlds_dir, scorer=self.options.scorer,
        )

    async def outcomes(self, run_ids: Sequence[str] | None = None) -> list[ProbeOutcome]:
        """Probe outcomes of the stored runs; none without a database.

        By default every run except archived ones (``<id>~N``, moved aside by ``--fresh``: they
        would collide with the run that replaced them) and plays, as ``mempa results`` shows them.
        """
        if self._store is None and not self.database.is_file():
            return []
        store = await self.store()
        if run_ids is None:
            run_ids = await self.result_run_ids()
        return await stored_outcomes(store, run_ids)

    async def result_run_ids(self) -> list[str]:
        """The runs the Results screen reads by default: every stored run except archived ones
        (``<id>~N``) and plays, as ``mempa results`` shows them; none without a database."""
        if self._store is None and not self.database.is_file():
            return []
        from mempa_tui.runner._pooling import is_play

        return [r.id for r in await (await self.store()).list_runs() if "~" not in r.id and not is_play(r.id)]

    async def partial_runs(self) -> list[str]:
        """Stored runs whose probes are not all done (``<id> <done>/<total> probes``); none
        without a database."""
        if self._store is None and not self.database.is_file():
            return []
        return await partial_runs(await self.store())

    async def aclose(self) -> None:
        """Close the store and stop the model runtimes this service started (idempotent)."""
        async with self._lock, self._runtime_lock:
            store, self._store = self._store, None
            self._clients.clear()
            self._runtimes.clear()
            try:
                if store is not None:
                    await store.close()
            finally:
                await self._stack.aclose()
