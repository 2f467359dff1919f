"""The launcher's Quick start and Start over boxes (issue 16): in the focus order before Start,
exclusive with the slice box, and passed to the engine as ``mempa run --quick`` / ``--fresh`` are
(``build_run_config(quick=...)``, ``Runner(fresh=...)``), and kept when a stored run is resumed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_tui_keys import _saved_loaded, _seeded_app
from textual.widgets import Label, Select, SelectionList

from mempa_tui.runner import RunConfig
from mempa_tui.tui import MempaApp, RunRequest
from mempa_tui.tui import engine as engine_module
from mempa_tui.tui.engine import request_from_record
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.widgets.marks import MarkedCheckbox

WORLDS = Path(__file__).resolve().parent.parent / "worlds"


def test_quick_and_fresh_boxes_make_the_requests_and_quick_unticks_the_slice(tmp_path: Path) -> None:
    app = _seeded_app(tmp_path)  # seeds with asyncio.run: outside the test's event loop
    asyncio.run(_boxes(app))


async def _boxes(app: MempaApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await _saved_loaded(app, pilot)
        screen = app.screen
        assert isinstance(screen, LauncherScreen)
        for field in ("user", "memory", "profile"):
            screen.query_one(f"#{field}").select_all()  # type: ignore[attr-defined]
        await pilot.pause()
        sliced, quick, fresh = (screen.query_one(f"#{i}", MarkedCheckbox) for i in ("slice", "quick", "fresh"))
        assert quick.value and not sliced.value and not fresh.value  # the README's quick start
        # R's timeline names no quick list: it plays its whole timeline, and the count says so
        assert not any(r.quick or r.fresh for r in screen.requests())
        assert "(R: no quick list, whole timeline)" in str(screen.query_one("#run-count", Label).render())
        fresh.focus()
        await pilot.press("space")
        sliced.focus()
        await pilot.press("space")
        await pilot.pause()
        assert sliced.value and fresh.value and not quick.value  # one of slice / quick, as `mempa run`
        requests = screen.requests()
        assert requests and all(r.fresh and not r.quick for r in requests)
        quick.focus()
        await pilot.press("space")
        await pilot.pause()
        assert quick.value and not sliced.value


def test_the_launcher_starts_as_the_readme_quick_start_with_its_boxes_on_screen_at_80x24(tmp_path: Path) -> None:
    """Issue 12 follow-up: the launcher's defaults were the slice and 3 repeats, not the README's
    quick start (``--quick --memory none,file --repeats 1``), and at 80x24 the boxes were scrolled
    out of the form while Start stayed on screen."""
    import shutil

    from test_tui_support import make_folders, settle

    folders = make_folders(tmp_path, worlds=WORLDS)
    folders.settings.models_dir.mkdir(parents=True)
    shutil.copy(WORLDS.parent / "models" / "openai-example.yaml", folders.settings.models_dir)
    app = MempaApp(folders.settings)

    async def check() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            screen = app.screen
            assert isinstance(screen, LauncherScreen)
            assert screen.picked("memory") == ["none", "file"]
            assert screen.query_one("#repeats", Select).value == 1
            users: SelectionList[str] = screen.query_one("#user", SelectionList)
            users.select("A")
            await pilot.pause()
            assert [(r.key, r.repeats) for r in screen.requests()] == [
                ("A-none-openai-example-s0-quick", 1), ("A-file-openai-example-s0-quick", 1)]
            # every option and Start lie inside the form's view, nothing scrolled away
            form, start = screen.query_one("#form"), screen.query_one("#start")
            assert form.max_scroll_y == 0, form.virtual_size
            for box in ("repeats", "slice", "quick", "fresh", "run-count"):
                region = screen.query_one(f"#{box}").region
                assert region.height >= 1 and form.region.contains_region(region), (box, region)
            assert start.region.y >= screen.query_one("#fresh").region.bottom and start.region.bottom <= 23
            assert "2 run(s) chosen" in str(screen.query_one("#run-count", Label).render())

    asyncio.run(check())


async def test_the_engine_passes_quick_to_the_run_config_and_fresh_to_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_tui_support import make_folders

    folders = make_folders(tmp_path)
    folders.settings.models_dir.mkdir(parents=True, exist_ok=True)
    (folders.settings.models_dir / "scripted.yaml").write_text(
        "name: scripted\nruntime: scripted\ndefault: {model: ollama_chat/scripted-default, api_base: 'http://127.0.0.1:9'}\n")
    seen: dict[str, Any] = {}

    def build(**kwargs: Any) -> RunConfig:
        seen.update(kwargs)
        raise RuntimeError("stop here: the config is what this test reads")

    monkeypatch.setattr(engine_module, "build_run_config", build)
    service = engine_module.RunService(folders.settings)
    try:
        with pytest.raises(RuntimeError, match="stop here"):
            await service.execute(RunRequest(user="A", memory="file", profile="scripted", repeats=1, quick=True,
                                             fresh=True), lambda item: None, lambda line: None)
    finally:
        await service.aclose()
    assert seen["quick"] is True and seen["slice"] is False


def test_a_stored_quick_run_resumes_as_a_quick_run() -> None:
    from mempa_tui.llm.profile import load_profile

    profile = load_profile("openai-example", Path(__file__).resolve().parent.parent / "models")
    from mempa_tui.runner.setup import build_run_config

    config = build_run_config(user="A", memory="file", profile=profile, worlds=WORLDS, repeats=1, quick=True)
    request = request_from_record(config.model_dump_json(), run_id=config.run_id)
    assert request.quick and not request.fresh and request.key.endswith("-quick")
