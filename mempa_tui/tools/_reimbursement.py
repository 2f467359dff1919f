"""Reimbursement tools (paper Table 7, domain Reimbursement: 1 read, 1 outward write).

Collections: ``reimbursement/policies`` (rules per expense category) and
``reimbursement/submissions`` (claims). Filing a claim goes to the employer's finance office, so
``reimbursement_submission_create`` is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- The category must be one of a fixed list. A category's policy record, when the world has one,
  caps the amount, sets the days after the expense within which a claim may be filed, and may
  require a receipt, which must name a visible document in ``documents/documents``.
- An expense dated after today is rejected, and so is a claim repeating one already filed
  (same category, amount and expense date, not rejected).
- Amounts are in the employer's currency and rounded to cents.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import DateArg, Limit, TextArg, ToolError, check_range, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_reimbursement import (
    ExpenseCategory,
    ReimbursementPolicy,
    ReimbursementSubmission,
)
from mempa_tui.world.records import Document

__all__ = ["reimbursement_submission_create", "reimbursement_submission_read"]

POLICIES, CLAIMS, DOCUMENTS = "reimbursement/policies", "reimbursement/submissions", "documents/documents"

Amount = Annotated[float, Field(gt=0, le=1_000_000)]


def _policy(wc: WorkingCopy, category: str) -> ReimbursementPolicy | None:
    return next((p for p in wc.records_as(POLICIES, ReimbursementPolicy) if p.category == category), None)


def _claim_view(c: ReimbursementSubmission) -> dict[str, Any]:
    return view(c, "submitted_at")


@tool(domain="reimbursement")
def reimbursement_submission_read(
    wc: WorkingCopy,
    submission_id: str | None = None,
    query: str = "",
    status: str = "",
    since: DateArg | None = None,
    until: DateArg | None = None,
    limit: Limit = 20,
) -> JsonValue:
    """Read one expense claim, or list claims (newest expense first) with the claim rules.

    Args:
        submission_id: the claim's id; leave out to list.
        query: when listing, words that must all appear in the description, category or notes.
        status: when listing, only claims with this status (submitted, approved, rejected, paid).
        since: when listing, only expenses on or after this date, YYYY-MM-DD.
        until: when listing, only expenses on or before this date, YYYY-MM-DD.
        limit: most claims to return.

    Returns:
        the claim, or the number of matches, their total amount, the claims and the policies
        (per category: max_amount, claim_window_days, receipt_required).
    """
    if submission_id is not None:
        return _claim_view(
            require(wc, CLAIMS, ReimbursementSubmission, submission_id, "submission_id", "expense claim")
        )
    statuses = ("submitted", "approved", "rejected", "paid")
    if status and status.strip().casefold() not in statuses:
        raise ToolError(f"status '{status}' is not one of {', '.join(statuses)}")
    check_range(since, until, "since", "until")
    found = [
        c
        for c in wc.records_as(CLAIMS, ReimbursementSubmission)
        if matches(query, c.description, c.category, c.notes)
        and (not status or c.status == status.strip().casefold())
        and (since is None or c.expense_date >= since)
        and (until is None or c.expense_date <= until)
    ]
    found.sort(key=lambda c: (c.expense_date, c.id), reverse=True)
    policies: list[JsonValue] = []
    for p in wc.records_as(POLICIES, ReimbursementPolicy):
        rule = view(p, None)
        rule.pop("id")
        policies.append(rule)
    return {
        "count": len(found),
        "total_amount": round(sum(c.amount for c in found), 2),
        "submissions": [_claim_view(c) for c in found[:limit]],
        "policies": policies,
    }


@tool(domain="reimbursement", write=True, tag="outward")
def reimbursement_submission_create(
    wc: WorkingCopy,
    category: ExpenseCategory,
    amount: Amount,
    expense_date: DateArg,
    description: TextArg,
    receipt_document_id: str = "",
    notes: str = "",
) -> JsonValue:
    """File an expense claim with the employer (it goes to finance at once).

    Args:
        category: the expense's category.
        amount: the amount to reclaim, a number in the employer's currency.
        expense_date: the day the money was spent, YYYY-MM-DD, not after today.
        description: what the expense was.
        receipt_document_id: id of the receipt in the documents; empty if none.
        notes: anything else for finance.

    Returns:
        the new claim's id and the claim.
    """
    today = wc.now.date()
    if expense_date > today:
        raise ToolError(f"expense_date '{expense_date}' is after today ({today}); claim spent money only")
    amount = round(amount, 2)
    policy = _policy(wc, category)
    if policy is not None:
        if policy.max_amount is not None and amount > policy.max_amount:
            raise ToolError(f"amount {amount} is over the {category} limit of {policy.max_amount}")
        window = policy.claim_window_days
        if window is not None and expense_date + timedelta(days=window) < today:
            raise ToolError(
                f"expense_date '{expense_date}' is outside the {window}-day claim window for {category} "
                f"(claims had to be filed by {expense_date + timedelta(days=window)})"
            )
        if policy.receipt_required and not receipt_document_id.strip():
            raise ToolError(f"receipt_document_id is empty but {category} claims need a receipt document")
    if receipt_document_id.strip():
        require(wc, DOCUMENTS, Document, receipt_document_id.strip(), "receipt_document_id", "document")
    for c in wc.records_as(CLAIMS, ReimbursementSubmission):
        if (c.category, c.amount, c.expense_date) == (
            category,
            amount,
            expense_date,
        ) and c.status != "rejected":
            raise ToolError(
                f"amount {amount} for {category} on {expense_date} was already claimed as {c.id}; "
                "a claim is filed once"
            )
    fields = {
        "category": category,
        "description": description,
        "amount": amount,
        "expense_date": expense_date,
        "receipt_document_id": receipt_document_id.strip(),
        "notes": notes,
    }
    made = wc.create(CLAIMS, fields)
    return {"submission_id": made.id, "submission": view(made, "submitted_at")}
