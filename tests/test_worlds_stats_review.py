"""``mempa worlds stats`` numbers and ``mempa worlds review`` against the scripted model over HTTP."""

from __future__ import annotations

import io
import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from mempa_tui.cli._worlds import cmd_worlds_review, cmd_worlds_stats
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.scripts._review import (
    CONDITIONS,
    review_script,
    review_user,
    write_reviews,
)
from mempa_tui.scripts._stats import format_stats, user_stats, world_stats
from mempa_tui.scripts.loader import load_user

WORLDS = Path(__file__).resolve().parents[1] / "worlds"


def _verdict(failing: str | None = None) -> str:
    return json.dumps(
        {
            c: {
                "ok": c != failing,
                "reason": f"{c} {'fails' if c == failing else 'holds'}",
            }
            for c in CONDITIONS
        }
    )


def test_user_stats_of_a_count_its_files() -> None:
    bundle = load_user(WORLDS, "A")
    stats = user_stats(bundle)
    assert stats.scope == "full" and stats.sessions == 94 and len(stats.events) == 5
    assert stats.sessions == len(bundle.timeline.steps) - len(bundle.events)
    assert sum(stats.sessions_per_cell.values()) == stats.sessions
    assert stats.final_probes + stats.pre_event_probes == len(bundle.probes)
    assert [e.id for e in stats.events] == sorted(bundle.events)
    m = bundle.matrix
    assert stats.differing == [k for k in m.work if m.work[k].setting != m.personal[k].setting]
    beats = [len(bundle.sessions[s].beats) for s in bundle.sessions]
    assert stats.mean_beats == round(sum(beats) / len(beats), 2)


def test_stats_text_and_totals(tmp_path: Path) -> None:
    worlds = tmp_path / "w"
    shutil.copytree(WORLDS / "users" / "A", worlds / "users" / "A")
    out = io.StringIO()
    assert cmd_worlds_stats(Namespace(dir=str(worlds)), out) == 0
    text = out.getvalue()
    stats = world_stats(worlds)
    assert text == format_stats(stats) + "\n"
    assert f"user-attribute pairs differing by context: {stats.differing_pairs} of 14" in text
    assert "A-E01 slot 1: work/solution_breadth Low -> High (up)" in text
    # a user whose files do not load is named with its problem and the exit code is 1
    (worlds / "users" / "Z").mkdir()
    out = io.StringIO()
    assert cmd_worlds_stats(Namespace(dir=str(worlds)), out) == 1
    assert "User Z: not loaded" in out.getvalue()


async def test_review_script_reads_verdicts_and_retries_a_bad_reply() -> None:
    bundle = load_user(WORLDS, "A")
    replies = iter(["not json at all", _verdict("observable")])
    seen: list[ScriptedRequest] = []

    def responder(request: ScriptedRequest) -> str:
        seen.append(request)
        return next(replies)

    async with ScriptedModelServer(responder) as server:
        review = await review_script(
            LLMClient(server.profile(num_retries=0)), bundle, bundle.sessions["A-S01"]
        )
    assert review.error is None and review.attempts == 2
    assert review.live is False
    assert [c for c, v in review.conditions.items() if not v.ok] == ["observable"]
    assert seen[0].model == "scripted-judge"
    prompt = seen[0].messages[-1].content
    assert "Behaviour tested: Verbosity" in prompt and "em_0003" in prompt  # the bound record's content
    assert "could not be used" in seen[1].messages[-1].content


async def test_review_records_an_error_when_no_reply_is_usable(tmp_path: Path) -> None:
    bundle = load_user(WORLDS, "A")

    def responder(request: ScriptedRequest) -> str:
        return json.dumps({"feasible": {"ok": True, "reason": "x"}})  # four conditions missing

    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile(num_retries=0))
        reviews = await review_user(client, bundle, ["A-E01", "A-PF-work-verbosity"])
    assert [r.script_id for r in reviews] == ["A-E01", "A-PF-work-verbosity"]
    assert all(r.live is None and r.error and "missing condition" in r.error for r in reviews)
    assert reviews[0].kind == "change_event" and reviews[1].kind == "probe"
    path = write_reviews(reviews, tmp_path / "r.yaml", "scripted")
    doc = yaml.safe_load(path.read_text())
    assert (doc["reviewed"], doc["live"], doc["errors"]) == (2, 0, 2)
    with pytest.raises(KeyError, match="A-S99"):
        await review_user(client, bundle, ["A-S99"])


async def test_worlds_review_command_writes_yaml(tmp_path: Path) -> None:
    worlds = tmp_path / "w"
    shutil.copytree(WORLDS / "users" / "A", worlds / "users" / "A")

    def responder(request: ScriptedRequest) -> str:
        text = request.messages[-1].content or ""
        return _verdict("answerable" if "id: A-S02\n" in text else None)

    async with ScriptedModelServer(responder) as server:
        profile = server.profile(num_retries=0)
        profile_path = tmp_path / "scripted.yaml"
        profile_path.write_text(yaml.safe_dump(profile.model_dump(mode="json", exclude_none=True)))
        out = io.StringIO()
        args = Namespace(
            dir=str(worlds),
            model=str(profile_path),
            user=["A"],
            script=["A-S01", "A-S02"],
            out=str(tmp_path / "review.yaml"),
        )
        assert await cmd_worlds_review(args, out) == 0
    doc = yaml.safe_load((tmp_path / "review.yaml").read_text())
    assert (doc["reviewed"], doc["live"], doc["closed"]) == (2, 1, 1)
    by_id = {e["script"]: e for e in doc["scripts"]}
    assert by_id["A-S02"]["conditions"]["answerable"] == {
        "ok": False,
        "reason": "answerable fails",
    }
    assert by_id["A-S01"]["live"] is True
    assert "A-S02: closed (answerable)" in out.getvalue()
