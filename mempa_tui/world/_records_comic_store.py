"""Record types of the Comic store domain (paper Table 7; Appendix C.2).

Collection: ``comic_store/inventory``, the stock of the comic shops the user buys from. A title's
``entered_at`` is when the shop lists it (solicitations may list future releases).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["ComicItem"]


class ComicItem(Record):
    """One title in a comic shop's stock (collection ``comic_store/inventory``)."""

    store: str = Field(description="The shop's name.")
    title: str
    series: str = ""
    issue: str = Field(default="", description="Issue or volume number as printed, e.g. '#12' or 'Vol. 2'.")
    publisher: str = ""
    creators: list[str] = Field(default_factory=list)
    format: Literal["single issue", "trade paperback", "hardcover", "graphic novel", "omnibus", "manga volume"]
    price: float = Field(ge=0)
    in_stock: int = Field(ge=0, description="Copies on the shelf.")
    release_date: date
    notes: str = ""
