"""Record types of the Shipping domain (paper Table 7: Shipping).

Collections: ``shipping/addresses`` (the user's delivery addresses), ``shipping/packages``
(parcels on their way, each with dated tracking events hidden before their time) and
``shipping/delivery_proofs`` (proof of delivery, entering the world when the parcel is delivered).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["DeliveryAddress", "DeliveryProof", "Package", "PackageStatus", "TrackingEvent"]

#: Status of a parcel as its carrier reports it.
PackageStatus = Literal[
    "label_created", "in_transit", "out_for_delivery", "delivered", "delivery_failed", "returned"
]


class DeliveryAddress(Record):
    """A delivery address of the user (collection ``shipping/addresses``)."""

    label: str = Field(description="Short name, e.g. 'home' or 'school office'.")
    recipient: str
    line1: str
    line2: str = ""
    city: str
    postcode: str
    country: str = "UK"
    instructions: str = Field(default="", description="Notes for the courier.")
    is_default: bool = False


class TrackingEvent(BaseModel):
    """One carrier scan of a parcel; hidden before ``at``."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    status: PackageStatus
    location: str = ""
    note: str = ""


class Package(Record):
    """A parcel on its way to or from the user (collection ``shipping/packages``)."""

    tracking_number: str
    carrier: str
    description: str = ""
    order_id: str | None = Field(default=None, description="Order in shopping/orders, if any.")
    expected_on: date | None = Field(default=None, description="Expected delivery day.")
    events: list[TrackingEvent] = Field(default_factory=list)


class DeliveryProof(Record):
    """Proof that a parcel was delivered (collection ``shipping/delivery_proofs``)."""

    tracking_number: str
    delivered_at: datetime
    received_by: str = ""
    left_at: str = Field(default="", description="Where it was left, e.g. 'front porch'.")
    photo_note: str = Field(default="", description="What the courier's photo shows.")
    signed: bool = False
