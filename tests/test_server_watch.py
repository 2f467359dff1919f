"""A dead or hung model server is seen at once, not after ``timeout_s`` (fresh-user finding).

* the embedded server's process exiting mid-call fails the call with
  :class:`ModelServerExitedError` naming the server, its exit code and its kept log file (a fake
  child process stands in for llama.cpp: nothing is downloaded or started);
* every call waiting for its reply is reported (``waiting for the model: ...``) to the client's
  wait listeners, and the runner turns that into a ``model_waiting`` progress line;
* an external server that goes away mid-run stops the run with an error naming its URL, and the
  same run resumes once a server answers again.
"""

from __future__ import annotations

import io
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest
from test_runner_support import protocol_responder, runner_config

from mempa_tui.cli._run import ProgressPrinter
from mempa_tui.llm import ChatMessage, LLMClient, LLMError, ModelServerExitedError, ScriptedModelServer, load_profile
from mempa_tui.llm import embedded as embedded_module
from mempa_tui.llm._watch import CallWait, register_server, unregister_server
from mempa_tui.llm.scripted import ScriptedReply, ScriptedRequest
from mempa_tui.runner import RunEvent, Runner, StepEvent
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tools import default_registry

_FAKE_SERVER = textwrap.dedent("""
    import os, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port = int(sys.argv[sys.argv.index("--port") + 1])
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def do_GET(self):
            body = b'{"object": "list", "data": [{"id": "qwen2.5-coder-0.5b-instruct"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_POST(self):
            print("fake llama.cpp: giving up mid-call", flush=True)
            time.sleep(0.3)
            os._exit(3)
    HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


async def test_embedded_server_exit_mid_call_fails_the_call_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake_llama.py"
    script.write_text(_FAKE_SERVER, encoding="utf-8")

    def command(profile: object, weights: Path, port: int, **_: object) -> list[str]:
        return [sys.executable, str(script), "--port", str(port), "--n-ctx", "4096"]

    monkeypatch.setattr(embedded_module, "server_command", command)
    monkeypatch.setattr(embedded_module.EmbeddedServer, "_check_installed", lambda self: None)
    profile = load_profile("embedded")
    profile = profile.model_copy(update={"options": profile.options.model_copy(update={
        "embedded": profile.options.embedded.model_copy(update={"prefix_cache_dir": None})})})
    others = {alias: tmp_path / f"{alias}.gguf" for alias in embedded_module.MODELS}
    server = embedded_module.EmbeddedServer(profile, weights=tmp_path / "fake.gguf", model_weights=others)
    with anyio.fail_after(60):  # the embedded spec's timeout_s is 3600: this must not wait for it
        async with server as ready:
            client = LLMClient(ready)
            client.watch_interval_s = 0.05
            with pytest.raises(ModelServerExitedError) as caught:
                await client.complete("pa", [ChatMessage(role="system", content="hi"),
                                             ChatMessage(role="user", content="hello")])
            # the next call fails before it is sent
            with pytest.raises(ModelServerExitedError):
                await client.complete("pa", [ChatMessage(role="user", content="again")])
    error = caught.value
    assert error.exit_code == 3 and error.server == "shared"
    assert "exited with code 3" in str(error) and error.log_path in str(error)
    # the log outlives the block and holds what the server wrote
    assert "giving up mid-call" in Path(error.log_path).read_text(encoding="utf-8")
    assert client.calls[-1].error_kind == "ModelServerExitedError"
    Path(error.log_path).unlink()


async def test_a_waiting_call_is_reported_to_the_wait_listeners() -> None:
    reported = threading.Event()

    def slow(request: ScriptedRequest) -> ScriptedReply | str:
        reported.wait(10)  # answers only once a wait report has gone out (no timing assert)
        return "hello"

    async with ScriptedModelServer(slow) as server:
        client = LLMClient(server.profile())
        client.watch_interval_s = 0.05
        waits: list[CallWait] = []

        def listener(wait: CallWait) -> None:
            waits.append(wait)
            reported.set()

        client.wait_listeners.append(listener)
        completion = await client.complete("pa", [ChatMessage(role="user", content="hi")])
    assert completion.text == "hello"
    assert waits and waits[0].role == "pa" and waits[0].call == 1
    assert waits[0].line.startswith("waiting for the model: ") and waits[0].line.endswith("(pa, call 1)")


async def test_a_watched_server_that_exits_fails_the_call_in_flight() -> None:
    release = threading.Event()

    def hung(request: ScriptedRequest) -> ScriptedReply | str:
        release.wait(10)
        return "too late"

    state: dict[str, object] = {"gone": None}
    async with ScriptedModelServer(hung) as server:
        profile = server.profile(roles={}, default_model="openai/scripted-pa")
        register_server(server.openai_base, lambda: state["gone"])  # type: ignore[arg-type, return-value]
        try:
            client = LLMClient(profile)
            client.watch_interval_s = 0.05
            client.wait_listeners.append(lambda wait: state.update(gone=("shared", -9, "/tmp/x.log")))
            with anyio.fail_after(20), pytest.raises(ModelServerExitedError, match=r"exited with code -9.*/tmp/x\.log"):
                await client.complete("pa", [ChatMessage(role="user", content="hi")])
        finally:
            unregister_server(server.openai_base)
            release.set()


def _event(kind: str, message: str) -> RunEvent:
    from mempa_tui.runner.progress import RunProgress

    return RunEvent(run_id="r1", kind=kind, message=message, progress=RunProgress(run_id="r1"))  # type: ignore[arg-type]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_printer_shows_the_waiting_line() -> None:
    log = io.StringIO()
    printer = ProgressPrinter(log)
    printer(_event("model_waiting", "waiting for the model: 95 s (pa, call 3)"))
    assert log.getvalue() == "waiting for the model: 95 s (pa, call 3)\n"
    # in a log, a short wait shows nothing and a long one at most a line per 30 s
    log = io.StringIO()
    printer = ProgressPrinter(log)
    for waited in (5, 10, 35, 40):
        printer(_event("model_waiting", f"waiting for the model: {waited} s (pa, call 3)"))
    assert log.getvalue() == "waiting for the model: 35 s (pa, call 3)\n"
    term = _Terminal()
    printer = ProgressPrinter(term)
    printer(_event("model_waiting", "waiting for the model: 5 s (pa, call 3)"))
    printer(_event("model_waiting", "waiting for the model: 10 s (pa, call 3)"))
    printer(_event("warning", "something"))
    text = term.getvalue()
    assert "\n" not in text.split("note: something")[0]  # rewritten in place, then cleared
    assert text.endswith("\r\x1b[Knote: something\n")


def _runner(store: RunStore, client: LLMClient, root: Path, observer: object = None) -> Runner:
    return Runner(runner_config(), store, client, default_registry(), observer,  # type: ignore[arg-type]
                  memory_root=root / "local_memory", resamples=200)


async def test_the_run_reports_a_waiting_call(tmp_path: Path) -> None:
    seen = threading.Event()

    def responder(request: ScriptedRequest) -> ScriptedReply | str:
        seen.wait(10)  # the first call is held until the run has shown it waiting
        return protocol_responder(request)

    lines: list[str] = []

    def observer(item: RunEvent | StepEvent) -> None:
        if isinstance(item, RunEvent) and item.kind == "model_waiting":
            lines.append(item.message)
            seen.set()

    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile(context_window=131072))
        client.watch_interval_s = 0.05
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await _runner(store, client, tmp_path, observer).run()
    assert outcome.status is RunStatus.COMPLETED
    assert lines and lines[0].startswith("waiting for the model: ")
    assert not client.wait_listeners  # the runner's listener is gone after the run


async def test_external_server_gone_mid_run_names_its_url_and_a_rerun_resumes(tmp_path: Path) -> None:
    database = tmp_path / "saves" / "mempa.sqlite"
    async with ScriptedModelServer(protocol_responder) as server:
        url = server.url
        client = LLMClient(server.profile(context_window=131072, num_retries=1))

        def observer(item: RunEvent | StepEvent) -> None:
            if isinstance(item, RunEvent) and item.kind == "step_started" and item.step_id == "R-s2":
                server.stop()  # the server goes away between R-s1 and R-s2

        async with RunStore(database) as store:
            runner = _runner(store, client, tmp_path, observer)
            with anyio.fail_after(60), pytest.raises(LLMError) as caught:
                await runner.run()
            run_id = runner.run_id
            assert [s.step_id for s in await store.steps(run_id)] == ["R-s1"]
            record = await store.get_run(run_id)
            assert record is not None and record.status is RunStatus.FAILED
    assert f"cannot reach {url}" in str(caught.value)
    async with ScriptedModelServer(protocol_responder) as again:
        async with RunStore(database) as store:
            outcome = await _runner(store, LLMClient(again.profile(context_window=131072)), tmp_path).run()
            assert outcome.status is RunStatus.COMPLETED
            assert [s.step_id for s in await store.steps(run_id)] == ["R-s1", "R-s2", "R-ev1"]


async def test_run_stops_at_once_when_its_server_process_exits_and_a_rerun_resumes(tmp_path: Path) -> None:
    """The runner's side of a dead embedded server: the step is not played again (its other
    attempts could only fail the same way), nothing of it is kept, the run is stored as failed
    with the server's error, and the same command resumes from R-s1's checkpoint."""
    database = tmp_path / "saves" / "mempa.sqlite"
    state: dict[str, object] = {"gone": None}
    async with ScriptedModelServer(protocol_responder) as server:
        profile = server.profile(context_window=131072)
        bases = {spec.api_base for spec in profile.all_specs() if spec.api_base}
        for base in bases:
            register_server(base, lambda: state["gone"])  # type: ignore[arg-type, return-value]
        try:
            def observer(item: RunEvent | StepEvent) -> None:
                if isinstance(item, StepEvent) and item.step_id == "R-s2":
                    state["gone"] = ("shared", 1, str(tmp_path / "server.log"))

            async with RunStore(database) as store:
                runner = Runner(runner_config(step_attempts=3), store, LLMClient(profile), default_registry(),
                                observer, memory_root=tmp_path / "local_memory", resamples=200)
                with anyio.fail_after(60), pytest.raises(LLMError, match=r"exited with code 1.*server\.log"):
                    await runner.run()
                run_id = runner.run_id
                assert [s.step_id for s in await store.steps(run_id)] == ["R-s1"]
                assert await store.attempts(run_id, "R-s2") == []  # not played again
                record = await store.get_run(run_id)
                assert record is not None and record.status is RunStatus.FAILED
                assert "exited with code 1" in (record.error or "")
        finally:
            for base in bases:
                unregister_server(base)
        async with RunStore(database) as store:
            again = Runner(runner_config(step_attempts=3), store, LLMClient(profile), default_registry(),
                           None, memory_root=tmp_path / "local_memory", resamples=200)
            outcome = await again.run()
            assert outcome.status is RunStatus.COMPLETED
            assert [s.step_id for s in await store.steps(run_id)] == ["R-s1", "R-s2", "R-ev1"]


def test_the_app_shows_a_waiting_call_on_the_run_until_the_next_event() -> None:
    from mempa_tui.tui.book import RunEntry, RunRequest, state_label

    entry = RunEntry(key="k", request=RunRequest(user="R", memory="file", profile="scripted", repeats=1))
    entry.apply(_event("run_started", "run r1: 3 steps"))
    entry.apply(_event("model_waiting", "waiting for the model: 95 s (pa, call 3)"))
    assert state_label(entry) == "running · waiting for the model: 95 s (pa, call 3)"
    assert entry.notes == []  # not a note: it is replaced, not kept
    entry.apply(_event("step_finished", "step 1/3 R-s1 completed"))
    assert state_label(entry) == "running"
