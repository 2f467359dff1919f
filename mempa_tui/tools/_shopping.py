"""Shopping tools (paper Table 7, domain Shopping: 3 reads, 3 outward writes).

Collections: ``shopping/products``, ``shopping/orders``, ``shopping/return_cases``; orders also
name a ``shipping/addresses`` record and a ``finance/payment_methods`` record. All three writes are
outward: they act on a shop.

Decisions: one order comes from one store; ordering takes the units out of stock and cancelling
puts them back; an order can be changed (delivery address, notes) or cancelled only while it is
``placed`` or ``processing``, and its lines cannot be edited (cancel and order again);
``shopping_return_case_update`` without a case id opens a new return (there is no separate create
tool in Table 7), which needs a delivered order still inside the product's return window, and
cannot return more units than were ordered minus those in other live cases; a case can be changed
only while ``requested`` or ``approved``.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from mempa_tui.tools._common import Limit, ToolError, matches, require, view
from mempa_tui.tools._finance import usable_method
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_shipping import DeliveryAddress
from mempa_tui.world._records_shopping import (
    CaseUpdate,
    Order,
    OrderStatus,
    OrderUpdate,
    Product,
    ReturnCase,
    ReturnStatus,
)

__all__ = [
    "shopping_order_create",
    "shopping_order_read",
    "shopping_order_update",
    "shopping_product_search",
    "shopping_return_case_read",
    "shopping_return_case_update",
]

PRODUCTS, ORDERS, CASES = "shopping/products", "shopping/orders", "shopping/return_cases"
ADDRESSES = "shipping/addresses"
_CHANGEABLE: tuple[OrderStatus, ...] = ("placed", "processing")
_OPEN_CASE: tuple[ReturnStatus, ...] = ("requested", "approved")


#: How many units of one product (1-99).
Quantity = Annotated[int, Field(ge=1, le=99)]


class OrderItem(BaseModel):
    """One product to order."""

    model_config = ConfigDict(extra="forbid")

    product_id: str = Field(description="The product's id, from shopping_product_search.")
    quantity: int = Field(default=1, ge=1, le=99, description="How many units (1-99).")


def _order_updates(wc: WorkingCopy, order: Order) -> list[OrderUpdate]:
    """The order's visible updates in time order, ending at a cancellation if there is one.

    A cancel is final (paper Appendix C.2: a later read returns what a write wrote): a fixture
    update dated after the customer's cancel (a scripted "shipped") never revives the order.
    """
    seen = sorted((u for u in order.updates if u.at <= wc.now), key=lambda u: u.at)
    for i, u in enumerate(seen):
        if u.status == "cancelled":
            return seen[: i + 1]
    return seen


def order_status(wc: WorkingCopy, order: Order) -> OrderStatus:
    """The status of the latest visible update (a cancel is final), else the entry status."""
    seen = _order_updates(wc, order)
    return seen[-1].status if seen else order.status


def _delivered_on(wc: WorkingCopy, order: Order) -> date | None:
    days = [u.at.date() for u in _order_updates(wc, order) if u.status == "delivered"]
    return max(days) if days else None


def _order_view(wc: WorkingCopy, order: Order) -> dict[str, Any]:
    visible = _order_updates(wc, order)
    shown = view(order.model_copy(update={"updates": visible}), "placed_at")
    shown["status"] = order_status(wc, order)
    shown["delivered_on"] = d.isoformat() if (d := _delivered_on(wc, order)) else None
    return shown


def _case_updates(wc: WorkingCopy, case: ReturnCase) -> list[CaseUpdate]:
    """The case's visible updates in time order, ending at a withdrawal if there is one (a
    withdrawal is final, like an order's cancel; see :func:`_order_updates`)."""
    seen = sorted((u for u in case.updates if u.at <= wc.now), key=lambda u: u.at)
    for i, u in enumerate(seen):
        if u.status == "withdrawn":
            return seen[: i + 1]
    return seen


def case_status(wc: WorkingCopy, case: ReturnCase) -> ReturnStatus:
    """The status of the latest visible update that set one (a withdrawal is final), else the
    status the case opened with."""
    seen = [u for u in _case_updates(wc, case) if u.status is not None]
    status = seen[-1].status if seen else None
    return status if status is not None else case.status


def _case_view(wc: WorkingCopy, case: ReturnCase) -> dict[str, Any]:
    visible = _case_updates(wc, case)
    shown = view(case.model_copy(update={"updates": visible}), "opened_at")
    shown["status"] = case_status(wc, case)
    return shown


@tool(domain="shopping")
def shopping_product_search(
    wc: WorkingCopy,
    query: str = "",
    store: str = "",
    max_price: float | None = None,
    in_stock_only: bool = False,
    limit: Limit = 10,
) -> JsonValue:
    """Find products the shops sell, cheapest first.

    Args:
        query: words that must all appear in the name, category or description; empty for all.
        store: part of the store's name; empty for any store.
        max_price: highest unit price to include.
        in_stock_only: only products with units in stock.
        limit: most products to return.

    Returns:
        the number of matches and the products with price, stock and return window.
    """
    if max_price is not None and max_price < 0:
        raise ToolError(f"max_price {max_price} must not be negative")
    found = [
        p
        for p in wc.records_as(PRODUCTS, Product)
        if matches(query, p.name, p.category, p.description)
        and matches(store, p.store)
        and (max_price is None or p.price <= max_price)
        and (not in_stock_only or p.stock > 0)
    ]
    found.sort(key=lambda p: (p.price, p.name.casefold()))
    return {"count": len(found), "products": [view(p, None) for p in found[:limit]]}


@tool(domain="shopping")
def shopping_order_read(
    wc: WorkingCopy,
    order_id: str | None = None,
    status: Literal["placed", "processing", "shipped", "delivered", "cancelled", "any"] = "any",
    query: str = "",
    limit: Limit = 10,
) -> JsonValue:
    """Read one order, or list the user's orders (newest first) when no id is given.

    Args:
        order_id: the order's id; leave out to list.
        status: when listing, only orders with this status, or any.
        query: when listing, words that must all appear in the store, product names or notes.
        limit: when listing, most orders to return.

    Returns:
        the order, or the number of matches and the orders.
    """
    if order_id is not None:
        return _order_view(wc, require(wc, ORDERS, Order, order_id, "order_id", "order"))
    found = [
        o
        for o in wc.records_as(ORDERS, Order)
        if (status == "any" or order_status(wc, o) == status)
        and matches(query, o.store, o.notes, [ln.name for ln in o.lines])
    ]
    found.sort(key=lambda o: o.entered_at, reverse=True)
    return {"count": len(found), "orders": [_order_view(wc, o) for o in found[:limit]]}


@tool(domain="shopping")
def shopping_return_case_read(
    wc: WorkingCopy, case_id: str | None = None, order_id: str = "", limit: Limit = 10
) -> JsonValue:
    """Read one return case, or list return cases (newest first) when no id is given.

    Args:
        case_id: the case's id; leave out to list.
        order_id: when listing, only cases of this order.
        limit: when listing, most cases to return.

    Returns:
        the case, or the number of matches and the cases.
    """
    if case_id is not None:
        return _case_view(wc, require(wc, CASES, ReturnCase, case_id, "case_id", "return case"))
    if order_id.strip():
        require(wc, ORDERS, Order, order_id, "order_id", "order")
    found = [c for c in wc.records_as(CASES, ReturnCase) if not order_id.strip() or c.order_id == order_id]
    found.sort(key=lambda c: c.entered_at, reverse=True)
    return {"count": len(found), "cases": [_case_view(wc, c) for c in found[:limit]]}


@tool(domain="shopping", write=True, tag="outward")
def shopping_order_create(
    wc: WorkingCopy,
    items: list[OrderItem],
    delivery_address_id: str,
    payment_method_id: str,
    notes: str = "",
) -> JsonValue:
    """Buy products from one store: places an order that the store will charge and ship.

    Args:
        items: the products and quantities.
        delivery_address_id: where to deliver, from delivery_address_read.
        payment_method_id: the card or account to pay with, from payment_method_read.
        notes: a note for the store.

    Returns:
        the new order's id and the order.
    """
    if not items:
        raise ToolError("items is empty; give at least one product_id and quantity")
    lines: list[dict[str, Any]] = []
    stores: set[str] = set()
    currencies: set[str] = set()
    seen: set[str] = set()
    for i, item in enumerate(items):
        arg = f"items[{i}].product_id"
        if item.product_id in seen:
            raise ToolError(f"{arg} {item.product_id!r} is listed twice; give one line per product")
        seen.add(item.product_id)
        product = require(wc, PRODUCTS, Product, item.product_id, arg, "product")
        if item.quantity > product.stock:
            raise ToolError(
                f"items[{i}].quantity {item.quantity} is more than the {product.stock} "
                f"'{product.name}' in stock"
            )
        stores.add(product.store)
        currencies.add(product.currency)
        lines.append(
            {
                "product_id": product.id,
                "name": product.name,
                "quantity": item.quantity,
                "unit_price": product.price,
            }
        )
        wc.replace(PRODUCTS, product.model_copy(update={"stock": product.stock - item.quantity}))
    if len(stores) > 1:
        raise ToolError(
            f"items come from several stores ({', '.join(sorted(stores))}); place one order per store"
        )
    if len(currencies) > 1:
        raise ToolError(f"items are priced in several currencies ({', '.join(sorted(currencies))})")
    require(wc, ADDRESSES, DeliveryAddress, delivery_address_id, "delivery_address_id", "delivery address")
    usable_method(wc, payment_method_id, "payment_method_id", wc.now.date())
    total = round(sum(ln["unit_price"] * ln["quantity"] for ln in lines), 2)
    order = wc.create(
        ORDERS,
        {
            "store": stores.pop(),
            "lines": lines,
            "total": total,
            "currency": currencies.pop(),
            "status": "placed",
            "delivery_address_id": delivery_address_id,
            "payment_method_id": payment_method_id,
            "notes": notes,
        },
    )
    assert isinstance(order, Order)
    return {"order_id": order.id, "order": _order_view(wc, order)}


@tool(domain="shopping", write=True, tag="outward")
def shopping_order_update(
    wc: WorkingCopy,
    order_id: str,
    delivery_address_id: str | None = None,
    notes: str | None = None,
    cancel: bool = False,
) -> JsonValue:
    """Change a not-yet-shipped order's delivery address or note, or cancel it.

    Args:
        order_id: the order's id.
        delivery_address_id: the new delivery address's id.
        notes: a new note for the store (replaces the old one).
        cancel: true to cancel the whole order; then give no other change.

    Returns:
        the order as it stands after the change.
    """
    order = require(wc, ORDERS, Order, order_id, "order_id", "order")
    status = order_status(wc, order)
    if cancel and (delivery_address_id is not None or notes is not None):
        raise ToolError("cancel true cannot be combined with other changes")
    if not cancel and delivery_address_id is None and notes is None:
        raise ToolError("no change was given; pass delivery_address_id, notes or cancel true")
    if status not in _CHANGEABLE:
        hint = "; open a return with shopping_return_case_update instead" if status == "delivered" else ""
        raise ToolError(f"order_id {order_id!r} is {status} and can no longer be changed{hint}")
    update: dict[str, Any] = {}
    if cancel:
        update["updates"] = [
            *order.updates,
            {"at": wc.now, "status": "cancelled", "note": "cancelled by the customer"},
        ]
        for i, line in enumerate(order.lines):
            product = wc.get_as(PRODUCTS, line.product_id, Product)
            if product is None:
                raise ToolError(f"order line {i} names product {line.product_id!r}, which no longer exists")
            wc.replace(PRODUCTS, product.model_copy(update={"stock": product.stock + line.quantity}))
    if delivery_address_id is not None:
        require(
            wc, ADDRESSES, DeliveryAddress, delivery_address_id, "delivery_address_id", "delivery address"
        )
        update["delivery_address_id"] = delivery_address_id
    if notes is not None:
        update["notes"] = notes
    new = Order.model_validate({**order.model_dump(), **update})
    wc.replace(ORDERS, new)
    return {"order_id": new.id, "order": _order_view(wc, new)}


def _open_case(
    wc: WorkingCopy, order_id: str, product_id: str, quantity: int, reason: str, resolution: str
) -> ReturnCase:
    order = require(wc, ORDERS, Order, order_id, "order_id", "order")
    line = next((ln for ln in order.lines if ln.product_id == product_id), None)
    if line is None:
        raise ToolError(f"product_id {product_id!r} is not in order {order_id}")
    delivered = _delivered_on(wc, order)
    if delivered is None:
        raise ToolError(
            f"order_id {order_id!r} is {order_status(wc, order)}, not delivered; only delivered orders can be returned"
        )
    product = wc.get_as(PRODUCTS, product_id, Product)
    window = product.return_window_days if product is not None else 30
    last_day = delivered + timedelta(days=window)
    if wc.now.date() > last_day:
        raise ToolError(
            f"order_id {order_id!r}: the {window}-day return window for {line.name!r} closed on {last_day} "
            f"(delivered {delivered})"
        )
    live = sum(
        c.quantity
        for c in wc.records_as(CASES, ReturnCase)
        if c.order_id == order.id
        and c.product_id == product_id
        and case_status(wc, c) not in ("refused", "withdrawn")
    )
    if quantity > line.quantity - live:
        raise ToolError(
            f"quantity {quantity} is more than the {line.quantity - live} unit(s) of {line.name!r} "
            f"left to return on {order_id}"
        )
    case = wc.create(
        CASES,
        {
            "order_id": order.id,
            "product_id": product_id,
            "quantity": quantity,
            "reason": reason,
            "resolution": resolution,
        },
    )
    assert isinstance(case, ReturnCase)
    return case


@tool(domain="shopping", write=True, tag="outward")
def shopping_return_case_update(
    wc: WorkingCopy,
    case_id: str | None = None,
    order_id: str | None = None,
    product_id: str | None = None,
    quantity: Quantity = 1,
    reason: str | None = None,
    resolution: Literal["refund", "replacement"] | None = None,
    message: str = "",
    withdraw: bool = False,
) -> JsonValue:
    """Open a return with the shop, or change an open return (resolution, message, withdraw).

    To open a return, leave case_id out and give order_id, product_id, reason and resolution.
    To change a return, give case_id and at least one of resolution, message or withdraw.

    Args:
        case_id: the open case's id; leave out to open a new return.
        order_id: the delivered order to return from (new return only).
        product_id: the product to return (new return only).
        quantity: how many units to return (new return only).
        reason: why it goes back, in a sentence (new return only).
        resolution: refund or replacement.
        message: a message to the shop about the case.
        withdraw: true to withdraw an open case.

    Returns:
        the case's id and the case as it stands after the change.
    """
    if case_id is None:
        missing = [
            n
            for n, v in (
                ("order_id", order_id),
                ("product_id", product_id),
                ("reason", reason),
                ("resolution", resolution),
            )
            if not (v or "").strip()
        ]
        if missing:
            raise ToolError(f"to open a return give {', '.join(missing)} (or give case_id to change a case)")
        if withdraw:
            raise ToolError("withdraw true needs the case_id of an open case")
        assert (
            order_id is not None and product_id is not None and reason is not None and resolution is not None
        )
        case = _open_case(wc, order_id, product_id, quantity, reason, resolution)
        if message.strip():
            case = ReturnCase.model_validate({**case.model_dump(), "updates": [_update(wc, message, None)]})
            wc.replace(CASES, case)
        return {"case_id": case.id, "case": _case_view(wc, case)}
    if quantity != 1:
        raise ToolError(f"quantity {quantity} cannot be changed on an existing case")
    for name, value in (("order_id", order_id), ("product_id", product_id), ("reason", reason)):
        if value is not None:
            raise ToolError(
                f"{name} cannot be changed on an existing case; give only resolution, message or withdraw"
            )
    case = require(wc, CASES, ReturnCase, case_id, "case_id", "return case")
    status = case_status(wc, case)
    if status not in _OPEN_CASE:
        raise ToolError(f"case_id {case_id!r} is {status} and can no longer be changed")
    if not (resolution or message.strip() or withdraw):
        raise ToolError("no change was given; pass resolution, message or withdraw true")
    if withdraw and resolution is not None:
        raise ToolError("withdraw true cannot be combined with a new resolution")
    update: dict[str, Any] = {}
    if resolution is not None:
        update["resolution"] = resolution
    text = message.strip() or (f"resolution changed to {resolution}" if resolution else "")
    new_update = _update(wc, text or "case withdrawn by the customer", "withdrawn" if withdraw else None)
    update["updates"] = [*case.updates, new_update]
    new = ReturnCase.model_validate({**case.model_dump(), **update})
    wc.replace(CASES, new)
    return {"case_id": new.id, "case": _case_view(wc, new)}


def _update(wc: WorkingCopy, text: str, status: ReturnStatus | None) -> dict[str, Any]:
    return {"at": wc.now, "by": "user", "text": text, "status": status}
