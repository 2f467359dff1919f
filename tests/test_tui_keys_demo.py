"""The demo server stops quietly (issue 16.7): a client that goes away before its reply is
written is counted, not dumped as a ``BrokenPipeError`` traceback; other errors still show."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

import anyio
import pytest

from mempa_tui.llm import ScriptedReply, ScriptedRequest
from mempa_tui.tui.demo import DemoModelServer, demo_responder


async def test_a_client_gone_before_its_reply_is_counted_not_a_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    closed = threading.Event()

    def responder(request: ScriptedRequest) -> ScriptedReply | str:
        closed.wait(timeout=600)  # answer only after the client has hung up
        time.sleep(0.2)
        return "x" * 200_000

    async with DemoModelServer(responder) as server:
        host, port = server.url.removeprefix("http://").split("/")[0].split(":")
        body = json.dumps({"model": "scripted-default", "messages": [{"role": "user", "content": "hi"}],
                           "stream": False}).encode()

        def hang_up() -> None:
            sock = socket.create_connection((host, int(port)))
            sock.sendall(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            time.sleep(0.2)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset at once
            sock.close()
            closed.set()

        await anyio.to_thread.run_sync(hang_up)
        with anyio.fail_after(600):
            while server.clients_gone == 0:
                await anyio.sleep(0.05)
    err = capfd.readouterr().err
    assert server.clients_gone == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err and "ConnectionResetError" not in err


def test_other_handler_errors_are_still_reported(capfd: pytest.CaptureFixture[str]) -> None:
    server = DemoModelServer(demo_responder).start()
    try:
        assert server._server is not None
        try:
            raise ValueError("a bug in a handler")
        except ValueError:
            server._server.handle_error(None, ("127.0.0.1", 1))
    finally:
        server.stop()
    err = capfd.readouterr().err
    assert "ValueError: a bug in a handler" in err and server.clients_gone == 0
