"""Group B tools (restaurants, room booking, hotels, reimbursement, conference registration,
grade submission, flights): for every tool a round trip, a rejected argument, the future hidden."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tool_test_support import REG, fail, ok

from mempa_tui.world import WorkingCopy, WorldState

FIXTURES = Path(__file__).parent / "fixtures_world" / "group_b" / "fixtures"
NOW = datetime(2026, 5, 12, 10, 0)  # a Tuesday
GROUP_B = (
    "restaurants",
    "room_booking",
    "hotels",
    "reimbursement",
    "conference_registration",
    "grade_submission",
    "flights",
)


@pytest.fixture()
def wc() -> WorkingCopy:
    return WorkingCopy(WorldState.from_directory(FIXTURES), NOW)



def test_catalog_rows_of_group_b() -> None:
    mine = {t.name: t for t in REG if t.domain in GROUP_B}
    assert len(mine) == 22
    writes = {n for n, t in mine.items() if t.write}
    assert writes == {
        "restaurant_reservation_create",
        "restaurant_reservation_update",
        "room_booking_create",
        "room_booking_update",
        "hotel_book",
        "hotel_booking_update",
        "reimbursement_submission_create",
        "conference_registration_create",
        "grade_submission_create",
        "flight_book",
    }
    assert all(mine[n].tag == "outward" for n in writes)
    for t in mine.values():
        for prop in t.parameters["properties"].values():
            if prop.get("format") == "date":
                assert "YYYY-MM-DD" in prop["description"]


# (tool, arguments, words the error must contain) — one rejected argument per tool
REJECTED: list[tuple[str, dict[str, Any], str]] = [
    (
        "restaurant_reservation_search",
        {"city": "Carrow"},
        "city 'Carrow' has no restaurants; known cities: Hollins Ferry",
    ),
    (
        "restaurant_reservation_read",
        {"reservation_id": "rr_0099"},
        "reservation_id 'rr_0099' names no reservation",
    ),
    (
        "restaurant_reservation_create",
        {"restaurant_id": "rs_0001", "date": "2026-05-18", "time": "19:00", "party_size": 2},
        "date '2026-05-18' is a Monday, when Harbour Kitchen is closed",
    ),
    (
        "restaurant_reservation_update",
        {"reservation_id": "rr_0001", "time": "21:00"},
        "time '21:00' is outside Harbour Kitchen's seating times on Fridays (12:00 to 20:00",
    ),
    (
        "room_booking_search",
        {"date": "2026-06-04", "start_time": "10:00"},
        "start_time was given alone; give both start_time and end_time",
    ),
    (
        "room_booking_read",
        {"booking_id": "rb_0001"},
        "booking_id 'rb_0001' names no room booking of the user's",
    ),
    (
        "room_booking_create",
        {
            "room_id": "room_0001",
            "date": "2026-05-14",
            "start_time": "10:15",
            "end_time": "11:00",
            "title": "x",
        },
        "start_time '10:15' is not a bookable slot boundary",
    ),
    (
        "room_booking_update",
        {"booking_id": "rb_0002", "attendees": 9},
        "attendees 9 is more than Room 2.04 holds (8)",
    ),
    (
        "hotel_search",
        {"city": "Atlantis"},
        "city 'Atlantis' has no hotels; known cities: Hollins Ferry, Sallowmouth",
    ),
    ("hotel_booking_read", {"booking_id": "hb_12"}, "booking_id 'hb_12' names no hotel booking"),
    (
        "hotel_book",
        {"hotel_id": "ht_0001", "room_type": "family", "check_in": "2026-08-14", "check_out": "2026-08-12"},
        "check_out '2026-08-12' is not after check_in '2026-08-14'",
    ),
    (
        "hotel_booking_update",
        {"booking_id": "hb_0001", "cancel": True, "guests": 1},
        "cancel is true together with changes to guests",
    ),
    (
        "reimbursement_submission_read",
        {"status": "pending"},
        "status 'pending' is not one of submitted, approved, rejected, paid",
    ),
    (
        "reimbursement_submission_create",
        {"category": "meals", "amount": 18, "expense_date": "2026-04-01", "description": "Lunch"},
        "expense_date '2026-04-01' is outside the 30-day claim window for meals",
    ),
    (
        "conference_registration_read",
        {"registration_id": "creg_0099"},
        "registration_id 'creg_0099' names no registration",
    ),
    (
        "conference_registration_create",
        {"conference_id": "conf_0002", "attendee_name": "Ingrid Salcedo", "ticket_type": "standard"},
        "registration for Regional Bus Summit closed on 2026-05-01",
    ),
    (
        "grade_submission_read",
        {"submission_id": "gs_0099"},
        "submission_id 'gs_0099' names no grade submission",
    ),
    (
        "grade_submission_create",
        {"course_id": "crs_0001", "assessment": "Mock exam", "grades": {"Ana Ruiz": 60, "Ben Hale": 55}},
        "grades has no score for Cara Ng",
    ),
    (
        "flight_search",
        {"origin": "HFY", "destination": "Hollins Ferry", "date": "2026-06-09"},
        "destination 'Hollins Ferry' is the same city as origin 'HFY'",
    ),
    ("flight_read", {"flight_id": "fl_0099"}, "flight_id 'fl_0099' names no flight"),
    ("flight_booking_read", {"booking_id": "fb_0099"}, "booking_id 'fb_0099' names no flight booking"),
    (
        "flight_book",
        {"flight_id": "fl_0001", "passengers": ["Ingrid Salcedo", "Mateo Salcedo"]},
        "2 seats wanted but only 1 left in economy on WX214",
    ),
]


def test_every_group_b_tool_has_a_rejection_case() -> None:
    assert {name for name, _, _ in REJECTED} == {t.name for t in REG if t.domain in GROUP_B}


@pytest.mark.parametrize(("name", "args", "words"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_argument(wc: WorkingCopy, name: str, args: dict[str, Any], words: str) -> None:
    before = wc.state
    res = fail(wc, name, **args)
    assert words in res.content
    assert res.content.startswith(name)
    assert wc.change_log == [] and wc.to_state() == before


# (tool, arguments naming a record that enters only later, a never-existing id in its place)
FUTURE: list[tuple[str, dict[str, Any], str]] = [
    ("restaurant_reservation_read", {"reservation_id": "rr_0002"}, "rr_9999"),
    ("restaurant_reservation_update", {"reservation_id": "rr_0002", "party_size": 2}, "rr_9999"),
    (
        "restaurant_reservation_create",
        {"restaurant_id": "rs_0003", "date": "2026-06-20", "time": "19:00", "party_size": 2},
        "rs_9999",
    ),
    ("room_booking_read", {"booking_id": "rb_0003"}, "rb_9999"),
    ("room_booking_update", {"booking_id": "rb_0003", "title": "x"}, "rb_9999"),
    (
        "room_booking_create",
        {
            "room_id": "room_0003",
            "date": "2026-06-08",
            "start_time": "10:00",
            "end_time": "11:00",
            "title": "x",
        },
        "room_9999",
    ),
    ("hotel_booking_read", {"booking_id": "hb_0002"}, "hb_9999"),
    ("hotel_booking_update", {"booking_id": "hb_0002", "notes": "x"}, "hb_9999"),
    (
        "hotel_book",
        {"hotel_id": "ht_0002", "room_type": "double", "check_in": "2026-08-01", "check_out": "2026-08-02"},
        "ht_9999",
    ),
    ("reimbursement_submission_read", {"submission_id": "rm_0002"}, "rm_9999"),
    (
        "reimbursement_submission_create",
        {
            "category": "supplies",
            "amount": 5,
            "expense_date": "2026-05-11",
            "description": "Pens",
            "receipt_document_id": "doc_0002",
        },
        "doc_9999",
    ),
    ("conference_registration_read", {"registration_id": "creg_0002"}, "creg_9999"),
    (
        "conference_registration_create",
        {"conference_id": "conf_0003", "attendee_name": "Ingrid Salcedo", "ticket_type": "full"},
        "conf_9999",
    ),
    ("grade_submission_read", {"submission_id": "gs_0002"}, "gs_9999"),
    (
        "grade_submission_create",
        {"course_id": "crs_0002", "assessment": "Final project", "grades": {"Dev Patel": 70}},
        "crs_9999",
    ),
    ("flight_read", {"flight_id": "fl_0004"}, "fl_9999"),
    ("flight_booking_read", {"booking_id": "fb_0002"}, "fb_9999"),
    ("flight_book", {"flight_id": "fl_0004", "passengers": ["Ingrid Salcedo"]}, "fl_9999"),
]


@pytest.mark.parametrize(("name", "args", "missing_id"), FUTURE, ids=[f[0] for f in FUTURE])
def test_future_record_reads_as_missing(
    wc: WorkingCopy, name: str, args: dict[str, Any], missing_id: str
) -> None:
    key = next(
        k for k, v in args.items() if isinstance(v, str) and v[:2] == missing_id[:2] and v != missing_id
    )
    future = fail(wc, name, **args).content
    missing = fail(wc, name, **{**args, key: missing_id}).content
    assert future.replace(args[key], "ID") == missing.replace(missing_id, "ID")


def test_searches_and_lists_hide_the_future(wc: WorkingCopy) -> None:
    assert ok(wc, "restaurant_reservation_search", query="gull")["count"] == 0
    assert fail(wc, "restaurant_reservation_search", city="Sallowmouth").error is not None
    assert [r["id"] for r in ok(wc, "restaurant_reservation_read")["reservations"]] == ["rr_0001"]
    assert ok(wc, "room_booking_search", query="studio")["count"] == 0
    assert [b["id"] for b in ok(wc, "room_booking_read")["bookings"]] == ["rb_0002"]
    hotels = ok(wc, "hotel_search", city="Sallowmouth")["hotels"]
    assert [h["name"] for h in hotels] == ["Sallowmouth Bay Hotel"]
    assert [b["id"] for b in ok(wc, "hotel_booking_read")["bookings"]] == ["hb_0001"]
    claims = ok(wc, "reimbursement_submission_read")
    assert [c["id"] for c in claims["submissions"]] == ["rm_0001"] and claims["total_amount"] == 23.4
    confs = ok(wc, "conference_registration_read")["conferences"]
    assert [c["id"] for c in confs] == ["conf_0002", "conf_0001"]
    courses = ok(wc, "grade_submission_read")["courses"]
    assert [c["code"] for c in courses] == ["GEO-10B"]
    mock = next(a for a in courses[0]["assessments"] if a["name"] == "Mock exam")
    assert mock["submission_id"] is None  # gs_0002 is submitted only in June
    assert fail(wc, "flight_search", origin="HFY", destination="SLM", date="2026-08-09").error is not None
    assert [b["id"] for b in ok(wc, "flight_booking_read")["bookings"]] == ["fb_0001"]


# ---- round trips ---------------------------------------------------------------------------


def test_restaurants_round_trip(wc: WorkingCopy) -> None:
    found = ok(
        wc,
        "restaurant_reservation_search",
        city="hollins ferry",
        date="2026-05-15",
        time="19:30",
        party_size=6,
    )
    by_name = {r["name"]: r for r in found["restaurants"]}
    assert by_name["Harbour Kitchen"]["table_free"] is False  # rr_0001 holds 6 of its 10 seats
    assert "seats left: 4" in by_name["Harbour Kitchen"]["why_not"]
    assert by_name["Saffron Lane"]["table_free"] is True
    assert (
        ok(wc, "restaurant_reservation_search", query="seafood", date="2026-05-16")["restaurants"][0][
            "open_that_day"
        ]
        is False
    )
    made = ok(
        wc,
        "restaurant_reservation_create",
        restaurant_id="rs_0001",
        date="2026-05-15",
        time="19:30",
        party_size=4,
    )
    assert made["reservation_id"] == "rr_0003"  # the hidden rr_0002 keeps its number
    assert made["reservation"]["booked_at"] == "2026-05-12T10:00"
    again = ok(
        wc, "restaurant_reservation_search", query="harbour", date="2026-05-15", time="20:00", party_size=1
    )
    assert again["restaurants"][0]["table_free"] is False  # 6 + 4 seats now taken
    moved = ok(
        wc, "restaurant_reservation_update", reservation_id="rr_0003", time="13:00", notes="high chair"
    )
    assert moved["reservation"]["time"] == "13:00" and moved["reservation"]["notes"] == "high chair"
    assert ok(wc, "restaurant_reservation_read", reservation_id="rr_0003")["time"] == "13:00"
    assert (
        ok(wc, "restaurant_reservation_update", reservation_id="rr_0001", cancel=True)["reservation"][
            "status"
        ]
        == "cancelled"
    )
    assert [r["id"] for r in ok(wc, "restaurant_reservation_read")["reservations"]] == ["rr_0003"]
    assert ok(wc, "restaurant_reservation_read", include_cancelled=True)["count"] == 2
    assert [(c.op, c.record_id) for c in wc.change_log] == [
        ("insert", "rr_0003"),
        ("replace", "rr_0003"),
        ("replace", "rr_0001"),
    ]
    big = fail(
        wc,
        "restaurant_reservation_create",
        restaurant_id="rs_0002",
        date="2026-05-13",
        time="18:00",
        party_size=13,
    )
    assert "party_size '13' is more than Saffron Lane seats at one table (12)" in big.content
    past = fail(
        wc,
        "restaurant_reservation_create",
        restaurant_id="rs_0002",
        date="2026-05-11",
        time="18:00",
        party_size=2,
    )
    assert "is in the past" in past.content


def test_room_booking_round_trip(wc: WorkingCopy) -> None:
    day = ok(wc, "room_booking_search", query="hall", date="2026-06-04", start_time="10:00", end_time="12:00")
    hall = day["rooms"][0]
    assert hall["busy"] == ["09:00-12:00"] and hall["slot_free"] is False
    assert "Eastbank Yoga Club" not in json.dumps(day)
    assert [r["id"] for r in ok(wc, "room_booking_search", min_capacity=10)["rooms"]] == ["room_0002"]
    made = ok(
        wc,
        "room_booking_create",
        room_id="room_0002",
        date="2026-06-04",
        start_time="18:00",
        end_time="20:00",
        title="Route 14 information session",
        attendees=60,
    )
    assert made["booking_id"] == "rb_0004" and made["booking"]["cost"] == 60.0
    listed = ok(wc, "room_booking_read")["bookings"]
    assert [b["id"] for b in listed] == ["rb_0002", "rb_0004"]
    clash = fail(wc, "room_booking_update", booking_id="rb_0004", start_time="11:00", end_time="13:00")
    assert "start_time '11:00' clashes with a booking of Main hall from 09:00 to 12:00" in clash.content
    later = ok(wc, "room_booking_update", booking_id="rb_0004", start_time="17:00")
    assert later["booking"]["start_time"] == "17:00" and later["booking"]["cost"] == 90.0
    assert ok(wc, "room_booking_read", booking_id="rb_0004")["end_time"] == "20:00"
    closed = fail(
        wc,
        "room_booking_create",
        room_id="room_0002",
        date="2026-05-25",
        start_time="10:00",
        end_time="11:00",
        title="x",
    )
    assert "date '2026-05-25' is a day Main hall is closed" in closed.content
    ok(wc, "room_booking_update", booking_id="rb_0002", cancel=True)
    assert [b["id"] for b in ok(wc, "room_booking_read")["bookings"]] == ["rb_0004"]


def test_hotels_round_trip(wc: WorkingCopy) -> None:
    found = ok(
        wc, "hotel_search", city="sallowmouth", check_in="2026-08-12", check_out="2026-08-15", guests=2
    )
    rooms = {r["name"]: r for r in found["hotels"][0]["room_types"]}
    assert rooms["double"]["free"] is False and "night of 2026-08-12" in rooms["double"]["why_not"]
    assert rooms["family"]["free"] is True and rooms["family"]["total_cost"] == 420.0
    made = ok(
        wc,
        "hotel_book",
        hotel_id="ht_0001",
        room_type="Family",
        check_in="2026-08-14",
        check_out="2026-08-17",
        guests=3,
    )
    assert made["booking_id"] == "hb_0003" and made["booking"]["room_type"] == "family"
    assert made["booking"]["total_cost"] == 420.0
    assert [b["id"] for b in ok(wc, "hotel_booking_read")["bookings"]] == ["hb_0001", "hb_0003"]
    longer = ok(wc, "hotel_booking_update", booking_id="hb_0001", check_out="2026-08-15")
    assert (
        longer["booking"]["total_cost"] == 475.0
    )  # five nights of the double, its own nights not counted twice
    assert ok(wc, "hotel_booking_read", booking_id="hb_0001")["check_out"] == "2026-08-15"
    closed = fail(
        wc,
        "hotel_book",
        hotel_id="ht_0001",
        room_type="family",
        check_in="2026-08-19",
        check_out="2026-08-21",
    )
    assert "takes no guests on the night of 2026-08-20" in closed.content
    wrong = fail(
        wc, "hotel_book", hotel_id="ht_0001", room_type="suite", check_in="2026-09-01", check_out="2026-09-02"
    )
    assert (
        "room_type 'suite' is not a room type of Sallowmouth Bay Hotel (types: double, family)"
        in wrong.content
    )
    ok(wc, "hotel_booking_update", booking_id="hb_0003", cancel=True)
    assert ok(wc, "hotel_booking_read", include_cancelled=True)["count"] == 2
    assert ok(wc, "hotel_booking_read")["count"] == 1


def test_reimbursement_round_trip(wc: WorkingCopy) -> None:
    made = ok(
        wc,
        "reimbursement_submission_create",
        category="meals",
        amount=18.499,
        expense_date="2026-05-11",
        description="Lunch with Brightwell",
    )
    assert made["submission_id"] == "rm_0003" and made["submission"]["amount"] == 18.5
    listed = ok(wc, "reimbursement_submission_read", since="2026-05-01")
    assert [c["id"] for c in listed["submissions"]] == ["rm_0003"] and listed["total_amount"] == 18.5
    assert {p["category"] for p in listed["policies"]} == {"meals", "travel"}
    assert ok(wc, "reimbursement_submission_read", submission_id="rm_0003")["status"] == "submitted"
    twice = fail(
        wc,
        "reimbursement_submission_create",
        category="meals",
        amount=18.5,
        expense_date="2026-05-11",
        description="Lunch again",
    )
    assert "was already claimed as rm_0003" in twice.content
    no_receipt = fail(
        wc,
        "reimbursement_submission_create",
        category="travel",
        amount=30,
        expense_date="2026-05-10",
        description="Bus",
    )
    assert "receipt_document_id is empty but travel claims need a receipt document" in no_receipt.content
    over = fail(
        wc,
        "reimbursement_submission_create",
        category="meals",
        amount=41,
        expense_date="2026-05-10",
        description="x",
    )
    assert "amount 41.0 is over the meals limit of 40.0" in over.content
    bad = fail(
        wc,
        "reimbursement_submission_create",
        category="food",
        amount=1,
        expense_date="2026-05-10",
        description="x",
    )
    assert "category 'food' is invalid" in bad.content
    with_receipt = ok(
        wc,
        "reimbursement_submission_create",
        category="travel",
        amount=23.4,
        expense_date="2026-05-10",
        description="Train",
        receipt_document_id="doc_0001",
    )
    assert with_receipt["submission"]["receipt_document_id"] == "doc_0001"


def test_conference_registration_round_trip(wc: WorkingCopy) -> None:
    forum = ok(wc, "conference_registration_read", query="forum")["conferences"][0]
    assert forum["registration_open"] is True
    assert [r["attendee_name"] for r in forum["registrations"]] == ["Priya Nandakumar"]
    assert (
        ok(wc, "conference_registration_read", query="summit")["conferences"][0]["registration_open"] is False
    )
    made = ok(
        wc,
        "conference_registration_create",
        conference_id="conf_0001",
        attendee_name="Ingrid  Salcedo",
        ticket_type="Full",
        workshops="gtfs data clinic",
    )
    assert made["registration_id"] == "creg_0003"
    reg = made["registration"]
    assert (reg["attendee_name"], reg["ticket_type"], reg["price"]) == ("Ingrid Salcedo", "full", 220.0)
    assert reg["workshops"] == ["GTFS data clinic"]
    assert (
        ok(wc, "conference_registration_read", registration_id="creg_0003")["registered_at"]
        == "2026-05-12T10:00"
    )
    forum = ok(wc, "conference_registration_read", query="forum")["conferences"][0]
    assert len(forum["registrations"]) == 2
    dup = fail(
        wc,
        "conference_registration_create",
        conference_id="conf_0001",
        attendee_name="priya nandakumar",
        ticket_type="full",
    )
    assert (
        "attendee_name 'priya nandakumar' is already registered for Transit Planning Forum 2026 (creg_0001)"
        in dup.content
    )
    vip = fail(
        wc,
        "conference_registration_create",
        conference_id="conf_0001",
        attendee_name="Teo",
        ticket_type="vip",
    )
    assert (
        "ticket_type 'vip' is not offered by Transit Planning Forum 2026 (offered: full, one-day)"
        in vip.content
    )
    odd = fail(
        wc,
        "conference_registration_create",
        conference_id="conf_0001",
        attendee_name="Teo",
        ticket_type="full",
        workshops=["Bike lanes"],
    )
    assert "workshops[0] 'Bike lanes' is not a workshop" in odd.content


def test_grade_submission_round_trip(wc: WorkingCopy) -> None:
    made = ok(
        wc,
        "grade_submission_create",
        course_id="crs_0001",
        assessment="mock exam",
        grades={"Cara Ng": 70, "ana ruiz": 61.5, "Ben Hale": 0},
    )
    assert made["submission_id"] == "gs_0003"
    assert made["submission"]["grades"] == {"Ana Ruiz": 61.5, "Ben Hale": 0.0, "Cara Ng": 70.0}
    course = ok(wc, "grade_submission_read", query="GEO-10B")["courses"][0]
    done = {a["name"]: a["submission_id"] for a in course["assessments"]}
    assert done == {"Coursework 1": "gs_0001", "Fieldwork report": None, "Mock exam": "gs_0003"}
    assert ok(wc, "grade_submission_read", submission_id="gs_0003")["assessment"] == "Mock exam"
    again = fail(
        wc, "grade_submission_create", course_id="crs_0001", assessment="Mock exam", grades={"Ana Ruiz": 1}
    )
    assert "was already submitted as gs_0003" in again.content
    late = fail(wc, "grade_submission_create", course_id="crs_0001", assessment="Fieldwork report", grades={})
    assert "grades for GEO-10B were due by 2026-05-08" in late.content


def test_grade_sheet_checks_names_and_scores() -> None:
    wc = WorkingCopy(WorldState.from_directory(FIXTURES), NOW)
    stranger = fail(
        wc, "grade_submission_create", course_id="crs_0001", assessment="Mock exam", grades={"Zed Quill": 50}
    )
    assert "grades['Zed Quill'] names no student on the GEO-10B roster" in stranger.content
    high = fail(
        wc,
        "grade_submission_create",
        course_id="crs_0001",
        assessment="Mock exam",
        grades={"Ana Ruiz": 81, "Ben Hale": 1, "Cara Ng": 1},
    )
    assert "grades['Ana Ruiz'] 81 is above the maximum of 80" in high.content
    negative = fail(
        wc, "grade_submission_create", course_id="crs_0001", assessment="Mock exam", grades={"Ana Ruiz": -1}
    )
    assert "grades.Ana Ruiz -1 is invalid" in negative.content
    assert wc.change_log == []


def test_flights_round_trip(wc: WorkingCopy) -> None:
    found = ok(wc, "flight_search", origin="Hollins Ferry", destination="crw", date="2026-06-09")
    assert [f["flight_number"] for f in found["flights"]] == ["WX214", "WX216"]
    economy = next(x for x in found["flights"][0]["fares"] if x["cabin"] == "economy")
    assert economy["seats_left"] == 1  # fb_0001 took one of two
    cheap = ok(wc, "flight_search", origin="HFY", destination="CRW", date="2026-06-09", max_price=80)
    assert [f["id"] for f in cheap["flights"]] == ["fl_0002"]
    assert ok(wc, "flight_search", origin="HFY", destination="CRW", date="2026-06-10")["count"] == 0
    first = fail(wc, "flight_search", origin="HFY", destination="CRW", date="2026-06-09", cabin="first")
    assert "cabin 'first' is not a cabin any flight sells; known cabins: business, economy" in first.content
    made = ok(
        wc,
        "flight_book",
        flight_id="fl_0001",
        passengers=["Ingrid Salcedo", "Priya Nandakumar"],
        cabin="Business",
    )
    assert made["booking_id"] == "fb_0003" and made["booking"]["total_cost"] == 420.0
    assert made["booking"]["cabin"] == "business"
    business = next(
        x for x in ok(wc, "flight_read", flight_id="fl_0001")["fares"] if x["cabin"] == "business"
    )
    assert business["seats_left"] == 2
    assert [b["id"] for b in ok(wc, "flight_booking_read")["bookings"]] == ["fb_0001", "fb_0003"]
    assert ok(wc, "flight_booking_read", booking_id="fb_0003")["passengers"] == [
        "Ingrid Salcedo",
        "Priya Nandakumar",
    ]
    gone = fail(wc, "flight_book", flight_id="fl_0005", passengers="Ingrid Salcedo")
    assert "flight_id 'fl_0005' departed at 2026-05-11 07:10" in gone.content
    nowhere = fail(wc, "flight_search", origin="Atlantis", destination="CRW", date="2026-06-09")
    assert (
        "origin 'Atlantis' is not a city or airport with flights; known cities: Carrow, Hollins Ferry"
        in nowhere.content
    )
    twice = fail(wc, "flight_book", flight_id="fl_0003", passengers=["Teo", "teo"])
    assert "passengers[1] 'teo' is listed twice" in twice.content


def test_rejected_write_leaves_world_unchanged_after_good_writes(wc: WorkingCopy) -> None:
    ok(wc, "flight_book", flight_id="fl_0002", passengers=["Ingrid Salcedo"])
    log = list(wc.change_log)
    fail(wc, "hotel_booking_update", booking_id="hb_0001", check_in="2026-08-13", check_out="2026-08-12")
    assert wc.change_log == log
    state = wc.to_state()
    reread = WorkingCopy(state, NOW)
    assert [b.id for b in reread.records("flights/bookings")] == ["fb_0001", "fb_0003"]


def test_a_world_without_these_domains_reads_them_as_empty() -> None:
    bare = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"
    wc = WorkingCopy(WorldState.from_directory(bare), NOW)
    assert ok(wc, "restaurant_reservation_search")["count"] == 0
    assert ok(wc, "room_booking_read")["count"] == 0
    assert ok(wc, "conference_registration_read")["count"] == 0
    assert ok(wc, "grade_submission_read")["count"] == 0
    assert ok(wc, "reimbursement_submission_read")["policies"] == []
    assert "known cities: none" in fail(wc, "hotel_search", city="Sallowmouth").content
    no_flight = fail(wc, "flight_search", origin="HFY", destination="CRW", date="2026-06-09")
    assert "origin 'HFY' is not a city or airport with flights; known cities: none" in no_flight.content
    made = ok(
        wc,
        "reimbursement_submission_create",
        category="other",
        amount=12,
        expense_date="2026-05-01",
        description="Stamps",
    )
    assert made["submission_id"] == "rm_0001"
    assert "reimbursement/submissions.yaml" in wc.to_state().files
