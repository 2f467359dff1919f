"""Cluster-bootstrap intervals (paper Appendix F.3): seedable, clustered, paired differences."""

from __future__ import annotations

import numpy as np
import pytest

from mempa_tui.scoring import (
    ProbeOutcome,
    bootstrap_distribution,
    bootstrap_interval,
    differences_from,
    metric_tables,
    score_conditions,
)
from mempa_tui.taxonomy import ATTRIBUTES


def outcomes(seed: int, memory: str = "file", users: str = "ABCD") -> list[ProbeOutcome]:
    """28 final probes per user and repeat, random selections, random ratings, 3 repeats."""
    rng = np.random.default_rng(seed)
    out = []
    for user in users:
        for rep in (1, 2, 3):
            for ctx in ("work", "personal"):
                for a in ATTRIBUTES:
                    names = a.setting_names
                    target = names[0] if ctx == "work" or a.key in ("verbosity", "proactive_outreach") else names[-1]
                    out.append(
                        ProbeOutcome(
                            user=user,
                            context=ctx,
                            attribute=a.key,
                            probe_kind="final",
                            repeat=rep,
                            target=target,
                            selection=names[int(rng.integers(len(names)))],
                            brs=int(rng.integers(1, 6)),
                            prs=int(rng.integers(1, 6)),
                            memory=memory,
                            # the hand-made matrix: every attribute but two differs by context
                            differs_in_matrix=a.key not in ("verbosity", "proactive_outreach"),
                        )
                    )
            out.append(
                ProbeOutcome(
                    user=user, context="work", attribute="verbosity", probe_kind="pre_event", repeat=rep,
                    target="Detailed", selection=["Terse", "Detailed"][int(rng.integers(2))], memory=memory,
                )
            )
    return out


def test_deterministic_under_a_seed_and_contains_the_point() -> None:
    data = outcomes(7)
    first = score_conditions(data, resamples=2000, seed=11)
    again = score_conditions(data, resamples=2000, seed=11)
    other = score_conditions(data, resamples=2000, seed=12)
    assert first == again
    assert first[0].psa.interval != other[0].psa.interval
    for metric in ("PSA", "CS", "PET", "BRS", "PRS"):
        s = first[0].metric(metric)
        assert s is not None and s.mean is not None and s.interval is not None
        assert s.interval.low is not None and s.interval.high is not None
        assert s.interval.low <= s.mean <= s.interval.high, metric
        assert s.interval.resamples == 2000 and s.interval.seed == 11


def _psa(correct: dict[tuple[str, str], list[bool]]) -> list[ProbeOutcome]:
    """Final PSA probes: (user, attribute) -> correctness in repeats 1..n."""
    out = []
    for (user, key), flags in correct.items():
        a = next(x for x in ATTRIBUTES if x.key == key)
        right, wrong = a.setting_names[0], a.setting_names[1]
        for rep, ok in enumerate(flags, start=1):
            out.append(
                ProbeOutcome(user=user, context="work", attribute=key, probe_kind="final", repeat=rep,
                             target=right, selection=right if ok else wrong, memory="file")
            )
    return out


def test_a_unit_brings_all_its_repeats() -> None:
    # unit 1 right in all three repeats, unit 2 wrong in all three: a resample draws whole units,
    # so every resampled PSA is 0, 50 or 100 (never a mix of repeats such as 33.3)
    data = _psa({("A", "verbosity"): [True] * 3, ("A", "guidance_level"): [False] * 3})
    values = bootstrap_distribution(metric_tables(data)["PSA"], unit="%", resamples=3000, seed=1)
    assert set(np.round(values, 6)) <= {0.0, 50.0, 100.0}
    assert len(set(np.round(values, 6))) == 3


def test_psa_resamples_within_each_user() -> None:
    # user A has one right and one wrong unit, user B two right ones; each resample keeps two
    # units per user, so PSA never falls below 50 (an unstratified draw could reach 0)
    data = _psa({
        ("A", "verbosity"): [True], ("A", "guidance_level"): [False],
        ("B", "verbosity"): [True], ("B", "guidance_level"): [True],
    })
    values = bootstrap_distribution(metric_tables(data)["PSA"], unit="%", resamples=5000, seed=3)
    assert values.min() >= 50.0
    assert set(np.round(values, 6)) == {50.0, 75.0, 100.0}


def test_all_passing_gives_a_degenerate_interval() -> None:
    data = _psa({("A", "verbosity"): [True] * 3, ("B", "verbosity"): [True] * 3})
    interval = bootstrap_interval(metric_tables(data)["PSA"], unit="%", resamples=500, seed=0)
    assert (interval.low, interval.high) == (100.0, 100.0)


def test_paired_difference_is_zero_for_identical_conditions() -> None:
    data = outcomes(3)
    twin = [o.model_copy(update={"memory": "none"}) for o in data]
    diffs = differences_from(data + twin, resamples=1000, seed=5)
    assert {d.metric for d in diffs} == {"PSA", "CS", "PET", "Carry-over"}
    for d in diffs:
        assert d.memory == "file" and d.reference == "none"
        assert d.point == pytest.approx(0.0)
        assert d.interval.low == pytest.approx(0.0) and d.interval.high == pytest.approx(0.0)


def test_difference_interval_contains_the_point() -> None:
    data = outcomes(3) + outcomes(4, memory="none")
    (psa,) = [d for d in differences_from(data, resamples=2000, seed=9) if d.metric == "PSA"]
    assert psa.point is not None and psa.interval.low is not None and psa.interval.high is not None
    assert psa.interval.low <= psa.point <= psa.interval.high
    rows = {r.memory: r for r in score_conditions(data, intervals=False)}
    assert rows["file"].psa.mean is not None and rows["none"].psa.mean is not None
    assert psa.point == pytest.approx(rows["file"].psa.mean - rows["none"].psa.mean)


def _one_probe(memory: str, correct: bool) -> ProbeOutcome:
    return ProbeOutcome(
        user="A", context="work", attribute="verbosity", probe_kind="final", repeat=1,
        target="Detailed", selection="Detailed" if correct else "Terse", memory=memory,
    )


def test_a_difference_from_one_unit_prints_no_interval_and_its_n() -> None:
    """Issue 12.1: one probe per side, one repeat: the bootstrap can only redraw that probe, so
    its [x, x] interval is no statement of certainty; the cell says so and gives the n."""
    (psa,) = [d for d in differences_from([_one_probe("oracle", True), _one_probe("none", False)],
                                          resamples=200) if d.metric == "PSA"]
    assert (psa.interval.units, psa.interval.repeats) == (1, 1)
    assert not psa.interval.informative
    assert psa.formatted() == "+100.0 n=1×1: no interval"


def test_a_difference_whose_units_all_agree_prints_no_interval() -> None:
    """Issue 12.1: several units that all give the same difference make a zero-width interval;
    that is too few samples to show spread, not certainty."""
    data = outcomes(3)
    twin = [o.model_copy(update={"memory": "none"}) for o in data]
    (psa,) = [d for d in differences_from(data + twin, resamples=300, seed=5) if d.metric == "PSA"]
    assert psa.interval.units == 4 * 28 and psa.interval.repeats == 3
    assert psa.formatted() == "+0.0 n=112×3: no interval"


def test_a_varied_difference_prints_its_interval_with_the_n() -> None:
    data = outcomes(3) + outcomes(4, memory="none")
    (psa,) = [d for d in differences_from(data, resamples=500, seed=9) if d.metric == "PSA"]
    assert psa.interval.informative and psa.interval.low is not None and psa.interval.high is not None
    assert psa.formatted() == (f"{psa.point:+.1f} [{psa.interval.low:+.1f}, {psa.interval.high:+.1f}] "
                               "n=112×3")
    (row,) = [r for r in score_conditions(outcomes(3), resamples=300) if r.memory == "file"]
    assert row.psa.formatted().endswith(" n=112×3") and "[" in row.psa.formatted()
