"""Record types of the Household domain (paper Table 7; Appendix C.2).

Collection: ``household/inventory``, what the user keeps at home and where.
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["HouseholdItem"]


class HouseholdItem(Record):
    """One thing kept at home (collection ``household/inventory``)."""

    name: str
    category: str = Field(description="e.g. 'cleaning', 'pantry', 'tools', 'spare parts', 'medicine'.")
    location: str = Field(default="", description="Where it is kept, e.g. 'garage shelf 2'.")
    quantity: float = Field(ge=0)
    unit: str = Field(default="", description="e.g. 'bottles', 'kg', 'pieces'; empty for a count.")
    low_at: float | None = Field(default=None, ge=0, description="Quantity at or below which it runs low.")
    brand: str = ""
    expires_on: date | None = None
    notes: str = ""
