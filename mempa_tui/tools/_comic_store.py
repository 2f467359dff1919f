"""Comic store tool (paper Table 7, domain Comic store: 1 read).

Collection: ``comic_store/inventory``, one record per title a shop stocks or lists.

Decisions (Appendix C.2 leaves them open):
- ``store`` and ``publisher`` must name a shop / publisher present in the visible inventory; an
  unknown one is rejected with the closest names. Other text filters just narrow the list.
- Each title shows ``released`` (its release date is on or before today) and ``available``
  (released and at least one copy on the shelf); ``in_stock_only`` keeps available titles.
- Order: series, then issue as written, then title.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import Limit, known_name, matches, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_comic_store import ComicItem

__all__ = ["comic_store_inventory_read"]

INVENTORY = "comic_store/inventory"


def _shown(item: ComicItem, wc: WorkingCopy) -> dict[str, Any]:
    out = view(item, None)
    released = item.release_date <= wc.now.date()
    out["released"] = released
    out["available"] = released and item.in_stock > 0
    return out


@tool(domain="comic_store")
def comic_store_inventory_read(
    wc: WorkingCopy,
    query: str = "",
    store: str = "",
    publisher: str = "",
    in_stock_only: bool = False,
    limit: Limit = 20,
) -> JsonValue:
    """Look up what the comic shops have: titles, issues, prices, copies on the shelf, release dates.

    Args:
        query: words that must all appear in the title, series, creators or notes; empty lists all.
        store: only this shop, by its name.
        publisher: only this publisher, by its name.
        in_stock_only: only titles already released with copies on the shelf.
        limit: most titles to return.

    Returns:
        the number of matches and the titles.
    """
    items = wc.records_as(INVENTORY, ComicItem)
    shop = known_name(store, (i.store for i in items), "store", "comic shop") if store.strip() else ""
    house = known_name(publisher, (i.publisher for i in items), "publisher", "publisher") if publisher.strip() else ""
    today = wc.now.date()
    found = [
        i
        for i in items
        if matches(query, i.title, i.series, i.creators, i.notes)
        and (not shop or i.store == shop)
        and (not house or i.publisher == house)
        and (not in_stock_only or (i.in_stock > 0 and i.release_date <= today))
    ]
    found.sort(key=lambda i: (i.series.casefold(), i.issue, i.title.casefold()))
    return {"count": len(found), "titles": [_shown(i, wc) for i in found[:limit]]}
