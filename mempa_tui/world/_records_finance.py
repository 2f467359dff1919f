"""Record types of the Finance domain (paper Table 7: Finance).

Collections: ``finance/utility_accounts`` (the user's utility accounts and who holds them),
``finance/utility_bills``, ``finance/payment_methods`` and ``finance/bill_payments``. A bill's
paid amount is the sum of its visible payments; a payment dated after the step's day is shown as
scheduled.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["BillPayment", "HolderChange", "PaymentMethod", "UtilityAccount", "UtilityBill"]


class HolderChange(BaseModel):
    """A change of account holder, asked for at ``requested_at``, taking effect on ``effective_on``."""

    model_config = ConfigDict(extra="forbid")

    requested_at: datetime
    effective_on: date
    holder_name: str


class UtilityAccount(Record):
    """An account with a utility provider (collection ``finance/utility_accounts``)."""

    provider: str
    utility: str = Field(description="What it supplies, e.g. 'electricity', 'water', 'broadband'.")
    account_number: str
    holder_name: str = Field(description="Holder when the account entered the world.")
    service_address: str = ""
    holder_changes: list[HolderChange] = Field(default_factory=list)


class UtilityBill(Record):
    """A bill from a utility (collection ``finance/utility_bills``); ``entered_at`` is when it came."""

    account_number: str
    provider: str
    period: str = Field(description="What it covers, e.g. '2026-02' or 'Jan-Mar 2026'.")
    amount: float = Field(gt=0)
    currency: str = "GBP"
    due_date: date


class PaymentMethod(Record):
    """A card or bank account the user pays with (collection ``finance/payment_methods``)."""

    label: str = Field(description="Short name, e.g. 'joint debit card'.")
    kind: Literal["card", "bank_account"]
    holder: str
    last4: str = Field(pattern=r"^\d{4}$")
    expires: str | None = Field(
        default=None, pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="YYYY-MM, cards only."
    )
    is_default: bool = False


class BillPayment(Record):
    """A payment of a bill (collection ``finance/bill_payments``); ``entered_at`` is when it was made."""

    bill_id: str
    payment_method_id: str
    amount: float = Field(gt=0)
    currency: str = "GBP"
    pay_on: date = Field(description="Day the money leaves the account.")
    reference: str = ""
