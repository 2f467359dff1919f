"""Interaction-preference taxonomy (paper Appendix A.1, Table 4): attributes, settings, chance PSA."""

from mempa_tui.taxonomy._catalog import (
    ATTRIBUTES,
    Attribute,
    Context,
    Dimension,
    Mechanism,
    RealizationGroup,
    Setting,
    attribute,
    attribute_by_ix_tool,
    chance_of,
    chance_psa,
    setting_names,
)

__all__ = [
    "ATTRIBUTES",
    "Attribute",
    "Context",
    "Dimension",
    "Mechanism",
    "RealizationGroup",
    "Setting",
    "attribute",
    "attribute_by_ix_tool",
    "chance_of",
    "chance_psa",
    "setting_names",
]
