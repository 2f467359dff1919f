"""``mempa results --plot DIR``: the paper-style figures (SPEC 4.9; paper Figures 6-8, Table 13)
written as PNG and SVG for a results set made by scripted runs, marked rows hatched, and a clear
exit 2 without matplotlib. No pixel comparisons: files exist, are valid PNG/SVG, and the SVG
text names the conditions."""

from __future__ import annotations

import builtins
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_runner_support import CONSOLIDATING_OPTIONS, WORLDS, consolidating, protocol_responder

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedModelServer
from mempa_tui.scoring import ProbeOutcome, ProbeStatus, score_conditions
from mempa_tui.scoring.plot import FIGURE_NAMES, write_figures
from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import Context

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def saves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A saves folder holding scripted runs of user R under No Memory and File memory (which
    consolidates, so both runs are healthy)."""
    root = tmp_path_factory.mktemp("plot")
    with ScriptedModelServer(consolidating(protocol_responder)) as server:
        profile = root / "scripted.yaml"
        profile.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
        code = main(["run", "--user", "R", "--memory", "none,file", "--model", str(profile), "--repeats", "2",
                     "--worlds", str(WORLDS), "--saves", str(root / "saves"),
                     "--local-memory", str(root / "local_memory"), *CONSOLIDATING_OPTIONS])
        assert code == 0
    yield root / "saves"


def _svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()  # raises on a malformed SVG
    assert root.tag.endswith("svg")
    return " ".join(t.strip() for t in root.itertext() if t.strip())


def test_results_plot_writes_every_figure_as_png_and_svg(saves: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "figs"
    assert main(["results", "--saves", str(saves), "--plot", str(out_dir), "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    for name in FIGURE_NAMES:
        for ext in ("png", "svg"):
            path = out_dir / f"{name}.{ext}"
            assert f"figure: {path}" in printed
            assert path.is_file() and path.stat().st_size > 0
        assert (out_dir / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    headline = _svg_text(out_dir / "headline.svg")
    for text in ("No Memory", "File memory", "PSA (%)", "CS (%)", "PET (%)", "BRS (1-5)", "PRS (1-5)"):
        assert text in headline, text
    dims = _svg_text(out_dir / "dimensions.svg")
    assert "No Memory" in dims and "File memory" in dims and "Expression Style" in dims
    assert "No Memory" in _svg_text(out_dir / "carry_over.svg")
    assert "hatched" not in headline  # nothing marked on two healthy runs over the same probes


def test_a_marked_row_is_hatched_and_named(tmp_path: Path) -> None:
    outcomes = [
        ProbeOutcome(user="A", context=ctx, attribute="verbosity", probe_kind=ProbeKind.FINAL, repeat=r,
                     target="Terse", selection="Terse" if r == 1 else "Detailed", status=ProbeStatus.COMPLETED,
                     memory=memory, model="m", probe_id=f"A-final-{ctx.value}-verbosity")
        for memory in ("none", "file") for ctx in (Context.WORK, Context.PERSONAL) for r in (1, 2)
    ]
    rows = score_conditions(outcomes, resamples=100)
    paths = write_figures(rows, [], tmp_path, mark=lambda r: "memory BROKEN 1/1" if r.memory == "file" else None)
    assert [p.name for p in paths] == [f"{n}.{e}" for n in FIGURE_NAMES for e in ("png", "svg")]
    text = _svg_text(tmp_path / "headline.svg")
    assert "hatched (///): File memory - memory BROKEN 1/1" in text and "No Memory -" not in text
    assert "N/A" in _svg_text(tmp_path / "dimensions.svg")  # no dimension rows given: nothing drawn, said so


def test_plot_without_matplotlib_exits_2_naming_the_extra(saves: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main(["results", "--saves", str(saves), "--plot", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err
    assert 'pip install -e ".[plot]"' in err and "matplotlib" in err
    assert not (tmp_path / "figs").exists()


def test_results_plot_hatches_the_rows_the_table_marks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import anyio
    from test_browse_support import seed

    saves = tmp_path / "saves"
    saves.mkdir()
    anyio.run(seed, saves / "mempa.sqlite")  # File memory, No Memory and a mem0 run whose memory is BROKEN
    assert main(["results", "--saves", str(saves), "--plot", str(tmp_path / "figs"), "--resamples", "100"]) == 0
    table = capsys.readouterr().out
    assert "BROKEN" in table
    text = _svg_text(tmp_path / "figs" / "headline.svg")
    assert "hatched (///): Mem0 - memory BROKEN 1/1" in text
    assert "File memory -" not in text and "No Memory -" not in text


def test_a_plot_folder_that_cannot_be_written_is_one_error_line(saves: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["results", "--saves", str(saves), "--plot", str(blocker), "--resamples", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot write the figures" in err and "--plot DIR" in err and len(err.splitlines()) == 1
