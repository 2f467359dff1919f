"""Browse stored runs: every step and probe repeat, one in full, and runs compared probe by probe.

No Textual here (SPEC 2: the engine never imports the app); ``mempa show`` prints what these
functions return, and the app's run browser can show the same values later. The store is only
read.

* :func:`run_listing` - a run's timeline steps and probe repeats (status, selection, target,
  BRS/PRS, outcome), with its memory health (:mod:`mempa_tui.runner._health`).
* :class:`ProbeFilter` - probes by context, attribute, dimension, outcome.
* :func:`step_details` - one step or probe (each repeat, or one) in full: its stored transcript
  (messages, tool calls and results, IX selection, evidence the memory handed the PA), the model
  calls (role, tokens, time), and for a probe the target and the scores with their reasons.
* :func:`model_call` - one of those model calls with its prompt (messages as sent, offered tool
  names) and reply, read on demand (a call stored before prompts were kept says so);
  :meth:`ModelCallDetail.text` prints it.
* :func:`compare_runs` - per probe and repeat, each run's selection, target, outcome, BRS, PRS and
  the evidence its memory handed the PA; :func:`parse_where` / :func:`filter_compare` select rows
  such as ``"file right, none wrong"``; :func:`compare_markdown` exports them.

Outcomes follow paper Section 3.5 and Appendix F.2: ``correct`` (the selection equals the target),
``wrong`` (a scored probe with another or no selection), ``floored`` (the PA broke the IX contract:
PSA 0, BRS 1), ``incomplete`` (invalid or failed: kept apart, never scored as zero).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ValidationError

from mempa_tui.runner._episode_events import EpisodeEvent, EvidenceEvent, StepStatusEvent, episode_event_adapter
from mempa_tui.runner._health import MemoryHealth, PARepeats, run_health, run_pa_repeats
from mempa_tui.llm.types import CallPrompt, CallReply
from mempa_tui.runner._results import timeline_kind_of
from mempa_tui.store import LLMCallRow, ProbeResultRecord, RunRecord, RunStore, StoreError
from mempa_tui.taxonomy import Dimension, attribute

__all__ = [
    "FLOOR_BRS",
    "FLOOR_RULE",
    "NOT_STORED",
    "OUTCOMES",
    "BrowseError",
    "CompareCell",
    "CompareRow",
    "MemoryView",
    "ModelCallDetail",
    "ModelCallLine",
    "Outcome",
    "ProbeFilter",
    "ProbeLine",
    "RunListing",
    "StepDetail",
    "StepLine",
    "WhereClause",
    "checkpoint_memory",
    "compare_markdown",
    "compare_runs",
    "filter_compare",
    "model_call",
    "parse_where",
    "probe_outcome",
    "run_listing",
    "scored_brs",
    "step_details",
]

Outcome = Literal["correct", "wrong", "floored", "incomplete"]
"""A probe repeat's outcome (see the module docstring)."""

OUTCOMES: tuple[Outcome, ...] = ("correct", "wrong", "floored", "incomplete")


class BrowseError(ValueError):
    """A run, step, probe or filter that is not in the store or not understood; the message names
    it and what there is instead."""


def probe_outcome(record: ProbeResultRecord) -> Outcome:
    """The outcome of one stored probe repeat (Section 3.5 exact match; Appendix F.2 floors)."""
    if record.status == "floored":
        return "floored"
    if record.status != "completed":
        return "incomplete"
    return "correct" if record.selection == record.target else "wrong"


FLOOR_BRS = 1
"""BRS of a floored final probe by the floor rule (paper Appendix F.2): no judge reads it and the
store keeps no score, so the browser fills it in as scoring does
(:attr:`~mempa_tui.scoring._outcome.ProbeOutcome.brs_scored`)."""

FLOOR_RULE = "PSA 0 and BRS 1 by the floor rule of paper Appendix F.2; PRS as rated, 1 by rule when the PA gave no reply"
"""The one-line rule ``mempa show`` and the app print beside a floored probe's scores."""


def scored_brs(kind: str, status: str, brs: int | None) -> int | None:
    """A stored probe repeat's BRS as scoring counts it (paper Section 3.5, Appendix F.2).

    Args:
        kind: ``final`` or ``pre_event`` (pre-event probes get no BRS).
        status: the stored status (``completed``, ``floored``, ``invalid``, ``failed``).
        brs: the stored judge score (1-5), None when none is stored.

    Returns:
        :data:`FLOOR_BRS` for a floored final probe, ``brs`` otherwise (None: not scored).
    """
    return FLOOR_BRS if kind == "final" and status == "floored" else brs


class StepLine(BaseModel):
    """One stored timeline step (accumulation session or change event)."""

    index: int
    step_id: str
    kind: str
    status: str
    attempts: int
    selection: str | None
    reason: str | None


class ProbeLine(BaseModel):
    """One stored probe repeat."""

    probe_id: str
    repeat: int
    kind: str
    """``final`` or ``pre_event``."""
    context: str
    attribute: str
    dimension: str
    """The attribute's dimension (paper Table 4)."""
    status: str
    selection: str | None
    target: str
    brs: int | None
    prs: int | None
    outcome: Outcome
    attempts: int
    reason: str | None = None
    """Why the repeat was floored, invalid or failed (None when it completed)."""

    @property
    def brs_scored(self) -> int | None:
        """BRS as scored: 1 for a floored final probe (:func:`scored_brs`), else :attr:`brs`."""
        return scored_brs(self.kind, self.status, self.brs)

    @property
    def floored(self) -> bool:
        """Whether the PA broke the IX contract here (PSA 0, BRS 1 by rule; Appendix F.2)."""
        return self.status == "floored"


def _dimension(key: str) -> str:
    try:
        return attribute(key).dimension.value
    except KeyError:
        return "?"


def _probe_line(r: ProbeResultRecord) -> ProbeLine:
    return ProbeLine(
        probe_id=r.probe_id, repeat=r.repeat, kind=r.kind, context=r.context, attribute=r.attribute,
        dimension=_dimension(r.attribute), status=r.status, selection=r.selection, target=r.target,
        brs=r.brs, prs=r.prs, outcome=probe_outcome(r), attempts=r.attempts, reason=r.reason,
    )


class RunListing(BaseModel):
    """A stored run's steps and probe repeats."""

    run: RunRecord
    health: MemoryHealth
    steps: list[StepLine]
    probes: list[ProbeLine]
    repeats: PARepeats | None = None
    """The run's problems beside the memory's health (the PA's repeated identical calls, echoed
    replies and withheld IX text, the simulated user's messages sent back, cut judge replies; a
    warning)."""


async def _need_run(store: RunStore, run_id: str) -> RunRecord:
    run = await store.get_run(run_id)
    if run is None:
        known = [r.id for r in await store.list_runs()]
        raise BrowseError(f"no run {run_id!r} in {store.path}" + (f" (runs: {', '.join(known)})" if known else ""))
    return run


async def run_listing(store: RunStore, run_id: str) -> RunListing:
    """Every stored step and probe repeat of ``run_id``, in timeline and probe order.

    Raises:
        BrowseError: no such run (the message lists the stored runs).
    """
    run = await _need_run(store, run_id)
    steps = [
        StepLine(index=s.index, step_id=s.step_id, kind=s.kind, status=s.status, attempts=s.attempts,
                 selection=s.selection, reason=s.reason)
        for s in await store.steps(run_id)
    ]
    probes = [_probe_line(r) for r in await store.probe_results(run_id)]
    return RunListing(run=run, health=await run_health(store, run), steps=steps, probes=probes,
                      repeats=await run_pa_repeats(store, run))


class ProbeFilter(BaseModel):
    """Which probe repeats to keep; None keeps all. Matching ignores case."""

    context: str | None = None
    """``work`` or ``personal``."""
    attribute: str | None = None
    """An attribute key (``verbosity``) or name (``Verbosity``)."""
    dimension: str | None = None
    """A dimension name or its start (``Expression Style``, ``disclosure``, ``initiative``)."""
    outcome: Outcome | None = None
    """One of :data:`OUTCOMES`."""

    def check(self) -> ProbeFilter:
        """The filter with the attribute as its key and the dimension as its full name.

        Raises:
            BrowseError: an unknown context, attribute, dimension or outcome (valid ones named).
        """
        update: dict[str, str] = {}
        if self.context is not None and self.context.lower() not in ("work", "personal"):
            raise BrowseError(f"--context {self.context!r}: choose work or personal")
        if self.attribute is not None:
            try:
                update["attribute"] = attribute(self.attribute).key
            except KeyError:
                try:
                    update["attribute"] = attribute(self.attribute.replace("-", " ").title()).key
                except KeyError:
                    from mempa_tui.taxonomy import ATTRIBUTES

                    raise BrowseError(f"--attribute: unknown attribute {self.attribute!r}; valid attributes: "
                                      + ", ".join(a.key for a in ATTRIBUTES)) from None
        if self.dimension is not None:
            found = [d.value for d in Dimension if d.value.lower().startswith(self.dimension.lower())]
            if len(found) != 1:
                raise BrowseError(f"--dimension {self.dimension!r}: choose one of "
                                  + ", ".join(d.value for d in Dimension))
            update["dimension"] = found[0]
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise BrowseError(f"--outcome {self.outcome!r}: choose one of {', '.join(OUTCOMES)}")
        return self.model_copy(update=update)

    def keeps(self, line: ProbeLine) -> bool:
        """True when ``line`` passes every set field (call :meth:`check` first)."""
        return (
            (self.context is None or line.context == self.context.lower())
            and (self.attribute is None or line.attribute == self.attribute)
            and (self.dimension is None or line.dimension == self.dimension)
            and (self.outcome is None or line.outcome == self.outcome)
        )


class ModelCallLine(BaseModel):
    """One logged model call of a step or probe repeat (SPEC section 7: tokens per call)."""

    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    reused_prefix_tokens: int
    latency_s: float
    """Seconds the call took."""
    ok: bool
    error: str | None
    call_id: int | None = None
    """The stored call's id, for :func:`model_call` (None: not addressable)."""
    prompt_stored: bool = False
    """Whether the store holds this call's prompt and reply (False: stored before they were kept)."""

    def head(self) -> str:
        """One line: role, model, prompt / reused / completion tokens, seconds, ok or the error."""
        state = "ok" if self.ok else f"FAILED {self.error or ''}".strip()
        return (f"{self.role} · prompt {self.prompt_tokens} (reused {self.reused_prefix_tokens}) · "
                f"completion {self.completion_tokens} · {self.latency_s:.2f}s · {self.model} · {state}")


NOT_STORED = ("prompt and reply not stored: this call was stored before mempa kept them "
              "(run store schema 2 or older)")
"""What :meth:`ModelCallDetail.text` says for a call of an old store."""


class ModelCallDetail(BaseModel):
    """One stored model call with its prompt and reply (issue 16), as :func:`model_call` reads it."""

    line: ModelCallLine
    prompt: CallPrompt | None
    """Messages as sent and the offered tool names; None: not stored (see ``line.prompt_stored``)."""
    reply: CallReply | None
    """The reply; None when not stored or the call failed."""

    def text(self, *, head: bool = True) -> str:
        """The call as plain text: its head (unless ``head`` is False: the app's fold title shows
        it), each prompt message (role, content, tool calls, tool results' call ids), the offered
        tools and the sampling seed sent (when recorded), then the reply (``mempa show`` and the app)."""
        out = [self.line.head()] if head else []
        if self.prompt is None:
            out.append(NOT_STORED)
            return "\n".join(out)
        out.append(f"-- prompt: {len(self.prompt.messages)} message(s)")
        for n, m in enumerate(self.prompt.messages, 1):
            extra = f" (result of {m.tool_call_id})" if m.tool_call_id else ""
            out.append(f"[{n}] {m.role}{extra}:")
            if m.content:
                out.append(m.content)
            out.extend(f"  -> {c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls)
        out.append("tools offered: " + (", ".join(self.prompt.tools) if self.prompt.tools else "(none)"))
        if self.prompt.seed is not None:  # per call (mempa_tui.llm.sampling); none sent or not recorded: no line
            out.append(f"sampling seed: {self.prompt.seed}")
        if self.reply is None:
            out.append("-- no reply (the call failed)" if not self.line.ok else "-- reply not stored")
            return "\n".join(out)
        out.append(f"-- reply (finish: {self.reply.finish_reason or 'not reported'}):")
        out.append(self.reply.text or "(no text)")
        out.extend(f"  -> {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                   + (f"  [arguments unreadable: {c.arguments_error}]" if c.arguments_error else "")
                   for c in self.reply.tool_calls)
        return "\n".join(out)


class StepDetail(BaseModel):
    """One step or probe repeat in full, as stored."""

    run_id: str
    step_id: str
    repeat: int
    """0 for a timeline step, else the probe repeat (1-based)."""
    kind: str
    """``accumulation``, ``change_event``, ``final`` or ``pre_event``."""
    status: str
    reason: str | None
    selection: str | None
    target: str | None = None
    """The probe's target (None for timeline steps)."""
    outcome: Outcome | None = None
    brs: int | None = None
    brs_reason: str | None = None
    prs: int | None = None
    prs_reason: str | None = None
    context: str | None = None
    attribute: str | None = None
    events: list[EpisodeEvent]
    """The stored transcript in order (messages, tool calls with results, IX selections,
    evidence, held items, consent, notices, beat changes, the step's status)."""
    unreadable_events: int = 0
    """Stored events that no longer parse (shown as a count, never dropped silently)."""
    calls: list[ModelCallLine]
    """The model calls, in order of logging."""
    memory_stats: dict[str, float] = {}
    """The memory's counters after the step (timeline steps that recorded them)."""

    @property
    def brs_scored(self) -> int | None:
        """BRS as scored: 1 for a floored final probe (:func:`scored_brs`), else :attr:`brs`."""
        return scored_brs(self.kind, self.status, self.brs)

    @property
    def pa_repeats(self) -> tuple[int, int]:
        """(repeated identical PA calls, turns with any) from the stored ``step_status`` event;
        ``(0, 0)`` for a step stored before they were counted."""
        status = [e for e in self.events if isinstance(e, StepStatusEvent)]
        return (status[-1].pa_repeated_calls, status[-1].pa_repeat_turns) if status else (0, 0)

    @property
    def pa_echoes(self) -> int:
        """PA replies that echoed the harness's own text (withheld from the user and the judge)
        from the stored ``step_status`` event; 0 for a step stored before they were counted."""
        status = [e for e in self.events if isinstance(e, StepStatusEvent)]
        return status[-1].pa_echoed_replies if status else 0

    @property
    def pa_ix_withheld(self) -> int:
        """Reply sentences withheld for carrying interaction-tool text (accumulation sessions)
        from the stored ``step_status`` event; 0 for a step stored before they were counted."""
        status = [e for e in self.events if isinstance(e, StepStatusEvent)]
        return status[-1].pa_ix_text_withheld if status else 0

    @property
    def simulator_checks(self) -> dict[str, int]:
        """The user simulator's message-check counts (messages sent back, stalled, repeated,
        invalid turns...; ``CHECK_COUNT_KEYS``) from the stored ``step_status`` event; empty for
        a person's seat or a step stored before they were carried."""
        status = [e for e in self.events if isinstance(e, StepStatusEvent)]
        return dict(status[-1].simulator_checks) if status else {}

    @property
    def evidence(self) -> list[EvidenceEvent]:
        """What the memory handed the PA, turn by turn."""
        return [e for e in self.events if isinstance(e, EvidenceEvent)]


async def _events(store: RunStore, run_id: str, step_id: str, repeat: int) -> tuple[list[EpisodeEvent], int]:
    events: list[EpisodeEvent] = []
    bad = 0
    for row in await store.transcript(run_id, step_id, repeat):
        try:
            events.append(episode_event_adapter.validate_json(row.event_json))
        except ValidationError:
            bad += 1
    return events, bad


def _call_line(c: LLMCallRow) -> ModelCallLine:
    return ModelCallLine(role=c.call.role.value, model=c.call.model, prompt_tokens=c.call.prompt_tokens,
                         completion_tokens=c.call.completion_tokens,
                         reused_prefix_tokens=c.call.reused_prefix_tokens, latency_s=c.call.latency_s,
                         ok=c.call.ok, error=c.call.error, call_id=c.call_id, prompt_stored=c.prompt_stored)


async def _calls(store: RunStore, run_id: str, step_id: str, repeat: int) -> list[ModelCallLine]:
    return [_call_line(c) for c in await store.llm_calls(run_id, step_id) if c.repeat == repeat]


async def model_call(store: RunStore, run_id: str, call_id: int) -> ModelCallDetail:
    """One model call of a stored run with its prompt and reply, decompressed on demand.

    Args:
        store: the open run store.
        run_id: the run.
        call_id: a :attr:`ModelCallLine.call_id` from :func:`step_details`.

    Returns:
        The call; ``prompt`` None (and ``text()`` saying so) for a call stored before prompts were
        kept.

    Raises:
        BrowseError: no such run or call, or its stored prompt cannot be read.
    """
    await _need_run(store, run_id)
    try:
        row = await store.llm_call(run_id, call_id)
    except StoreError as exc:
        raise BrowseError(str(exc)) from exc
    return ModelCallDetail(line=_call_line(row), prompt=row.call.prompt, reply=row.call.reply)


async def step_details(store: RunStore, run_id: str, step_id: str, repeat: int | None = None) -> list[StepDetail]:
    """A timeline step, or a probe's repeats (all, or ``repeat``), in full.

    Args:
        store: the open run store.
        run_id: the run.
        step_id: a session, change-event or probe id as :func:`run_listing` lists it.
        repeat: for a probe, only this repeat (None: every stored repeat).

    Raises:
        BrowseError: no such run, step or probe repeat (the message lists what is stored), or a
            repeat asked of a timeline step (steps are played once).
    """
    await _need_run(store, run_id)
    for step in await store.steps(run_id, with_results=True):
        if step.step_id != step_id:
            continue
        if repeat is not None:  # a fresh user's --repeat 5 on a session printed the step, silently
            raise BrowseError(f"{step_id} of run {run_id} is a timeline step, played once: it has no repeats "
                              "(--repeat is for probes; leave it out)")
        events, bad = await _events(store, run_id, step_id, 0)
        stats: dict[str, float] = {}
        if step.result_json:
            try:
                raw = json.loads(step.result_json).get("memory_stats") or {}
                stats = {str(k): float(v) for k, v in raw.items()}
            except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
                raise StoreError(f"run {run_id!r} step {step_id}: stored result is not readable ({exc})") from exc
        return [StepDetail(
            run_id=run_id, step_id=step_id, repeat=0, kind=step.kind, status=step.status, reason=step.reason,
            selection=step.selection, events=events, unreadable_events=bad,
            calls=await _calls(store, run_id, step_id, 0), memory_stats=stats,
        )]
    probes = [p for p in await store.probe_results(run_id) if p.probe_id == step_id]
    if not probes:
        steps = [s.step_id for s in await store.steps(run_id)]
        probe_ids = sorted({p.probe_id for p in await store.probe_results(run_id)})
        raise BrowseError(f"run {run_id} has no step or probe {step_id!r} (steps: {', '.join(steps) or 'none'}; "
                          f"probes: {', '.join(probe_ids) or 'none'})")
    if repeat is not None:
        chosen = [p for p in probes if p.repeat == repeat]
        if not chosen:
            raise BrowseError(f"probe {step_id} of run {run_id} has no repeat {repeat} "
                              f"(stored: {', '.join(str(p.repeat) for p in probes)})")
        probes = chosen
    out = []
    for p in probes:
        events, bad = await _events(store, run_id, step_id, p.repeat)
        out.append(StepDetail(
            run_id=run_id, step_id=step_id, repeat=p.repeat, kind=p.kind, status=p.status, reason=p.reason,
            selection=p.selection, target=p.target, outcome=probe_outcome(p), brs=p.brs,
            brs_reason=p.brs_reason, prs=p.prs, prs_reason=p.prs_reason, context=p.context,
            attribute=p.attribute, events=events, unreadable_events=bad,
            calls=await _calls(store, run_id, step_id, p.repeat),
        ))
    return out


class CompareCell(BaseModel):
    """One run's side of a compared probe repeat."""

    run_id: str
    outcome: Outcome
    selection: str | None
    brs: int | None
    """BRS as scored: 1 for a floored final probe (:func:`scored_brs`), else the stored score."""
    prs: int | None
    evidence: str
    """The memory section handed to the PA before its first selection (the first evidence event
    of the repeat), ``""`` when the memory handed nothing."""
    evidence_items: int
    """Scored items behind it."""


class CompareRow(BaseModel):
    """One probe repeat across the compared runs."""

    probe_id: str
    repeat: int
    kind: str
    context: str
    attribute: str
    target: str
    cells: dict[str, CompareCell | None]
    """Run id -> its side (None: that run has not stored this repeat)."""


async def compare_runs(store: RunStore, run_ids: Sequence[str]) -> list[CompareRow]:
    """Per probe and repeat, each run's selection, outcome, scores and evidence, side by side.

    Args:
        store: the open run store.
        run_ids: two or more runs of one user that played the same kind of timeline (whole or
            quick-start slice, or quick start: :func:`~mempa_tui.runner._results.timeline_kind_of`), so their probes are the same cells at the same times.

    Returns:
        One row per (probe, repeat) stored by any of the runs, in probe order.

    Raises:
        BrowseError: fewer than two runs, an unknown run, or runs of different users or timelines.
    """
    ids = list(dict.fromkeys(run_ids))
    if len(ids) < 2:
        raise BrowseError("compare needs two or more different runs")
    runs = [await _need_run(store, r) for r in ids]
    users = {r.user for r in runs}
    if len(users) > 1:
        raise BrowseError("compare runs of one user: " + ", ".join(f"{r.id} is user {r.user}" for r in runs))
    kinds = {r.id: timeline_kind_of(r) for r in runs}  # whole, quick-start slice, quick start
    if len(set(kinds.values())) > 1:
        raise BrowseError("compare runs of one timeline: " + ", ".join(
            f"{rid} played the {kind}" for rid, kind in kinds.items()))
    rows: dict[tuple[str, int], CompareRow] = {}
    for run_id in ids:
        for p in await store.probe_results(run_id):
            row = rows.setdefault((p.probe_id, p.repeat), CompareRow(
                probe_id=p.probe_id, repeat=p.repeat, kind=p.kind, context=p.context, attribute=p.attribute,
                target=p.target, cells=dict.fromkeys(ids)))
            events, _ = await _events(store, run_id, p.probe_id, p.repeat)
            first = next((e for e in events if isinstance(e, EvidenceEvent)), None)
            row.cells[run_id] = CompareCell(
                run_id=run_id, outcome=probe_outcome(p), selection=p.selection,
                brs=scored_brs(p.kind, p.status, p.brs), prs=p.prs,
                evidence=first.system_text if first else "", evidence_items=len(first.items) if first else 0)
    return [rows[k] for k in sorted(rows)]


_WORDS: dict[str, str] = {"right": "correct", "correct": "correct", "wrong": "wrong", "floored": "floored",
                          "incomplete": "incomplete", "missing": "missing"}


class WhereClause(BaseModel):
    """One condition of a ``--where`` filter: a run and the outcome it must have."""

    run_id: str
    outcome: str
    """One of :data:`OUTCOMES`, or ``missing`` (the run has not stored the repeat)."""
    negate: bool = False
    """``not``: any outcome but this one."""


def parse_where(text: str, run_ids: Sequence[str]) -> list[WhereClause]:
    """Parse a filter like ``"file right, none wrong"`` or ``"#1 right, #2 not right"``.

    Syntax: comma-separated clauses ``RUN [not] WORD``. RUN is a run id, ``#N`` (the N-th compared
    run, 1-based) or a memory condition / run-id part that names exactly one of the runs (``file``
    for ``A-file-demo-s0``). WORD is ``right`` (= correct), ``wrong``, ``floored``, ``incomplete``
    or ``missing``.

    Raises:
        BrowseError: a clause that does not parse or names no run, or more than one (the message
            shows the clause and the runs).
    """
    clauses = []
    for raw in (c.strip() for c in text.split(",")):
        if not raw:
            continue
        m = re.fullmatch(r"(\S+)\s+(not\s+)?(\w+)", raw, flags=re.IGNORECASE)
        if not m or m.group(3).lower() not in _WORDS:
            raise BrowseError(f"filter {raw!r}: write RUN [not] right|wrong|floored|incomplete|missing, "
                              "clauses separated by commas")
        clauses.append(WhereClause(run_id=_which_run(m.group(1), run_ids, raw), outcome=_WORDS[m.group(3).lower()],
                                   negate=bool(m.group(2))))
    if not clauses:
        raise BrowseError("the filter is empty: write e.g. 'file right, none wrong'")
    return clauses


def _which_run(name: str, run_ids: Sequence[str], clause: str) -> str:
    if name in run_ids:
        return name
    if name.startswith("#") and name[1:].isdigit():
        n = int(name[1:])
        if 1 <= n <= len(run_ids):
            return run_ids[n - 1]
    else:
        found = [r for r in run_ids if name.lower() in r.lower().split("-")] or \
                [r for r in run_ids if name.lower() in r.lower()]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise BrowseError(f"filter {clause!r}: {name!r} names more than one run ({', '.join(found)})")
    raise BrowseError(f"filter {clause!r}: {name!r} is none of the compared runs "
                      f"({', '.join(f'#{i} {r}' for i, r in enumerate(run_ids, 1))})")


def filter_compare(rows: Sequence[CompareRow], where: Sequence[WhereClause]) -> list[CompareRow]:
    """The rows where every clause holds."""
    def holds(row: CompareRow, clause: WhereClause) -> bool:
        cell = row.cells.get(clause.run_id)
        got = "missing" if cell is None else cell.outcome
        return (got == clause.outcome) != clause.negate

    return [r for r in rows if all(holds(r, c) for c in where)]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def compare_markdown(rows: Sequence[CompareRow], run_ids: Sequence[str], *, title: str = "") -> str:
    """The comparison as Markdown: one table of every row (selection, outcome, BRS, PRS per run),
    then per row the evidence each memory handed the PA.

    Args:
        rows: the (filtered) comparison rows.
        run_ids: the compared runs, in column order.
        title: a heading (e.g. the filter used).
    """
    lines = [f"# {title or 'Probe-by-probe comparison'}", "",
             "Runs: " + ", ".join(f"#{i} `{r}`" for i, r in enumerate(run_ids, 1)), ""]
    header = ["Probe", "Repeat", "Target", *(f"#{i}" for i in range(1, len(run_ids) + 1))]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        cells = []
        for rid in run_ids:
            c = row.cells.get(rid)
            cells.append("—" if c is None else _md(
                f"{c.selection or '(none)'} {c.outcome}" + (f" BRS {c.brs}" if c.brs else "")
                + (f" PRS {c.prs}" if c.prs else "")))
        lines.append("| " + " | ".join([_md(row.probe_id), str(row.repeat), _md(row.target), *cells]) + " |")
    if not rows:
        lines.append("\n(no probe repeat matches)")
    for row in rows:
        lines += ["", f"## {row.probe_id} repeat {row.repeat} (target {row.target})"]
        for i, rid in enumerate(run_ids, 1):
            c = row.cells.get(rid)
            if c is None:
                lines += ["", f"**#{i} {rid}**: not stored"]
                continue
            lines += ["", f"**#{i} {rid}**: selected {c.selection or '(none)'} ({c.outcome}); evidence "
                      f"({c.evidence_items} item(s)):", ""]
            lines += ["> " + ln for ln in (c.evidence.strip() or "(the memory handed the PA nothing)").splitlines()]
    return "\n".join(lines) + "\n"


class MemoryView(BaseModel):
    """What a run's memory held at a checkpoint (``inspect().stored`` after restoring the
    checkpoint's snapshot into a fresh memory in a scratch folder)."""

    checkpoint_run: str | None
    """The run whose checkpoint it is (a No Memory or Oracle run's donor, for probes)."""
    checkpoint_index: int | None
    """Index of the checkpoint's last step (-1: the run's start)."""
    stored: list[str] = []
    """The memory's stored items as its side panel lists them (notes included: MEMORY.md, failure
    notes; see :attr:`not_counted`)."""
    counted: int | None = None
    """The store count at the checkpoint, as Health counts it
    (:func:`~mempa_tui.runner._health.stored_count`; None: the memory reports none)."""
    counted_words: str | None = None
    """:attr:`counted` in words naming what is counted (:func:`~mempa_tui.runner._health.stored_phrase`)."""
    not_counted: str | None = None
    """What :attr:`stored` lists besides the counted items (:func:`~mempa_tui.runner._health.not_counted`)."""
    note: str | None = None
    """Why nothing is listed (a condition without a store, no snapshot, or the error met)."""


class _NoModelCalls:
    """A stand-in model client for rebuilding a memory only to read it: a model call is an error."""

    profile = None

    async def complete(self, *args: object, **kwargs: object) -> object:
        """Refuse: reading a stored memory needs no model."""
        raise RuntimeError("reading a stored memory makes no model call")

    async def embed(self, *args: object, **kwargs: object) -> object:
        """Refuse: reading a stored memory needs no model."""
        raise RuntimeError("reading a stored memory makes no model call")

    def count_tokens(self, text: str) -> int:
        """The client's rough estimate: about four characters a token."""
        return max(1, len(text) // 4) if text else 0


async def checkpoint_memory(store: RunStore, run_id: str, step_id: str, repeat: int | None = None) -> MemoryView:
    """The memory's contents at the checkpoint a step ended with, or a probe started from.

    A memory of the run's condition (with its stored options) is built without a model client in a
    temporary folder and restored from the checkpoint's snapshot; nothing is written to the store
    or to ``local_memory/``. A failure to rebuild is returned as the view's ``note``, never raised
    silently past.

    Raises:
        BrowseError: no such run, step or probe repeat.
    """
    import tempfile
    from pathlib import Path

    from mempa_tui.memory import make_memory

    run = await _need_run(store, run_id)
    if run.memory in ("none", "oracle"):
        return MemoryView(checkpoint_run=None, checkpoint_index=None,
                          note=f"{run.memory}: no accumulated memory (its probes start with the memory cleared)")
    step = next((s for s in await store.steps(run_id) if s.step_id == step_id), None)
    if step is not None:
        source, index = run_id, step.index
    else:
        probes = [p for p in await store.probe_results(run_id) if p.probe_id == step_id
                  and (repeat is None or p.repeat == repeat)]
        if not probes:
            await step_details(store, run_id, step_id, repeat)  # raises the listing error
            raise BrowseError(f"run {run_id} has no probe {step_id!r}")  # pragma: no cover - raised above
        source, index = probes[0].checkpoint_run or run_id, probes[0].checkpoint_index
    if index is None:
        return MemoryView(checkpoint_run=source, checkpoint_index=None, note="the probe started from no checkpoint")
    checkpoint = await store.checkpoint(source, index)
    if checkpoint is None or checkpoint.memory_blob is None:
        return MemoryView(checkpoint_run=source, checkpoint_index=index, note="the checkpoint holds no memory snapshot")
    snapshot = await store.load_blob(checkpoint.memory_blob)
    try:
        options = json.loads(run.config_json).get("memory_options") or {}
    except (json.JSONDecodeError, AttributeError):
        options = {}
    with tempfile.TemporaryDirectory(prefix="mempa-show-") as folder:
        try:
            memory = make_memory(run.memory, client=_NoModelCalls(), folder=Path(folder), **options)
            memory.restore(snapshot)
            inspection = memory.inspect()
        except Exception as exc:  # noqa: BLE001 - shown to the reader as the view's note
            return MemoryView(checkpoint_run=source, checkpoint_index=index,
                              note=f"could not rebuild the {run.memory} memory from the snapshot: {exc!r}")
    from mempa_tui.runner._health import not_counted, stored_count, stored_phrase

    stored = list(inspection.stored)
    return MemoryView(checkpoint_run=source, checkpoint_index=index, stored=stored,
                      counted=stored_count(inspection.stats), counted_words=stored_phrase(inspection.stats),
                      not_counted=not_counted(inspection.stats),
                      note=None if stored else "the memory held nothing at this checkpoint")
