"""WorldState: reading fixture trees, path rules, manifests and cheap derivation (Appendix C.2)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from mempa_tui.world import WorldPathError, WorldState, check_relative_path

FIXTURES = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"


def test_from_directory_reads_collections_and_skips_notes() -> None:
    state = WorldState.from_directory(FIXTURES)
    assert "email/inbox.yaml" in state
    assert "documents/documents.yaml" in state
    assert not any(p.startswith("_notes") for p in state), "construction notes must stay hidden"
    assert state["email/inbox.yaml"] == (FIXTURES / "email" / "inbox.yaml").read_bytes()
    assert list(state) == sorted(state)


def test_manifest_and_content_hash() -> None:
    state = WorldState({"a/x.yaml": b"1", "b.yaml": b"2"})
    assert state.manifest() == {
        "a/x.yaml": hashlib.sha256(b"1").hexdigest(),
        "b.yaml": hashlib.sha256(b"2").hexdigest(),
    }
    same = WorldState({"b.yaml": b"2", "a/x.yaml": b"1"})
    other = WorldState({"a/x.yaml": b"1", "b.yaml": b"3"})
    assert state == same and state.content_hash() == same.content_hash()
    assert state != other and state.content_hash() != other.content_hash()


def test_with_files_shares_unchanged_bytes() -> None:
    big = b"x" * 10_000
    state = WorldState({"keep.yaml": big, "change.yaml": b"old"})
    new = state.with_files({"change.yaml": b"new", "added.yaml": b"a"})
    assert new.files["keep.yaml"] is state.files["keep.yaml"]
    assert new["change.yaml"] == b"new" and state["change.yaml"] == b"old"
    assert set(new.with_files({"added.yaml": None})) == {"keep.yaml", "change.yaml"}


def test_state_is_read_only() -> None:
    state = WorldState({"a.yaml": b"1"})
    with pytest.raises(TypeError):
        state.files["a.yaml"] = b"2"  # type: ignore[index]


def test_write_to_round_trip(tmp_path: Path) -> None:
    state = WorldState.from_directory(FIXTURES)
    state.write_to(tmp_path / "copy")
    assert WorldState.from_directory(tmp_path / "copy") == state


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x.yaml", "a/../../x", "a//b", "a\\b", "", "_notes/x.md"])
def test_bad_paths_are_refused(bad: str) -> None:
    with pytest.raises(WorldPathError):
        check_relative_path(bad)
    with pytest.raises(WorldPathError):
        WorldState({bad: b""})


def test_symlinks_are_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "email").mkdir(parents=True)
    (tree / "email" / "inbox.yaml").write_text("[]\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, tree / "email" / "drafts.yaml")
    with pytest.raises(WorldPathError, match="symbolic link"):
        WorldState.from_directory(tree)


def test_symlinked_folder_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tree / "email")
    with pytest.raises(WorldPathError, match="symbolic link"):
        WorldState.from_directory(tree)


def test_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorldPathError, match="not a folder"):
        WorldState.from_directory(tmp_path / "nope")
