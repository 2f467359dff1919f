"""MemOS 2.0.15 as a local loopback server: run by MemOS's own Python, never imported by mempa.

mempa starts this file with the interpreter of MemOS's virtual environment (its pins conflict with
ours; see :mod:`mempa_tui.memory._memos`). It uses only the standard library and ``memos``.

One process serves every MemCube of a mempa process (the run's store and its probe branches), so
torch and the embedding model load once. Each cube is MemOS's ``GeneralMemCube`` with textual
memory only (``general_text``: MemOS's own extraction prompt through its ``openai`` LLM backend,
its ``sentence_transformer`` embedder, its Qdrant vector store embedded on disk under the cube's
folder). The paper's MemOS used ``tree_text``, whose graph store needs a Neo4j, PolarDB or
PostgreSQL server; ``general_text`` is the closest type that runs offline.

Protocol: JSON over HTTP on 127.0.0.1, the port printed as ``MEMOS_READY <port>`` on stdout.

- ``GET /health`` -> versions, memory type, embedder and its dimension.
- ``POST /cube`` ``{"cube", "folder"}``: open (or create) a cube whose files live in ``folder``.
- ``POST /add`` ``{"cube", "messages"}``: the cube's native add: ``text_mem.extract`` (one LLM
  call; MemOS itself retries it up to three times on unparseable JSON) then ``text_mem.add``.
  Returns ``{"added": [item...], "error": null | "..."}``; a failure is returned, never hidden.
- ``POST /search`` ``{"cube", "query", "top_k"}``: embed the query and search the cube's vector
  store, as ``text_mem.search`` does, keeping the similarity scores.
- ``POST /all`` ``{"cube"}``: every stored item. ``POST /dump``: every stored item with its vector
  (a snapshot). ``POST /load`` ``{"cube", "items"}``: replace the cube's items with a dump.
- ``POST /close`` ``{"cube"}``; ``POST /shutdown``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class _Cubes:
    def __init__(self, args: argparse.Namespace) -> None:
        from memos.embedders.factory import EmbedderFactory
        from memos.configs.embedder import EmbedderConfigFactory

        self.args = args
        self.lock = threading.Lock()
        self.cubes: dict[str, Any] = {}
        self.folders: dict[str, str] = {}
        self.embedder = EmbedderFactory.from_config(EmbedderConfigFactory.model_validate({
            "backend": "sentence_transformer",
            "config": {"model_name_or_path": args.embedder_path},
        }))
        self.dim = int(self.embedder.model.get_sentence_embedding_dimension())

    def open(self, cube: str, folder: str) -> Any:
        from memos.configs.mem_cube import GeneralMemCubeConfig
        from memos.mem_cube.general import GeneralMemCube

        # a new store on a folder reopens its cube: the runner drops a probe's folder between
        # attempts, so a cube kept open from an earlier attempt would write into a deleted folder
        self.close(cube)
        os.makedirs(folder, exist_ok=True)
        config = GeneralMemCubeConfig.model_validate({
            "user_id": self.args.user_id,
            "cube_id": cube,
            "text_mem": {
                "backend": "general_text",
                "config": {
                    "extractor_llm": {"backend": "openai", "config": {
                        "model_name_or_path": self.args.llm_model,
                        "api_key": self.args.llm_key,
                        "api_base": self.args.llm_base,
                        "temperature": self.args.llm_temperature,
                        "max_tokens": self.args.llm_max_tokens,
                    }},
                    "vector_db": {"backend": "qdrant", "config": {
                        "collection_name": "memos_text",
                        "vector_dimension": self.dim,
                        "distance_metric": "cosine",
                        "path": os.path.join(folder, "qdrant"),
                    }},
                    "embedder": {"backend": "sentence_transformer", "config": {
                        "model_name_or_path": self.args.embedder_path,
                    }},
                },
            },
            "act_mem": {"backend": "uninitialized"},
            "para_mem": {"backend": "uninitialized"},
            "pref_mem": {"backend": "uninitialized"},
        })
        # one embedding model for every cube: MemOS would load a copy per cube
        from memos.embedders import factory as embedder_factory

        original = embedder_factory.EmbedderFactory.from_config
        embedder_factory.EmbedderFactory.from_config = classmethod(lambda cls, _config: self.embedder)  # type: ignore[method-assign]
        try:
            cube_obj = GeneralMemCube(config)
        finally:
            embedder_factory.EmbedderFactory.from_config = original  # type: ignore[method-assign]
        self.cubes[cube] = cube_obj
        self.folders[cube] = folder
        return cube_obj

    def close(self, cube: str) -> None:
        obj = self.cubes.pop(cube, None)
        self.folders.pop(cube, None)
        client = getattr(getattr(getattr(obj, "text_mem", None), "vector_db", None), "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()

    def text_mem(self, cube: str) -> Any:
        if cube not in self.cubes:
            raise KeyError(f"no open cube {cube!r}")
        folder = self.folders[cube]
        if not os.path.isdir(os.path.join(folder, "qdrant")):  # its folder was deleted under it: start empty
            self.open(cube, folder)
        return self.cubes[cube].text_mem


def _item(item: Any, score: float | None = None) -> dict[str, Any]:
    data = item.model_dump(mode="json") if hasattr(item, "model_dump") else dict(item)
    if score is not None:
        data["score"] = score
    return data


def _handle(cubes: _Cubes, path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path == "/health":
        import memos

        return {"memos_version": getattr(memos, "__version__", "unknown"), "memory_type": "general_text",
                "embedder": cubes.args.embedder_name, "embedding_dim": cubes.dim}
    if path == "/cube":
        cubes.open(str(body["cube"]), str(body["folder"]))
        return {"ok": True}
    if path == "/close":
        cubes.close(str(body["cube"]))
        return {"ok": True}
    mem = cubes.text_mem(str(body["cube"]))
    if path == "/add":
        try:
            items = mem.extract(body["messages"])
        except Exception as exc:  # noqa: BLE001 - reported to the adapter, which counts it
            cause = exc
            last = getattr(exc, "last_attempt", None)  # tenacity's RetryError: the real failure
            if last is not None and last.exception() is not None:
                cause = last.exception()
            return {"added": [], "error": f"extract failed: {type(cause).__name__}: {cause}"[:600]}
        for item in items:
            item.metadata.user_id = cubes.args.user_id
        try:
            if items:
                mem.add(items)
        except Exception as exc:  # noqa: BLE001
            return {"added": [], "error": f"add failed: {type(exc).__name__}: {exc}"[:600]}
        return {"added": [_item(i) for i in items], "error": None}
    if path == "/search":
        vector = mem.embedder.embed([str(body["query"])])[0]
        found = mem.vector_db.search(vector, int(body["top_k"]))
        found = sorted(found, key=lambda x: x.score or 0.0, reverse=True)
        return {"results": [{**r.payload, "score": float(r.score or 0.0)} for r in found]}
    if path == "/all":
        return {"items": [r.payload for r in mem.vector_db.get_all()]}
    if path == "/dump":
        return {"items": [r.to_dict() for r in mem.vector_db.get_all()]}
    if path == "/load":
        from memos.vec_dbs.item import VecDBItem

        mem.delete_all()
        items = [VecDBItem.from_dict(d) for d in body["items"]]
        if items:
            mem.vector_db.add(items)
        return {"ok": True, "count": len(items)}
    raise KeyError(f"unknown path {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--embedder-path", required=True)
    parser.add_argument("--embedder-name", default="all-MiniLM-L6-v2")
    parser.add_argument("--llm-base", required=True)
    parser.add_argument("--llm-model", required=True)
    parser.add_argument("--llm-key", default="unused")
    parser.add_argument("--llm-temperature", type=float, default=0.2)
    parser.add_argument("--llm-max-tokens", type=int, default=1024)
    parser.add_argument("--user-id", default="user")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for the embedder")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(max(1, args.threads))  # one message at a time: more threads only wait on each other
    cubes = _Cubes(args)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *a: Any) -> None:  # noqa: A002 - the stdlib's name
            pass

        def _reply(self, status: int, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _serve(self, body: dict[str, Any]) -> None:
            if self.path == "/shutdown":
                self._reply(200, {"ok": True})
                threading.Thread(target=server.shutdown, daemon=True).start()
                return
            try:
                with cubes.lock:
                    self._reply(200, _handle(cubes, self.path, body))
            except KeyError as exc:
                self._reply(404, {"error": str(exc.args[0]) if exc.args else "not found"})
            except Exception as exc:  # noqa: BLE001 - the adapter names it
                self._reply(500, {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._serve({})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError as exc:
                self._reply(400, {"error": f"request body is not JSON: {exc}"})
                return
            self._serve(body)

    server = HTTPServer(("127.0.0.1", args.port), Handler)
    print(f"MEMOS_READY {server.server_address[1]}", flush=True)
    server.serve_forever()
    for cube in list(cubes.cubes):
        _handle(cubes, "/close", {"cube": cube})
    return 0


if __name__ == "__main__":
    sys.exit(main())
