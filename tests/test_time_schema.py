"""A time argument's schema states the form the tools accept (issue 12).

JSON Schema's ``format: time`` is RFC 3339's full time (``09:00:00Z``, seconds and an offset
required). Grammar-constrained decoding (llama.cpp's llguidance under ``tool_calling:
constrained``) follows a schema exactly, so with that format the embedded PA could only write
times the tools reject: every calendar write of a quick-start run failed with "is not a 24-hour
HH:MM time". Time arguments now carry :data:`~mempa_tui.tools._common.TIME_PATTERN` instead.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from mempa_tui.tools import default_registry
from mempa_tui.tools._common import TIME_PATTERN, _parse_time


def _time_arguments() -> list[tuple[str, str, dict]]:
    found = []
    for t in default_registry():
        for arg, schema in t.parameters["properties"].items():
            if schema.get("pattern") == TIME_PATTERN or schema.get("format") == "time":
                found.append((t.name, arg, schema))
    return found


def test_no_tool_asks_for_an_rfc3339_time() -> None:
    text = json.dumps([t.parameters for t in default_registry()])
    assert '"format": "time"' not in text
    names = {(name, arg) for name, arg, _ in _time_arguments()}
    assert ("calendar_event_create", "start_time") in names and ("calendar_event_create", "end_time") in names
    assert len(names) == 17  # every TimeArg of the 83 tools


def _accepted(text: str) -> bool:
    try:
        _parse_time(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("text", ["09:00", "23:59", "00:00", "9:00", "24:00", "12:60", "09:00:00", "09:00:00.000Z",
                                  "0900", " 09:00", "09:00 ", "ab:cd", ""])
def test_the_pattern_and_the_tools_agree(text: str) -> None:
    """Whatever the pattern lets a grammar write, the tools accept, and nothing else in these cases
    (surrounding spaces aside: the tools strip them, a grammar never writes them)."""
    if text != text.strip():
        assert _accepted(text) and not re.match(TIME_PATTERN, text)
        return
    assert bool(re.match(TIME_PATTERN, text)) == _accepted(text), text


def test_every_two_digit_time_is_judged_alike() -> None:
    for hh, mm in itertools.product(range(0, 100, 1), (0, 5, 30, 59, 60, 99)):
        text = f"{hh:02d}:{mm:02d}"
        assert bool(re.match(TIME_PATTERN, text)) == _accepted(text), text


def test_a_time_argument_keeps_its_description() -> None:
    for name, arg, schema in _time_arguments():
        assert schema["type"] == "string" and "HH:MM" in schema.get("description", ""), (name, arg)
