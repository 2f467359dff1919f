"""Shipping tools (paper Table 7, domain Shipping: 3 reads).

Collections: ``shipping/addresses``, ``shipping/packages`` (tracking events hidden before their
time), ``shipping/delivery_proofs``.

Decisions: a parcel's status is the status of its latest visible tracking event
(``label_created`` before any); asking for the proof of a parcel that is not delivered yet is not
an error but returns ``delivered: false`` with the current status, since it names a real parcel.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import Limit, ToolError, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_shipping import DeliveryAddress, DeliveryProof, Package

__all__ = ["delivery_address_read", "package_delivery_proof_read", "package_tracking_read"]

ADDRESSES, PACKAGES, PROOFS = "shipping/addresses", "shipping/packages", "shipping/delivery_proofs"


def _package_view(wc: WorkingCopy, package: Package) -> dict[str, Any]:
    """A parcel as the PA sees it: only the tracking events up to now, and the current status."""
    visible = sorted((e for e in package.events if e.at <= wc.now), key=lambda e: e.at)
    shown = view(package.model_copy(update={"events": visible}), None)
    shown["status"] = visible[-1].status if visible else "label_created"
    return shown


def _alnum(text: str) -> str:
    return "".join(c for c in text if c.isalnum()).casefold()


def _find_package(wc: WorkingCopy, tracking_number: str) -> Package:
    """The visible parcel with ``tracking_number`` (case, spaces and dashes ignored), or a ToolError."""
    key = _alnum(tracking_number)
    for p in wc.records_as(PACKAGES, Package):
        if _alnum(p.tracking_number) == key:
            return p
    raise ToolError(f"tracking_number {tracking_number!r} names no parcel")


@tool(domain="shipping")
def delivery_address_read(wc: WorkingCopy, address_id: str | None = None) -> JsonValue:
    """Read one of the user's delivery addresses, or list them all when no id is given.

    Args:
        address_id: the address's id; leave out to list.

    Returns:
        the address, or the number of addresses and the addresses, the default first.
    """
    if address_id is not None:
        return view(
            require(wc, ADDRESSES, DeliveryAddress, address_id, "address_id", "delivery address"), None
        )
    found = sorted(
        wc.records_as(ADDRESSES, DeliveryAddress), key=lambda a: (not a.is_default, a.label.casefold())
    )
    return {"count": len(found), "addresses": [view(a, None) for a in found]}


@tool(domain="shipping")
def package_tracking_read(
    wc: WorkingCopy, tracking_number: str = "", order_id: str = "", limit: Limit = 10
) -> JsonValue:
    """Track a parcel by tracking number or order id; with neither, list parcels newest first.

    Args:
        tracking_number: the carrier's tracking number, e.g. from shopping_order_read.
        order_id: the order the parcel belongs to.
        limit: when listing, most parcels to return.

    Returns:
        the parcel, or the
        number of parcels and the parcels.
    """
    if tracking_number.strip() and order_id.strip():
        raise ToolError("give tracking_number or order_id, not both")
    if tracking_number.strip():
        return _package_view(wc, _find_package(wc, tracking_number))
    packages = wc.records_as(PACKAGES, Package)
    if order_id.strip():
        mine = [p for p in packages if p.order_id == order_id.strip()]
        if not mine:
            raise ToolError(f"order_id {order_id!r} names no order with a parcel")
        return _package_view(wc, mine[-1])
    packages.sort(key=lambda p: p.entered_at, reverse=True)
    return {"count": len(packages), "packages": [_package_view(wc, p) for p in packages[:limit]]}


@tool(domain="shipping")
def package_delivery_proof_read(wc: WorkingCopy, tracking_number: str) -> JsonValue:
    """Read the proof of delivery of a parcel (who took it, where it was left, photo, signature).

    Args:
        tracking_number: the parcel's tracking number.

    Returns:
        delivered true with the proof, or delivered false with the parcel's current status.
    """
    package = _find_package(wc, tracking_number)
    proof = next(
        (p for p in wc.records_as(PROOFS, DeliveryProof) if p.tracking_number == package.tracking_number),
        None,
    )
    if proof is None:
        status = _package_view(wc, package)["status"]
        return {
            "tracking_number": package.tracking_number,
            "delivered": False,
            "status": status,
            "proof": None,
        }
    return {"tracking_number": package.tracking_number, "delivered": True, "proof": view(proof, None)}
