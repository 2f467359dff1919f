"""Group C tools of Table 7: scholarly papers, recipes, comic store, cinema, exhibitions, media
transcoding, household. For every tool: a round trip on the fixture, a rejected argument with its
message (nothing written), and a record entering after the step time staying invisible."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tool_test_support import REG, fail, ok

from mempa_tui.world import WorkingCopy, WorldState

FIXTURES = Path(__file__).parent / "fixtures_world" / "group_c"
NOW = datetime(2026, 3, 10, 9, 0)  # a Tuesday
GROUP_C = {"scholarly_papers", "recipes", "comic_store", "cinema", "exhibitions", "media_transcoding", "household"}


@pytest.fixture()
def wc() -> WorkingCopy:
    return WorkingCopy(WorldState.from_directory(FIXTURES), NOW)



def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in rows]


# ---- round trips ---------------------------------------------------------------------------


def test_scholarly_paper_search_and_read(wc: WorkingCopy) -> None:
    assert ids(ok(wc, "scholarly_paper_search")["papers"]) == ["pap_0001", "pap_0002"]
    assert ids(ok(wc, "scholarly_paper_search", author="okafor")["papers"]) == ["pap_0001"]
    assert ids(ok(wc, "scholarly_paper_search", query="lifts", year_to=2024)["papers"]) == ["pap_0002"]
    assert ok(wc, "scholarly_paper_search", venue="library", year_from=2026)["count"] == 0
    paper = ok(wc, "scholarly_paper_read", paper_id="pap_0001")
    assert paper["body"].startswith("Branches open longer") and paper["doi"] == "10.5555/jls.2025.014"
    assert "listed_at" in paper and "entered_at" not in paper


def test_recipe_search(wc: WorkingCopy) -> None:
    assert ids(ok(wc, "recipe_search", ingredients=["potato"], dietary=["vegan"])["recipes"]) == ["rcp_0001"]
    assert ids(ok(wc, "recipe_search", exclude_ingredients="peanut")["recipes"]) == ["rcp_0001"]
    quick = ok(wc, "recipe_search", max_total_minutes=25)["recipes"]
    assert ids(quick) == ["rcp_0002"] and quick[0]["total_minutes"] == 20
    full = ok(wc, "recipe_search", query="soup")["recipes"][0]
    assert full["ingredients"][0] == {"name": "leek", "quantity": "3"} and len(full["steps"]) == 3
    # quickest first
    assert ids(ok(wc, "recipe_search", dietary="vegetarian")["recipes"]) == ["rcp_0002", "rcp_0001"]


def test_comic_store_inventory_read(wc: WorkingCopy) -> None:
    titles = ok(wc, "comic_store_inventory_read", store="panel & page")["titles"]
    assert ids(titles) == ["cmc_0001", "cmc_0002"]
    assert [(t["released"], t["available"]) for t in titles] == [(True, True), (False, False)]
    assert ids(ok(wc, "comic_store_inventory_read", in_stock_only=True)["titles"]) == ["cmc_0001"]
    assert ids(ok(wc, "comic_store_inventory_read", publisher="Lantern Press")["titles"]) == ["cmc_0003"]


def test_cinema_search_purchase_and_read(wc: WorkingCopy) -> None:
    shows = ok(wc, "cinema_showtime_search", city="northfield")["showtimes"]
    assert ids(shows) == ["show_0001"]  # show_0002 already ran; show_0004 not yet listed
    assert ids(ok(wc, "cinema_showtime_search", date="2026-03-14", after="13:00", before="15:00")["showtimes"]) == [
        "show_0003"
    ]
    bought = ok(wc, "cinema_ticket_purchase", showtime_id="show_0001", seats=3)
    assert bought["ticket_id"] == "ctk_0003"  # the hidden ctk_0002 still holds its number
    assert bought["ticket"]["total"] == 28.5 and bought["ticket"]["start"] == "2026-03-12T19:30"
    assert ok(wc, "cinema_showtime_search", cinema="Regent Picturehouse")["showtimes"][0]["seats_available"] == 1
    again = WorkingCopy(wc.to_state(), NOW)
    assert ok(again, "cinema_ticket_read", ticket_id="ctk_0003")["seats"] == 3
    assert ids(ok(again, "cinema_ticket_read")["tickets"]) == ["ctk_0001", "ctk_0003"]
    res = fail(again, "cinema_ticket_purchase", showtime_id="show_0001", seats=2)
    assert "seats 2 is more than the 1 seat(s) left for show_0001" in res.content


def test_exhibition_search_purchase_and_read(wc: WorkingCopy) -> None:
    assert ids(ok(wc, "exhibition_search")["exhibitions"]) == ["exh_0002", "exh_0001"]  # soonest closing first
    assert ids(ok(wc, "exhibition_search", date="2026-03-16")["exhibitions"]) == ["exh_0002"]  # Monday
    assert ids(ok(wc, "exhibition_search", date="2026-03-17")["exhibitions"]) == ["exh_0002"]  # closed date
    assert ok(wc, "exhibition_search", city="northfield")["exhibitions"][0]["entry_times"] == [
        "10:00", "12:00", "14:00"
    ]
    bought = ok(
        wc, "exhibition_ticket_purchase", exhibition_id="exh_0001", date="2026-03-14",
        entry_time="12:00", ticket_type="Concession", quantity=2,
    )
    assert bought["ticket_id"] == "etk_0003"
    assert (bought["ticket"]["ticket_type"], bought["ticket"]["total"]) == ("concession", 16.0)
    again = WorkingCopy(wc.to_state(), NOW)
    assert ok(again, "exhibition_ticket_read", ticket_id="etk_0003")["entry_time"] == "12:00"
    assert ids(ok(again, "exhibition_ticket_read")["tickets"]) == ["etk_0001", "etk_0003"]
    walk_in = ok(again, "exhibition_ticket_purchase", exhibition_id="exh_0002", date="2026-03-10")
    assert walk_in["ticket"]["entry_time"] is None and walk_in["ticket"]["total"] == 6.0


def test_media_transcoding_search_create_and_read(wc: WorkingCopy) -> None:
    found = ok(wc, "media_transcode_service_search", input_format=".MOV", output_format="mp4")["services"]
    assert ids(found) == ["mts_0001", "mts_0002"]  # cheapest first; mts_0003 not yet listed
    assert ids(ok(wc, "media_transcode_service_search", resolution="2160p")["services"]) == ["mts_0002"]
    made = ok(
        wc, "media_transcode_job_create", service_id="mts_0001", source_file="rehearsal.mov",
        source_format="MOV", output_format="mp4", resolution="1080p", duration_minutes=30,
    )
    job = made["job"]
    assert made["job_id"] == "tjob_0003"
    assert (job["cost"], job["ready_at"], job["status"]) == (1.5, "2026-03-10T11:00", "processing")
    later = WorkingCopy(wc.to_state(), datetime(2026, 3, 10, 11, 0))
    assert ok(later, "media_transcode_job_read", job_id="tjob_0003")["status"] == "ready"
    listed = ok(later, "media_transcode_job_read")["jobs"]
    assert ids(listed) == ["tjob_0003", "tjob_0001"]


def test_household_inventory_search(wc: WorkingCopy) -> None:
    items = ok(wc, "household_inventory_search", category="Cleaning")["items"]
    assert ids(items) == ["hh_0001"] and items[0]["low"] is True
    assert ids(ok(wc, "household_inventory_search", low_only=True)["items"]) == ["hh_0001"]
    assert ids(ok(wc, "household_inventory_search", location="garage")["items"]) == ["hh_0002"]
    pills = ok(wc, "household_inventory_search", query="paracetamol")["items"][0]
    assert (pills["low"], pills["expired"]) == (False, True)


# ---- rejected arguments --------------------------------------------------------------------

REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("scholarly_paper_search", {"year_from": 2025, "year_to": 2020}, "year_to 2020 is before year_from 2025"),
    ("scholarly_paper_read", {"paper_id": "pap_0099"}, "paper_id 'pap_0099' names no paper in the index"),
    ("recipe_search", {"dietary": ["keto"]}, "dietary[0] 'keto' is invalid"),
    ("comic_store_inventory_read", {"store": "Panel and Pages"}, "store 'Panel and Pages' is not a known comic shop"),
    ("cinema_showtime_search", {"city": "Sallowmuth"}, "city 'Sallowmuth' is not a known city with cinema listings"),
    ("cinema_ticket_read", {"ticket_id": "ctk_0099"}, "ticket_id 'ctk_0099' names no cinema ticket"),
    ("cinema_ticket_purchase", {"showtime_id": "show_0002"}, "showtime_id 'show_0002' started at 2026-03-09T19:30"),
    ("exhibition_search", {"date": "16/03/2026"}, "date '16/03/2026' is not a date in YYYY-MM-DD form"),
    ("exhibition_ticket_read", {"ticket_id": "etk_0099"}, "ticket_id 'etk_0099' names no exhibition ticket"),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0001", "date": "2026-03-16", "entry_time": "10:00"},
        "date '2026-03-16' cannot be visited: Northfield Museum is closed on Mondays",
    ),
    ("media_transcode_service_search", {"resolution": "4k"}, "resolution '4k' is invalid"),
    ("media_transcode_job_read", {"job_id": "tjob_0099"}, "job_id 'tjob_0099' names no transcoding job"),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0001", "source_file": "a.mov", "source_format": "mov", "output_format": "mkv",
         "resolution": "720p", "duration_minutes": 10},
        "output_format 'mkv' is not produced by ClipForge (produces: mp4, webm, mp3)",
    ),
    ("household_inventory_search", {"category": "garden"}, "category 'garden' is not a known household category"),
]


def test_every_group_c_tool_has_a_rejection_case() -> None:
    mine = {t.name for t in REG if t.domain in GROUP_C}
    assert len(mine) == 14
    assert {name for name, _, _ in REJECTED} == mine


@pytest.mark.parametrize(("name", "args", "words"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_argument(wc: WorkingCopy, name: str, args: dict[str, Any], words: str) -> None:
    before = wc.state
    res = fail(wc, name, **args)
    assert words in res.content
    assert res.content.startswith(name)
    assert wc.change_log == [] and wc.to_state() == before


MORE_REJECTED: list[tuple[str, dict[str, Any], str]] = [
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0001", "date": "2026-03-14", "entry_time": "11:00"},
        "entry_time '11:00' is not an entry slot of 'Tides and Timber' (slots: 10:00, 12:00, 14:00)",
    ),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0001", "date": "2026-03-14"},
        "entry_time is required",
    ),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0001", "date": "2026-05-02", "entry_time": "10:00"},
        "'Tides and Timber' closed on 2026-04-30",
    ),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0001", "date": "2026-03-14", "entry_time": "10:00", "ticket_type": "child"},
        "ticket_type 'child' is not sold for 'Tides and Timber' (types: adult, concession)",
    ),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0002", "date": "2026-03-11", "entry_time": "18:00"},
        "entry_time '18:00' is outside the opening hours 09:30-16:30",
    ),
    (
        "exhibition_ticket_purchase",
        {"exhibition_id": "exh_0002", "date": "2026-03-09"},
        "date '2026-03-09' with entry at 16:30 is already past",
    ),
    ("cinema_ticket_purchase", {"showtime_id": "show_0001", "seats": 11}, "seats 11 is invalid"),
    ("cinema_showtime_search", {"after": "20:00", "before": "18:00"}, "before '18:00' is earlier than after '20:00'"),
    ("cinema_showtime_search", {"after": "7pm"}, "after '7pm' is not a 24-hour HH:MM time"),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0001", "source_file": "a.mov", "source_format": "mov", "output_format": "mp4",
         "resolution": "720p", "duration_minutes": 200},
        "duration_minutes 200 is longer than ClipForge takes (120 at most)",
    ),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0001", "source_file": "a.mov", "source_format": "mov", "output_format": "mp4",
         "resolution": "audio", "duration_minutes": 5},
        "resolution 'audio' does not go with output_format 'mp4'",
    ),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0002", "source_file": "a.avi", "source_format": "avi", "output_format": "mp4",
         "resolution": "1080p", "duration_minutes": 5},
        "source_format 'avi' is not accepted by ReelPress (accepts: mov, mxf)",
    ),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0002", "source_file": "a.mov", "source_format": "mov", "output_format": "mp4",
         "resolution": "720p", "duration_minutes": 5},
        "resolution '720p' is not offered by ReelPress (offers: 1080p, 2160p)",
    ),
    ("recipe_search", {"max_total_minutes": 0}, "max_total_minutes 0 is invalid"),
    ("comic_store_inventory_read", {"publisher": "Tidewater"}, "publisher 'Tidewater' is not a known publisher"),
]


@pytest.mark.parametrize(("name", "args", "words"), MORE_REJECTED, ids=[f"{r[0]}-{i}" for i, r in enumerate(MORE_REJECTED)])
def test_more_rejections_write_nothing(wc: WorkingCopy, name: str, args: dict[str, Any], words: str) -> None:
    before = wc.state
    assert words in fail(wc, name, **args).content
    assert wc.change_log == [] and wc.to_state() == before


# ---- records still to come -----------------------------------------------------------------

# (tool, arguments naming a record that enters the world later, a never-existing id)
FUTURE: list[tuple[str, dict[str, Any], str]] = [
    ("scholarly_paper_read", {"paper_id": "pap_0003"}, "pap_9999"),
    ("cinema_ticket_read", {"ticket_id": "ctk_0002"}, "ctk_9999"),
    ("cinema_ticket_purchase", {"showtime_id": "show_0004"}, "show_9999"),
    ("exhibition_ticket_read", {"ticket_id": "etk_0002"}, "etk_9999"),
    ("exhibition_ticket_purchase", {"exhibition_id": "exh_0004", "date": "2026-06-02"}, "exh_9999"),
    ("media_transcode_job_read", {"job_id": "tjob_0002"}, "tjob_9999"),
    (
        "media_transcode_job_create",
        {"service_id": "mts_0003", "source_file": "a.mov", "source_format": "mov", "output_format": "mp4",
         "resolution": "720p", "duration_minutes": 5},
        "mts_9999",
    ),
]


@pytest.mark.parametrize(("name", "args", "missing_id"), FUTURE, ids=[f[0] for f in FUTURE])
def test_future_record_reads_as_missing(wc: WorkingCopy, name: str, args: dict[str, Any], missing_id: str) -> None:
    key = next(k for k in args if k.endswith("_id"))
    future = fail(wc, name, **args).content
    missing = fail(wc, name, **{**args, key: missing_id}).content
    assert future.replace(args[key], "ID") == missing.replace(missing_id, "ID")


# (tool, arguments that would match only the record still to come, a time when it is visible)
MAY = datetime(2026, 5, 2, 9, 0)
FUTURE_SEARCH: list[tuple[str, dict[str, Any], datetime]] = [
    ("scholarly_paper_search", {"query": "flood"}, MAY),
    ("recipe_search", {"query": "crumble"}, MAY),
    ("comic_store_inventory_read", {"query": "omnibus"}, MAY),
    ("cinema_showtime_search", {"date": "2026-03-27"}, datetime(2026, 3, 21, 9, 0)),
    ("exhibition_search", {"query": "kites"}, MAY),
    ("media_transcode_service_search", {"query": "budget"}, MAY),
    ("household_inventory_search", {"query": "washers"}, MAY),
]


@pytest.mark.parametrize(("name", "args", "when"), FUTURE_SEARCH, ids=[f[0] for f in FUTURE_SEARCH])
def test_searches_hide_records_still_to_come(wc: WorkingCopy, name: str, args: dict[str, Any], when: datetime) -> None:
    assert ok(wc, name, **args)["count"] == 0
    later = WorkingCopy(WorldState.from_directory(FIXTURES), when)
    assert ok(later, name, **args)["count"] == 1


def test_lists_hide_records_still_to_come(wc: WorkingCopy) -> None:
    assert ids(ok(wc, "cinema_ticket_read")["tickets"]) == ["ctk_0001"]
    assert ids(ok(wc, "exhibition_ticket_read")["tickets"]) == ["etk_0001"]
    assert ids(ok(wc, "media_transcode_job_read")["jobs"]) == ["tjob_0001"]
    assert ok(wc, "exhibition_search", city="Sallowmouth", date="2026-06-02")["count"] == 0


def test_empty_domains_read_as_empty() -> None:
    bare = WorkingCopy(WorldState({}), NOW)
    assert ok(bare, "recipe_search")["count"] == 0
    assert ok(bare, "cinema_ticket_read")["count"] == 0
    assert "there are none" in fail(bare, "household_inventory_search", category="tools").content


def test_exhibition_closed_weekdays_take_short_or_full_day_names() -> None:
    """Other domains write weekdays as mon..sun; an exhibition fixture may too (stored as full names)."""
    from mempa_tui.world._records_exhibitions import Exhibition

    base = {
        "id": "exh_0100", "entered_at": "2026-03-01T09:00", "title": "T", "venue": "V", "city": "C",
        "start_date": "2026-03-01", "end_date": "2026-04-01", "opens": "10:00", "closes": "17:00",
        "ticket_types": [{"name": "adult", "price": 5}],
    }
    shown = Exhibition.model_validate({**base, "closed_weekdays": ["mon", "Tuesday", "WED"]})
    assert shown.closed_weekdays == ["Monday", "Tuesday", "Wednesday"]
    with pytest.raises(ValueError, match="closed_weekdays"):
        Exhibition.model_validate({**base, "closed_weekdays": ["Funday"]})
