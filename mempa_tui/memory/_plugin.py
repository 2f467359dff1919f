"""Bring your own memory: a Python class by import path or by entry point (issue 17).

A plugin condition is named on the command line like a built-in one:

* ``pkg.module:ClassName`` - import ``pkg.module`` (the current folder is put on the import path
  first, as ``python -m`` would) and take ``ClassName``;
* ``path/to/file.py:ClassName`` - load that file as a module;
* ``<name>`` of an entry point in the ``mempa.memory`` group (``importlib.metadata``), declared by
  an installed package as ``<name> = "pkg.module:ClassName"``;
* ``mcp:<profile>`` - a memory server over MCP (:mod:`mempa_tui.memory._mcp`).

The class implements the adapter of :class:`~mempa_tui.memory.base.MemorySystem` (paper Section 3.4
'PA and Memory Interface', Eq. 1-2): ``async write(record)``, ``async retrieve(user_message,
session) -> Evidence``, ``snapshot() -> bytes``, ``restore(bytes)``, ``inspect() ->
MemoryInspection`` and optionally ``async end_session(session)``. It is built as
``ClassName(folder, **options)``; ``client`` (the run's model client, role ``memory``) and
``context_window`` are passed only when the constructor names them. It need not subclass
:class:`MemorySystem`: :class:`PluginMemory` wraps it, checks what each method returns and counts
every failure, so a broken plugin gets an error naming its class and the method.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import importlib.util
import inspect as pyinspect
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mempa_tui.memory._factory import MemoryConfigError
from mempa_tui.memory.base import Evidence, MemoryInspection, MemorySystem, SessionInfo, TurnRecord

__all__ = [
    "ENTRY_POINT_GROUP",
    "ON_ERROR_OPTION",
    "MemoryPluginError",
    "PluginMemory",
    "PluginSpec",
    "build_plugin",
    "canonical_plugin_name",
    "entry_point_plugins",
    "is_plugin_spec",
    "memory_choices",
    "plugin_identity",
    "plugin_option_names",
    "resolve_plugin",
]

ENTRY_POINT_GROUP = "mempa.memory"
"""The ``importlib.metadata`` entry-point group packages declare memory plugins in."""

ON_ERROR_OPTION = "on_error"
"""The one option the wrapper keeps for itself: ``raise`` (default: a failing method stops the
step with :class:`MemoryPluginError`) or ``count`` (the failure is counted, shown in ``inspect()``
and the run's memory counters, and the turn goes on: no write, or empty evidence)."""

_ADAPTER_METHODS: dict[str, tuple[bool, str]] = {
    "write": (True, "async def write(self, record: TurnRecord) -> None"),
    "retrieve": (True, "async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence"),
    "snapshot": (False, "def snapshot(self) -> bytes"),
    "restore": (False, "def restore(self, data: bytes) -> None"),
    "inspect": (False, "def inspect(self) -> MemoryInspection"),
}
"""Adapter method -> (must be a coroutine function, the signature to write)."""

_PASSED_WHEN_NAMED = ("client", "context_window")


class MemoryPluginError(MemoryConfigError):
    """A memory plugin cannot be loaded or one of its methods failed or returned bad data.

    The message names the plugin (its import path), the method and what was wrong. It is a
    :class:`~mempa_tui.memory.MemoryConfigError` (a ``ValueError``), so the command line prints it
    as one line.

    Attributes:
        plugin: the plugin's import path (``pkg.module:ClassName``) or ``mcp:<profile>``.
        method: the adapter method (``load``, ``__init__``, ``write``, ``retrieve``...).
    """

    def __init__(self, plugin: str, method: str, problem: str) -> None:
        self.plugin = plugin
        self.method = method
        super().__init__(f"memory plugin {plugin}: {method}: {problem}")


@dataclass(frozen=True)
class PluginSpec:
    """A resolved plugin name.

    Attributes:
        name: what was given (``pkg.module:Class``, ``file.py:Class`` or an entry-point name).
        target: ``module:Class`` or ``file.py:Class`` to load.
        entry_point: the entry point's name when ``name`` is one, else None.
        distribution: ``name version`` of the package that declares the entry point, if any.
    """

    name: str
    target: str
    entry_point: str | None = None
    distribution: str | None = None


def entry_point_plugins() -> dict[str, metadata.EntryPoint]:
    """Entry points of the ``mempa.memory`` group, by name (later duplicates are ignored)."""
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


PLUGINS_ENV = "MEMPA_MEMORY_PLUGINS"
"""Comma-separated plugin names the app's launcher offers besides the found ones (``mempa tui
--memory pkg.module:ClassName`` sets it)."""


def memory_choices(models_dir: Path | None = None) -> list[str]:
    """Every condition the app's launcher offers, in order: the built-in ones, the entry points of
    ``mempa.memory``, the MCP profiles in ``<models_dir>/mcp`` (as ``mcp:<name>``) and the names in
    ``$MEMPA_MEMORY_PLUGINS``, each once."""
    from mempa_tui.memory._factory import MEMORY_BUILDERS

    names = [*MEMORY_BUILDERS, *sorted(entry_point_plugins())]
    folder = Path(models_dir) / "mcp" if models_dir is not None else None
    if folder is not None and folder.is_dir():
        names += [f"mcp:{p.stem}" for p in sorted(folder.glob("*.yaml"))]
    names += [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    return list(dict.fromkeys(names))


def is_plugin_spec(name: str) -> bool:
    """True for a name this module (or the MCP adapter) builds: ``x:y`` or an entry-point name."""
    return ":" in name or name in entry_point_plugins()


def resolve_plugin(name: str) -> PluginSpec:
    """Turn a command-line name into a :class:`PluginSpec` (nothing is imported yet).

    Raises:
        MemoryPluginError: the name is neither ``module:Class`` nor a known entry point.
    """
    if ":" in name:
        module, _, cls = name.rpartition(":")
        if not module or not cls.isidentifier():
            raise MemoryPluginError(name, "load", "write the plugin as pkg.module:ClassName or file.py:ClassName")
        return PluginSpec(name=name, target=name)
    ep = entry_point_plugins().get(name)
    if ep is None:
        raise MemoryPluginError(name, "load", f"no such plugin (not module:Class and no entry point "
                                              f"{name!r} in the {ENTRY_POINT_GROUP} group)")
    dist = getattr(ep, "dist", None)
    declared = f"{dist.metadata['Name']} {dist.version}" if dist is not None else None
    return PluginSpec(name=name, target=ep.value, entry_point=name, distribution=declared)


def _cwd_on_path() -> None:
    """Put the current folder on the import path, as ``python -m`` would (once)."""
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def canonical_plugin_name(name: str) -> str:
    """One spelling per plugin: a ``file.py:Class`` that is importable as a module becomes
    ``pkg.module:Class``; every other name is returned as given.

    ``examples/keyword_memory.py:KeywordMemory`` and ``examples.keyword_memory:KeywordMemory`` name
    the same class, so they must make one run id (and one results row), not two. The file counts as
    importable when, relative to the current folder or a folder on ``sys.path``, its path is a
    dotted name of identifiers and ``importlib`` finds exactly that file under that name (a module
    of the same name elsewhere on the path keeps the file spelling). Finding the spec may import the
    module's parent packages; the module itself is not imported.

    Args:
        name: a ``--memory`` value (built-in names, entry points and ``mcp:`` pass through).

    Returns:
        The canonical name.
    """
    module, sep, cls = name.rpartition(":")
    if not sep or not module.endswith(".py") or name.startswith("mcp:"):
        return name
    path = Path(module)
    if not path.is_file():
        return name  # loading it names the problem
    resolved = path.resolve()
    _cwd_on_path()
    roots = [Path.cwd(), *(Path(p or ".") for p in sys.path)]
    for root in dict.fromkeys(r.resolve() for r in roots if r.is_dir()):
        try:
            parts = resolved.with_suffix("").relative_to(root).parts
        except ValueError:
            continue
        if not parts or not all(p.isidentifier() for p in parts):
            continue
        dotted = ".".join(parts)
        try:
            found = importlib.util.find_spec(dotted)
        except (ImportError, ValueError):  # a parent package that fails to import: keep the file path
            continue
        if found is not None and found.origin and Path(found.origin).resolve() == resolved:
            return f"{dotted}:{cls}"
    return name


def _import_module(spec: PluginSpec, module_name: str) -> Any:
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise MemoryPluginError(spec.name, "load", f"no file {path}")
        unique = f"mempa_plugin_{abs(hash(str(path.resolve())))}"
        if unique in sys.modules:
            return sys.modules[unique]
        loader_spec = importlib.util.spec_from_file_location(unique, path)
        if loader_spec is None or loader_spec.loader is None:
            raise MemoryPluginError(spec.name, "load", f"cannot load {path} as a module")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[unique] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[unique]
            raise MemoryPluginError(spec.name, "load", f"importing {path} raised {type(exc).__name__}: {exc}") from exc
        return module
    _cwd_on_path()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise MemoryPluginError(spec.name, "load", f"no module named {exc.name!r} (is it installed, or "
                                                      "is the current folder the one holding it?)") from exc
        raise MemoryPluginError(spec.name, "load", f"importing {module_name} raised {exc!r}") from exc
    except Exception as exc:
        problem = f"importing {module_name} raised {type(exc).__name__}: {exc}"
        raise MemoryPluginError(spec.name, "load", problem) from exc


def load_plugin_class(spec: PluginSpec) -> type:
    """Import the plugin's class and check that it implements the adapter.

    Raises:
        MemoryPluginError: the module cannot be imported, has no such attribute, the attribute is
            not a class, or a method of the adapter is missing or has the wrong kind (sync/async).
    """
    module_name, _, cls_name = spec.target.rpartition(":")
    module = _import_module(spec, module_name)
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise MemoryPluginError(spec.name, "load", f"module {module_name} has no attribute {cls_name!r}")
    if not isinstance(cls, type):
        raise MemoryPluginError(spec.name, "load", f"{cls_name} is a {type(cls).__name__}, not a class")
    for method, (is_async, signature) in _ADAPTER_METHODS.items():
        member = getattr(cls, method, None)
        if member is None or not callable(member):
            raise MemoryPluginError(spec.name, method, f"{cls_name} does not implement the memory adapter: "
                                                       f"no method {method} (write `{signature}`)")
        if getattr(member, "__isabstractmethod__", False):
            raise MemoryPluginError(spec.name, method, f"{cls_name}.{method} is abstract (write `{signature}`)")
        if is_async != pyinspect.iscoroutinefunction(member):
            kind = "a coroutine function (async def)" if is_async else "a plain method (not async)"
            raise MemoryPluginError(spec.name, method, f"{cls_name}.{method} must be {kind}: `{signature}`")
    end = getattr(cls, "end_session", None)
    if end is not None and not pyinspect.iscoroutinefunction(end):
        raise MemoryPluginError(spec.name, "end_session", f"{cls_name}.end_session must be async def")
    return cls


def plugin_identity(name: str) -> str:
    """``<import path> <version>`` of a plugin, for results and the run's configuration.

    The version is, in order: the declaring distribution's (entry points), the class's
    ``version`` attribute, its module's ``__version__``, the installed distribution that holds
    the module's top-level package; else ``unversioned``.

    Raises:
        MemoryPluginError: the plugin cannot be loaded.
    """
    if name.startswith("mcp:"):
        from mempa_tui.memory._mcp import mcp_identity

        return mcp_identity(name)
    spec = resolve_plugin(name)
    cls = load_plugin_class(spec)
    version = None
    if spec.distribution:
        version = spec.distribution.rsplit(" ", 1)[-1]
    version = version or getattr(cls, "version", None) or getattr(sys.modules.get(cls.__module__), "__version__", None)
    if not version:
        top = spec.target.rpartition(":")[0].split(".")[0]
        dists = metadata.packages_distributions().get(top) or []
        if dists:
            try:
                version = metadata.version(dists[0])
            except metadata.PackageNotFoundError:
                version = None
    return f"{spec.target} {version or 'unversioned'}"


def plugin_option_names(name: str) -> tuple[str, ...]:
    """The option names a plugin's constructor takes by name (for ``--memory-option`` sharing).

    Returns ``()`` when the plugin cannot be loaded (building it then names the problem).
    """
    if name.startswith("mcp:"):
        return ()
    try:
        cls = load_plugin_class(resolve_plugin(name))
        params = list(pyinspect.signature(cls).parameters.values())[1:]  # the first is the folder
    except (ValueError, TypeError):
        return ()
    names = [p.name for p in params
             if p.name not in _PASSED_WHEN_NAMED and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return (*sorted(names), ON_ERROR_OPTION)


def _check_on_error(name: str, options: dict[str, Any]) -> str:
    on_error = options.pop(ON_ERROR_OPTION, "raise")
    if on_error not in ("raise", "count"):
        raise MemoryPluginError(name, "options", f"{ON_ERROR_OPTION} must be raise or count, got {on_error!r}")
    return str(on_error)


def build_plugin(name: str, *, client: Any, folder: Path, context_window: int | None,
                 **options: Any) -> MemorySystem:
    """Build a plugin condition: the builder :func:`~mempa_tui.memory.make_memory` delegates to.

    Args:
        name: ``pkg.module:Class``, ``file.py:Class``, an entry-point name or ``mcp:<profile>``.
        client: the run's model client (passed when the constructor has a ``client`` parameter).
        folder: the store folder for this memory (``local_memory/<run>/`` or a probe branch's).
        context_window: tokens left for memory in the PA's window (passed when named).
        **options: ``--memory-option`` values; ``on_error`` is the wrapper's, the rest go to the
            constructor.

    Returns:
        A :class:`PluginMemory` around the new instance.

    Raises:
        MemoryPluginError: loading, the adapter check or the constructor failed.
    """
    options = dict(options)
    on_error = _check_on_error(name, options)
    if name.startswith("mcp:"):
        from mempa_tui.memory._mcp import build_mcp_memory

        return build_mcp_memory(name, folder=folder, on_error=on_error, **options)
    spec = resolve_plugin(name)
    cls = load_plugin_class(spec)
    try:
        params = pyinspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    extra = {k: v for k, v in (("client", client), ("context_window", context_window)) if k in params}
    folder.mkdir(parents=True, exist_ok=True)
    try:
        inner = cls(folder, **extra, **options)
    except TypeError as exc:
        raise MemoryPluginError(name, "__init__", f"{cls.__name__}(folder, **options) failed: {exc}") from exc
    except Exception as exc:
        raise MemoryPluginError(name, "__init__", f"raised {type(exc).__name__}: {exc}") from exc
    return PluginMemory(name, inner, on_error=on_error)


def _counter_value(plugin: str, key: Any, value: Any) -> float:
    if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MemoryPluginError(plugin, "inspect", f"stats must map names to numbers; got {key!r}: {value!r}")
    return float(value)


class PluginMemory(MemorySystem):
    """The adapter around a plugin instance: checks every return value and counts failures.

    Counters (in ``inspect().stats`` beside the plugin's own, which are prefixed ``plugin.`` when
    they would clash): ``turns_written``, ``retrievals``, ``write_failures``,
    ``retrieve_failures``, ``end_session_failures``, ``malformed_evidence``. Under
    ``on_error=raise`` the first failure also raises :class:`MemoryPluginError` naming the
    plugin and the method; under ``count`` the turn goes on without it.

    Args:
        name: the plugin's name as given (results show it with its version).
        inner: the plugin's instance.
        on_error: ``raise`` or ``count``.
    """

    def __init__(self, name: str, inner: Any, *, on_error: str = "raise") -> None:
        self.name = name
        self.inner = inner
        self.on_error = on_error
        self.counters: dict[str, float] = dict.fromkeys(
            ("turns_written", "retrievals", "write_failures", "retrieve_failures", "end_session_failures",
             "malformed_evidence"), 0.0)
        self.failures: list[str] = []
        """The last 50 failure messages, newest last (shown by :meth:`inspect`)."""
        self.last_evidence: Evidence | None = None

    def _failed(self, method: str, counter: str, problem: str, exc: BaseException | None = None) -> None:
        self.counters[counter] += 1
        # An adapter's own MemoryPluginError (an MCP server that did not start) already names all.
        error = exc if isinstance(exc, MemoryPluginError) else MemoryPluginError(self.name, method, problem)
        self.failures = [*self.failures[-49:], str(error)]
        if self.on_error == "raise":
            if error is exc:
                raise error
            raise error from exc

    async def write(self, record: TurnRecord) -> None:
        """Hand the turn to the plugin's ``write`` (paper Eq. 1)."""
        try:
            await self.inner.write(record)
        except Exception as exc:  # noqa: BLE001 - counted, and raised again under on_error=raise
            self._failed("write", "write_failures", f"raised {type(exc).__name__}: {exc}", exc)
            return
        self.counters["turns_written"] += 1

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        """The plugin's evidence, checked (paper Eq. 2): an :class:`Evidence` or a mapping of its fields."""
        try:
            found = await self.inner.retrieve(user_message, session)
        except Exception as exc:  # noqa: BLE001 - counted, and raised again under on_error=raise
            self._failed("retrieve", "retrieve_failures", f"raised {type(exc).__name__}: {exc}", exc)
            return Evidence()
        evidence = self._checked_evidence(found)
        if evidence is None:  # malformed, counted (on_error=count): the turn goes on without memory
            return Evidence()
        self.counters["retrievals"] += 1
        self.last_evidence = evidence
        return evidence

    def _checked_evidence(self, found: Any) -> Evidence | None:
        if isinstance(found, Evidence):
            found = found.model_dump()
        if not isinstance(found, dict):
            self._failed("retrieve", "malformed_evidence",
                         f"returned {type(found).__name__}, expected Evidence (or a dict with system_text, "
                         "items, prior_messages)")
            return None
        try:
            return Evidence.model_validate(found)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "evidence"
            self._failed("retrieve", "malformed_evidence",
                         f"returned malformed evidence: {where}: {first['msg']} (got {first.get('input')!r:.80})", exc)
            return None

    async def end_session(self, session: SessionInfo) -> None:
        """The plugin's ``end_session`` when it has one."""
        end = getattr(self.inner, "end_session", None)
        if end is None:
            return
        try:
            await end(session)
        except Exception as exc:  # noqa: BLE001 - counted, and raised again under on_error=raise
            self._failed("end_session", "end_session_failures", f"raised {type(exc).__name__}: {exc}", exc)

    def snapshot(self) -> bytes:
        """The plugin's snapshot; must be bytes (a checkpoint cannot hold anything else).

        Raises:
            MemoryPluginError: it raised or returned something else (always: a lost snapshot
                would lose the store).
        """
        try:
            data = self.inner.snapshot()
        except Exception as exc:
            raise MemoryPluginError(self.name, "snapshot", f"raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, (bytes, bytearray)):
            raise MemoryPluginError(self.name, "snapshot", f"returned {type(data).__name__}, expected bytes")
        return bytes(data)

    def restore(self, data: bytes) -> None:
        """The plugin's restore.

        Raises:
            MemoryPluginError: it raised (always: a probe on a half-restored store would be wrong).
        """
        try:
            self.inner.restore(data)
        except Exception as exc:
            raise MemoryPluginError(self.name, "restore", f"raised {type(exc).__name__}: {exc}") from exc

    def inspect(self) -> MemoryInspection:
        """The plugin's inspection with the wrapper's counters and failures added.

        Raises:
            MemoryPluginError: ``inspect`` raised or returned something that is not a
                :class:`MemoryInspection` (or a mapping of its fields).
        """
        try:
            found = self.inner.inspect()
        except Exception as exc:
            raise MemoryPluginError(self.name, "inspect", f"raised {type(exc).__name__}: {exc}") from exc
        if isinstance(found, MemoryInspection):
            found = found.model_dump()
        if not isinstance(found, dict):
            raise MemoryPluginError(self.name, "inspect", f"returned {type(found).__name__}, expected MemoryInspection")
        own = found.get("stats") or {}
        if not isinstance(own, dict):
            raise MemoryPluginError(self.name, "inspect", f"stats must be a mapping, got {type(own).__name__}")
        stats = {(f"plugin.{k}" if k in self.counters else k): _counter_value(self.name, k, v) for k, v in own.items()}
        stats.update(self.counters)
        found = {**found, "stats": stats}
        found.setdefault("system", self.name)
        if not found.get("system"):
            found["system"] = self.name
        if found.get("last_evidence") is None and self.last_evidence is not None:
            found["last_evidence"] = self.last_evidence
        stored = list(found.get("stored") or [])
        found["stored"] = [str(s) for s in stored] + [f"failure: {f}" for f in self.failures[-5:]]
        try:
            return MemoryInspection.model_validate(found)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise MemoryPluginError(self.name, "inspect", f"{where}: {first['msg']}") from exc
