"""A memory server over MCP as a memory condition: ``--memory mcp:<profile>`` (issue 17).

Many memory systems ship as MCP servers with an "add" and a "search" tool. A small YAML profile
(:class:`McpMemoryProfile`) says how to start the server (a stdio command, or a streamable-HTTP URL
with the command that serves it), which tool writes a turn and which searches, and how the turn
record and the user's message fill their arguments. The official ``mcp`` client talks to it.

Probe isolation (paper Section 3.5: a probe starts from a checkpoint and changes nothing): every
adapter instance starts its OWN server process, and a probe branch is a fresh instance restored
from the checkpoint's snapshot. Snapshots are taken one of two ways (``snapshot.mode``):

* ``data_dir``: the server keeps its store under ``{data_dir}`` (a folder of this adapter). A
  snapshot is a tar of that folder; ``restore`` stops the server, replaces the folder and starts a
  fresh server on the copy at the next call. The server must have saved a write before its tool
  returns.
* ``tools``: the server's own export and import tools (``export_tool`` returns the whole store as
  text, ``import_tool`` replaces it).

A server the adapter does not start (a bare URL) is refused: a probe could then change the store
that the run goes on accumulating into.

The client runs on a private event loop in a background thread, so the adapter's synchronous
``snapshot`` / ``restore`` can call tools too; ``write`` / ``retrieve`` await it from the run's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import string
import subprocess
import sys
import tarfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mempa_tui.memory._plugin import MemoryPluginError, PluginMemory
from mempa_tui.memory.base import Evidence, EvidenceItem, MemoryInspection, SessionInfo, TurnRecord

__all__ = [
    "McpMemory",
    "McpMemoryProfile",
    "build_mcp_memory",
    "load_mcp_profile",
    "mcp_identity",
    "mcp_profile_dirs",
]

WRITE_FIELDS = ("turn_text", "user_message", "reply", "context", "step_id", "at", "turn_index")
"""Placeholders a write tool's arguments may use (from the :class:`TurnRecord`)."""
SEARCH_FIELDS = ("user_message", "context", "step_id", "at")
"""Placeholders a search tool's arguments may use (the user's message and the public session)."""
SERVER_FIELDS = ("python", "data_dir", "port")
"""Placeholders of the server command, URL and environment."""


def mcp_profile_dirs() -> list[Path]:
    """Where ``mcp:<name>`` looks for ``<name>.yaml``, in order: ``models/mcp``, ``examples/mcp``."""
    return [Path("models") / "mcp", Path("examples") / "mcp"]


class ServerSpec(BaseModel):
    """How to reach the server.

    ``command`` alone: stdio. ``url`` with ``command``: the command serves streamable HTTP at the
    URL (``{port}`` is a free local port picked per server). Placeholders: ``{python}`` (this
    interpreter), ``{data_dir}`` (the adapter's data folder), ``{port}``.
    """

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(default_factory=list)
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    startup_timeout_s: float = Field(default=60.0, gt=0)
    call_timeout_s: float = Field(default=120.0, gt=0)


class ToolMapping(BaseModel):
    """One tool and how its arguments are filled: a string value may hold ``{placeholders}``; a
    value that is exactly one placeholder keeps its type (``turn_index`` stays a number)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ResultsMapping(BaseModel):
    """Where the search result's items are: the JSON (structured content, else the first text
    block parsed as JSON) holds a list at ``list`` (dotted path; empty: the JSON is the list);
    each item is a string or an object with ``text`` / ``score`` / ``id`` fields. ``list: null``
    takes every text block as one item."""

    model_config = ConfigDict(extra="forbid")

    list: str | None = ""
    text: str = "text"
    score: str | None = "score"
    id: str | None = "id"


class SearchMapping(ToolMapping):
    """The search tool, how to read its result, and how the PA's memory section is headed."""

    results: ResultsMapping = Field(default_factory=ResultsMapping)
    heading: str = "Memories the memory server returned for this message"
    max_items: int = Field(default=10, ge=1)


class SnapshotSpec(BaseModel):
    """``data_dir`` (a copy of the data folder per branch) or ``tools`` (export/import tools)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["data_dir", "tools"] = "data_dir"
    export_tool: str | None = None
    import_tool: str | None = None
    import_argument: str = "data"

    @model_validator(mode="after")
    def _tools_named(self) -> SnapshotSpec:
        if self.mode == "tools" and not (self.export_tool and self.import_tool):
            raise ValueError("snapshot mode 'tools' needs export_tool and import_tool")
        return self


class McpMemoryProfile(BaseModel):
    """A memory server profile (YAML; see ``examples/mcp/keyword.yaml`` and docs/memory-plugins.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    version: str = ""
    server: ServerSpec
    write: ToolMapping
    search: SearchMapping
    snapshot: SnapshotSpec = Field(default_factory=SnapshotSpec)

    @model_validator(mode="after")
    def _consistent(self) -> McpMemoryProfile:
        if not self.server.command:
            raise ValueError("server.command is required: the adapter starts its own server per branch "
                             "(a bare url could let a probe change the accumulated store)")
        if self.server.url is not None and "{port}" not in self.server.url and "{port}" not in " ".join(
                self.server.command):
            raise ValueError("server.url with a command needs {port} in both (a free port per server)")
        if self.snapshot.mode == "data_dir" and not any("{data_dir}" in p for p in
                                                          [*self.server.command, *self.server.env.values()]):
            raise ValueError("snapshot mode data_dir: the server command (or env) must use {data_dir}")
        _check_placeholders("server.command", self.server.command, SERVER_FIELDS)
        _check_placeholders("server.url", [self.server.url or ""], SERVER_FIELDS)
        _check_placeholders("server.env", list(self.server.env.values()), SERVER_FIELDS)
        _check_placeholders("write.arguments", list(self.write.arguments.values()), WRITE_FIELDS)
        _check_placeholders("search.arguments", list(self.search.arguments.values()), SEARCH_FIELDS)
        return self


def _check_placeholders(where: str, values: list[Any], allowed: tuple[str, ...]) -> None:
    for value in values:
        if not isinstance(value, str):
            continue
        for _, field, _, _ in string.Formatter().parse(value):
            if field is not None and field not in allowed:
                raise ValueError(f"{where}: unknown placeholder {{{field}}} in {value!r}; "
                                 f"allowed: {', '.join('{' + a + '}' for a in allowed)}")


def _profile_path(name: str) -> Path:
    ref = name.removeprefix("mcp:")
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or "/" in ref:
        if not path.is_file():
            raise MemoryPluginError(name, "load", f"no MCP memory profile at {path}")
        return path
    for folder in mcp_profile_dirs():
        candidate = folder / f"{ref}.yaml"
        if candidate.is_file():
            return candidate
    where = " or ".join(str(d / f"{ref}.yaml") for d in mcp_profile_dirs())
    raise MemoryPluginError(name, "load", f"no MCP memory profile {ref!r} (looked for {where})")


def load_mcp_profile(name: str) -> tuple[McpMemoryProfile, Path]:
    """Read and check ``mcp:<profile>``'s YAML (a path, or a name in :func:`mcp_profile_dirs`).

    Raises:
        MemoryPluginError: no such file, bad YAML, or a field that is wrong (file and field named).
    """
    path = _profile_path(name)
    try:
        raw = yaml.safe_load(path.read_text("utf-8"))
    except yaml.YAMLError as exc:
        raise MemoryPluginError(name, "load", f"{path}: not valid YAML: {exc}") from None
    try:
        return McpMemoryProfile.model_validate(raw), path
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "profile"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise MemoryPluginError(name, "load", f"{path}: {where}: {message}") from None


def mcp_identity(name: str) -> str:
    """``mcp:<profile> <version>``: the profile's ``version`` or the first 12 hex of its sha256."""
    profile, path = load_mcp_profile(name)
    return f"{name} {profile.version or 'profile-' + hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"


def _fill(value: Any, fields: dict[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    parsed = list(string.Formatter().parse(value))
    if len(parsed) == 1 and parsed[0][0] == "" and parsed[0][1] is not None and not parsed[0][2]:
        return fields[parsed[0][1]]  # exactly one placeholder: keep its type
    return value.format(**fields)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _dig(data: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if not isinstance(data, dict) or part not in data:
            raise KeyError(part)
        data = data[part]
    return data


class _ServerLink:
    """One server process and its MCP client session, on a private loop in a daemon thread."""

    def __init__(self, label: str, profile: McpMemoryProfile, data_dir: Path, log_path: Path) -> None:
        self.label, self.profile, self.data_dir, self.log_path = label, profile, data_dir, log_path
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.client: Any = None
        self.stop: asyncio.Event | None = None
        self.server_info = ""
        self.starts = 0

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive() and self.client is not None

    def _fields(self, port: int) -> dict[str, Any]:
        return {"python": sys.executable, "data_dir": str(self.data_dir), "port": port}

    def ensure(self) -> None:
        """Start the server (and the loop) when it is not running; waits until its tools are listed.

        Raises:
            MemoryPluginError: it did not start in ``startup_timeout_s`` or lacks a mapped tool.
        """
        if self.running:
            return
        self.close()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._thread_main, args=(ready,), daemon=True,
                                       name=f"mcp-memory-{self.label}")
        self.thread.start()
        try:
            ready.result(timeout=self.profile.server.startup_timeout_s + 5)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MemoryPluginError(self.label, "start", f"the server did not answer within "
                                    f"{self.profile.server.startup_timeout_s:g} s (its log: {self.log_path})") from None
        except MemoryPluginError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            problem = f"{type(exc).__name__}: {exc} (its log: {self.log_path})"
            raise MemoryPluginError(self.label, "start", problem) from exc
        self.starts += 1

    def _thread_main(self, ready: concurrent.futures.Future[None]) -> None:
        assert self.loop is not None
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve(ready))
        finally:
            self.loop.close()

    async def _serve(self, ready: concurrent.futures.Future[None]) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        spec = self.profile.server
        port = _free_port() if spec.url else 0
        fields = self._fields(port)
        command = [part.format(**fields) for part in spec.command]
        env = {**os.environ, **{k: v.format(**fields) for k, v in spec.env.items()}}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        process: subprocess.Popen[bytes] | None = None
        try:
            with self.log_path.open("ab") as log:
                if spec.url is None:
                    target: Any = stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=env,
                                                                     cwd=spec.cwd), errlog=log)
                else:
                    process = subprocess.Popen(command, stdout=log, stderr=log, env=env, cwd=spec.cwd)
                    target = await self._wait_for_http(spec.url.format(**fields), process)
                async with Client(target, read_timeout_seconds=spec.call_timeout_s) as client:
                    listed = {t.name for t in (await client.list_tools()).tools}
                    wanted = [self.profile.write.tool, self.profile.search.tool]
                    if self.profile.snapshot.mode == "tools":
                        wanted += [self.profile.snapshot.export_tool or "", self.profile.snapshot.import_tool or ""]
                    missing = [t for t in wanted if t not in listed]
                    if missing:
                        raise MemoryPluginError(self.label, "start", f"the server has no tool {', '.join(missing)} "
                                                f"(it lists: {', '.join(sorted(listed)) or 'none'})")
                    info = client.server_info
                    self.server_info = f"{info.name} {info.version}".strip() if info is not None else ""
                    self.client, self.stop = client, asyncio.Event()
                    ready.set_result(None)
                    await self.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            if not ready.done():
                leaf = _leaf(exc)
                ready.set_exception(leaf if isinstance(leaf, Exception) else RuntimeError(repr(leaf)))
        finally:
            self.client = None
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()

    async def _wait_for_http(self, url: str, process: subprocess.Popen[bytes]) -> str:
        from mcp import Client

        deadline = time.monotonic() + self.profile.server.startup_timeout_s
        while True:
            if process.poll() is not None:
                raise MemoryPluginError(self.label, "start", f"the server exited with code {process.returncode}")
            try:
                async with Client(url) as probe:
                    await probe.list_tools()
                return url
            except Exception:  # noqa: BLE001 - not listening yet
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool from a thread that is not the link's (blocks); returns the CallToolResult."""
        self.ensure()
        assert self.loop is not None
        future = asyncio.run_coroutine_threadsafe(self.client.call_tool(tool, arguments), self.loop)
        return future.result(timeout=self.profile.server.call_timeout_s + 5)

    async def acall(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool from the run's event loop (the link's loop does the work)."""
        if not self.running:
            await asyncio.to_thread(self.ensure)
        assert self.loop is not None
        future = asyncio.run_coroutine_threadsafe(self.client.call_tool(tool, arguments), self.loop)
        return await asyncio.wait_for(asyncio.wrap_future(future), self.profile.server.call_timeout_s + 5)

    def close(self) -> None:
        """Stop the server and the thread (idempotent)."""
        loop, thread, stop = self.loop, self.thread, self.stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=15)
        self.loop = self.thread = self.stop = self.client = None


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: the client's task groups wrap them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "text", None))


class McpMemory:
    """A memory server behind the adapter (wrapped in :class:`PluginMemory` by :func:`build_mcp_memory`).

    Args:
        label: ``mcp:<profile>`` as given.
        profile: the checked profile.
        folder: this instance's folder: the server's data in ``folder/data``, its log in
            ``folder/server.log``.

    Every tool error (``is_error`` results, unreadable search results) raises; the wrapper counts
    it and stops the step or goes on, as ``on_error`` says.
    """

    def __init__(self, label: str, profile: McpMemoryProfile, folder: Path) -> None:
        self.label, self.profile = label, profile
        self.folder = Path(folder)
        self.data_dir = self.folder / "data"
        self.link = _ServerLink(label, profile, self.data_dir, self.folder / "server.log")
        self.written = 0
        self.last: Evidence | None = None
        self._finalizer = weakref.finalize(self, _ServerLink.close, self.link)

    def close(self) -> None:
        """Stop this instance's server."""
        self.link.close()

    @staticmethod
    def _checked(tool: str, result: Any) -> Any:
        if getattr(result, "is_error", False):
            raise RuntimeError(f"tool {tool} returned an error: {_text_of(result)[:300]}")
        return result

    async def write(self, record: TurnRecord) -> None:
        """Call the write tool with the turn's fields."""
        fields = {"turn_text": record.as_text(), "user_message": record.user_message, "reply": record.reply,
                  "context": record.context.value, "step_id": record.step_id, "at": record.at.isoformat(),
                  "turn_index": record.turn_index}
        args = {k: _fill(v, fields) for k, v in self.profile.write.arguments.items()}
        self._checked(self.profile.write.tool, await self.link.acall(self.profile.write.tool, args))
        self.written += 1

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """Call the search tool with the message and read its items into :class:`Evidence`."""
        fields = {"user_message": user_message, "context": session.context.value, "step_id": session.step_id,
                  "at": session.at.isoformat()}
        search = self.profile.search
        args = {k: _fill(v, fields) for k, v in search.arguments.items()}
        result = self._checked(search.tool, await self.link.acall(search.tool, args))
        items = self._items(result)[: search.max_items]
        text = "\n".join(f"[{n}] {item.text}" for n, item in enumerate(items, 1))
        self.last = Evidence(system_text=f"{search.heading}:\n{text}" if items else "", items=items)
        return self.last

    def _items(self, result: Any) -> list[EvidenceItem]:
        mapping = self.profile.search.results
        if mapping.list is None:
            return [EvidenceItem(text=b.text) for b in result.content if getattr(b, "text", None)]
        data = result.structured_content
        if data is None or (isinstance(data, dict) and set(data) == {"result"} and isinstance(data["result"], str)):
            raw = data["result"] if isinstance(data, dict) else _text_of(result)
            try:
                data = json.loads(raw)
            except json.JSONDecodeError:
                tool = self.profile.search.tool
                raise ValueError(f"tool {tool} returned text that is not JSON: {raw[:120]!r}") from None
        try:
            found = _dig(data, mapping.list)
        except KeyError as exc:
            raise ValueError(f"tool {self.profile.search.tool}: no {exc.args[0]!r} in its result "
                             f"(search.results.list is {mapping.list!r})") from None
        if not isinstance(found, list):
            raise ValueError(f"tool {self.profile.search.tool}: {mapping.list or 'the result'} is not a list")
        items = []
        for n, entry in enumerate(found):
            if isinstance(entry, str):
                items.append(EvidenceItem(text=entry))
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get(mapping.text), str):
                raise ValueError(f"tool {self.profile.search.tool}: item {n} has no text field {mapping.text!r}")
            score = entry.get(mapping.score) if mapping.score else None
            items.append(EvidenceItem(text=entry[mapping.text],
                                      score=float(score) if isinstance(score, (int, float)) else None,
                                      source=str(entry.get(mapping.id, "")) if mapping.id else ""))
        return items

    def snapshot(self) -> bytes:
        """The whole store: a tar of the data folder (``data_dir``) or the export tool's text (``tools``)."""
        if self.profile.snapshot.mode == "tools":
            tool = self.profile.snapshot.export_tool or ""
            result = self._checked(tool, self.link.call(tool, {}))
            return json.dumps({"mcp_export": _text_of(result)}).encode("utf-8")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            if self.data_dir.is_dir():
                for path in sorted(self.data_dir.rglob("*")):
                    info = tar.gettarinfo(str(path), arcname=str(path.relative_to(self.data_dir)))
                    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                    if path.is_file():
                        with path.open("rb") as handle:
                            tar.addfile(info, handle)
                    else:
                        tar.addfile(info)
        return buffer.getvalue()

    def restore(self, data: bytes) -> None:
        """Replace the store: import tool (``tools``), or a fresh server on the unpacked folder next call."""
        if self.profile.snapshot.mode == "tools":
            payload = json.loads(data.decode("utf-8"))["mcp_export"]
            tool = self.profile.snapshot.import_tool or ""
            self._checked(tool, self.link.call(tool, {self.profile.snapshot.import_argument: payload}))
            return
        self.link.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(self.data_dir, filter="data")

    def inspect(self) -> MemoryInspection:
        """The server, the data folder's files and the last evidence (the server is not called)."""
        stored = [f"{p.relative_to(self.data_dir)} ({p.stat().st_size} bytes)"
                  for p in sorted(self.data_dir.rglob("*")) if p.is_file()] if self.data_dir.is_dir() else []
        system = f"{self.label} ({self.link.server_info or 'server not started'})"
        return MemoryInspection(system=system, stored=stored, last_evidence=self.last,
                                stats={"server_starts": float(self.link.starts), "turns_sent": float(self.written)})


def build_mcp_memory(name: str, *, folder: Path, on_error: str = "raise", **options: Any) -> PluginMemory:
    """Build ``mcp:<profile>`` (what :func:`~mempa_tui.memory._plugin.build_plugin` delegates to).

    The server is not started here: it starts at the first tool call (a condition built only to
    check its options starts nothing).

    Raises:
        MemoryPluginError: options were given (a profile takes none; put them in its YAML), or
            the profile is missing or invalid.
    """
    if options:
        raise MemoryPluginError(name, "options", f"an MCP memory takes no --memory-option (got "
                                f"{', '.join(sorted(options))}); set them in its profile")
    profile, _ = load_mcp_profile(name)
    return PluginMemory(name, McpMemory(name, profile, folder), on_error=on_error)
