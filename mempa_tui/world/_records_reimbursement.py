"""Record types of the Reimbursement domain (paper Table 7; Appendix C.2).

Collections: ``reimbursement/policies`` (the employer's rules per expense category) and
``reimbursement/submissions`` (expense claims the user filed).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["EXPENSE_CATEGORIES", "ExpenseCategory", "ReimbursementPolicy", "ReimbursementSubmission"]

ExpenseCategory = Literal["travel", "lodging", "meals", "supplies", "training", "registration", "other"]

#: The expense categories a claim can name.
EXPENSE_CATEGORIES: tuple[str, ...] = (
    "travel",
    "lodging",
    "meals",
    "supplies",
    "training",
    "registration",
    "other",
)


class ReimbursementPolicy(Record):
    """The employer's rule for one expense category (collection ``reimbursement/policies``).

    A category with no policy record has no limit, no claim window and needs no receipt.
    """

    category: ExpenseCategory
    max_amount: float | None = Field(default=None, gt=0, description="Largest claim allowed.")
    claim_window_days: int | None = Field(
        default=None, ge=1, description="Days after the expense a claim may be filed."
    )
    receipt_required: bool = False
    notes: str = ""


class ReimbursementSubmission(Record):
    """An expense claim (collection ``reimbursement/submissions``); ``entered_at`` is when filed."""

    category: ExpenseCategory
    description: str
    amount: float = Field(gt=0, description="In the employer's currency.")
    expense_date: date
    receipt_document_id: str = Field(default="", description="Receipt in documents/documents, if any.")
    notes: str = ""
    status: Literal["submitted", "approved", "rejected", "paid"] = "submitted"
