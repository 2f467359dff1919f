"""Bring your own memory (issue 17): plugins by import path and entry point, memory servers over MCP.

The reference plugin (examples/keyword_memory.py) and the reference MCP server
(examples/keyword_mcp_server.py, profiles in examples/mcp/) play user R's small timeline on the
scripted model and show in ``mempa results`` beside File memory; broken plugins get errors naming
the class and the method; a probe branch provably leaves the MCP server's accumulated store as it was.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import tarfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import anyio
import pytest
import yaml
from test_runner_support import CONSOLIDATING_OPTIONS, WORLDS, consolidating, protocol_responder

from mempa_tui.cli.main import main
from mempa_tui.llm import ScriptedModelServer
from mempa_tui.memory import (
    MemoryConfigError,
    MemoryPluginError,
    SessionInfo,
    TurnRecord,
    is_plugin_spec,
    make_memory,
    options_per_condition,
    plugin_identity,
)
from mempa_tui.runner import RunConfig
from mempa_tui.runner.config import config_diff
from mempa_tui.store import RunStore
from mempa_tui.taxonomy import Context

REPO = Path(__file__).resolve().parent.parent
KEYWORD = "examples.keyword_memory:KeywordMemory"
SAMPLES = "test_memory_plugins_samples"
WORK = SessionInfo(step_id="R-s2", context=Context.WORK, at=datetime(2026, 3, 2, 9))


def _turn(index: int, message: str, context: Context = Context.WORK) -> TurnRecord:
    return TurnRecord(step_id="R-s1", context=context, at=datetime(2026, 3, 1, 9, index), turn_index=index,
                      user_message=message, reply=f"reply {index}")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plugins and profiles are named relative to the repository root, as a user runs mempa."""
    monkeypatch.chdir(REPO)


# ---- the reference plugin -----------------------------------------------------------------------


async def test_reference_plugin_retrieves_by_shared_words_and_round_trips(tmp_path: Path) -> None:
    memory = make_memory(KEYWORD, client=None, folder=tmp_path, top_k=1)
    await memory.write(_turn(0, "Book the dentist appointment for Friday"))
    await memory.write(_turn(1, "Draft the quarterly budget email"))
    await memory.write(_turn(2, "dentist notes", Context.PERSONAL))  # other context: never handed back
    evidence = await memory.retrieve("When is my dentist visit?", WORK)
    assert [i.source for i in evidence.items] == ["turn-0"] and evidence.items[0].score == 1.0
    assert "Book the dentist appointment" in evidence.system_text
    saved = memory.snapshot()
    await memory.write(_turn(3, "dentist again"))
    memory.restore(saved)
    assert memory.snapshot() == saved
    shown = memory.inspect()
    assert shown.last_evidence == evidence
    assert shown.stats["turns"] == 3 and shown.stats["turns_written"] == 4 and shown.stats["retrievals"] == 1
    assert plugin_identity(KEYWORD) == f"{KEYWORD} 0.1.0"


def test_plugin_names_are_conditions_with_safe_run_ids() -> None:
    config = RunConfig(user="R", profile="scripted", memory=KEYWORD)
    assert config.run_id == "R-examples.keyword_memory_KeywordMemory-scripted-s0"
    assert RunConfig(user="R", profile="scripted", memory="mcp:keyword").run_id == "R-mcp_keyword-scripted-s0"
    # a built-in condition hashes as before the field existed; a plugin's version is hashed
    assert "memory_version" not in RunConfig(user="R", profile="p", memory="file").fingerprint()
    versioned = config.model_copy(update={"memory_version": f"{KEYWORD} 0.1.0"})
    assert versioned.config_hash() != versioned.model_copy(update={"memory_version": f"{KEYWORD} 0.2.0"}).config_hash()
    older = versioned.model_copy(update={"memory_version": f"{KEYWORD} 0.0.9"})
    assert config_diff(older.model_dump_json(), versioned) == [
        f"memory_version: '{KEYWORD} 0.0.9' -> '{KEYWORD} 0.1.0'"]
    file = RunConfig(user="R", profile="p", memory="file")
    assert config_diff(file.model_dump_json(), file) == []  # stored with the empty field: no difference
    with pytest.raises(ValueError, match="unknown memory condition 'bogus'"):
        RunConfig(user="R", profile="p", memory="bogus")


def test_memory_options_reach_plugins_by_dotted_name() -> None:
    shares = options_per_condition(["file", KEYWORD], {f"{KEYWORD}.top_k": 2, "consolidate_at_tokens": 9000})
    assert shares == {"file": {"consolidate_at_tokens": 9000}, KEYWORD: {"top_k": 2}}
    assert options_per_condition(["rag", KEYWORD], {"top_k": 4}) == {"rag": {"top_k": 4}, KEYWORD: {"top_k": 4}}
    with pytest.raises(MemoryConfigError, match=f"{KEYWORD!r} has no option 'depth'; valid: top_k, on_error"):
        options_per_condition(["file", KEYWORD], {f"{KEYWORD}.depth": 2})


# ---- broken plugins -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "method", "says"),
    [
        (f"{SAMPLES}:NoRetrieve", "retrieve", "NoRetrieve does not implement the memory adapter: no method retrieve"),
        (f"{SAMPLES}:SyncWrite", "write", "SyncWrite.write must be a coroutine function (async def)"),
        (f"{SAMPLES}:RaisesOnLoad", "__init__", "raised RuntimeError: cannot open the vector store"),
        (f"{SAMPLES}:Missing", "load", f"module {SAMPLES} has no attribute 'Missing'"),
        (f"{SAMPLES}:NOT_A_CLASS", "load", "NOT_A_CLASS is a int, not a class"),
        ("no_such_pkg.memory:Thing", "load", "no module named 'no_such_pkg'"),
        ("tests/nowhere.py:Thing", "load", "no file tests/nowhere.py"),
    ],
)
def test_a_class_that_is_not_a_memory_is_refused_naming_class_and_method(
    tmp_path: Path, name: str, method: str, says: str
) -> None:
    with pytest.raises(MemoryPluginError) as raised:
        make_memory(name, client=None, folder=tmp_path)
    assert raised.value.method == method and raised.value.plugin == name
    assert str(raised.value).startswith(f"memory plugin {name}: {method}: ") and says in str(raised.value)
    assert isinstance(raised.value, MemoryConfigError)  # the command line prints it as one line


@pytest.mark.parametrize(
    ("cls", "says"),
    [
        ("RaisingRetrieve", "retrieve: raised RuntimeError: index is corrupt"),
        ("StringEvidence", "retrieve: returned str, expected Evidence"),
        ("BadItems", "retrieve: returned malformed evidence: items.0.text: Field required"),
    ],
)
async def test_bad_evidence_raises_by_default_and_is_counted_under_on_error_count(
    tmp_path: Path, cls: str, says: str
) -> None:
    name = f"{SAMPLES}:{cls}"
    strict = make_memory(name, client=None, folder=tmp_path / "strict")
    with pytest.raises(MemoryPluginError, match=f"memory plugin {name}: {says}"):
        await strict.retrieve("hello", WORK)
    counter = "retrieve_failures" if cls == "RaisingRetrieve" else "malformed_evidence"
    assert strict.inspect().stats[counter] == 1

    lenient = make_memory(name, client=None, folder=tmp_path / "lenient", on_error="count")
    for _ in range(2):
        assert (await lenient.retrieve("hello", WORK)).system_text == ""  # the turn goes on without memory
    shown = lenient.inspect()
    assert shown.stats[counter] == 2 and shown.stats["retrievals"] == 0
    assert any(says in entry for entry in shown.stored)  # the failures are shown in the panel


def test_a_module_that_raises_on_import_is_named(tmp_path: Path) -> None:
    module = tmp_path / "exploding.py"
    module.write_text("raise ImportError('needs faiss')\n")
    with pytest.raises(MemoryPluginError, match=f"memory plugin {module}:Store: load: importing {module} raised "
                                                "ImportError: needs faiss"):
        make_memory(f"{module}:Store", client=None, folder=tmp_path / "m")


def test_snapshot_that_is_not_bytes_and_a_file_path_plugin(tmp_path: Path) -> None:
    memory = make_memory(f"tests/{SAMPLES}.py:TextSnapshot", client=None, folder=tmp_path)
    with pytest.raises(MemoryPluginError, match=r"TextSnapshot: snapshot: returned str, expected bytes"):
        memory.snapshot()
    with pytest.raises(MemoryPluginError, match="on_error must be raise or count, got 'ignore'"):
        make_memory(f"{SAMPLES}:Works", client=None, folder=tmp_path, on_error="ignore")


def test_a_run_with_a_raising_retrieve_stops_with_the_clear_error(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run_args(tmp_path, profile_file, f"{SAMPLES}:RaisingRetrieve")) == 2
    err = capsys.readouterr().err
    assert f"memory plugin {SAMPLES}:RaisingRetrieve: retrieve: raised RuntimeError: index is corrupt" in err
    assert main(_run_args(tmp_path, profile_file, f"{SAMPLES}:RaisesOnLoad")) == 2  # refused before it is stored
    assert "RaisesOnLoad: __init__: raised RuntimeError" in capsys.readouterr().err
    with sqlite3.connect(tmp_path / "saves" / "mempa.sqlite") as db:
        runs = list(db.execute("SELECT id, status FROM runs"))
    assert runs == [(f"R-{SAMPLES}_RaisingRetrieve-scripted-s0", "failed")]

    # on_error=count: the run plays on without memory and the failures are in its memory counters
    counted = [*_run_args(tmp_path, profile_file, f"{SAMPLES}:RaisingRetrieve"), "--memory-option", "on_error=count",
               "--seed", "1"]
    assert main(counted) == 0
    out = capsys.readouterr().out
    counters = out[out.index("memory counters after the last step:"):].splitlines()[0]
    failures = re.search(r"retrieve_failures (\d+)", counters)
    assert failures is not None and int(failures.group(1)) > 0, counters
    assert "retrievals 0" in counters and "turns_written" in counters


# ---- entry points ------------------------------------------------------------------------------


def test_entry_point_plugins_are_listed_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = tmp_path / "site" / "kwmem-2.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kwmem\nVersion: 2.1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[mempa.memory]\nkeywords = {KEYWORD}\nbroken = {SAMPLES}:NoRetrieve\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert is_plugin_spec("keywords") and not is_plugin_spec("bogus")
    assert plugin_identity("keywords") == f"{KEYWORD} 2.1.0"  # the declaring package's version
    assert RunConfig(user="R", profile="p", memory="keywords").run_id == "R-keywords-p-s0"
    assert type(make_memory("keywords", client=None, folder=tmp_path / "m").inner).__name__ == "KeywordMemory"
    assert main(["memory", "list"]) == 1  # one entry point is broken
    out = capsys.readouterr().out
    assert f"keywords   {KEYWORD} 2.1.0" in out
    assert "broken" in out and "BROKEN: memory plugin broken: retrieve: NoRetrieve does not implement" in out
    assert "mcp:keyword " in out and "file       File memory" in out


# ---- memory servers over MCP -------------------------------------------------------------------


def _store_turns(data_dir: Path) -> list[dict[str, str]]:
    return json.loads((data_dir / "store.json").read_text())["turns"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("profile", ["mcp:keyword", "mcp:keyword-tools"])
async def test_a_probe_branch_leaves_the_mcp_servers_store_unchanged(tmp_path: Path, profile: str) -> None:
    run = make_memory(profile, client=None, folder=tmp_path / "run")
    try:
        await run.write(_turn(0, "Book the dentist appointment for Friday"))
        await run.write(_turn(1, "Draft the quarterly budget email"))
        checkpoint = run.snapshot()
        before = (tmp_path / "run" / "data" / "store.json").read_bytes()
        found = await run.retrieve("dentist Friday", WORK)
        # a probe branch: a fresh instance (its own server) restored from the checkpoint, written to
        branch = make_memory(profile, client=None, folder=tmp_path / "run" / "probes" / "p-r1")
        try:
            branch.restore(checkpoint)
            assert await branch.retrieve("dentist Friday", WORK) == found
            await branch.write(_turn(2, "dentist Friday is cancelled, dentist moved"))
            assert len((await branch.retrieve("dentist Friday", WORK)).items) == 2
            assert len(_store_turns(tmp_path / "run" / "probes" / "p-r1" / "data")) == 3
        finally:
            branch.inner.close()  # type: ignore[attr-defined]
        assert (tmp_path / "run" / "data" / "store.json").read_bytes() == before
        assert await run.retrieve("dentist Friday", WORK) == found
        assert run.snapshot() == checkpoint
        assert run.inspect().system == f"{profile} (keyword-memory 0.1.0)"
    finally:
        run.inner.close()  # type: ignore[attr-defined]


@pytest.mark.timeout(120)
async def test_streamable_http_server_round_trip(tmp_path: Path) -> None:
    memory = make_memory("mcp:keyword-http", client=None, folder=tmp_path)
    try:
        await memory.write(_turn(0, "Book the dentist appointment"))
        saved = memory.snapshot()
        await memory.write(_turn(1, "dentist moved to Monday"))
        memory.restore(saved)  # a fresh server on the restored folder
        evidence = await memory.retrieve("dentist", WORK)
        assert [i.text.splitlines()[1] for i in evidence.items] == ["User: Book the dentist appointment"]
        assert memory.inspect().stats["server_starts"] == 2
    finally:
        memory.inner.close()  # type: ignore[attr-defined]


def _profile(tmp_path: Path, **changes: object) -> str:
    data = yaml.safe_load((REPO / "examples" / "mcp" / "keyword.yaml").read_text())
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = data
        for part in parents:
            node = node[part]
        node[leaf] = value
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data))
    return f"mcp:{path}"


@pytest.mark.timeout(120)
async def test_mcp_profile_errors_name_the_file_the_field_and_the_tool(tmp_path: Path) -> None:
    with pytest.raises(MemoryPluginError, match=r"write.arguments: unknown placeholder \{target\}"):
        make_memory(_profile(tmp_path, write__arguments={"text": "{target}"}), client=None, folder=tmp_path)
    with pytest.raises(MemoryPluginError, match="server.command is required"):
        make_memory(_profile(tmp_path, server={"url": "http://127.0.0.1:9/mcp"}), client=None, folder=tmp_path)
    with pytest.raises(MemoryPluginError, match="no MCP memory profile 'nope'"):
        make_memory("mcp:nope", client=None, folder=tmp_path)
    with pytest.raises(MemoryPluginError, match="takes no --memory-option"):
        make_memory("mcp:keyword", client=None, folder=tmp_path, top_k=3)
    name = _profile(tmp_path, write__tool="add_memory")
    memory = make_memory(name, client=None, folder=tmp_path / "m")
    with pytest.raises(MemoryPluginError, match=r"start: the server has no tool add_memory \(it lists: export_store"):
        await memory.write(_turn(0, "hello"))
    assert memory.inspect().stats["write_failures"] == 1


# ---- whole runs ----------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(consolidating(protocol_responder)) as srv:
        yield srv


@pytest.fixture
def profile_file(server: ScriptedModelServer, tmp_path: Path) -> Path:
    path = tmp_path / "scripted.yaml"
    path.write_text(yaml.safe_dump(server.profile(context_window=131072).model_dump(mode="json")))
    return path


def _run_args(tmp_path: Path, profile: Path, memory: str) -> list[str]:
    return ["run", "--user", "R", "--memory", memory, "--model", str(profile), "--repeats", "1",
            "--worlds", str(WORLDS), "--saves", str(tmp_path / "saves"),
            "--local-memory", str(tmp_path / "local_memory")]


@pytest.mark.timeout(400)
def test_plugin_and_mcp_server_play_a_timeline_and_show_beside_file_memory(
    tmp_path: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # File memory consolidates (the options reach it only), so every row is judged ok
    assert main([*_run_args(tmp_path, profile_file, f"file,{KEYWORD},mcp:keyword"), *CONSOLIDATING_OPTIONS]) == 0
    capsys.readouterr()
    assert main(["results", "--saves", str(tmp_path / "saves")]) == 0
    table = capsys.readouterr().out.splitlines()
    rows = {line.split("  ")[0].strip(): line for line in table[2:] if line.strip() and not line.startswith("(")}
    assert set(rows) >= {"File memory", f"{KEYWORD} 0.1.0"}
    mcp_row = next(k for k in rows if k.startswith("mcp:keyword profile-"))
    at = table[0].index("Probes")  # probes, floored, incomplete: read by the header's column
    assert all(rows[k][at:].split()[:3] == ["3", "0", "0"] for k in ("File memory", f"{KEYWORD} 0.1.0", mcp_row))
    health = table[0].index("Health")  # a plugin's row is judged like a built-in's, not n/a
    assert all(rows[k][health:].split()[0] == "ok" for k in ("File memory", f"{KEYWORD} 0.1.0", mcp_row)), rows

    # The MCP run's store holds the timeline's turns only: the probes wrote into their own branches.
    run_id = "R-mcp_keyword-scripted-s0"
    steps, checkpoint, probes = anyio.run(_stored, tmp_path / "saves" / "mempa.sqlite", run_id)
    timeline_turns = sum(len(json.loads(s.result_json).get("turn_records") or []) for s in steps)
    folder = tmp_path / "local_memory" / run_id
    on_disk = folder / "run" / "data" / "store.json"
    assert timeline_turns > 0 and len(probes) == 3
    assert len(_store_turns(on_disk.parent)) == timeline_turns
    with tarfile.open(fileobj=io.BytesIO(checkpoint), mode="r") as tar:  # the last checkpoint = the folder
        assert tar.extractfile("store.json").read() == on_disk.read_bytes()  # type: ignore[union-attr]
    assert not list((folder / "probes").rglob("store.json"))  # the branches' copies are gone


async def _stored(database: Path, run_id: str) -> tuple[list, bytes, list]:  # type: ignore[type-arg]
    async with RunStore(database) as store:
        steps = await store.steps(run_id, with_results=True)
        last = (await store.checkpoints(run_id))[-1]
        assert last.memory_blob is not None
        return steps, await store.load_blob(last.memory_blob), await store.probe_results(run_id)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_user_a_slice_with_both_references_beside_file_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mempa_tui.llm.scripted_roles import RolePlayer

    with ScriptedModelServer(RolePlayer()) as srv:
        profile = tmp_path / "scripted.yaml"
        profile.write_text(yaml.safe_dump(srv.profile(context_window=131072).model_dump(mode="json")))
        args = ["run", "--user", "A", "--slice", "--memory", f"file,{KEYWORD},mcp:keyword", "--model", str(profile),
                "--repeats", "1", "--worlds", str(REPO / "worlds"), "--saves", str(tmp_path / "saves"),
                "--local-memory", str(tmp_path / "local_memory")]
        assert main(args) == 0
    out = capsys.readouterr().out
    for run_id in ("A-file-scripted-s0-slice", "A-examples.keyword_memory_KeywordMemory-scripted-s0-slice",
                   "A-mcp_keyword-scripted-s0-slice"):
        assert f"run {run_id} completed" in out
    assert main(["results", "--saves", str(tmp_path / "saves")]) == 0
    table = capsys.readouterr().out
    assert "File memory" in table and f"{KEYWORD} 0.1.0" in table and "mcp:keyword profile-" in table


def test_launcher_offers_built_ins_entry_points_mcp_profiles_and_named_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    from mempa_tui.cli import _commands
    from mempa_tui.cli._parser import build_parser
    from mempa_tui.memory import memory_choices

    monkeypatch.setenv("MEMPA_MEMORY_PLUGINS", "")  # restored after the test, whatever cmd_tui sets
    assert memory_choices(REPO / "models") == ["none", "oracle", "file", "rag", "mem0", "memos", "prefstate", "ours-rag"]
    choices = memory_choices(REPO / "examples")  # <models>/mcp/*.yaml are offered as mcp:<name>
    assert choices[:3] == ["none", "oracle", "file"] and "mcp:keyword" in choices and KEYWORD not in choices

    args = build_parser().parse_args(["tui", "--memory", KEYWORD])
    offered: list[list[str]] = []
    fake = types.SimpleNamespace(run_app=lambda **_folders: offered.append(memory_choices()) or 0)
    monkeypatch.setattr(_commands.importlib, "import_module", lambda _name: fake)
    assert _commands.cmd_tui(args) == 0
    assert offered[0][-1] == KEYWORD  # `mempa tui --memory X` puts X in the launcher's list
