"""Finance tools (paper Table 7, domain Finance: 3 reads, 2 outward writes).

Collections: ``finance/utility_accounts``, ``finance/utility_bills``, ``finance/payment_methods``,
``finance/bill_payments``. Both writes are outward: a payment moves money to a provider, a holder
change is a request to the provider.

Decisions: a bill's paid amount is the sum of its visible payments, and a payment dated after the
step's day counts as scheduled (it still reduces what is left to pay, so a bill cannot be paid
twice); payments cannot be dated in the past, nor exceed what is left; paying after the due date
is allowed and marked ``late``; a card must not have expired by the payment day (a card is valid
through its ``expires`` month). A holder change cannot be backdated before the step's day, and
the holder shown is the one of the latest change already in effect.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import DateArg, Limit, TextArg, ToolError, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_finance import BillPayment, PaymentMethod, UtilityAccount, UtilityBill

__all__ = [
    "bill_payment_create",
    "bill_payment_read",
    "payment_method_read",
    "utility_account_holder_update",
    "utility_bill_read",
]

ACCOUNTS, BILLS = "finance/utility_accounts", "finance/utility_bills"
METHODS, PAYMENTS = "finance/payment_methods", "finance/bill_payments"

#: An amount of money, more than zero, in the bill's currency.
Amount = Annotated[float, Field(gt=0, le=1_000_000)]


def _alnum(text: str) -> str:
    """Letters and digits only, case-folded: account numbers match however they are spaced."""
    return "".join(c for c in text if c.isalnum()).casefold()


def usable_method(wc: WorkingCopy, method_id: str, arg: str, on: date) -> PaymentMethod:
    """The visible payment method ``method_id``, checked not expired on ``on``.

    Raises:
        ToolError: no such method, or a card whose expiry month ends before ``on``.
    """
    method = require(wc, METHODS, PaymentMethod, method_id, arg, "payment method")
    if method.expires is not None and method.expires < on.strftime("%Y-%m"):
        raise ToolError(f"{arg} {method_id!r} is a card that expired in {method.expires}, before {on}")
    return method


def _holder(wc: WorkingCopy, account: UtilityAccount) -> str:
    today = wc.now.date()
    done = [c for c in account.holder_changes if c.requested_at <= wc.now and c.effective_on <= today]
    done.sort(key=lambda c: (c.effective_on, c.requested_at))
    return done[-1].holder_name if done else account.holder_name


def _account_view(wc: WorkingCopy, account: UtilityAccount) -> dict[str, Any]:
    shown = view(account, None)
    shown["holder_name"] = _holder(wc, account)
    shown["holder_changes"] = [
        ch
        for ch, c in zip(shown["holder_changes"], account.holder_changes, strict=True)
        if c.requested_at <= wc.now
    ]
    return shown


def _paid(wc: WorkingCopy, bill_id: str) -> float:
    return round(sum(p.amount for p in wc.records_as(PAYMENTS, BillPayment) if p.bill_id == bill_id), 2)


def _bill_view(wc: WorkingCopy, bill: UtilityBill) -> dict[str, Any]:
    shown = view(bill, "received_at")
    paid = _paid(wc, bill.id)
    left = round(bill.amount - paid, 2)
    shown.update({"paid": paid, "left_to_pay": max(left, 0.0), "status": "paid" if left <= 0 else "unpaid"})
    key = _alnum(bill.account_number)
    account = next(
        (a for a in wc.records_as(ACCOUNTS, UtilityAccount) if _alnum(a.account_number) == key), None
    )
    shown["account_holder"] = _holder(wc, account) if account is not None else None
    return shown


def _payment_view(wc: WorkingCopy, payment: BillPayment) -> dict[str, Any]:
    shown = view(payment, "made_at")
    shown["status"] = "scheduled" if payment.pay_on > wc.now.date() else "paid"
    return shown


@tool(domain="finance")
def utility_bill_read(
    wc: WorkingCopy,
    bill_id: str | None = None,
    provider: str = "",
    unpaid_only: bool = False,
    limit: Limit = 10,
) -> JsonValue:
    """Read one utility bill, or list bills (newest first) when no id is given.

    Args:
        bill_id: the bill's id; leave out to list.
        provider: when listing, part of the provider's name; empty for all.
        unpaid_only: when listing, only bills with money left to pay.
        limit: when listing, most bills to return.

    Returns:
        the bill, or the number of matches and the bills.
    """
    if bill_id is not None:
        return _bill_view(wc, require(wc, BILLS, UtilityBill, bill_id, "bill_id", "utility bill"))
    key = provider.strip().casefold()
    shown = [_bill_view(wc, b) for b in wc.records_as(BILLS, UtilityBill) if key in b.provider.casefold()]
    if unpaid_only:
        shown = [b for b in shown if b["status"] == "unpaid"]
    shown.sort(key=lambda b: str(b["received_at"]), reverse=True)
    bills: list[JsonValue] = list(shown[:limit])
    return {"count": len(shown), "bills": bills}


@tool(domain="finance")
def payment_method_read(wc: WorkingCopy, method_id: str | None = None) -> JsonValue:
    """Read one of the user's payment methods, or list them all when no id is given.

    Args:
        method_id: the method's id; leave out to list.

    Returns:
        the method (label, kind card/bank_account, holder, last4, expires YYYY-MM, is_default), or
        the number of methods and the methods, the default first.
    """
    if method_id is not None:
        return view(require(wc, METHODS, PaymentMethod, method_id, "method_id", "payment method"), None)
    found = sorted(
        wc.records_as(METHODS, PaymentMethod), key=lambda m: (not m.is_default, m.label.casefold())
    )
    return {"count": len(found), "methods": [view(m, None) for m in found]}


@tool(domain="finance")
def bill_payment_read(
    wc: WorkingCopy, payment_id: str | None = None, bill_id: str = "", limit: Limit = 10
) -> JsonValue:
    """Read one bill payment, or list payments (newest first) when no id is given.

    Args:
        payment_id: the payment's id; leave out to list.
        bill_id: when listing, only payments of this bill.
        limit: when listing, most payments to return.

    Returns:
        the payment, or the number of matches and the payments.
    """
    if payment_id is not None:
        return _payment_view(wc, require(wc, PAYMENTS, BillPayment, payment_id, "payment_id", "bill payment"))
    if bill_id.strip():
        require(wc, BILLS, UtilityBill, bill_id, "bill_id", "utility bill")
    found = [p for p in wc.records_as(PAYMENTS, BillPayment) if not bill_id.strip() or p.bill_id == bill_id]
    found.sort(key=lambda p: (p.entered_at, p.pay_on), reverse=True)
    return {"count": len(found), "payments": [_payment_view(wc, p) for p in found[:limit]]}


@tool(domain="finance", write=True, tag="outward")
def bill_payment_create(
    wc: WorkingCopy,
    bill_id: str,
    payment_method_id: str,
    amount: Amount | None = None,
    pay_on: DateArg | None = None,
    reference: str = "",
) -> JsonValue:
    """Pay a utility bill, now or on a later day (money leaves the user's account).

    Args:
        bill_id: the bill's id.
        payment_method_id: the card or account to pay from.
        amount: how much to pay in the bill's currency; all that is left if omitted.
        pay_on: the day to pay, YYYY-MM-DD, today or later; today if omitted.
        reference: a note for the provider.

    Returns:
        the payment's id, the payment, and the bill as it stands after it.
    """
    bill = require(wc, BILLS, UtilityBill, bill_id, "bill_id", "utility bill")
    today = wc.now.date()
    day = pay_on or today
    if day < today:
        raise ToolError(f"pay_on '{day}' is in the past (today is {today})")
    left = round(bill.amount - _paid(wc, bill.id), 2)
    if left <= 0:
        raise ToolError(f"bill_id {bill_id!r} is already paid in full")
    paying = round(amount if amount is not None else left, 2)
    if paying > left:
        raise ToolError(
            f"amount {amount} is more than the {left:.2f} {bill.currency} left to pay on {bill_id}"
        )
    usable_method(wc, payment_method_id, "payment_method_id", day)
    payment = wc.create(
        PAYMENTS,
        {
            "bill_id": bill.id,
            "payment_method_id": payment_method_id,
            "amount": paying,
            "currency": bill.currency,
            "pay_on": day,
            "reference": reference,
        },
    )
    assert isinstance(payment, BillPayment)
    result = _payment_view(wc, payment)
    result["late"] = day > bill.due_date
    return {"payment_id": payment.id, "payment": result, "bill": _bill_view(wc, bill)}


@tool(domain="finance", write=True, tag="outward")
def utility_account_holder_update(
    wc: WorkingCopy, account_number: str, holder_name: TextArg, effective_on: DateArg | None = None
) -> JsonValue:
    """Ask a utility provider to change who holds an account (e.g. after a move or a death).

    Args:
        account_number: the utility account number as shown on its bills (spaces and dashes ignored).
        holder_name: the full name of the new account holder.
        effective_on: the day the change takes effect, YYYY-MM-DD, today or later; today if omitted.

    Returns:
        the account with its holder and its holder changes so far.
    """
    key = _alnum(account_number)
    accounts = wc.records_as(ACCOUNTS, UtilityAccount)
    account = next((a for a in accounts if _alnum(a.account_number) == key), None)
    if account is None:
        raise ToolError(f"account_number {account_number!r} names no utility account")
    today = wc.now.date()
    day = effective_on or today
    if day < today:
        raise ToolError(
            f"effective_on '{day}' is in the past (today is {today}); a holder change cannot be backdated"
        )
    pending = [c for c in account.holder_changes if c.requested_at <= wc.now]
    pending.sort(key=lambda c: (c.effective_on, c.requested_at))
    latest = pending[-1].holder_name if pending else account.holder_name
    if latest.strip().casefold() == holder_name.strip().casefold():
        raise ToolError(f"holder_name {holder_name!r} already holds account {account.account_number}")
    change = {"requested_at": wc.now, "effective_on": day, "holder_name": holder_name.strip()}
    updated = UtilityAccount.model_validate(
        {
            **account.model_dump(),
            "holder_changes": [*(c.model_dump() for c in account.holder_changes), change],
        }
    )
    wc.replace(ACCOUNTS, updated)
    return {"account": _account_view(wc, updated)}
