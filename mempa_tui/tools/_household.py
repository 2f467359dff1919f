"""Household tool (paper Table 7, domain Household: 1 read).

Collection: ``household/inventory``, what the user keeps at home.

Decisions (Appendix C.2 leaves them open):
- ``category`` must name a category present in the visible inventory (rejected with the closest
  names otherwise); ``location`` and ``query`` are free-text filters.
- Each item shows ``low`` (quantity at or below its ``low_at`` mark) and ``expired`` (its
  ``expires_on`` day is before today); ``low_only`` keeps items that are low or used up.
- Order: location, then name.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import Limit, known_name, matches, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_household import HouseholdItem

__all__ = ["household_inventory_search"]

INVENTORY = "household/inventory"


def _low(item: HouseholdItem) -> bool:
    return item.quantity == 0 or (item.low_at is not None and item.quantity <= item.low_at)


def _shown(item: HouseholdItem, wc: WorkingCopy) -> dict[str, Any]:
    out = view(item, "added_at")
    out["low"] = _low(item)
    out["expired"] = item.expires_on is not None and item.expires_on < wc.now.date()
    return out


@tool(domain="household")
def household_inventory_search(
    wc: WorkingCopy,
    query: str = "",
    category: str = "",
    location: str = "",
    low_only: bool = False,
    limit: Limit = 20,
) -> JsonValue:
    """Find things kept at home: how many there are, where they are, and what is running low.

    Args:
        query: words that must all appear in the name, brand or notes; empty matches everything.
        category: only this category.
        location: words that must all appear in where it is kept.
        low_only: only items that are running low or used up.
        limit: most items to return.

    Returns:
        the number of matches and the items.
    """
    items = wc.records_as(INVENTORY, HouseholdItem)
    kind = known_name(category, (i.category for i in items), "category", "household category") if category.strip() else ""
    found = [
        i
        for i in items
        if matches(query, i.name, i.brand, i.notes)
        and (not kind or i.category == kind)
        and matches(location, i.location)
        and (not low_only or _low(i))
    ]
    found.sort(key=lambda i: (i.location.casefold(), i.name.casefold()))
    return {"count": len(found), "items": [_shown(i, wc) for i in found[:limit]]}
