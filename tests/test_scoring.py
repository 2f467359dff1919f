"""PSA, CS, PET, BRS, PRS with floors, incomplete probes, N/A, repeat SD, defaults and carry-over
(paper Section 3.5, Appendix F.2-F.3, G.1, G.3), on a small hand-computed set."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from mempa_tui.scoring import (
    DuplicateOutcomeError,
    MatrixConflictError,
    ProbeOutcome,
    backbone_defaults,
    breakdown,
    carry_over,
    score_conditions,
    score_group,
)
from mempa_tui.scoring._units import cs_pairs

# Whether each hand-made user's preference matrix sets the attribute differently at work and in
# personal life (CS's set D comes from here, Section 3.5); pairs not listed carry no matrix.
_MATRIX_DIFFERS: dict[tuple[str, str], bool] = {
    ("A", "verbosity"): True,
    ("A", "tone_formality"): True,
    ("A", "autonomy_level"): False,
    ("A", "guidance_level"): True,
    ("B", "verbosity"): True,
    ("B", "guidance_level"): True,
    ("B", "tone_formality"): True,
}


def o(
    user: str,
    ctx: str,
    attr: str,
    target: str,
    sel: str | None,
    *,
    rep: int = 1,
    kind: str = "final",
    status: str = "completed",
    brs: int | None = None,
    prs: int | None = None,
    memory: str = "file",
    model: str = "m",
    differs: bool | None = None,
) -> ProbeOutcome:
    return ProbeOutcome(
        user=user,
        context=ctx,
        attribute=attr,
        probe_kind=kind,
        repeat=rep,
        target=target,
        selection=sel,
        status=status,
        brs=brs,
        prs=prs,
        memory=memory,
        model=model,
        differs_in_matrix=differs if differs is not None else _MATRIX_DIFFERS.get((user, attr)),
    )


def repeat_set(rep: int) -> list[ProbeOutcome]:
    """The hand-computed set of one repeat (see the comments for each probe's part)."""
    auto_sel = "Reactive" if rep == 2 else "Autonomous"  # correct only in repeat 2
    guid_w_sel = "Assumed" if rep == 3 else "Guided"  # wrong only in repeat 3
    return [
        # user A: verbosity pair differs and passes
        o("A", "work", "verbosity", "Terse", "Terse", rep=rep, brs=5, prs=4),
        o("A", "personal", "verbosity", "Detailed", "Detailed", rep=rep, brs=4, prs=4),
        # user A: tone pair differs; personal endpoint floored -> pair fails, PSA 0, BRS 1
        o("A", "work", "tone_formality", "Formal", "Formal", rep=rep, brs=3, prs=4),
        o("A", "personal", "tone_formality", "Casual", "Casual", rep=rep, status="floored", brs=4, prs=2),
        # user A: same target in both contexts -> not a CS pair; no IX call scores incorrect
        o("A", "work", "autonomy_level", "Reactive", auto_sel, rep=rep, brs=2, prs=4),
        o("A", "personal", "autonomy_level", "Reactive", None, rep=rep, brs=None, prs=None),
        # user B: verbosity pair with an incomplete endpoint -> kept apart
        o("B", "work", "verbosity", "Terse", "Terse", rep=rep, status="incomplete", brs=5, prs=5),
        o("B", "personal", "verbosity", "Detailed", "Detailed", rep=rep, brs=5, prs=4),
        # user B: guidance pair differs
        o("B", "work", "guidance_level", "Guided", guid_w_sel, rep=rep, brs=4, prs=4),
        o("B", "personal", "guidance_level", "Assumed", "Assumed", rep=rep, brs=3, prs=4),
        # pre-event probes of the changed cells
        o("A", "work", "verbosity", "Detailed", "Detailed", rep=rep, kind="pre_event"),
        o("A", "personal", "tone_formality", "Formal", "Formal", rep=rep, kind="pre_event"),
        o("B", "personal", "guidance_level", "Guided", "Guided", rep=rep, kind="pre_event"),
    ]


def all_repeats() -> list[ProbeOutcome]:
    return [x for r in (1, 2, 3) for x in repeat_set(r)]


def sample_sd(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def test_psa_cs_pet_hand_computed() -> None:
    (row,) = score_conditions(all_repeats(), intervals=False)
    # PSA: 9 scorable finals per repeat (one incomplete kept apart); correct 6, 7, 5
    psa = [100 * 6 / 9, 100 * 7 / 9, 100 * 5 / 9]
    assert [v.value for v in row.psa.per_repeat] == pytest.approx(psa)
    assert row.psa.mean == pytest.approx(sum(psa) / 3)
    assert row.psa.sd == pytest.approx(sample_sd(psa))
    assert row.psa.sd == pytest.approx(100 / 9)
    assert (row.psa.eligible, row.psa.passing, row.psa.excluded) == (27, 18, 3)
    # CS: pairs A-verbosity (pass), A-tone (floored endpoint: fail), B-guidance (fails in r3);
    # B-verbosity kept apart (incomplete endpoint)
    cs = [100 * 2 / 3, 100 * 2 / 3, 100 * 1 / 3]
    assert [v.value for v in row.cs.per_repeat] == pytest.approx(cs)
    assert row.cs.mean == pytest.approx(sum(cs) / 3)
    assert row.cs.sd == pytest.approx(sample_sd(cs))
    assert (row.cs.eligible, row.cs.excluded) == (9, 3)
    # PET: A work verbosity passes, A personal tone fails (floored final), B personal guidance passes
    assert [v.value for v in row.pet.per_repeat] == pytest.approx([100 * 2 / 3] * 3)
    assert row.pet.sd == pytest.approx(0.0)
    # floors and incomplete are counted
    assert (row.probes, row.floored, row.incomplete) == (39, 3, 3)


def test_brs_and_prs_floors_and_missing() -> None:
    (row,) = score_conditions(all_repeats(), intervals=False)
    # BRS per repeat: 5,4,3,(floored->1),2,(missing),(incomplete),5,4,3 -> 27 / 8
    assert [v.value for v in row.brs.per_repeat] == pytest.approx([27 / 8] * 3)
    assert row.brs.excluded == 6  # the missing rating and the incomplete probe, per repeat
    # PRS keeps the floored probe's own rating (2): 4,4,4,2,4,4,4,4 -> 30 / 8
    assert row.prs.mean == pytest.approx(30 / 8)
    assert row.brs.unit == "1-5" and row.psa.unit == "%"


def test_metric_without_eligible_items_is_na() -> None:
    work_only = [x for x in all_repeats() if x.context.value == "work" and x.probe_kind.value == "final"]
    row = score_group(work_only, memory="file", model="m", intervals=False)
    assert row.cs.mean is None and row.cs.sd is None and row.cs.formatted() == "N/A"
    assert row.pet.mean is None and row.pet.formatted() == "N/A"
    assert row.psa.mean is not None


def test_single_repeat_has_no_sd() -> None:
    (row,) = score_conditions(repeat_set(1), intervals=False)
    assert row.psa.mean == pytest.approx(100 * 6 / 9)
    assert row.psa.sd is None
    assert row.psa.formatted(interval=False) == "66.7"


def test_invalid_selection_scores_incorrect() -> None:
    rows = [o("A", "work", "verbosity", "Terse", "terse"), o("A", "personal", "verbosity", "Terse", "Short")]
    (row,) = score_conditions(rows, intervals=False)
    assert row.psa.mean == 0.0 and row.psa.eligible == 2


def test_duplicate_outcomes_rejected() -> None:
    twice = [o("A", "work", "verbosity", "Terse", "Terse"), o("A", "work", "verbosity", "Terse", "Detailed")]
    with pytest.raises(DuplicateOutcomeError, match="user A, work verbosity, final probe"):
        score_conditions(twice, intervals=False)


def test_outcome_validation_names_the_problem() -> None:
    with pytest.raises(ValidationError, match="target"):
        o("A", "work", "verbosity", "Chatty", None)
    with pytest.raises(ValidationError, match="unknown attribute"):
        o("A", "work", "loudness", "Terse", None)
    with pytest.raises(ValidationError, match="brs"):
        o("A", "work", "verbosity", "Terse", None, brs=6)
    assert o("A", "work", "Solution Breadth", "Low", None).attribute == "solution_breadth"


def test_conditions_and_models_get_separate_rows() -> None:
    data = all_repeats() + [x.model_copy(update={"memory": "none"}) for x in all_repeats()]
    data += [x.model_copy(update={"model": "m2"}) for x in repeat_set(1)]
    rows = score_conditions(data, intervals=False)
    assert [(r.memory, r.model) for r in rows] == [("file", "m"), ("file", "m2"), ("none", "m")]
    assert rows[0].label == "File memory" and rows[2].label == "No Memory"
    pooled = score_conditions(data, pool_models=True, intervals=False)
    assert [(r.memory, r.model) for r in pooled] == [("file", "all models"), ("none", "all models")]
    # pooled: per repeat the mean over the models present; repeat 1 has m and m2 (both 6/9)
    assert pooled[0].psa.per_repeat[0].value == pytest.approx(100 * 6 / 9)


def test_backbone_defaults_pool_final_and_pre_event() -> None:
    nm = [
        o("A", "work", "verbosity", "Terse", "Detailed", memory="none"),
        o("A", "personal", "verbosity", "Detailed", "Detailed", memory="none", rep=2),
        o("A", "work", "verbosity", "Detailed", "Terse", memory="none", kind="pre_event"),
        o("B", "work", "verbosity", "Terse", "Terse", memory="none", status="floored"),  # not counted
        o("B", "work", "guidance_level", "Guided", "Guided", memory="none"),
        o("B", "personal", "guidance_level", "Assumed", "Assumed", memory="none"),  # tie
        o("A", "work", "guidance_level", "Guided", "Assumed", memory="file"),  # other condition
    ]
    defaults = backbone_defaults(nm)
    assert defaults.setting("m", "verbosity") == "Detailed"
    verb = next(e for e in defaults.entries if e.attribute == "verbosity")
    assert (verb.count, verb.total, round(verb.share, 1), verb.tied) == (2, 3, 66.7, False)
    guid = next(e for e in defaults.entries if e.attribute == "guidance_level")
    assert guid.tied and guid.setting == "Assumed"  # Table 4 order breaks the tie
    assert defaults.setting("m", "tone_formality") is None
    assert defaults.setting("other", "verbosity") is None


def test_carry_over_counts_same_non_default_target_in_both_contexts() -> None:
    no_memory = [
        o("A", "work", "verbosity", "Terse", "Detailed", memory="none"),
        o("A", "work", "guidance_level", "Guided", "Assumed", memory="none"),
    ]
    file_mem = [
        # Terse in both contexts: the work target, not the default (Detailed) -> carry-over
        o("A", "work", "verbosity", "Terse", "Terse"),
        o("A", "personal", "verbosity", "Detailed", "Terse"),
        # Assumed in both: the personal target but also the default -> not a carry-over
        o("A", "work", "guidance_level", "Guided", "Assumed"),
        o("A", "personal", "guidance_level", "Assumed", "Assumed"),
        # Formal in both: the personal target, no default known -> not a carry-over
        o("B", "work", "tone_formality", "Casual", "Formal"),
        o("B", "personal", "tone_formality", "Formal", "Formal"),
    ]
    rows = score_conditions(no_memory + file_mem, intervals=False)
    file_row = next(r for r in rows if r.memory == "file")
    assert file_row.carry_over is not None
    assert file_row.carry_over.eligible == 3
    assert file_row.carry_over.passing == 1
    assert file_row.carry_over.mean == pytest.approx(100 / 3)
    direct = carry_over(file_mem, backbone_defaults(no_memory), intervals=False)
    assert (direct.passing, direct.eligible) == (1, 3)
    # without any No Memory outcomes there is no default, hence no carry-over row
    (alone,) = score_conditions(file_mem, intervals=False)
    assert alone.carry_over is None


def test_breakdowns_by_dimension_and_group() -> None:
    rows = breakdown(all_repeats(), "dimension")
    by_dim = {r.breakdown: r for r in rows}
    # Expression Style holds verbosity, tone and guidance; Initiative & Autonomy holds autonomy
    assert set(by_dim) == {"Expression Style", "Initiative & Autonomy"}
    autonomy = by_dim["Initiative & Autonomy"]
    assert [v.value for v in autonomy.psa.per_repeat] == pytest.approx([0.0, 50.0, 0.0])
    # Expression Style repeat 1: 7 scorable finals (B verbosity-w is incomplete); only the floored
    # A tone-p is wrong
    expr = by_dim["Expression Style"]
    assert expr.psa.per_repeat[0].value == pytest.approx(100 * 6 / 7)
    groups = {r.breakdown: r for r in breakdown(all_repeats(), "group")}
    assert set(groups) == {"reply", "action"}
    assert groups["action"].psa.mean == pytest.approx(100 * (0 + 0.5 + 0) / 3)
    with pytest.raises(ValueError, match="choose one of"):
        breakdown(all_repeats(), "colour")  # type: ignore[arg-type]


def test_cs_set_d_comes_from_the_preference_matrix_not_the_final_targets() -> None:
    """Section 3.5 / F.3: D = pairs whose MATRIX settings differ; a change event can make the final
    targets agree where the matrix differs, or differ where it agrees."""
    data = [
        # matrix differs, an event made both final targets High: in D, both right -> passes
        o("C", "work", "task_expansion", "High", "High", differs=True),
        o("C", "personal", "task_expansion", "High", "High", differs=True),
        # matrix agrees, an event made the final targets differ: not in D (it fails, so it would
        # pull CS down if it were counted)
        o("C", "work", "solution_breadth", "Low", "High", differs=False),
        o("C", "personal", "solution_breadth", "High", "Low", differs=False),
        # no matrix known: never in D
        o("C", "work", "verbosity", "Terse", "Terse"),
        o("C", "personal", "verbosity", "Detailed", "Terse"),
    ]
    assert cs_pairs(data) == {("C", "task_expansion")}
    (row,) = score_conditions(data, intervals=False)
    assert (row.cs.eligible, row.cs.passing, row.cs.mean) == (1, 1, 100.0)
    # carry-over counts over the same D: High in both, the target, not the default (Low)
    nm = [o("C", "work", "task_expansion", "High", "Low", memory="none", differs=True)]
    file_row = next(r for r in score_conditions(nm + data, intervals=False) if r.memory == "file")
    assert file_row.carry_over is not None
    assert (file_row.carry_over.eligible, file_row.carry_over.passing) == (1, 1)


def test_outcomes_that_disagree_on_the_matrix_are_refused() -> None:
    mixed = [
        o("C", "work", "task_expansion", "High", "High", differs=True),
        o("C", "personal", "task_expansion", "High", "High", differs=False),
    ]
    with pytest.raises(MatrixConflictError, match="user C, task_expansion"):
        score_conditions(mixed, intervals=False)
