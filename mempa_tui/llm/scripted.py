"""A scripted model served over real HTTP on loopback, for tests and demos (SPEC section 4.10).

Like pydantic-ai's ``TestModel`` it ships in the package, but it sits *behind* litellm: the client
talks to it exactly as to Ollama (``POST /api/chat`` plus ``/api/show``, ``/api/tags``,
``/api/version``, ``/api/pull``) or to an OpenAI-compatible server (``POST /v1/chat/completions``,
``GET /v1/models``), so the whole litellm path runs in tests without any network. Like the real
servers it rejects history tool-call arguments in the wrong form (Ollama: strings; OpenAI:
objects) with HTTP 400, and it can emulate llama.cpp's 422 on ``json_schema`` response formats.

Example::

    def responder(request: ScriptedRequest) -> ScriptedReply:
        if request.model == "scripted-pa":
            return ScriptedReply(tool_calls=[ScriptedToolCall(name="IX_verbosity", arguments={...})])
        return ScriptedReply(text="ok")

    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile())
        completion = await client.complete(Role.PA, messages, tools=tools)
        assert server.requests[-1].tool_names == [...]
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import anyio
from pydantic import ValidationError

from mempa_tui.llm._scripted_wire import (
    BadRequest,
    ScriptedReply,
    ScriptedRequest,
    ScriptedToolCall,
    ollama_reply,
    openai_reply,
    parse_chat_request,
)
from mempa_tui.llm.profile import ModelProfile, ModelSpec
from mempa_tui.llm.types import Role

__all__ = ["Responder", "ScriptedModelServer", "ScriptedReply", "ScriptedRequest", "ScriptedToolCall"]

Responder = Callable[[ScriptedRequest], "ScriptedReply | str"]
"""Maps a request to a reply; a plain string is a text reply."""


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, payload: object, *, ndjson: bool = False) -> None:
        data = (json.dumps(payload) + ("\n" if ndjson else "")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-ndjson" if ndjson else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, wire: str) -> None:
        if wire == "openai":
            self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})
        else:
            self._send(status, {"error": message})

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        value = json.loads(raw or b"{}")
        return value if isinstance(value, dict) else {}

    def do_GET(self) -> None:
        """Serve listings and health checks."""
        owner = self.server.owner
        owner._note(self.path)
        if self.path.rstrip("/") in ("", "/"):
            self.send_response(200)
            self.send_header("Content-Length", "17")
            self.end_headers()
            self.wfile.write(b"Ollama is running")
        elif self.path == "/api/version":
            self._send(200, {"version": "0.9.0-scripted"})
        elif self.path == "/api/tags":
            self._send(200, {"models": [_tag(name) for name in owner._listed()]})
        elif self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "scripted"} for n in owner._listed()]})
        else:
            self._error(404, f"no route GET {self.path}", "ollama")

    def do_POST(self) -> None:
        """Serve chat, show and pull."""
        owner = self.server.owner
        owner._note(self.path)
        wire = "openai" if self.path.startswith("/v1/") else "ollama"
        try:
            body = self._body()
        except json.JSONDecodeError as exc:
            self._error(400, f"body is not JSON: {exc}", wire)
            return
        if self.path == "/api/show":
            name = str(body.get("model") or body.get("name") or "")
            if not owner._known(name):
                self._error(404, f"model '{name}' not found", "ollama")
                return
            self._send(200, _show(name))
        elif self.path == "/api/pull":
            name = str(body.get("model") or body.get("name") or "")
            owner._pull(name)
            self._send(200, {"status": "success"}, ndjson=bool(body.get("stream", True)))
        elif self.path in ("/api/chat", "/v1/chat/completions"):
            self._chat(body, wire)
        elif self.path in ("/api/embed", "/v1/embeddings"):
            self._embed(body, wire)
        else:
            self._error(404, f"no route POST {self.path}", wire)

    def _chat(self, body: dict[str, Any], wire: str) -> None:
        owner = self.server.owner
        try:
            request = parse_chat_request(body, "openai" if wire == "openai" else "ollama", llama_cpp=owner.emulate_llama_cpp)
        except BadRequest as exc:
            owner._reject(body, str(exc))
            self._error(exc.status, str(exc), wire)
            return
        except (ValidationError, KeyError, TypeError) as exc:
            owner._reject(body, str(exc))
            self._error(400, f"malformed request: {exc}", wire)
            return
        if wire == "ollama" and not owner._known(request.model):
            self._error(404, f"model '{request.model}' not found, try pulling it first", wire)
            return
        try:
            reply = owner._answer(request)
        except Exception as exc:  # noqa: BLE001 - a broken responder is recorded and answered as a 500
            owner._fail(f"responder raised {type(exc).__name__}: {exc}")
            self._error(500, f"responder raised {type(exc).__name__}: {exc}", wire)
            return
        if reply.status != 200:
            self._error(reply.status, reply.error, wire)
            return
        if wire == "openai":
            self._send(200, openai_reply(request, reply))
        else:
            self._send(200, ollama_reply(request, reply), ndjson=bool(body.get("stream")))


    def _embed(self, body: dict[str, Any], wire: str) -> None:
        """Deterministic embeddings: each text hashed into ``owner.embedding_dim`` numbers."""
        owner = self.server.owner
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._error(400, "embedding input must be a string or a list of strings", wire)
            return
        model = str(body.get("model") or "")
        with owner._lock:
            owner.embed_requests.append((model, list(texts)))
        vectors = [scripted_embedding(t, owner.embedding_dim) for t in texts]
        if wire == "openai":
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            self._send(200, {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        else:
            self._send(200, {"model": model, "embeddings": vectors, "prompt_eval_count": 1})


def scripted_embedding(text: str, dim: int) -> list[float]:
    """A deterministic pseudo-embedding of ``text`` (word hashes folded into ``dim`` numbers), so
    texts sharing words score closer than texts that share none."""
    vector = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[digest[0] % dim] += 1.0 + digest[1] / 255.0
    return vector if any(vector) else [1.0] + [0.0] * (dim - 1)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer


def _tag(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 1,
        "digest": "0" * 64,
        "details": {"format": "gguf", "family": "scripted", "parameter_size": "0B", "quantization_level": "none"},
    }


def _show(name: str) -> dict[str, Any]:
    return {
        "template": "{{ if .Tools }}tools{{ end }}{{ .Prompt }}",
        "details": {"format": "gguf", "family": "scripted"},
        "model_info": {"general.architecture": "scripted", "scripted.context_length": 32768},
        "capabilities": ["completion", "tools"],
        "modified_at": "2025-01-01T00:00:00Z",
    }


class ScriptedModelServer:
    """An HTTP server on ``127.0.0.1`` (free port) answering chat requests with a responder.

    Use it as a context manager (``with`` or ``async with``); it serves from a daemon thread.

    Attributes:
        requests: every chat request that passed validation, in arrival order.
        rejected: ``(body, message)`` for every chat request answered 400/422 by validation.
        errors: messages of exceptions the responder raised (each answered with HTTP 500).
        paths: every path requested (including ``/api/show``, ``/v1/models``), in order.
        emulate_llama_cpp: answer 422 to ``response_format`` type ``json_schema``.
        embed_requests: ``(model, texts)`` of every embedding request (``/api/embed``,
            ``/v1/embeddings``), answered with :func:`scripted_embedding` vectors.
        embedding_dim: dimension of those vectors (default 16).
    """

    def __init__(
        self,
        responder: Responder,
        *,
        models: list[str] | None = None,
        emulate_llama_cpp: bool = False,
    ) -> None:
        """Create the server (not yet listening).

        Args:
            responder: turns each chat request into a reply.
            models: names Ollama endpoints report as pulled (``/api/tags``, ``/api/show``); None
                accepts any model name.
            emulate_llama_cpp: reject ``json_schema`` response formats with 422 like llama.cpp.
        """
        self.responder = responder
        self.emulate_llama_cpp = emulate_llama_cpp
        self.requests: list[ScriptedRequest] = []
        self.rejected: list[tuple[dict[str, Any], str]] = []
        self.paths: list[str] = []
        self.errors: list[str] = []
        self.embed_requests: list[tuple[str, list[str]]] = []
        self.embedding_dim = 16
        self._models = list(models) if models is not None else None
        self._lock = threading.Lock()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Self:
        """Bind a free loopback port and serve in a background thread."""
        server = _HTTPServer(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)

    # -- addresses -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (Ollama's base URL)."""
        if self._server is None:
            raise RuntimeError("the scripted model server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base(self) -> str:
        """``<url>/v1`` (the OpenAI-compatible base URL)."""
        return self.url + "/v1"

    def profile(
        self,
        roles: Mapping[Role, str] | None = None,
        *,
        default_model: str = "ollama_chat/scripted-default",
        **spec_fields: Any,
    ) -> ModelProfile:
        """A profile pointing every role at this server.

        Args:
            roles: role -> litellm model string (``ollama_chat/scripted-pa``,
                ``openai/scripted-judge``); None gives every role ``ollama_chat/scripted-<role>``.
            default_model: model for roles not in ``roles``.
            **spec_fields: further :class:`ModelSpec` fields for every spec (``context_window``,
                ``max_tokens``, ``num_retries``, ``retry_backoff_s``, ``timeout_s``...).

        Returns:
            A ``scripted`` runtime profile; ``api_base`` is this server (``/v1`` for OpenAI models).
        """
        if roles is None:
            roles = {role: f"ollama_chat/scripted-{role.value}" for role in Role}
        fields = {"retry_backoff_s": 0.0, "timeout_s": 30.0, **spec_fields}

        def spec(model: str) -> ModelSpec:
            base = self.url if model.startswith(("ollama_chat/", "ollama/")) else self.openai_base
            return ModelSpec(model=model, api_base=base, **fields)

        return ModelProfile(
            name="scripted",
            description="Scripted responder on loopback (tests)",
            runtime="scripted",
            default=spec(default_model),
            roles={role: spec(model) for role, model in roles.items()},
        )

    # -- called from handler threads -------------------------------------------------------
    def _note(self, path: str) -> None:
        with self._lock:
            self.paths.append(path)

    def _fail(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def _reject(self, body: dict[str, Any], message: str) -> None:
        with self._lock:
            self.rejected.append((body, message))

    def _known(self, name: str) -> bool:
        with self._lock:
            return self._models is None or name in self._models or f"{name}:latest" in self._models

    def _listed(self) -> list[str]:
        with self._lock:
            return list(self._models) if self._models is not None else ["scripted"]

    def _pull(self, name: str) -> None:
        with self._lock:
            if self._models is not None and name not in self._models:
                self._models.append(name)

    def _answer(self, request: ScriptedRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
        reply = self.responder(request)
        return ScriptedReply(text=reply) if isinstance(reply, str) else reply
