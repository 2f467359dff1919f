"""The run layer: open or resume a run, play its timeline, run its probes, write its report.

``Runner(config, store, client, registry).run()`` is the whole protocol for one user x profile x
memory condition (SPEC section 4.8); :func:`run_many` runs several with anyio, accumulating runs
first so No Memory and Oracle find their donors.

Resuming: the run id is derived from the config's identity (user, memory, profile, seed), so the
same command finds the stored run. Its config hash must match; otherwise the runner refuses with a
:class:`~mempa_tui.runner.config.ConfigMismatchError` naming the fields that differ. ``fresh=True``
moves the stored run aside (``<id>~N``) and starts over.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from pydantic import BaseModel, Field, ValidationError

from mempa_tui.memory import is_plugin_spec, make_memory, plugin_identity
from mempa_tui.runner._budget import file_memory_budget, prompt_budget, window_problem
from mempa_tui.runner._calls import install_call_routing
from mempa_tui.runner._lease import RunLease
from mempa_tui.runner._probes import plan_probes, run_probes
from mempa_tui.runner._scoring import ProbeScorer, default_scorer
from mempa_tui.runner._settings import settings_line
from mempa_tui.runner._shared import EpisodeFunctions, RunContext
from mempa_tui.runner._timeline import play_timeline
from mempa_tui.runner.config import (
    PROBE_ONLY_CONDITIONS,
    ConfigMismatchError,
    RunConfig,
    config_diff,
    profile_fingerprint,
    worlds_digest,
)
from mempa_tui.runner.progress import RunObserver, RunProgress
from mempa_tui.runner.report import RunReport, write_run_report
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunRecord, RunStatus, RunStore

if TYPE_CHECKING:
    from mempa_tui.llm import LLMClient, ModelProfile
    from mempa_tui.llm._watch import CallWait
    from mempa_tui.scripts.loader import UserBundle
    from mempa_tui.tools import ToolRegistry

__all__ = [
    "DONOR_CONDITION",
    "DonorError",
    "RunOutcome",
    "Runner",
    "batch_donor_problems",
    "check_memory_options",
    "donor_problem",
    "filled_config",
    "play_donor_first",
    "resume_problems",
    "run_many",
    "runs_already_complete",
]


DONOR_CONDITION = "file"
"""The memory condition whose checkpoints No Memory and Oracle probe from (paper Section 4,
'Reference Condition Runs': one File memory run of the same user is the donor for every backbone)."""


class DonorError(ValueError):
    """The donor run named for No Memory or Oracle is missing or does not fit (user, condition)."""


def play_donor_first(config: RunConfig) -> str:
    """The command line that plays the File memory run a reference run ``config`` could probe from.

    Returns:
        e.g. ``mempa run --user A --memory file --model embedded --seed 0 --slice`` and its run id.
    """
    donor = config.model_copy(update={"memory": DONOR_CONDITION, "donor_run": None})
    slice_flag = " --quick" if config.quick else " --slice" if config.slice else ""
    return (f"`mempa run --user {config.user} --memory {DONOR_CONDITION} --model {config.profile} "
            f"--seed {config.seed}{slice_flag}` (run {donor.run_id})")


class RunOutcome(BaseModel):
    """How a run call ended."""

    run_id: str
    """The run."""
    status: RunStatus
    """``completed`` or ``stopped`` (probes waiting for a checkpoint)."""
    progress: RunProgress
    """Final progress."""
    report: RunReport | None = None
    """The written report (None when no probe result exists yet)."""
    notes: list[str] = Field(default_factory=list)
    """Warnings and problems worth printing (donor choice, probes that could not run)."""


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first


def check_memory_options(config: RunConfig, client: LLMClient, registry: ToolRegistry | None = None) -> None:
    """Build ``config``'s memory condition once in a scratch folder, so a bad option is refused
    before the run is stored (a stored run with a typo in its options could not be resumed with
    the fix), before ``mempa run`` starts a model server (finding 10), and, for several
    conditions in one command, before any of them plays. No model is called.

    Args:
        config: the run's configuration.
        client: the run's client (its profile sets the PA's window).
        registry: the world tools; with it, File memory's defaults are scaled to the room the PA's
            window leaves beside the tools the run offers (``config.offered_tool_domains``), as
            the run will scale them, so a message names the value the run would use (None: the
            paper's 20,000 -> 10,000).

    Raises:
        MemoryConfigError: the condition or one of its options is invalid (names which and why).
    """
    room = None
    if registry is not None:
        room = prompt_budget(client, registry.restricted(config.offered_tool_domains)).room
    with tempfile.TemporaryDirectory(prefix="mempa-memory-check-") as scratch:
        make_memory(config.memory, client=client, folder=Path(scratch), context_window=room,
                    **config.memory_options)


def filled_config(config: RunConfig, profile: ModelProfile) -> tuple[UserBundle, RunConfig]:
    """Load the run's world files (sliced for a slice run) and fill the fields a run stores but a
    command line does not give: the worlds digest, the profile's fingerprint and, for a quick
    start, the tool domains offered to the PA (``offered_tool_domains``, issue 12).

    Raises:
        WorldFileError: the user's world files are invalid.
        MemoryPluginError: a plugin condition cannot be loaded (its version is recorded).
    """
    bundle = load_user(config.worlds_dir, config.user)
    if config.quick:
        if config.offered_tool_domains is None:  # issue 12: a quick start offers its domains' tools
            from mempa_tui.runner.setup import quick_tool_domains

            config = config.model_copy(update={"offered_tool_domains": quick_tool_domains(bundle)})
        bundle = bundle.quick_start()
    elif config.slice:
        bundle = bundle.sliced()
    if not config.worlds_digest:
        config = config.model_copy(update={"worlds_digest": worlds_digest(bundle.root)})
    if not config.profile_models:
        config = config.model_copy(update={"profile_models": profile_fingerprint(profile)})
    if not config.memory_version and is_plugin_spec(config.memory):  # results name a plugin's version
        config = config.model_copy(update={"memory_version": plugin_identity(config.memory)})
    return bundle, config


def resume_problems(config: RunConfig, stored: RunRecord, profile: ModelProfile) -> list[str]:
    """Why ``stored`` could not be resumed with ``config`` (``field: stored -> current`` lines;
    empty when it can), checked before a batch plays anything. A reference run's donor is left
    out: it is chosen when the run starts.

    Raises:
        WorldFileError: the user's world files are invalid.
    """
    _bundle, full = filled_config(config, profile)
    problems = config_diff(stored.config_json, full)
    if not config.accumulates:
        problems = [p for p in problems if not p.startswith("donor_run")]
    return problems


async def runs_already_complete(configs: Sequence[RunConfig], store: RunStore, profile: ModelProfile) -> bool:
    """Whether playing ``configs`` again would only print their results: each is stored, completed,
    with the same configuration (:func:`resume_problems` empty) and, for a reference run given a
    donor (``--donor``), that same donor. A completed run has every step and probe repeat stored,
    so its rerun makes no model call (README: "rerun the same command to resume"), and the caller
    can leave the model runtime (the embedded server, the Ollama check) unstarted.

    Args:
        configs: the runs a command asks for (not ``--fresh``: that plays them over).
        store: the open run store.
        profile: the loaded model profile (its models are part of the configuration).

    Returns:
        True when every run is complete; False when any has something to play or differs (the
        run itself then says what), or ``configs`` is empty.

    Raises:
        WorldFileError: the user's world files are invalid.
    """
    if not configs:
        return False
    for config in configs:
        stored = await store.get_run(config.run_id)
        if stored is None or stored.status is not RunStatus.COMPLETED or resume_problems(config, stored, profile):
            return False
        if config.donor_run is not None and config.donor_run != stored.donor_run:
            return False
    return True


def donor_problem(config: RunConfig, donor: RunRecord | None, store_path: Path | None = None) -> str | None:
    """Why ``donor`` cannot lend its checkpoints to the No Memory / Oracle run ``config`` (None: it can).

    Paper Section 4 ('Reference Condition Runs'): reference conditions probe from the checkpoints of
    a File memory run of the same user. The donor must exist, be of the same user, be a File memory
    run (never another memory condition), have completed, and have played the same timeline: the
    quick-start slice or the whole timeline (a slice's final probes expect only the slice's change
    events), from the same world files (when both digests are known), offering the PA the same
    tools (a quick start's ``offered_tool_domains``, issue 12).

    Args:
        config: the reference run's config; ``config.donor_run`` names the donor.
        donor: the stored donor run, None when there is none by that id.
        store_path: the run database, named in the "not found" message.
    """
    if donor is None:
        where = f" in {store_path}" if store_path is not None else ""
        return f"donor run {config.donor_run!r} not found{where} (see `mempa runs`)"
    if donor.user != config.user:
        return f"donor run {donor.id} is of user {donor.user}, not {config.user}"
    if donor.memory in PROBE_ONLY_CONDITIONS:
        return f"donor run {donor.id} is a {donor.memory} run and has no timeline checkpoints"
    if donor.memory != DONOR_CONDITION:
        return (f"donor run {donor.id} is a {donor.memory} run; No Memory and Oracle probe only from a "
                f"File memory run's checkpoints (paper Section 4), e.g. {play_donor_first(config)}")
    if donor.status is not RunStatus.COMPLETED:
        return (f"donor run {donor.id} has not completed (it is {donor.status.value}); play it to its end "
                f"first, e.g. {play_donor_first(config)}")
    try:
        theirs = RunConfig.model_validate_json(donor.config_json)
    except ValidationError:
        return f"donor run {donor.id} has a stored configuration this version cannot read"
    if theirs.timeline_kind != config.timeline_kind:
        flag = " (--quick)" if config.quick else " (--slice)" if config.slice else ""
        return (f"donor run {donor.id} played the {theirs.timeline_kind}, but this run probes the "
                f"{config.timeline_kind}{flag}")
    unfilled = config.quick and config.offered_tool_domains is None  # filled when the run starts
    if not unfilled and theirs.offered_tool_domains != config.offered_tool_domains:
        return (f"donor run {donor.id} offered the PA other tools than this run would "
                f"({theirs.offered_tools_text} there; {config.offered_tools_text} here): a reference run "
                f"probes with the tools its donor offered; add --fresh to the donor to replay it")
    if theirs.worlds_digest and config.worlds_digest and theirs.worlds_digest != config.worlds_digest:
        return (f"donor run {donor.id} played other world files for user {config.user} "
                f"(worlds digest {theirs.worlds_digest[:12]}, now {config.worlds_digest[:12]})")
    return None


class Runner:
    """Plays one run end to end, resuming from its last checkpoint.

    Args:
        config: the run's configuration.
        store: the open run store.
        client: the model client (shared by runs; its call log is routed per step).
        registry: the world tool registry.
        observer: receives :class:`~mempa_tui.runner.progress.RunEvent` and
            :class:`~mempa_tui.runner.progress.StepEvent` objects.
        memory_root: parent of the per-run memory folders (``local_memory``).
        reports_root: parent of the per-run report folders (default: the store's folder).
        fresh: move a stored run with the same id aside and start over.
        probes_only: skip the timeline; probe from the checkpoints that exist.
        episodes: the episode loop's functions (tests may substitute).
        scorer: computes BRS and PRS for completed final probes.
        resamples: bootstrap resamples of the report.
        preferred_donor: No Memory / Oracle without a named or stored donor: probe from this run
            when it fits (a completed File memory run of the same user, timeline and world files),
            else from the latest completed File memory run that fits (``run_many`` passes the
            batch's own File memory run); with none, the run is refused (:class:`DonorError`).
    """

    def __init__(
        self,
        config: RunConfig,
        store: RunStore,
        client: LLMClient,
        registry: ToolRegistry,
        observer: RunObserver | None = None,
        *,
        memory_root: Path = Path("local_memory"),
        reports_root: Path | None = None,
        fresh: bool = False,
        probes_only: bool = False,
        episodes: EpisodeFunctions | None = None,
        scorer: ProbeScorer | None = None,
        resamples: int = 5000,
        preferred_donor: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.client = client
        self.registry = registry
        self.observer = observer
        self.memory_root = Path(memory_root)
        self.reports_root = Path(reports_root) if reports_root is not None else store.path.parent
        self.fresh = fresh
        self.probes_only = probes_only
        self.episodes = episodes
        self.scorer = scorer or default_scorer
        self.resamples = resamples
        self.preferred_donor = preferred_donor
        self.progress = RunProgress(run_id=config.run_id)
        self._completed_before: tuple[datetime, tuple[object, ...]] | None = None
        """For a run stored as completed: its ``updated_at`` and :meth:`_footprint` before this run."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.config.run_id

    # ---- opening --------------------------------------------------------------------------

    async def _stored_config(self) -> RunConfig | None:
        run = await self.store.get_run(self.run_id)
        if run is None:
            return None
        try:
            return RunConfig.model_validate_json(run.config_json)
        except ValidationError:
            return None

    async def _follow_moved_donor(self, stored: RunConfig, notes: list[str]) -> str:
        """The donor of this stored reference run, under its current id.

        ``--fresh`` on the donor moves it aside as ``<id>~<n>`` and the store points this run's
        ``donor_run`` there (:meth:`RunStore.archive_run`), but the stored configuration still
        names the old id, which is now the new, different run. The configuration is rewritten to
        the moved id, so the run keeps probing from the checkpoints its results came from.
        """
        assert stored.donor_run is not None
        row = await self.store.get_run(self.run_id)
        if row is None or row.donor_run is None or row.donor_run == stored.donor_run:
            return stored.donor_run
        moved = stored.model_copy(update={"donor_run": row.donor_run})
        await self.store.update_run(self.run_id, config=(moved.model_dump_json(), moved.config_hash()))
        notes.append(f"donor run {stored.donor_run} was moved aside as {row.donor_run} (by --fresh); "
                     f"this run goes on probing from it")
        return row.donor_run

    async def _resolve_donor(self, config: RunConfig, notes: list[str]) -> RunConfig:
        """Fill ``donor_run`` for No Memory and Oracle (paper Section 4 'Reference Condition Runs').

        Never falls back to the fixture world: without a File memory donor the run is refused.

        Raises:
            DonorError: the named donor is missing, of another user, not a completed File memory
                run, or played another timeline (slice vs whole, other world files); or there is no
                donor at all (the message names the run to play first).
        """
        if config.accumulates:
            return config
        if config.donor_run is not None:
            why = donor_problem(config, await self.store.get_run(config.donor_run), self.store.path)
            if why is not None:
                raise DonorError(why)
            return config
        stored = None if self.fresh else await self._stored_config()
        if stored is not None and stored.donor_run is not None:
            donor = await self._follow_moved_donor(stored, notes)
            lender = await self.store.get_run(donor)
            if lender is not None and lender.memory != DONOR_CONDITION:  # chosen by an older version
                raise DonorError(
                    f"run {config.run_id} probes from {lender.id}, a {lender.memory} run; No Memory and Oracle "
                    f"probe only from a File memory run's checkpoints (paper Section 4): add --fresh to start it "
                    f"over, e.g. after {play_donor_first(config)}"
                )
            notes.append(f"probing from the checkpoints of donor run {donor} (chosen when this run started)")
            return config.model_copy(update={"donor_run": donor})
        if stored is not None:  # an older version let it probe the fixture world; never again
            raise DonorError(
                f"run {config.run_id} was started without a donor run (it probed the fixture world); add --fresh "
                f"to start it over from a File memory run's checkpoints, e.g. after {play_donor_first(config)}"
            )
        preferred = await self.store.get_run(self.preferred_donor) if self.preferred_donor else None
        if preferred is not None and donor_problem(config.model_copy(update={"donor_run": preferred.id}),
                                                   preferred) is None:
            notes.append(f"probing from the checkpoints of donor run {preferred.id}")
            return config.model_copy(update={"donor_run": preferred.id})
        donor = await self.store.latest_completed_run(
            config.user, config.profile, exclude_memory=PROBE_ONLY_CONDITIONS,
            fits=lambda run: donor_problem(config.model_copy(update={"donor_run": run.id}), run) is None,
        )
        if donor is None:
            raise DonorError(
                f"no completed File memory run of user {config.user} with profile {config.profile} that played "
                f"the same timeline{' (slice)' if config.slice else ' (quick start)' if config.quick else ''}: No Memory and Oracle probe from its "
                f"checkpoints (paper Section 4); play {play_donor_first(config)} first, or name one with --donor"
            )
        notes.append(f"probing from the checkpoints of donor run {donor.id}")
        return config.model_copy(update={"donor_run": donor.id})

    async def _settings(self, config: RunConfig) -> str:
        """The header's settings line: donor, File memory thresholds, decoding (issue 11.4)."""
        donor = await self.store.get_run(config.donor_run) if config.donor_run else None
        donor_budget, donor_kind = None, None
        if donor is not None:
            try:
                donor_config = RunConfig.model_validate_json(donor.config_json)
                donor_budget, donor_kind = donor_config.file_memory_budget, donor_config.timeline_kind
            except ValidationError:
                donor_budget = {}
        return settings_line(config.model_dump(mode="json"), donor_budget=donor_budget, donor_kind=donor_kind)

    async def _open(self, config: RunConfig, notes: list[str]) -> RunRecord:
        existing = await self.store.get_run(config.run_id)
        if existing is not None and self.fresh:
            archived = await self.store.archive_run(config.run_id)
            notes.append(f"moved the stored run {config.run_id} aside as {archived}")
            existing = None
        if existing is not None:
            if existing.config_hash != config.config_hash():
                raise ConfigMismatchError(config.run_id, config_diff(existing.config_json, config))
            await self._store_budget(existing, config)
            return existing
        record = RunRecord(
            id=config.run_id, user=config.user, profile=config.profile, memory=config.memory,
            seed=config.seed, repeats=config.repeats, config_json=config.model_dump_json(),
            config_hash=config.config_hash(), donor_run=config.donor_run,
        )
        await self.store.create_run(record)
        return record

    async def _store_budget(self, existing: RunRecord, config: RunConfig) -> None:
        """Record File memory's thresholds in a stored run's config when it lacks them (runs stored
        before they were recorded; the field is not hashed, so the run id and hash stay)."""
        if not config.file_memory_budget:
            return
        try:
            stored = RunConfig.model_validate_json(existing.config_json)
        except ValidationError:
            return
        if stored.file_memory_budget != config.file_memory_budget:
            updated = stored.model_copy(update={"file_memory_budget": config.file_memory_budget})
            await self.store.update_run(existing.id, config=(updated.model_dump_json(), existing.config_hash))

    # ---- the run --------------------------------------------------------------------------

    async def run(self) -> RunOutcome:
        """Play the run to its end (or as far as its checkpoints allow) and write its report.

        Returns:
            The outcome: ``completed``, or ``stopped`` when probes wait for checkpoints.

        Raises:
            WorldFileError: the user's world files are invalid.
            ConfigMismatchError: the stored run has a different config (names the fields).
            DonorError: the named donor run does not fit.
            MemoryConfigError: invalid memory options.
            RunBusyError: another process is playing this run right now.
            Exception: a model or store error stops the run (stored as ``failed``; rerun resumes).
        """
        async with RunLease(self.store.path, self.run_id):
            return await self._run_leased()

    def _check_memory_options(self) -> None:
        # a quick start's offer is filled in later (filled_config): until then the whole registry
        # would give a smaller room than the run's, so the paper's values are checked instead
        unfilled = self.config.quick and self.config.offered_tool_domains is None
        check_memory_options(self.config, self.client, None if unfilled else self.registry)

    async def _run_leased(self) -> RunOutcome:
        notes: list[str] = []
        self._check_memory_options()
        bundle, config = filled_config(self.config, self.client.profile)
        # A quick start offers the PA only its domains' tools, in every step and probe (issue 12).
        self.registry = self.registry.restricted(config.offered_tool_domains)
        budget = prompt_budget(self.client, self.registry)
        if (too_small := window_problem(budget)) is not None:
            notes.append(f"warning: {too_small}")
        config = await self._resolve_donor(config, notes)
        if config.memory == DONOR_CONDITION:  # printed below and stored with the run (issue 11.4)
            config = config.model_copy(update={"file_memory_budget": file_memory_budget(config, budget)})
        stored = None if self.fresh else await self.store.get_run(config.run_id)
        if stored is not None and stored.status is RunStatus.COMPLETED:
            self._completed_before = (stored.updated_at, await self._footprint(stored.id))
        await self._open(config, notes)
        self.config = config
        install_call_routing(self.client)
        ctx = RunContext(
            config=config, store=self.store, client=self.client, registry=self.registry,
            bundle=bundle, episodes=self.episodes or EpisodeFunctions.default(),
            memory_root=self.memory_root, observer=self.observer, progress=self.progress,
        )
        steps_total = len(bundle.timeline.steps) if config.accumulates else 0
        probes_total = len(bundle.probes) * config.repeats
        self.progress.steps_total, self.progress.probes_total = steps_total, probes_total
        self.progress.probes_done = len(await self.store.done_probes(self.run_id))
        self.progress.tokens = await self.store.token_totals(self.run_id)
        await self.store.update_run(self.run_id, status=RunStatus.RUNNING, total_steps=steps_total,
                                    total_probes=probes_total, clear_error=True)
        for note in notes:
            ctx.warn(note)
        steps_said = f"{steps_total} steps" if config.accumulates else "no steps of its own (probes from its donor)"
        ctx.emit("run_started", f"run {self.run_id}: {steps_said}, {probes_total} probe repeats\n"
                 f"  settings: {await self._settings(config)}\n"
                 f"  {config.offered_tools_text}")
        def waiting(wait: CallWait) -> None:  # a hung call shows (finding: runs waited silently)
            ctx.emit("model_waiting", wait.line, step_id=ctx.progress.current)

        self.client.wait_listeners.append(waiting)
        try:
            return await self._play(ctx, notes)
        except anyio.get_cancelled_exc_class():
            await self._stopped(ctx, RunStatus.STOPPED, "stopped before the end; run it again (without --fresh) to resume")
            raise
        except BaseExceptionGroup as group:
            error = _first_error(group)
            await self._stopped(ctx, RunStatus.FAILED, f"{type(error).__name__}: {error}")
            raise error from group
        except Exception as exc:
            await self._stopped(ctx, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            if waiting in self.client.wait_listeners:
                self.client.wait_listeners.remove(waiting)

    async def _play(self, ctx: RunContext, notes: list[str]) -> RunOutcome:
        if ctx.config.accumulates and not self.probes_only:
            self.progress.phase = "timeline"
            await play_timeline(ctx)
        elif ctx.config.accumulates:  # --probes-only: the timeline stands where it was left
            self.progress.steps_done = len(await self.store.steps(self.run_id))
        self.progress.phase = "probes"
        units, problems = await plan_probes(ctx, ctx.config.donor_run)
        for problem in problems:
            ctx.warn(problem)
        await run_probes(ctx, units, self.scorer)
        self.progress.phase = "scoring"
        report = await write_run_report(self.store, self.run_id, self.reports_root, resamples=self.resamples)
        if report is not None:
            ctx.emit("report_written", f"report: {report.paths.main_md}")
        done = not problems and self.progress.steps_done >= self.progress.steps_total
        status = RunStatus.COMPLETED if done else RunStatus.STOPPED
        self.progress.phase = "done" if done else "stopped"
        # A completed run played again that stored nothing new keeps its time (issue 12.4).
        kept = (self._completed_before[0] if done and self._completed_before is not None
                and await self._footprint(self.run_id) == self._completed_before[1] else None)
        await self.store.update_run(self.run_id, status=status, error=None if done else "; ".join(problems),
                                    clear_error=done, updated_at=kept)
        ctx.emit("run_finished", f"run {self.run_id} {status.value}", status=status.value)
        return RunOutcome(run_id=self.run_id, status=status, progress=self.progress.model_copy(deep=True),
                          report=report, notes=[*notes, *problems])

    async def _footprint(self, run_id: str) -> tuple[object, ...]:
        """What a run has stored: its configuration, totals, steps, probe results and token use
        (equal before and after a rerun: nothing changed, so ``updated_at`` stays)."""
        record = await self.store.get_run(run_id)
        assert record is not None
        probes = [(r.probe_id, r.repeat, r.status, r.selection, r.brs, r.prs)
                  for r in await self.store.probe_results(run_id)]
        steps = [(s.step_id, s.status, s.attempts) for s in await self.store.steps(run_id)]
        return (record.config_json, record.config_hash, record.total_steps, record.total_probes, record.error,
                steps, probes, await self.store.token_totals(run_id))

    async def _stopped(self, ctx: RunContext, status: RunStatus, message: str) -> None:
        with anyio.CancelScope(shield=True):
            self.progress.phase = "stopped" if status is RunStatus.STOPPED else "failed"
            self.progress.errors.append(message)
            await self.store.update_run(self.run_id, status=status, error=message)
            ctx.emit("run_stopped" if status is RunStatus.STOPPED else "run_failed", f"run {self.run_id}: {message}")


async def run_many(
    configs: Sequence[RunConfig],
    store: RunStore,
    client: LLMClient,
    registry: ToolRegistry,
    *,
    observer_for: Callable[[RunConfig], RunObserver | None] | None = None,
    **runner_options: object,
) -> list[RunOutcome | Exception]:
    """Run several configs concurrently (anyio task group; model concurrency is the client's).

    Accumulating runs go first, all at once; then No Memory and Oracle runs, so they find the
    donor just played: a probe-only config without a ``donor_run`` takes the batch's File memory
    run for the same user, profile, seed and timeline once it completed, else the runner's usual
    choice (the latest completed File memory run that fits; none: refused). Another memory
    condition of the batch never lends its checkpoints. One run's error does not stop the others: it is
    returned in its place.

    Args:
        configs: the runs.
        store / client / registry: shared by all runs.
        observer_for: gives each run its observer.
        **runner_options: passed to every :class:`Runner`.

    Returns:
        Per config, in order, its :class:`RunOutcome` or the exception that stopped it.
    """
    results: list[RunOutcome | Exception | None] = [None] * len(configs)

    async def one(i: int) -> None:
        observer = observer_for(configs[i]) if observer_for else None
        donor = _batch_donor(configs[i], configs, results)
        lenders = _batch_lenders(configs[i], configs)
        if donor is None and not lenders:
            donor = await _sibling_donor(configs[i], configs, store)
        if donor is None and lenders and await store.get_run(configs[i].run_id) is None:
            # Its donor was to be played here and did not complete: probing from an older run or
            # the fixture world would store a baseline that no run of this command shares.
            results[i] = DonorError(
                f"not started: {', '.join(lenders)} did not complete, so no run of this command can lend "
                f"{configs[i].run_id} its checkpoints; rerun the command once it has (or name one with --donor)"
            )
            return
        runner = Runner(configs[i], store, client, registry, observer, preferred_donor=donor,
                        **runner_options)  # type: ignore[arg-type]
        try:
            results[i] = await runner.run()
        except Exception as exc:  # noqa: BLE001 - returned to the caller in the run's place
            results[i] = exc

    for wave in (True, False):
        async with anyio.create_task_group() as tg:
            for i, cfg in enumerate(configs):
                if cfg.accumulates is wave:
                    tg.start_soon(one, i)
    return [r if r is not None else RuntimeError("run did not start") for r in results]


def _batch_lenders(config: RunConfig, batch: Sequence[RunConfig]) -> list[str]:
    """The batch's File memory runs that could lend ``config`` (a reference run without a named
    donor) their checkpoints: same user, profile, seed and timeline."""
    if config.accumulates or config.donor_run is not None:
        return []
    return [other.run_id for other in batch
            if other.memory == DONOR_CONDITION and _same_timeline(other, config)]


def _same_timeline(a: RunConfig, b: RunConfig) -> bool:
    """Whether ``a`` and ``b`` play the same timeline: same user, profile, seed and slice/whole."""
    return (a.user, a.profile, a.seed, a.slice) == (b.user, b.profile, b.seed, b.slice)


async def _sibling_donor(config: RunConfig, batch: Sequence[RunConfig], store: RunStore) -> str | None:
    """With no memory run in the batch: the donor a stored reference run of the batch (same user,
    profile, seed and timeline) already probes from, so No Memory and Oracle of one command
    share their checkpoints instead of each taking the newest memory run."""
    if config.accumulates or config.donor_run is not None:
        return None
    for other in batch:
        if other.run_id != config.run_id and not other.accumulates and _same_timeline(other, config):
            stored = await store.get_run(other.run_id)
            if stored is not None and stored.donor_run is not None:
                return stored.donor_run
    return None


def _batch_donor(
    config: RunConfig, batch: Sequence[RunConfig], results: Sequence[RunOutcome | Exception | None]
) -> str | None:
    """The batch's completed File memory run for ``config``'s user, profile, seed and timeline."""
    if config.accumulates or config.donor_run is not None:
        return None
    for other, result in zip(batch, results, strict=True):
        if other.memory == DONOR_CONDITION and _same_timeline(other, config) and isinstance(result, RunOutcome) and result.status is RunStatus.COMPLETED:
            return result.run_id
    return None


async def batch_donor_problems(configs: Sequence[RunConfig], store: RunStore) -> list[str]:
    """Why the reference runs of a batch could not find a donor, checked before anything plays.

    A No Memory or Oracle run without ``donor_run`` needs a File memory run of the same user,
    profile, seed and timeline: one in the batch, one it already probes from (a stored run), or a
    completed one in the store. A batch that has none of these is refused rather than extended
    with a File memory run nobody asked for (hours of play): the message names the run to play
    first, or to add to ``--memory``.

    Returns:
        One line per reference run that would be refused (empty: every one has a donor).
    """
    problems: list[str] = []
    for config in configs:
        if config.accumulates or config.donor_run is not None or _batch_lenders(config, configs):
            continue
        stored = await store.get_run(config.run_id)
        if stored is not None and stored.donor_run is not None:
            continue
        if await _sibling_donor(config, configs, store) is not None:
            continue
        found = await store.latest_completed_run(
            config.user, config.profile, exclude_memory=PROBE_ONLY_CONDITIONS,
            fits=lambda run, c=config: donor_problem(c.model_copy(update={"donor_run": run.id}), run) is None,
        )
        if found is None:
            problems.append(
                f"{config.run_id}: no completed File memory run of user {config.user} with profile "
                f"{config.profile} that played the same timeline to probe from; add {DONOR_CONDITION} to --memory "
                f"or play {play_donor_first(config)} first (or name one with --donor)"
            )
    return problems
