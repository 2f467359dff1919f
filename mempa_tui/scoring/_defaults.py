"""Each backbone's default setting under No Memory (paper Appendix G.3, Table 20).

For each backbone and attribute, No Memory selections are pooled over users, repeats and both
final and pre-event probes; the setting chosen most often is the default. Only completed probes
with a valid selection count (a floored probe's selection is not scored). Ties go to the setting
listed first in Table 4 and are marked.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from mempa_tui.scoring._outcome import ProbeOutcome, ProbeStatus
from mempa_tui.taxonomy import ATTRIBUTES, attribute

__all__ = ["BackboneDefaults", "DefaultSetting", "backbone_defaults"]


class DefaultSetting(BaseModel):
    """One backbone's default for one attribute.

    Attributes:
        model: the backbone label.
        attribute: attribute key.
        setting: the most often selected setting.
        count: how often it was selected.
        total: the pooled valid selections.
        tied: another setting was selected as often.
    """

    model: str
    attribute: str
    setting: str
    count: int
    total: int
    tied: bool = False

    @property
    def share(self) -> float:
        """``count / total`` as a percentage."""
        return 100.0 * self.count / self.total


class BackboneDefaults(BaseModel):
    """All defaults found, in backbone then Table 4 order."""

    entries: list[DefaultSetting] = Field(default_factory=list)

    def setting(self, model: str, attribute_key: str) -> str | None:
        """The default of ``model`` for ``attribute_key``, None when it has no No Memory selection."""
        for e in self.entries:
            if e.model == model and e.attribute == attribute_key:
                return e.setting
        return None

    @property
    def models(self) -> list[str]:
        """The backbones with at least one default."""
        return sorted({e.model for e in self.entries})


def backbone_defaults(outcomes: Iterable[ProbeOutcome], *, no_memory: str = "none") -> BackboneDefaults:
    """Each backbone's default setting per attribute under No Memory (Appendix G.3).

    Args:
        outcomes: any outcomes; only those of the ``no_memory`` condition are used.
        no_memory: the No Memory condition's name.

    Returns:
        The defaults (empty when there are no No Memory selections).
    """
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        if o.memory != no_memory or o.status is not ProbeStatus.COMPLETED:
            continue
        chosen = o.valid_selection
        if chosen is not None:
            counts[(o.model, o.attribute)][chosen] += 1
    order = {a.key: i for i, a in enumerate(ATTRIBUTES)}
    entries: list[DefaultSetting] = []
    for (model, key), counter in sorted(counts.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        best = max(counter.values())
        winners = [s for s in attribute(key).setting_names if counter[s] == best]
        entries.append(
            DefaultSetting(
                model=model,
                attribute=key,
                setting=winners[0],
                count=best,
                total=sum(counter.values()),
                tied=len(winners) > 1,
            )
        )
    return BackboneDefaults(entries=entries)
