"""Record types of the Shopping domain (paper Table 7: Shopping).

Collections: ``shopping/products`` (what the shops sell, with stock), ``shopping/orders`` (the
user's orders) and ``shopping/return_cases`` (returns the user opened). Orders and return cases
carry dated updates; an update whose ``at`` is after the step's time is hidden, and the status
shown is the one of the latest visible update (paper Appendix C.2, 'Visibility rules').
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = [
    "CaseUpdate",
    "Order",
    "OrderLine",
    "OrderStatus",
    "OrderUpdate",
    "Product",
    "ReturnCase",
    "ReturnStatus",
]

#: Life of an order; ``placed`` and ``processing`` orders can still be changed or cancelled.
OrderStatus = Literal["placed", "processing", "shipped", "delivered", "cancelled"]
#: Life of a return case; ``requested`` and ``approved`` cases are open.
ReturnStatus = Literal["requested", "approved", "refused", "refunded", "replaced", "withdrawn"]


class Product(Record):
    """Something a shop sells (collection ``shopping/products``)."""

    name: str
    store: str
    category: str = ""
    price: float = Field(ge=0, description="Unit price in ``currency``.")
    currency: str = "GBP"
    stock: int = Field(ge=0, description="Units available to order now.")
    return_window_days: int = Field(
        default=30, ge=0, description="Days after delivery a return may be opened."
    )
    description: str = ""


class OrderLine(BaseModel):
    """One product line of an order, priced when ordered."""

    model_config = ConfigDict(extra="forbid")

    product_id: str
    name: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(ge=0)


class OrderUpdate(BaseModel):
    """A dated change of an order's status; hidden before ``at``."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    status: OrderStatus
    note: str = ""


class Order(Record):
    """An order the user placed (collection ``shopping/orders``); ``entered_at`` is when."""

    store: str
    lines: list[OrderLine] = Field(min_length=1)
    total: float = Field(ge=0)
    currency: str = "GBP"
    status: OrderStatus = Field(default="placed", description="Status when the order entered the world.")
    updates: list[OrderUpdate] = Field(default_factory=list)
    delivery_address_id: str = Field(description="Id in shipping/addresses.")
    payment_method_id: str = Field(description="Id in finance/payment_methods.")
    tracking_number: str = Field(default="", description="Package in shipping/packages, once shipped.")
    notes: str = ""


class CaseUpdate(BaseModel):
    """A dated step of a return case: a message from the user or the store, maybe a new status."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    by: Literal["user", "store"]
    text: str = ""
    status: ReturnStatus | None = Field(default=None, description="The case's new status, if it changed.")


class ReturnCase(Record):
    """A return the user opened for part of an order (collection ``shopping/return_cases``)."""

    order_id: str
    product_id: str
    quantity: int = Field(default=1, ge=1)
    reason: str
    resolution: Literal["refund", "replacement"]
    status: ReturnStatus = Field(default="requested", description="Status when the case was opened.")
    updates: list[CaseUpdate] = Field(default_factory=list)
