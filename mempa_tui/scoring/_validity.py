"""What a results table's scores could reach without memory, and whether they measure memory.

Three references for the cells a table covers, computed exactly from the probe outcomes (no
simulation, no model):

* :func:`random_reference` - the expected PSA, CS and PET of a PA that picks uniformly at random
  among each attribute's settings (paper Appendix A.1: 45.2 % PSA over the paper's 28 cells;
  Section 5, Finding 1 compares No Memory with it).
* :func:`constant_ceiling` / :func:`constant_choices` - what a PA that ignores the user and the
  context (one fixed setting per attribute) scores on these cells, and which runs' PAs did choose
  one setting in every probe of an attribute. When each attribute's final probes share one target,
  such a PA scores PSA and CS 100 with no memory; only PET (whose pre-event and final targets
  differ) can still separate memory conditions.
* :func:`oracle_checks` - the Oracle condition's hit rate on the setting it is handed, against the
  paper's validity check (Table 2: Oracle PSA 96.4-100 % for every user and backbone).

The runner turns these into the lines printed under every results table
(:mod:`mempa_tui.runner._validity`); this module knows no runs, only outcomes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from mempa_tui.scoring._outcome import ProbeOutcome, ProbeStatus, condition_label
from mempa_tui.scoring._units import cs_pairs
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import Context, attribute, chance_of

__all__ = [
    "ORACLE_FLOOR",
    "ORACLE_PAPER_RANGE",
    "ConstantCeiling",
    "ConstantChoice",
    "OracleCheck",
    "RandomReference",
    "constant_ceiling",
    "constant_choices",
    "oracle_checks",
    "outcome_validity_lines",
    "random_reference",
]

ORACLE_FLOOR = 0.90
"""The Oracle hit rate below which a table's differences between memory conditions are read as
the model's, not the memory's (fraction, 0-1).

Under Oracle the PA is handed the target setting, so its selection accuracy measures whether the
backbone applies a setting it is told, with memory out of the picture. The paper's Oracle PSA is
96.4-100 % on every user and backbone (Table 2), which is what lets it read the other conditions'
gaps as memory's. 90 % sits below the paper's lowest cell with room for one miss in ten probes
(sampling noise over a few repeats), and far above chance (about 45 %): a backbone under it misses
the handed setting often enough that its misses, not the memory, can explain a difference."""

ORACLE_PAPER_RANGE = "96.4-100"
"""The paper's Oracle PSA over its users and backbones (Table 2), as printed next to ours (%)."""


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{100 * value:.1f}"


class RandomReference(BaseModel):
    """Expected scores of a PA that picks uniformly at random among each attribute's settings,
    on the cells of one table (paper Appendix A.1). Fractions 0-1; None when the table has no
    unit of that metric.

    The expectation is exact: a final-probe cell of an attribute with ``k`` settings is correct
    with probability ``1/k``; a CS pair needs both contexts' final probes correct, two independent
    picks, ``1/k_work * 1/k_personal``; a PET cell needs its pre-event and final probes correct,
    ``1/k_pre * 1/k_final`` (the same attribute, so ``1/k**2``). Each metric is the mean over its
    units, as PSA, CS and PET weigh their units equally (Section 3.5)."""

    model_config = ConfigDict(frozen=True)

    psa: float | None
    """Mean of ``1/k`` over the final-probe cells."""
    cs: float | None
    """Mean of ``1/k**2`` over the CS pairs (set D) whose two final probes are in the table."""
    pet: float | None
    """Mean of ``1/k**2`` over the changed cells (those with a pre-event and a final probe)."""
    cells: int
    """Final-probe cells counted for PSA."""
    pairs: int
    """CS pairs counted."""
    changed: int
    """Changed cells counted for PET."""

    def text(self) -> str:
        """``random selection on these cells: PSA 33.3, CS 11.1, PET 11.1 (Appendix A.1)``."""
        return (f"random selection on these cells: PSA {_pct(self.psa)}, CS {_pct(self.cs)}, "
                f"PET {_pct(self.pet)} (expected scores of a PA picking uniformly among each attribute's "
                "settings; paper Appendix A.1)")


def _mean(values: list[Fraction]) -> float | None:
    return float(sum(values, Fraction(0)) / len(values)) if values else None


def random_reference(outcomes: Iterable[ProbeOutcome]) -> RandomReference:
    """The random-selection reference for the cells ``outcomes`` cover (every row of a table).

    A cell, pair or changed cell counts when some outcome of it is scorable (an incomplete probe
    is in no score, so neither is it here); cells are pooled over memory conditions, models and
    repeats, so each counts once.

    Args:
        outcomes: the table's probe outcomes (any conditions, models, repeats).

    Returns:
        The reference; every field None and every count 0 without outcomes.
    """
    items = [o for o in outcomes if o.scorable]
    finals = {(o.user, o.context, o.attribute) for o in items if o.probe_kind is ProbeKind.FINAL}
    pres = {(o.user, o.context, o.attribute) for o in items if o.probe_kind is ProbeKind.PRE_EVENT}
    pairs = [(u, a) for u, a in sorted(cs_pairs(items))
             if (u, Context.WORK, a) in finals and (u, Context.PERSONAL, a) in finals]
    changed = sorted(pres & finals, key=lambda c: (c[0], c[1].value, c[2]))
    return RandomReference(
        psa=_mean([chance_of(a) for _, _, a in finals]),
        cs=_mean([chance_of(a) ** 2 for _, a in pairs]),  # two independent picks, one per context
        pet=_mean([chance_of(a) ** 2 for _, _, a in changed]),  # the pre-event pick and the final one
        cells=len(finals), pairs=len(pairs), changed=len(changed),
    )


class ConstantCeiling(BaseModel):
    """What a PA that picks one fixed setting per attribute (whatever the user, context or time)
    scores on a table's cells, with the best such settings: each attribute's most common final
    target. Fractions 0-1; None when the table has no unit of that metric."""

    model_config = ConfigDict(frozen=True)

    settings: dict[str, str]
    """Attribute key -> the fixed setting (most common final target; ties: the taxonomy's order)."""
    psa: float | None
    """PSA of that PA (share of final-probe cells whose target is the attribute's fixed setting)."""
    cs: float | None
    """CS of that PA (pairs whose two final targets both equal the fixed setting)."""
    pet: float | None
    """PET of that PA (0 wherever a change event changed the target)."""
    changed_cells: int = 0
    """Changed cells (PET units) on the table."""

    @property
    def full(self) -> bool:
        """True when the fixed choice scores PSA 100: every attribute's final probes share one
        target, so PSA (and CS) cannot separate memory conditions on these cells."""
        return self.psa is not None and self.psa >= 1.0 - 1e-9

    def choice_text(self) -> str:
        """``High for solution_breadth`` (one per attribute, comma-separated)."""
        return ", ".join(f"{s} for {a}" for a, s in sorted(self.settings.items()))

    def text(self) -> str:
        """The line under a table when :attr:`full` (empty otherwise)."""
        if not self.full:
            return ""
        scores = " / ".join(f"{m} {_pct(v)}" for m, v in (("PSA", self.psa), ("CS", self.cs), ("PET", self.pet))
                            if v is not None)
        blind = "PSA and CS" if self.cs is not None else "PSA"
        after = (f"so {blind} cannot separate memory conditions here; only PET (whose targets change) can"
                 if self.changed_cells else
                 f"so {blind} cannot separate memory conditions here, and no probe here tests a change (no PET)")
        return (f"every final probe here has the same target per attribute: a PA that always picks "
                f"{self.choice_text()} scores {scores} on these cells with no memory at all, {after}")


def _score(passing: list[bool]) -> float | None:
    return sum(passing) / len(passing) if passing else None


def constant_ceiling(outcomes: Iterable[ProbeOutcome]) -> ConstantCeiling:
    """The scores of the best fixed-setting PA on the cells ``outcomes`` cover.

    Each cell's target is the same in every condition and repeat (it is the world's), so one
    outcome per cell and probe kind is enough; PSA, CS and PET are then computed on those targets
    as Section 3.5 defines them (CS over set D, PET over cells with a pre-event probe).

    Args:
        outcomes: the table's probe outcomes.

    Returns:
        The ceiling (no settings and every score None without final probes).
    """
    items = [o for o in outcomes if o.scorable]
    target: dict[tuple[str, Context, str, ProbeKind], str] = {}
    for o in items:
        target.setdefault((o.user, o.context, o.attribute, o.probe_kind), o.target)
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for (_, _, attr, kind), t in target.items():
        if kind is ProbeKind.FINAL:
            votes[attr][t] += 1
    fixed: dict[str, str] = {}
    for attr, counts in votes.items():
        order = attribute(attr).setting_names
        fixed[attr] = max(order, key=lambda s: (counts[s], -order.index(s)))
    finals = {(u, c, a): t for (u, c, a, k), t in target.items() if k is ProbeKind.FINAL}
    pres = {(u, c, a): t for (u, c, a, k), t in target.items() if k is ProbeKind.PRE_EVENT}
    pairs = [(u, a) for u, a in sorted(cs_pairs(items))
             if (u, Context.WORK, a) in finals and (u, Context.PERSONAL, a) in finals]
    changed = [cell for cell in pres if cell in finals]
    return ConstantCeiling(
        settings=fixed,
        psa=_score([t == fixed[a] for (_, _, a), t in finals.items()]),
        cs=_score([finals[(u, Context.WORK, a)] == fixed[a] == finals[(u, Context.PERSONAL, a)] for u, a in pairs]),
        pet=_score([pres[c] == fixed[c[2]] == finals[c] for c in changed]),
        changed_cells=len(changed),
    )


class ConstantChoice(BaseModel):
    """A run whose PA selected one setting in every probe repeat of an attribute."""

    model_config = ConfigDict(frozen=True)

    memory: str
    """The run's memory condition."""
    model: str
    """The run's backbone label."""
    user: str
    """The run's user."""
    attribute: str
    """The attribute's key."""
    setting: str
    """The setting it selected every time."""
    probes: int
    """Probe repeats of the attribute (final and pre-event), all with that selection."""
    targets: tuple[str, ...]
    """The distinct targets of those probes, in the taxonomy's order."""

    @property
    def ignores_target(self) -> bool:
        """True when the probes' targets differ: one choice for them all cannot follow the target."""
        return len(self.targets) > 1

    def text(self) -> str:
        """``selected High in all 3 probes of solution_breadth although their targets differ (Low,
        High)``, or ``selected Terse in both probes of verbosity (every target Terse)``."""
        probes = "both probes" if self.probes == 2 else f"all {self.probes} probes"
        line = f"selected {self.setting} in {probes} of {self.attribute}"
        if self.ignores_target:
            return line + f" although their targets differ ({', '.join(self.targets)})"
        return line + f" (every target {self.targets[0]})"


def constant_choices(outcomes: Iterable[ProbeOutcome]) -> list[ConstantChoice]:
    """Every (memory, model, user, attribute) whose PA selected the same valid setting in each of
    its scorable probe repeats (at least two; final and pre-event together; a floored probe or a
    missing or invalid selection breaks the run of equal choices).

    Args:
        outcomes: probe outcomes of any runs.

    Returns:
        One entry per such attribute of a run, in condition, model, user and attribute order;
        the caller decides which to show (:func:`outcome_validity_lines` shows those that
        :attr:`ConstantChoice.ignores_target`, and those that pick a full
        :class:`ConstantCeiling`'s setting, whose PSA and CS 100 then say nothing about memory).
    """
    groups: dict[tuple[str, str, str, str], list[ProbeOutcome]] = defaultdict(list)
    for o in outcomes:
        if o.scorable:
            groups[(o.memory, o.model, o.user, o.attribute)].append(o)
    out: list[ConstantChoice] = []
    for (memory, model, user, attr), group in sorted(groups.items()):
        chosen = {o.valid_selection if o.status is ProbeStatus.COMPLETED else None for o in group}
        if len(group) < 2 or len(chosen) != 1 or None in chosen:
            continue
        order = attribute(attr).setting_names
        targets = tuple(sorted({o.target for o in group}, key=order.index))
        out.append(ConstantChoice(memory=memory, model=model, user=user, attribute=attr,
                                  setting=chosen.pop() or "", probes=len(group), targets=targets))
    return out


class OracleCheck(BaseModel):
    """How often an Oracle run's PA selected the setting it was handed (paper Table 2's check)."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The backbone label."""
    user: str
    """The user."""
    applied: int
    """Scorable probe repeats (final and pre-event) whose selection is the handed target."""
    probes: int
    """Scorable probe repeats (a floored one counts as not applied)."""
    floored_selected: int = 0
    """Floored probe repeats whose selection was the handed target all the same (the turn failed
    after it, e.g. no final reply: PSA 0 by Appendix F.2, so not in ``applied``)."""
    psa: float | None
    """Share of scorable final probes correct (PSA pooled over repeats); None without any."""
    stored: int | None = None
    """Probe repeats stored for the run, any status (None: not known)."""
    planned: int | None = None
    """Probe repeats the run plays in all (``total_probes``; None: not known)."""

    @property
    def unfinished(self) -> bool:
        """True when fewer probe repeats are stored than the run plays (a stopped or running run):
        its hit rate is drawn from too few probes to say anything about the model (finding 9)."""
        return self.planned is not None and (self.stored or 0) < self.planned

    @property
    def rate(self) -> float:
        """``applied / probes`` (0 without probes)."""
        return self.applied / self.probes if self.probes else 0.0

    @property
    def below_floor(self) -> bool:
        """True when the hit rate over every probe, or PSA over the final ones, is under
        :data:`ORACLE_FLOOR`: pre-event probes count too, since Oracle is handed their target as
        well, and a quick start's final probes alone can share one target."""
        return (not self.unfinished and self.probes > 0
                and min(self.rate, 1.0 if self.psa is None else self.psa) < ORACLE_FLOOR)

    def text(self) -> str:
        """``Oracle PSA 100.0 ...; selected the handed setting in 2 of 3 probes (66.7%) ...`` and,
        below :data:`ORACLE_FLOOR`, the verdict that the table measures the model; for a run not
        finished, how many of its probes are stored and no verdict."""
        line = (f"{condition_label('oracle')} PSA {_pct(self.psa)} (paper: {ORACLE_PAPER_RANGE}, Table 2); "
                f"it selected the setting it was handed in {self.applied} of {self.probes} probes "
                f"({_pct(self.rate)}%, final and pre-event")
        if self.floored_selected:
            line += (f"; {self.floored_selected} more floored probe{'s' if self.floored_selected > 1 else ''} "
                     "selected it and then failed the turn, which counts as wrong (Appendix F.2)")
        line += ")"
        if self.unfinished:
            return line + (f" (run not finished: {self.stored or 0} of {self.planned} probes): too few probes "
                           "for a verdict")
        if self.below_floor:
            line += (f", under {100 * ORACLE_FLOOR:.0f}%: this model often does not apply a setting it is handed, "
                     "so differences between memory conditions here measure the model, not the memory")
        return line


def oracle_checks(outcomes: Sequence[ProbeOutcome], oracle: str = "oracle",
                  planned: Mapping[tuple[str, str], int] | None = None) -> list[OracleCheck]:
    """The Oracle check of every (model, user) with Oracle outcomes.

    Args:
        outcomes: probe outcomes of any conditions.
        oracle: the Oracle condition's name.
        planned: (model, user) -> probe repeats the Oracle run plays in all (its
            ``total_probes``); a check with fewer stored gives no verdict (None: not known).

    Returns:
        One check per model and user, sorted; empty without Oracle outcomes.
    """
    groups: dict[tuple[str, str], list[ProbeOutcome]] = defaultdict(list)
    stored: dict[tuple[str, str], int] = defaultdict(int)
    for o in outcomes:
        if o.memory == oracle:
            stored[(o.model, o.user)] += 1
            if o.scorable:
                groups[(o.model, o.user)].append(o)
    out = []
    for (model, user), group in sorted(groups.items()):
        finals = [o.correct for o in group if o.probe_kind is ProbeKind.FINAL]
        floored = sum(o.status is ProbeStatus.FLOORED and o.selection == o.target for o in group)
        out.append(OracleCheck(model=model, user=user, applied=sum(o.correct for o in group),
                               probes=len(group), psa=_score(finals), stored=stored[(model, user)],
                               planned=(planned or {}).get((model, user)), floored_selected=floored))
    return out


def outcome_validity_lines(outcomes: Sequence[ProbeOutcome], run_of: dict[tuple[str, str, str], str] | None = None,
                           planned: Mapping[tuple[str, str], int] | None = None) -> list[str]:
    """The lines that need only outcomes: the random reference, the fixed-choice ceiling, the
    runs whose PA chose one setting throughout an attribute, and each Oracle run's check.

    Args:
        outcomes: the table's probe outcomes.
        run_of: ``(memory, model, user) -> run id`` to name runs by; without it (or for a row it
            does not hold) a run is named ``<condition> · <model> · user <user>``.
        planned: (model, user) -> probe repeats of that Oracle run in all, as for
            :func:`oracle_checks` (an unfinished Oracle run gets no verdict).

    Returns:
        The lines (empty without outcomes).
    """
    if not outcomes:
        return []
    lines = [random_reference(outcomes).text()]
    ceiling = constant_ceiling(outcomes)
    if ceiling.full:
        lines.append(ceiling.text())

    def name(memory: str, model: str, user: str) -> str:
        return (run_of or {}).get((memory, model, user)) or f"{condition_label(memory)} · {model} · user {user}"

    by_run: dict[tuple[str, str, str], list[ConstantChoice]] = defaultdict(list)
    for choice in constant_choices(outcomes):
        by_run[(choice.memory, choice.model, choice.user)].append(choice)
    for run, choices in by_run.items():
        fixed = [c for c in choices if ceiling.full and ceiling.settings.get(c.attribute) == c.setting]
        shown = [c for c in choices if c.ignores_target or c in fixed]
        if not shown:
            continue
        why = ["a choice that does not follow the target"] if any(c.ignores_target for c in shown) else []
        if fixed:
            scores = " / ".join(f"{m} {_pct(v)}" for m, v in (("PSA", ceiling.psa), ("CS", ceiling.cs))
                                if v is not None)
            why.append(f"the fixed choice above, which scores {scores} on these cells without memory")
        lines.append(f"{name(*run)}: the PA " + "; ".join(c.text() for c in shown) + ": " + ", and ".join(why))
    for check in oracle_checks(outcomes, planned=planned):
        lines.append(f"{name('oracle', check.model, check.user)}: {check.text()}")
    return lines
