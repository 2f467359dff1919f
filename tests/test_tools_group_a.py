"""Group A tools of Table 7: Phone, Maps and places, Weather, Shopping, Shipping, Finance, Appointments.

For every tool: a read or write round trip on the group A test world, one rejected argument with
its message, and that a record entering the world after the step's time is invisible.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tool_test_support import REG, fail, ok

from mempa_tui.world import WorkingCopy, WorldState
from mempa_tui.world._records_shopping import Order, Product

FIXTURES = Path(__file__).parent / "fixtures_world" / "group_a" / "fixtures"
NOW = datetime(2026, 3, 10, 9, 0)  # a Tuesday

#: Table 7, the group A rows: domain -> (read tools, outward write tools).
TABLE7: dict[str, tuple[set[str], set[str]]] = {
    "phone": ({"phone_call_read"}, {"phone_call_dial"}),
    "maps_places": ({"club_closure_calendar_read", "map_route_search", "place_search"}, set()),
    "weather": ({"weather_forecast_read"}, set()),
    "shopping": (
        {"shopping_product_search", "shopping_order_read", "shopping_return_case_read"},
        {"shopping_order_create", "shopping_order_update", "shopping_return_case_update"},
    ),
    "shipping": ({"delivery_address_read", "package_delivery_proof_read", "package_tracking_read"}, set()),
    "finance": (
        {"utility_bill_read", "payment_method_read", "bill_payment_read"},
        {"utility_account_holder_update", "bill_payment_create"},
    ),
    "appointments": (
        {"appointment_search", "appointment_read"},
        {"appointment_create", "appointment_update"},
    ),
}
GROUP = {name for reads, writes in TABLE7.values() for name in reads | writes}


@pytest.fixture()
def wc() -> WorkingCopy:
    return WorkingCopy(WorldState.from_directory(FIXTURES), NOW)



def test_catalog_rows_match_table_7() -> None:
    for domain, (reads, writes) in TABLE7.items():
        tools = [t for t in REG if t.domain == domain]
        assert {t.name for t in tools if not t.write} == reads, domain
        assert {t.name for t in tools if t.write} == writes, domain
        assert all(t.tag == "outward" for t in tools if t.write), domain
    assert len(GROUP) == 24


def test_every_fixture_collection_is_valid_and_holds_a_future_record(wc: WorkingCopy) -> None:
    for path in wc.state:
        collection = path.removesuffix(".yaml")
        if collection.startswith("contacts/"):
            continue
        assert len(wc.records(collection)) < len(wc._all_records(collection)), collection


def test_missing_collections_read_as_empty() -> None:
    empty = WorkingCopy(WorldState({}), NOW)
    assert ok(empty, "phone_call_read") == {"count": 0, "calls": []}
    assert ok(empty, "shopping_order_read")["count"] == 0
    assert ok(empty, "appointment_search")["count"] == 0
    assert ok(empty, "delivery_address_read")["count"] == 0
    assert "there are none" in fail(empty, "weather_forecast_read", city="Sallowmouth").content


# (tool, arguments, words the error must contain) — one rejected argument per tool
REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("phone_call_read", {"call_id": "call_0099"}, "call_id 'call_0099' names no call in the call log"),
    (
        "phone_call_dial",
        {"purpose": "keys", "contact": "Rafe Vale"},
        "contact 'Rafe Vale' has no phone number",
    ),
    (
        "club_closure_calendar_read",
        {"club": "Sallowmouth Swimming"},
        "club 'Sallowmouth Swimming' is not a known club in the closure calendar or a known place; did you mean Sallowmouth Swim Club?",
    ),
    (
        "map_route_search",
        {"origin": "Northfeld School", "destination": "Harbour Pharmacy"},
        "origin 'Northfeld School' is not a known place on the map; did you mean Northfield School?",
    ),
    (
        "place_search",
        {"city": "Atlantis"},
        "city 'Atlantis' is not a known city on the map; known: Brindle, Sallowmouth",
    ),
    (
        "weather_forecast_read",
        {"city": "Sallowmouth", "date": "10/03/2026"},
        "date '10/03/2026' is not a date in YYYY-MM-DD form",
    ),
    ("shopping_product_search", {"max_price": -1}, "max_price -1.0 must not be negative"),
    ("shopping_order_read", {"order_id": "ord_0099"}, "order_id 'ord_0099' names no order"),
    ("shopping_return_case_read", {"case_id": "ret_0099"}, "case_id 'ret_0099' names no return case"),
    (
        "shopping_order_create",
        {
            "items": [{"product_id": "prod_0002", "quantity": 1}],
            "delivery_address_id": "addr_0001",
            "payment_method_id": "pm_0001",
        },
        "items[0].quantity 1 is more than the 0 'Whistle pack of 10' in stock",
    ),
    ("shopping_order_update", {"order_id": "ord_0002", "cancel": True}, "order_id 'ord_0002' is delivered"),
    (
        "shopping_return_case_update",
        {"order_id": "ord_0001", "product_id": "prod_0003", "reason": "stopped", "resolution": "refund"},
        "the 14-day return window for 'Stopwatch' closed on 2026-02-19 (delivered 2026-02-05)",
    ),
    (
        "delivery_address_read",
        {"address_id": "addr_0099"},
        "address_id 'addr_0099' names no delivery address",
    ),
    (
        "package_delivery_proof_read",
        {"tracking_number": "TRK-9999"},
        "tracking_number 'TRK-9999' names no parcel",
    ),
    ("package_tracking_read", {"tracking_number": "TRK-1001", "order_id": "ord_0001"}, "not both"),
    ("utility_bill_read", {"bill_id": "bill_0099"}, "bill_id 'bill_0099' names no utility bill"),
    ("payment_method_read", {"method_id": "pm_0099"}, "method_id 'pm_0099' names no payment method"),
    ("bill_payment_read", {"limit": 0}, "limit 0 is invalid"),
    (
        "utility_account_holder_update",
        {"account_number": "55-0192", "holder_name": "Jo Hale", "effective_on": "2026-03-01"},
        "effective_on '2026-03-01' is in the past (today is 2026-03-10)",
    ),
    (
        "bill_payment_create",
        {"bill_id": "bill_0002", "payment_method_id": "pm_0002"},
        "payment_method_id 'pm_0002' is a card that expired in 2026-02",
    ),
    (
        "appointment_search",
        {"start_date": "2026-03-20", "end_date": "2026-03-10"},
        "end_date '2026-03-10' is before start_date '2026-03-20'",
    ),
    ("appointment_read", {"appointment_id": "appt_0099"}, "appointment_id 'appt_0099' names no appointment"),
    ("appointment_create", {"slot_id": "slot_0003"}, "slot_id 'slot_0003' is already booked"),
    (
        "appointment_update",
        {"appointment_id": "appt_0001", "new_slot_id": "slot_0005"},
        "new_slot_id 'slot_0005' is with Brindle Dental, not Harbour Surgery",
    ),
]


def test_every_group_a_tool_has_a_rejection_case() -> None:
    assert {name for name, _, _ in REJECTED} == GROUP


@pytest.mark.parametrize(("name", "args", "words"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_argument(wc: WorkingCopy, name: str, args: dict[str, Any], words: str) -> None:
    before = wc.state
    res = fail(wc, name, **args)
    assert words in res.content
    assert res.content.startswith(name)
    assert wc.change_log == [] and wc.to_state() == before


# (tool, arguments, an id of the same kind that exists at no time): a record still to come must
# read exactly as a missing one
FUTURE: list[tuple[str, dict[str, Any], str, str]] = [
    ("phone_call_read", {"call_id": "call_0003"}, "call_id", "call_9999"),
    ("shopping_order_read", {"order_id": "ord_0004"}, "order_id", "ord_9999"),
    ("shopping_order_update", {"order_id": "ord_0004", "cancel": True}, "order_id", "ord_9999"),
    ("shopping_return_case_read", {"case_id": "ret_0002"}, "case_id", "ret_9999"),
    ("shopping_return_case_update", {"case_id": "ret_0002", "withdraw": True}, "case_id", "ret_9999"),
    (
        "shopping_order_create",
        {
            "items": [{"product_id": "prod_0005"}],
            "delivery_address_id": "addr_0001",
            "payment_method_id": "pm_0001",
        },
        "items.0.product_id",
        "prod_9999",
    ),
    ("delivery_address_read", {"address_id": "addr_0003"}, "address_id", "addr_9999"),
    ("package_tracking_read", {"tracking_number": "TRK-2000"}, "tracking_number", "TRK-9999"),
    ("package_delivery_proof_read", {"tracking_number": "TRK-2000"}, "tracking_number", "TRK-9999"),
    ("utility_bill_read", {"bill_id": "bill_0004"}, "bill_id", "bill_9999"),
    ("payment_method_read", {"method_id": "pm_0004"}, "method_id", "pm_9999"),
    ("bill_payment_read", {"payment_id": "pay_0003"}, "payment_id", "pay_9999"),
    ("bill_payment_create", {"bill_id": "bill_0004", "payment_method_id": "pm_0001"}, "bill_id", "bill_9999"),
    (
        "utility_account_holder_update",
        {"account_number": "GN-7", "holder_name": "Jo Hale"},
        "account_number",
        "GN-9999",
    ),
    ("appointment_read", {"appointment_id": "appt_0003"}, "appointment_id", "appt_9999"),
    ("appointment_update", {"appointment_id": "appt_0003", "cancel": True}, "appointment_id", "appt_9999"),
    ("appointment_create", {"slot_id": "slot_0006"}, "slot_id", "slot_9999"),
]


def _with(args: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    if key == "items.0.product_id":
        return {**args, "items": [{"product_id": value}]}
    return {**args, key: value}


@pytest.mark.parametrize(("name", "args", "key", "missing"), FUTURE, ids=[f"{f[0]}-{f[2]}" for f in FUTURE])
def test_future_record_reads_as_missing(
    wc: WorkingCopy, name: str, args: dict[str, Any], key: str, missing: str
) -> None:
    future_id = args["items"][0]["product_id"] if key.startswith("items") else args[key]
    future = fail(wc, name, **args).content
    absent = fail(wc, name, **_with(args, key, missing)).content
    assert future.replace(future_id, "ID") == absent.replace(missing, "ID")
    assert wc.change_log == []


def test_names_that_enter_later_are_unknown(wc: WorkingCopy) -> None:
    """Names known only from records still to come are rejected like names that never exist."""
    assert "is not a known person" in fail(wc, "phone_call_dial", purpose="x", contact="Ines Marlow").content
    assert "'Oxmere' is not a known city" in fail(wc, "place_search", city="Oxmere").content
    assert "'Oxmere' is not a known city" in fail(wc, "weather_forecast_read", city="Oxmere").content
    route = fail(wc, "map_route_search", origin="Northfield School", destination="Marsh Lane Clinic")
    assert "destination 'Marsh Lane Clinic' is not a known place" in route.content
    assert (
        "is not a known club" in fail(wc, "club_closure_calendar_read", club="Gorse Hill Tennis Club").content
    )
    assert (
        "is not a known appointment provider"
        in fail(wc, "appointment_search", provider="Clearview Optics").content
    )


# ---- Phone ------------------------------------------------------------------------------------


def test_phone_round_trip(wc: WorkingCopy) -> None:
    listed = ok(wc, "phone_call_read")
    assert [c["id"] for c in listed["calls"]] == ["call_0002", "call_0001"]
    assert ok(wc, "phone_call_read", query="hall keys")["calls"][0]["contact"] == "Dana Oduya"
    assert ok(wc, "phone_call_read", since="2026-03-05")["count"] == 1
    dialled = ok(wc, "phone_call_dial", contact="dana oduya", purpose="Confirm the hall keys")
    assert dialled["call_id"] == "call_0004"  # ids skip past the call still to come
    assert dialled["call"]["number"] == "+44 1632 960111" and dialled["call"]["direction"] == "out"
    by_number = ok(wc, "phone_call_dial", number="01632 960500", purpose="Is the prescription ready?")
    assert by_number["call"]["contact"] == ""
    read = ok(wc, "phone_call_read", call_id="call_0004")
    assert read["purpose"] == "Confirm the hall keys" and read["at"] == "2026-03-10T09:00"
    assert ok(wc, "phone_call_read", contact="Dana")["count"] == 2
    assert "exactly one of contact and number" in fail(wc, "phone_call_dial", purpose="x").content
    assert "is not a phone number" in fail(wc, "phone_call_dial", purpose="x", number="call me").content
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 11, 9, 0))
    assert ok(later, "phone_call_read")["count"] == 4


# ---- Maps and places --------------------------------------------------------------------------


def test_places_round_trip(wc: WorkingCopy) -> None:
    assert [p["name"] for p in ok(wc, "place_search", city="sallowmouth")["places"]] == [
        "Harbour Pharmacy",
        "Northfield School",
        "Sallowmouth Swim Club",
    ]
    assert ok(wc, "place_search", category="pharmacy")["places"][0]["phone"] == "01632 960500"
    sunday = ok(wc, "place_search", open_on="2026-03-15")  # hours unknown count as open
    assert [p["name"] for p in sunday["places"]] == ["Northfield School"]
    evening = ok(wc, "place_search", city="Sallowmouth", open_at_time="19:00")  # today, a Tuesday
    assert [p["name"] for p in evening["places"]] == ["Northfield School", "Sallowmouth Swim Club"]
    assert ok(wc, "place_search", query="clinic")["count"] == 0  # the clinic enters later
    assert (
        "open_at_time '7pm' is not a 24-hour HH:MM time"
        in fail(wc, "place_search", open_at_time="7pm").content
    )


def test_routes_round_trip(wc: WorkingCopy) -> None:
    out = ok(wc, "map_route_search", origin="northfield school", destination="Harbour Pharmacy")
    assert [(r["mode"], r["duration_minutes"], r["reverse"]) for r in out["routes"]] == [
        ("drive", 5, False),
        ("walk", 12, False),
    ]
    back = ok(wc, "map_route_search", origin="Harbour Pharmacy", destination="Northfield School", mode="walk")
    assert back["count"] == 1 and back["routes"][0]["reverse"] is True
    assert back["routes"][0]["origin"] == "Harbour Pharmacy"
    assert ok(wc, "map_route_search", origin="Kestrel Books", destination="Northfield School")["count"] == 0
    same = fail(wc, "map_route_search", origin="Kestrel Books", destination="kestrel books")
    assert "is the same place as origin" in same.content
    assert (
        "mode 'fly' is invalid"
        in fail(wc, "map_route_search", origin="a", destination="b", mode="fly").content
    )


def test_club_closures_round_trip(wc: WorkingCopy) -> None:
    every = ok(wc, "club_closure_calendar_read")
    assert [c["id"] for c in every["closures"]] == ["clo_0003", "clo_0001", "clo_0002"]  # Easter comes later
    swim = ok(wc, "club_closure_calendar_read", club="sallowmouth swim club", start_date="2026-03-15")
    assert swim["closures"] == [
        {
            "id": "clo_0002",
            "club": "Sallowmouth Swim Club",
            "date": "2026-03-20",
            "start": "12:00",
            "end": "15:00",
            "reason": "pool maintenance",
            "all_day": False,
        }
    ]
    assert ok(wc, "club_closure_calendar_read", club="Brindle Chess Club")["closures"][0]["all_day"] is True
    # a known place with no closure (yet) has an empty calendar rather than an unknown name
    assert ok(wc, "club_closure_calendar_read", club="Northfield School")["count"] == 0
    later = WorkingCopy(wc.state, datetime(2026, 3, 26, 9, 0))
    assert ok(later, "club_closure_calendar_read", club="Gorse Hill Tennis Club")["count"] == 1


# ---- Weather ----------------------------------------------------------------------------------


def test_weather_round_trip(wc: WorkingCopy) -> None:
    today = ok(wc, "weather_forecast_read", city="sallowmouth")
    assert today["city"] == "Sallowmouth" and today["no_forecast"] == []
    assert today["forecasts"][0]["summary"] == "showers clearing by noon"  # the newer issue wins
    assert today["forecasts"][0]["issued_at"] == "2026-03-09T18:00"
    span = ok(wc, "weather_forecast_read", city="Sallowmouth", date="2026-03-10", end_date="2026-03-12")
    assert [f["date"] for f in span["forecasts"]] == ["2026-03-10", "2026-03-11"]
    assert span["forecasts"][1]["summary"] == "bright spells"  # the storm forecast is issued tonight
    assert span["no_forecast"] == ["2026-03-12"]
    evening = WorkingCopy(wc.state, datetime(2026, 3, 10, 19, 0))
    assert (
        ok(evening, "weather_forecast_read", city="Sallowmouth", date="2026-03-11")["forecasts"][0]["summary"]
        == "gales and storms"
    )
    long = fail(wc, "weather_forecast_read", city="Brindle", end_date="2026-03-30")
    assert "end_date '2026-03-30' is more than 13 days after date '2026-03-10'" in long.content


# ---- Shopping ---------------------------------------------------------------------------------


def test_product_search(wc: WorkingCopy) -> None:
    found = ok(wc, "shopping_product_search", store="brightside")
    assert [p["id"] for p in found["products"]] == ["prod_0002", "prod_0003", "prod_0001"]
    assert ok(wc, "shopping_product_search", store="brightside", in_stock_only=True)["count"] == 2
    assert ok(wc, "shopping_product_search", max_price=10)["products"][0]["name"] == "Whistle pack of 10"
    assert ok(wc, "shopping_product_search", query="sun hat")["count"] == 0  # listed later


def test_order_create_and_update(wc: WorkingCopy) -> None:
    made = ok(
        wc,
        "shopping_order_create",
        items=[{"product_id": "prod_0001", "quantity": 2}, {"product_id": "prod_0003"}],
        delivery_address_id="addr_0002",
        payment_method_id="pm_0003",
    )
    oid = made["order_id"]
    assert oid == "ord_0005"
    order = made["order"]
    assert (order["total"], order["status"], order["store"]) == (61.98, "placed", "Brightside Home")
    kettle = wc.get_as("shopping/products", "prod_0001", Product)
    assert kettle is not None and kettle.stock == 3
    assert ok(wc, "shopping_order_read", status="placed")["orders"][0]["id"] == oid
    moved = ok(wc, "shopping_order_update", order_id=oid, delivery_address_id="addr_0001", notes="Ring twice")
    assert moved["order"]["delivery_address_id"] == "addr_0001"
    cancelled = ok(wc, "shopping_order_update", order_id=oid, cancel=True)
    assert cancelled["order"]["status"] == "cancelled"
    kettle = wc.get_as("shopping/products", "prod_0001", Product)
    assert kettle is not None and kettle.stock == 5
    assert (
        "cancelled and can no longer be changed"
        in fail(wc, "shopping_order_update", order_id=oid, notes="x").content
    )
    # the order still processing (its shipping update comes later) can be changed
    assert ok(wc, "shopping_order_update", order_id="ord_0003", notes="Office hours only")["order"][
        "status"
    ] == ("processing")
    both = fail(wc, "shopping_order_update", order_id="ord_0003", cancel=True, notes="x")
    assert "cannot be combined" in both.content
    stored = wc.stored("shopping/orders", "ord_0003")
    assert isinstance(stored, Order) and [u.status for u in stored.updates] == ["processing", "shipped"]
    assert [(c.op, c.collection) for c in wc.change_log][:3] == [
        ("replace", "shopping/products"),
        ("replace", "shopping/products"),
        ("insert", "shopping/orders"),
    ]


def test_order_create_rejections_write_nothing(wc: WorkingCopy) -> None:
    base = {"delivery_address_id": "addr_0001", "payment_method_id": "pm_0001"}
    two_stores = fail(
        wc, "shopping_order_create", items=[{"product_id": "prod_0001"}, {"product_id": "prod_0004"}], **base
    )
    assert "several stores" in two_stores.content
    assert (
        "names no delivery address"
        in fail(
            wc,
            "shopping_order_create",
            items=[{"product_id": "prod_0001"}],
            **{**base, "delivery_address_id": "addr_0003"},
        ).content
    )
    assert (
        "expired in 2026-02"
        in fail(
            wc,
            "shopping_order_create",
            items=[{"product_id": "prod_0001"}],
            **{**base, "payment_method_id": "pm_0002"},
        ).content
    )
    assert (
        "items[0].quantity 0 is invalid"
        in fail(
            wc, "shopping_order_create", items=[{"product_id": "prod_0001", "quantity": 0}], **base
        ).content
    )
    assert "items is empty" in fail(wc, "shopping_order_create", items=[], **base).content
    assert wc.change_log == [] and not wc.dirty


def test_order_read_hides_later_updates(wc: WorkingCopy) -> None:
    order = ok(wc, "shopping_order_read", order_id="ord_0003")
    assert order["status"] == "processing" and [u["status"] for u in order["updates"]] == ["processing"]
    delivered = ok(wc, "shopping_order_read", order_id="ord_0002")
    assert (delivered["status"], delivered["delivered_on"]) == ("delivered", "2026-03-05")
    assert [o["id"] for o in ok(wc, "shopping_order_read")["orders"]] == ["ord_0003", "ord_0002", "ord_0001"]
    assert ok(wc, "shopping_order_read", query="kettle")["count"] == 1


def test_return_cases_round_trip(wc: WorkingCopy) -> None:
    case = ok(wc, "shopping_return_case_read", case_id="ret_0001")
    assert case["status"] == "approved" and len(case["updates"]) == 1  # the refund comes later
    assert ok(wc, "shopping_return_case_read", order_id="ord_0002")["count"] == 1
    opened = ok(
        wc,
        "shopping_return_case_update",
        order_id="ord_0002",
        product_id="prod_0002",
        quantity=2,
        reason="Two whistles arrived cracked.",
        resolution="replacement",
        message="Photos attached.",
    )
    cid = opened["case_id"]
    assert cid == "ret_0003" and opened["case"]["status"] == "requested"
    assert opened["case"]["updates"][0]["text"] == "Photos attached."
    more = fail(
        wc,
        "shopping_return_case_update",
        order_id="ord_0002",
        product_id="prod_0002",
        reason="again",
        resolution="refund",
    )
    assert "quantity 1 is more than the 0 unit(s) of 'Whistle pack of 10' left to return" in more.content
    assert (
        "quantity 0 is invalid"
        in fail(
            wc, "shopping_return_case_update", order_id="ord_0002", product_id="prod_0002", quantity=0
        ).content
    )
    assert (
        "quantity 2 cannot be changed"
        in fail(wc, "shopping_return_case_update", case_id=cid, quantity=2).content
    )
    changed = ok(wc, "shopping_return_case_update", case_id=cid, resolution="refund")
    assert changed["case"]["resolution"] == "refund"
    gone = ok(wc, "shopping_return_case_update", case_id=cid, withdraw=True)
    assert gone["case"]["status"] == "withdrawn"
    assert (
        "withdrawn and can no longer be changed"
        in fail(wc, "shopping_return_case_update", case_id=cid, message="hello").content
    )
    not_yet = fail(
        wc,
        "shopping_return_case_update",
        order_id="ord_0003",
        product_id="prod_0003",
        reason="r",
        resolution="refund",
    )
    assert "order_id 'ord_0003' is processing, not delivered" in not_yet.content
    assert (
        "to open a return give reason, resolution"
        in fail(wc, "shopping_return_case_update", order_id="ord_0002", product_id="prod_0001").content
    )
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 12, 10, 0))
    assert ok(later, "shopping_return_case_read", case_id="ret_0001")["status"] == "refunded"
    assert ok(later, "shopping_return_case_read", case_id=cid)["status"] == "withdrawn"


# ---- Shipping ---------------------------------------------------------------------------------


def test_shipping_round_trip(wc: WorkingCopy) -> None:
    addresses = ok(wc, "delivery_address_read")
    assert [a["id"] for a in addresses["addresses"]] == ["addr_0001", "addr_0002"]
    assert ok(wc, "delivery_address_read", address_id="addr_0002")["line2"] == "Marsh Road"
    parcel = ok(wc, "package_tracking_read", tracking_number="trk-1003")
    assert parcel["status"] == "label_created" and len(parcel["events"]) == 1
    assert ok(wc, "package_tracking_read", order_id="ord_0002")["status"] == "delivered"
    assert [p["tracking_number"] for p in ok(wc, "package_tracking_read")["packages"]] == [
        "TRK-1003",
        "TRK-1002",
        "TRK-1001",
    ]
    assert (
        "order_id 'ord_0099' names no order with a parcel"
        in fail(wc, "package_tracking_read", order_id="ord_0099").content
    )
    proof = ok(wc, "package_delivery_proof_read", tracking_number="TRK-1002")
    assert proof["delivered"] is True and proof["proof"]["left_at"] == "front porch"
    pending = ok(wc, "package_delivery_proof_read", tracking_number="TRK-1003")
    assert pending == {
        "tracking_number": "TRK-1003",
        "delivered": False,
        "status": "label_created",
        "proof": None,
    }
    noon = WorkingCopy(wc.state, datetime(2026, 3, 12, 12, 30))
    assert ok(noon, "package_tracking_read", tracking_number="TRK-1003")["status"] == "delivered"
    assert ok(noon, "package_delivery_proof_read", tracking_number="TRK-1003")["proof"]["signed"] is True


# ---- Finance ----------------------------------------------------------------------------------


def test_bills_and_methods(wc: WorkingCopy) -> None:
    bills = ok(wc, "utility_bill_read")
    assert [b["id"] for b in bills["bills"]] == ["bill_0002", "bill_0003", "bill_0001"]
    water = ok(wc, "utility_bill_read", bill_id="bill_0003")
    assert (water["paid"], water["left_to_pay"], water["status"]) == (50.0, 70.0, "unpaid")
    assert water["account_holder"] == "Mrs P. Hale"
    # the payment of bill_0002 is made on 12 March, so today the bill is still open
    assert [b["id"] for b in ok(wc, "utility_bill_read", unpaid_only=True)["bills"]] == [
        "bill_0002",
        "bill_0003",
    ]
    assert ok(wc, "utility_bill_read", provider="tidewater")["count"] == 2
    methods = ok(wc, "payment_method_read")
    assert [m["id"] for m in methods["methods"]] == ["pm_0001", "pm_0003", "pm_0002"]
    assert ok(wc, "payment_method_read", method_id="pm_0003")["kind"] == "bank_account"


def test_bill_payment_round_trip(wc: WorkingCopy) -> None:
    paid = ok(wc, "bill_payment_create", bill_id="bill_0003", payment_method_id="pm_0003", amount=20)
    assert paid["payment_id"] == "pay_0004" and paid["payment"]["late"] is True  # due 5 March
    assert paid["bill"]["left_to_pay"] == 50.0
    over = fail(wc, "bill_payment_create", bill_id="bill_0003", payment_method_id="pm_0003", amount=60)
    assert "amount 60.0 is more than the 50.00 GBP left to pay on bill_0003" in over.content
    rest = ok(
        wc, "bill_payment_create", bill_id="bill_0003", payment_method_id="pm_0001", pay_on="2026-03-13"
    )
    assert rest["payment"]["status"] == "scheduled" and rest["payment"]["amount"] == 50.0
    assert rest["bill"]["status"] == "paid"
    assert (
        "already paid in full"
        in fail(wc, "bill_payment_create", bill_id="bill_0003", payment_method_id="pm_0001").content
    )
    past = fail(
        wc, "bill_payment_create", bill_id="bill_0002", payment_method_id="pm_0001", pay_on="2026-03-09"
    )
    assert "pay_on '2026-03-09' is in the past" in past.content
    assert (
        "amount 0 is invalid"
        in fail(wc, "bill_payment_create", bill_id="bill_0002", payment_method_id="pm_0001", amount=0).content
    )
    listed = ok(wc, "bill_payment_read", bill_id="bill_0003")
    assert [p["id"] for p in listed["payments"]] == ["pay_0005", "pay_0004", "pay_0002"]
    assert ok(wc, "bill_payment_read", payment_id="pay_0001")["status"] == "paid"
    assert ok(wc, "bill_payment_read")["count"] == 4  # pay_0003 is made later
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 14, 9, 0))
    assert ok(later, "bill_payment_read", payment_id="pay_0005")["status"] == "paid"
    assert ok(later, "utility_bill_read", bill_id="bill_0002")["status"] == "paid"  # pay_0003 now visible


def test_account_holder_round_trip(wc: WorkingCopy) -> None:
    done = ok(
        wc,
        "utility_account_holder_update",
        account_number="88 3311",
        holder_name="Tamsin Hale",
        effective_on="2026-03-10",
    )
    assert done["account"]["holder_name"] == "Tamsin Hale"
    assert ok(wc, "utility_bill_read", bill_id="bill_0003")["account_holder"] == "Tamsin Hale"
    again = fail(wc, "utility_account_holder_update", account_number="88-3311", holder_name="tamsin hale")
    assert "already holds account 88-3311" in again.content
    # the change already asked for on 55-0192 is still to come, so it is not visible yet
    planned = ok(
        wc,
        "utility_account_holder_update",
        account_number="55-0192",
        holder_name="Jo Hale",
        effective_on="2026-03-25",
    )
    assert planned["account"]["holder_name"] == "Tamsin Hale"  # not in effect before 25 March
    assert [c["holder_name"] for c in planned["account"]["holder_changes"]] == ["Jo Hale"]
    assert wc.change_log[-1].collection == "finance/utility_accounts"
    march = WorkingCopy(wc.to_state(), datetime(2026, 3, 26, 9, 0))
    assert ok(march, "utility_bill_read", bill_id="bill_0002")["account_holder"] == "Jo Hale"
    april = WorkingCopy(wc.to_state(), datetime(2026, 4, 2, 9, 0))  # the change asked for on 20 March
    assert ok(april, "utility_bill_read", bill_id="bill_0004")["account_holder"] == "Tamsin and Jo Hale"


# ---- Appointments -----------------------------------------------------------------------------


def test_appointments_round_trip(wc: WorkingCopy) -> None:
    free = ok(wc, "appointment_search", provider="harbour surgery")
    assert [s["id"] for s in free["slots"]] == [
        "slot_0002",
        "slot_0004",
    ]  # past, taken, held and later slots left out
    assert (
        ok(wc, "appointment_search", query="check-up", start_date="2026-03-16")["slots"][0]["id"]
        == "slot_0005"
    )
    mine = ok(wc, "appointment_read")
    assert [a["id"] for a in mine["appointments"]] == ["appt_0002", "appt_0001"]
    booked = ok(wc, "appointment_create", slot_id="slot_0002", notes="sore throat")
    aid = booked["appointment_id"]
    assert aid == "appt_0004" and booked["appointment"]["start"] == "2026-03-12T09:00"
    assert "slot_0002" not in [s["id"] for s in ok(wc, "appointment_search")["slots"]]
    assert "already booked" in fail(wc, "appointment_create", slot_id="slot_0002").content
    assert "is not after now" in fail(wc, "appointment_create", slot_id="slot_0001").content
    moved = ok(wc, "appointment_update", appointment_id=aid, new_slot_id="slot_0004")
    assert (moved["appointment"]["slot_id"], moved["appointment"]["service"]) == (
        "slot_0004",
        "nurse appointment",
    )
    assert "slot_0002" in [s["id"] for s in ok(wc, "appointment_search")["slots"]]
    cancelled = ok(wc, "appointment_update", appointment_id=aid, cancel=True)
    assert cancelled["appointment"]["status"] == "cancelled"
    assert ok(wc, "appointment_read", appointment_id=aid)["status"] == "cancelled"
    assert ok(wc, "appointment_read", include_cancelled=True)["count"] == 3
    assert "is cancelled" in fail(wc, "appointment_update", appointment_id=aid, notes="x").content
    assert (
        "can no longer be changed"
        in fail(wc, "appointment_update", appointment_id="appt_0002", cancel=True).content
    )
    both = fail(wc, "appointment_update", appointment_id="appt_0001", new_slot_id="slot_0002", cancel=True)
    assert "cancel or move, not both" in both.content
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 11, 8, 0))
    assert "slot_0006" in [s["id"] for s in ok(later, "appointment_search")["slots"]]
    assert ok(later, "appointment_read", appointment_id=aid)["status"] == "cancelled"


def test_a_cancel_or_withdrawal_is_final_against_later_fixture_updates(wc: WorkingCopy) -> None:
    """Appendix C.2: a later read returns what a write wrote. ord_0003's scripted 'shipped'
    (11 March) and ret_0001's 'refunded' (12 March) must not undo a cancel or withdrawal of 10 March."""
    assert ok(wc, "shopping_order_update", order_id="ord_0003", cancel=True)["order"]["status"] == "cancelled"
    assert ok(wc, "shopping_return_case_update", case_id="ret_0001", withdraw=True)["case"]["status"] == "withdrawn"
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 13, 9, 0))
    order = ok(later, "shopping_order_read", order_id="ord_0003")
    assert order["status"] == "cancelled" and [u["status"] for u in order["updates"]] == ["processing", "cancelled"]
    assert ok(later, "shopping_return_case_read", case_id="ret_0001")["status"] == "withdrawn"
    assert "cancelled" in fail(later, "shopping_order_update", order_id="ord_0003", notes="x").content
