"""One plugin, one spelling (issue 16 leftovers): a plugin given as a file path inside the project
that is importable as a module resolves to its module path before the run id is made, so
``examples/keyword_memory.py:KeywordMemory`` and ``examples.keyword_memory:KeywordMemory`` are one
run, not two."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempa_tui.cli._parser import UsageError, build_parser
from mempa_tui.memory import canonical_plugin_name
from mempa_tui.runner import RunConfig

ROOT = Path(__file__).resolve().parent.parent
MODULE = "examples.keyword_memory:KeywordMemory"


@pytest.fixture(autouse=True)
def _in_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_both_spellings_of_one_plugin_make_one_run_id() -> None:
    as_module = RunConfig(user="R", profile="scripted", memory=MODULE)
    for spelling in ("examples/keyword_memory.py:KeywordMemory", "./examples/keyword_memory.py:KeywordMemory",
                     f"{ROOT}/examples/keyword_memory.py:KeywordMemory"):
        as_file = RunConfig(user="R", profile="scripted", memory=spelling)
        assert as_file.memory == MODULE, spelling
        assert as_file.run_id == as_module.run_id == "R-examples.keyword_memory_KeywordMemory-scripted-s0"
        assert as_file.config_hash() == as_module.config_hash()


def test_a_file_that_is_not_importable_as_a_module_keeps_its_path(tmp_path: Path) -> None:
    outside = tmp_path / "my-memory.py"  # outside the project, and not an identifier either
    outside.write_text("class M: ...\n")
    assert canonical_plugin_name(f"{outside}:M") == f"{outside}:M"
    assert canonical_plugin_name("examples/missing.py:M") == "examples/missing.py:M"
    assert canonical_plugin_name("file") == "file" and canonical_plugin_name("mcp:keyword") == "mcp:keyword"


def test_the_two_spellings_side_by_side_are_one_condition_named_twice() -> None:
    with pytest.raises(UsageError, match=f"names {MODULE} more than once"):
        build_parser().parse_args(["run", "--user", "R", "--memory", f"{MODULE},examples/keyword_memory.py:KeywordMemory"])
