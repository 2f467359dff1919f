from fractions import Fraction

import pytest

from mempa_tui.taxonomy import ATTRIBUTES, Dimension, Mechanism, attribute, chance_psa


def test_counts_match_table_4() -> None:
    assert len(ATTRIBUTES) == 14
    assert sum(len(a.settings) for a in ATTRIBUTES) == 32
    assert sum(len(a.settings) == 3 for a in ATTRIBUTES) == 4
    assert {a.dimension for a in ATTRIBUTES} == set(Dimension)


def test_chance_psa_is_derived_not_typed() -> None:
    assert chance_psa() == Fraction(19, 42)
    assert round(float(chance_psa()), 3) == 0.452


def test_write_lock_attributes_are_the_five_of_appendix_c3() -> None:
    locked = {a.name for a in ATTRIBUTES if a.write_lock}
    assert locked == {
        "Reasoning Visibility",
        "Process Visibility",
        "Autonomy Level",
        "Information Elicitation",
        "Topic Management",
    }


def test_mechanisms_follow_appendix_e3() -> None:
    by_mech: dict[Mechanism, set[str]] = {}
    for a in ATTRIBUTES:
        for m in a.mechanisms:
            by_mech.setdefault(m, set()).add(a.key)
    assert by_mech[Mechanism.EXECUTION_CONTROL] == {
        "autonomy_level", "capability_boundary", "information_elicitation"
    }
    assert by_mech[Mechanism.DELIVERY_CONTROL] == {
        "topic_management", "information_elicitation", "proactive_outreach"
    }
    assert len(by_mech[Mechanism.PASS_THROUGH]) == 6
    assert len(by_mech[Mechanism.SELECTIVE_RENDERING]) == 3


def test_lookup_errors_name_the_valid_values() -> None:
    with pytest.raises(KeyError, match="autonomy_level"):
        attribute("autonomy")
    with pytest.raises(KeyError, match="Reactive, Self-directed, Autonomous"):
        attribute("autonomy_level").setting("Passive")
