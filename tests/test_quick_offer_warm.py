"""The app warms the PA prefix of the offer a request uses, and a play offers the quick tools.

Issue 12, item 4: a quick start offers the PA only the tool domains its scripts use. The embedded
server keeps the KV state of the PA's fixed prefix (instructions and offered tools); the app's
engine must ready the prefix its request's PA will see (a quick start's, not all 83 tools), warm
another offer's prefix on the server already running, and a play of a quick start's step from
that quick start's checkpoint must offer the quick tools (:func:`mempa_tui.runner.play.play_offer`).

The engine runs on the scripted model over loopback; the runtime opener is replaced by one that
keeps the real :class:`~mempa_tui.llm.runtime.PreparedRuntime` around a recording stand-in for
the embedded server, whose warm-up protocol itself runs against the fake server process of
``test_embedded``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from io import StringIO
from pathlib import Path
from typing import Any, TextIO

import pytest
from test_embedded import embedded_profile, fake_python, requests_made  # noqa: F401 - fake_python is a fixture
from test_runner_support import protocol_responder, quick_worlds
from test_tui_support import make_folders, write_profile

from mempa_tui.llm import ChatMessage, LLMClient, ModelProfile, Role, ScriptedModelServer, ToolSpec
from mempa_tui.llm.embedded import EmbeddedServer, PrefixState
from mempa_tui.llm.runtime import FixedPrefix, PreparedRuntime
from mempa_tui.runner.play import PlayRequest, play_offer, play_step
from mempa_tui.runner.setup import pa_prefix
from mempa_tui.simulator.human import HumanUserSeat, UserAction, UserPanel
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tools import default_registry
from mempa_tui.tui import engine as engine_module
from mempa_tui.tui.book import RunRequest

QUICK_DOMAINS = ("email", "calendar", "documents", "contacts")
"""What user R's quick start (R-s1, R-s2, R-ev1; see ``test_quick_tools``) offers."""


class RecordingServer:
    """Stands in for a running :class:`EmbeddedServer`: records the tool names of each warm-up."""

    def __init__(self) -> None:
        self.warmed: list[list[str]] = []

    async def warm_prefix(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, *,
                          role: Role = Role.PA) -> PrefixState:
        names = [t["function"]["name"] for t in tools or ()]
        self.warmed.append(names)
        return PrefixState(key=str(len(self.warmed)), path=None, action="saved", tokens=len(names), seconds=0.0)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[PreparedRuntime, RecordingServer]]:
    """Replace the engine's runtime opener: each opening is recorded with its stand-in server."""
    runtimes: list[tuple[PreparedRuntime, RecordingServer]] = []

    async def open_runtime(profile: ModelProfile, stack: AsyncExitStack, out: TextIO, *,
                           prefix: FixedPrefix | None = None) -> PreparedRuntime:
        server = RecordingServer()
        runtime = PreparedRuntime(profile, server)  # type: ignore[arg-type]
        if prefix is not None:
            await runtime.warm(prefix, out)
        runtimes.append((runtime, server))
        return runtime

    monkeypatch.setattr(engine_module, "open_runtime", open_runtime)
    return runtimes


def _names(domains: tuple[str, ...] | None) -> list[str]:
    return [t.name for t in pa_prefix(domains).tools]


async def test_the_engine_warms_the_quick_prefix_then_another_offer_on_the_same_server(
    tmp_path: Path, opened: list[tuple[PreparedRuntime, RecordingServer]]
) -> None:
    worlds = quick_worlds(tmp_path)
    folders = make_folders(tmp_path, worlds)
    lines: list[str] = []
    options = {"consolidate_at_tokens": 50_000, "consolidate_to_tokens": 20_000}
    async with ScriptedModelServer(protocol_responder) as scripted:
        write_profile(scripted.profile(context_window=131072), folders.settings.models_dir)
        service = engine_module.RunService(folders.settings, engine_module.RunnerOptions(resamples=100))
        try:
            quick = await service.execute(
                RunRequest(user="R", memory="file", profile="scripted", repeats=1, quick=True, memory_options=options),
                lambda _item: None, lines.append)
            assert quick.status is RunStatus.COMPLETED
            [(runtime, server)] = opened
            assert server.warmed == [_names(QUICK_DOMAINS)]  # the quick offer, not all 83 tools
            assert 0 < len(server.warmed[0]) < 83
            assert any("(%d tools)" % len(server.warmed[0]) in line for line in lines)

            again = await service.execute(
                RunRequest(user="R", memory="none", profile="scripted", repeats=1, quick=True),
                lambda _item: None, lines.append)
            assert again.status is RunStatus.COMPLETED
            assert len(server.warmed) == 1  # the same offer is already in the slots

            whole = await service.execute(
                RunRequest(user="R", memory="file", profile="scripted", repeats=1, memory_options=options),
                lambda _item: None, lines.append)
            assert whole.status is RunStatus.COMPLETED
            assert len(opened) == 1  # no second server: the running one is warmed
            assert server.warmed[1:] == [_names(None)] and len(server.warmed[1]) == 83
            assert runtime.warmed == pa_prefix(None)
            pa_tools = [r.tool_names for r in scripted.requests if r.model == "scripted-pa"]
            assert {n for n in pa_tools[-1] if not n.startswith("IX_")} == set(_names(None))

            # the probe stepper on the quick run offers the quick tools: their prefix is warmed back
            await service.open_stepper(quick.run_id, "R-final-work-verbosity", None, lines.append)
            assert server.warmed[2:] == [_names(QUICK_DOMAINS)] and len(opened) == 1
        finally:
            await service.aclose()


async def test_a_quick_step_played_from_the_quick_run_offers_the_quick_tools(
    tmp_path: Path, opened: list[tuple[PreparedRuntime, RecordingServer]]
) -> None:
    worlds = quick_worlds(tmp_path)
    folders = make_folders(tmp_path, worlds)
    options = {"consolidate_at_tokens": 50_000, "consolidate_to_tokens": 20_000}
    async with ScriptedModelServer(protocol_responder) as scripted:
        write_profile(scripted.profile(context_window=131072), folders.settings.models_dir)
        service = engine_module.RunService(folders.settings, engine_module.RunnerOptions(resamples=100))
        try:
            quick = await service.execute(
                RunRequest(user="R", memory="file", profile="scripted", repeats=1, quick=True, memory_options=options),
                lambda _item: None, lambda _line: None)
            assert quick.status is RunStatus.COMPLETED
            [(_runtime, server)] = opened
            quick_tools = set(_names(QUICK_DOMAINS))

            async def play(step: str, source: str | None) -> tuple[set[str], str, list[str]]:
                said: list[str] = []
                seat = HumanUserSeat(None, _quick_bundle(worlds).persona, shadow=False)
                plan = [UserAction(kind="say", text="Can you look at the inspection email?"),
                        UserAction(kind="end", text="Thanks, that is all.")]

                def person(panel: UserPanel) -> None:
                    if panel.waiting and plan:
                        seat.submit(plan.pop(0))

                seat.on_change = person
                before = len(scripted.requests)
                outcome = await service.play(
                    PlayRequest(user="R", step_id=step, seat="user", profile="scripted", memory="file",
                                source_run=source),
                    user_seat=seat, say=said.append)
                offered = {n for r in scripted.requests[before:] if r.model == "scripted-pa"
                           for n in r.tool_names if not n.startswith("IX_")}
                return offered, outcome.tools_offered, said

            offered, text, said = await play("R-s2", quick.run_id)
            assert offered == quick_tools
            assert text.startswith(f"tools offered: {len(quick_tools)} of 83 (quick start:")
            assert any(text in line for line in said)  # the header line goes on with the memory options
            assert server.warmed == [_names(QUICK_DOMAINS)]  # the quick prefix is already warm

            offered, text, said = await play("R-s1", None)  # the fixture world: no quick run to continue
            # (another step: play ids are unique per second)
            assert offered == set(_names(None)) and text == "tools offered: all 83"
            assert server.warmed[1:] == [_names(None)]
        finally:
            await service.aclose()


async def test_play_offer_follows_the_run_the_play_starts_from(tmp_path: Path) -> None:
    import shutil

    from test_runner_support import WORLDS, runner_config

    from mempa_tui.runner import Runner
    from mempa_tui.runner.setup import quick_tool_domains
    from mempa_tui.scripts.loader import load_user

    worlds = tmp_path / "worlds"  # user R with a quick start of its first session only
    shutil.copytree(WORLDS, worlds)
    timeline = worlds / "users" / "R" / "timeline.yaml"
    timeline.write_text(timeline.read_text() + "quick:\n  - R-s1\n")
    domains = quick_tool_domains(load_user(worlds, "R"))
    assert "R-final-work-verbosity" in _quick_bundle(worlds).probes and "R-s2" not in _quick_bundle(worlds).sessions
    async with ScriptedModelServer(protocol_responder) as scripted, \
            RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        client = LLMClient(scripted.profile(context_window=131072))
        for quick in (True, False):
            outcome = await Runner(runner_config(worlds_dir=worlds, quick=quick, repeats=1), store, client,
                                   default_registry(), memory_root=tmp_path / "lm", resamples=100).run()
            assert outcome.status is RunStatus.COMPLETED

        def request(step: str, source: str | None) -> PlayRequest:
            return PlayRequest(user="R", step_id=step, seat="agent", profile="scripted", memory="file",
                               worlds_dir=worlds, source_run=source)

        quick_run = "R-file-scripted-s0-quick"
        assert await play_offer(request("R-s1", quick_run), store) == domains
        assert await play_offer(request("R-final-work-verbosity", quick_run), store) == domains
        # a step the quick start does not play may need other domains' tools: every tool
        assert await play_offer(request("R-s2", quick_run), store) is None
        assert await play_offer(request("R-s1", "R-file-scripted-s0"), store) is None  # the whole timeline's run
        assert await play_offer(request("R-s1", None), store) is None  # the fixture world
        assert await play_offer(request("R-s1", "no-such-run"), store) is None  # play_step names it

        # the registry the play hands the PA is the offer's
        from mempa_tui.agent.human import HumanAgentSeat, PAAction, PATurnView

        seat = HumanAgentSeat()
        seen: list[set[str]] = []

        plan = [PAAction(kind="tool", tool="IX_verbosity", arguments={"setting": "Terse"}),
                PAAction(kind="reply", text="Replace the breaker panel by June.")]

        def person(view: PATurnView) -> None:
            if view.waiting and plan:
                seen.append({t.name for t in view.tools if not t.name.startswith("IX_")})
                seat.submit(plan.pop(0))

        seat.on_change = person
        outcome = await play_step(request("R-final-work-verbosity", quick_run), store, client,
                                  default_registry(), agent_seat=seat, memory_root=tmp_path / "mem")
        assert seen and seen[0] == set(_names(domains))
        assert outcome.tools_offered.startswith(f"tools offered: {len(_names(domains))} of 83")


def _quick_bundle(worlds: Path) -> Any:
    from mempa_tui.scripts.loader import load_user

    return load_user(worlds, "R").quick_start()


def _prefix(names: Sequence[str]) -> FixedPrefix:
    return FixedPrefix(
        messages=[ChatMessage(role="system", content="You are a personal assistant.")],
        tools=[ToolSpec(name=n, description="d", parameters={"type": "object", "properties": {}}) for n in names],
    )


async def test_a_running_server_is_warmed_with_another_offer_and_back(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811 - the fixture
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF")
    profile = embedded_profile(startup_timeout_s=300, n_parallel=2, prefix_cache_dir=str(tmp_path / "kv"))
    quick, everything = _prefix(["mcp_state_a"]), _prefix(["mcp_state_a", "mcp_state_b"])
    server = EmbeddedServer(profile, weights=weights, python=python)
    out = StringIO()
    async with server as ready:
        runtime = PreparedRuntime(ready, server)
        first = await runtime.warm(quick, out)
        assert first is not None and first.action == "saved"
        requests_made(log)
        assert await runtime.warm(_prefix(["mcp_state_a"]), out) is None  # equal prefix: already in the slots
        assert requests_made(log) == []
        second = await runtime.warm(everything, out)
        assert second is not None and second.action == "saved" and second.key != first.key
        made = requests_made(log)
        warm = [r for r in made if r["path"] == "/v1/chat/completions"]
        assert [t["function"]["name"] for t in warm[0]["body"]["tools"]] == ["mcp_state_a", "mcp_state_b"]  # type: ignore[index]
        assert [(r["path"], r["action"]) for r in made[1:]] == [("/slots/0", "save"), ("/slots/1", "restore")]
        back = await runtime.warm(quick, out)  # saved before: restored into both slots, nothing read
        assert back is not None and back.action == "restored" and back.key == first.key
        assert [(r["path"], r["action"]) for r in requests_made(log)] == [("/slots/0", "restore"), ("/slots/1", "restore")]
    assert "pa prompt prefix (1 tools): read" in out.getvalue()
    assert "pa prompt prefix (2 tools): read" in out.getvalue()
    assert "pa prompt prefix (1 tools): restored" in out.getvalue()
    assert await PreparedRuntime(ready).warm(quick, out) is None  # no embedded server: nothing to warm
