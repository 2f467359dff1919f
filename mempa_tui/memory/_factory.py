"""Build a memory condition by name (SPEC section 4.7).

New conditions register a builder in :data:`MEMORY_BUILDERS`; the factory itself does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mempa_tui.memory._consolidation import CompletionClient
from mempa_tui.memory._file import FileMemory, default_thresholds
from mempa_tui.memory._mem0ai import MEM0AI_OPTIONS, build_mem0, build_rag
from mempa_tui.memory._memos import MEMOS_OPTIONS, build_memos
from mempa_tui.memory._prefstate import PrefStateMemory
from mempa_tui.memory._reference import NoMemory, OracleMemory
from mempa_tui.memory._retrieval_build import RETRIEVAL_OPTIONS, build_ours_rag
from mempa_tui.memory.base import MemorySystem

__all__ = [
    "MEMORY_BUILDERS",
    "MEMORY_OPTION_NAMES",
    "MemoryBuilder",
    "MemoryConfigError",
    "make_memory",
    "options_per_condition",
]


class MemoryConfigError(ValueError):
    """A memory condition name or option is not valid; the message names it and the valid ones."""


MemoryBuilder = Callable[..., MemorySystem]
"""``builder(*, client, folder, context_window, **options) -> MemorySystem``."""


def _reject_options(name: str, options: dict[str, Any]) -> None:
    if options:
        raise MemoryConfigError(
            f"memory condition {name!r} takes no options; got: {', '.join(sorted(options))}"
        )


def _build_none(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    _reject_options("none", options)
    return NoMemory()


def _build_oracle(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    _reject_options("oracle", options)
    return OracleMemory()


_FILE_OPTIONS = {"consolidate_at_tokens", "consolidate_to_tokens", "consolidate_at_session_end"}


def _build_file(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    unknown = set(options) - _FILE_OPTIONS
    if unknown:
        raise MemoryConfigError(
            f"memory condition 'file': unknown option(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(_FILE_OPTIONS))}"
        )
    if client is None:
        raise MemoryConfigError("memory condition 'file' needs a model client (role 'memory')")
    at_default, to_default = default_thresholds(context_window)
    at = options.get("consolidate_at_tokens", at_default)
    to = options.get("consolidate_to_tokens", to_default)
    for key, value in (("consolidate_at_tokens", at), ("consolidate_to_tokens", to)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise MemoryConfigError(
                f"memory condition 'file': {key} must be an integer, got {value!r}"
            )

    def used(key: str, value: int, default: int, paper: int, *, given: bool) -> str:
        """``6,700 (this run's default, scaled from the paper's 10,000 to the PA's window)``: the
        value the run would use and where it comes from (finding 10)."""
        if given:
            return f"{value:,} (given)"
        if default != paper:
            return f"{value:,} (this run's default, scaled from the paper's {paper:,} to the PA's window)"
        return f"{value:,} (the paper's default)"

    paper_at, paper_to = default_thresholds(None)
    for key, value, default, paper in (("consolidate_at_tokens", at, at_default, paper_at),
                                       ("consolidate_to_tokens", to, to_default, paper_to)):
        if value <= 0:
            raise MemoryConfigError(f"memory condition 'file': {key} must be a positive number of tokens, "
                                    f"got {value:,}; without the option the run would use "
                                    f"{used(key, default, default, paper, given=False)}")
    if to >= at:
        raise MemoryConfigError(
            "memory condition 'file': consolidate_to_tokens must be below consolidate_at_tokens; the run "
            f"would use consolidate_at_tokens "
            f"{used('consolidate_at_tokens', at, at_default, paper_at, given='consolidate_at_tokens' in options)} "
            "and consolidate_to_tokens "
            f"{used('consolidate_to_tokens', to, to_default, paper_to, given='consolidate_to_tokens' in options)}")
    at_session_end = options.get("consolidate_at_session_end", False)
    if not isinstance(at_session_end, bool):
        raise MemoryConfigError(
            "memory condition 'file': consolidate_at_session_end must be true or false, "
            f"got {at_session_end!r}"
        )
    try:
        return FileMemory(client, folder, consolidate_at_tokens=at, consolidate_to_tokens=to,
                          consolidate_at_session_end=at_session_end)
    except ValueError as exc:
        raise MemoryConfigError(str(exc)) from None


_PREFSTATE_OPTIONS = {"confident_at": (int, float), "recent_changes": (int,)}


def _build_prefstate(
    *, client: CompletionClient | None, folder: Path, context_window: int | None, **options: Any
) -> MemorySystem:
    unknown = set(options) - set(_PREFSTATE_OPTIONS)
    if unknown:
        raise MemoryConfigError(
            f"memory condition 'prefstate': unknown option(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(_PREFSTATE_OPTIONS))}"
        )
    if client is None:
        raise MemoryConfigError("memory condition 'prefstate' needs a model client (role 'memory')")
    for key, value in options.items():
        if isinstance(value, bool) or not isinstance(value, _PREFSTATE_OPTIONS[key]):
            raise MemoryConfigError(
                f"memory condition 'prefstate': {key} must be "
                f"{'a number' if key == 'confident_at' else 'an integer'}, got {value!r}"
            )
    try:
        return PrefStateMemory(client, folder, **options)
    except ValueError as exc:
        raise MemoryConfigError(str(exc)) from None


MEMORY_BUILDERS: dict[str, MemoryBuilder] = {
    "none": _build_none,
    "oracle": _build_oracle,
    "file": _build_file,
    "rag": build_rag,
    "mem0": build_mem0,
    "memos": build_memos,
    "prefstate": _build_prefstate,
    "ours-rag": build_ours_rag,
}
"""Condition name -> builder. Register further conditions here.

The paper's names mean the paper's systems: ``rag`` and ``mem0`` run mem0ai 2.0.2 (``infer=False``
/ ``infer=True``), ``memos`` MemoryOS 2.0.15 as a local server. ``prefstate`` (taxonomy-aware) and ``ours-rag`` are ours."""

MEMORY_OPTION_NAMES: dict[str, tuple[str, ...]] = {
    "none": (),
    "oracle": (),
    "file": tuple(sorted(_FILE_OPTIONS)),
    "rag": tuple(sorted(MEM0AI_OPTIONS)),
    "mem0": tuple(sorted(MEM0AI_OPTIONS)),
    "memos": tuple(sorted(MEMOS_OPTIONS)),
    "prefstate": tuple(sorted(_PREFSTATE_OPTIONS)),
    "ours-rag": tuple(sorted(RETRIEVAL_OPTIONS)),
}
"""Condition name -> the option names its builder accepts (values are checked by the builder)."""


def _is_plugin(name: str) -> bool:
    from mempa_tui.memory._plugin import is_plugin_spec

    return name not in MEMORY_BUILDERS and is_plugin_spec(name)


def _option_names(condition: str) -> tuple[str, ...]:
    if condition in MEMORY_OPTION_NAMES or not _is_plugin(condition):
        return MEMORY_OPTION_NAMES.get(condition, ())
    from mempa_tui.memory._plugin import plugin_option_names

    return plugin_option_names(condition)


def options_per_condition(conditions: Sequence[str], options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Share ``--memory-option`` values out among several conditions of one command.

    ``KEY`` goes to every listed condition that takes an option of that name (``top_k`` to both
    ``rag`` and ``mem0``); ``CONDITION.KEY`` goes to that condition only. With one condition,
    every plain key goes to it and its builder names what it does not know, as before.

    Args:
        conditions: the listed condition names, in order (each in :data:`MEMORY_BUILDERS`).
        options: option name (plain or ``condition.name``) -> value.

    Returns:
        Condition -> its options (an empty mapping for a condition that gets none).

    Raises:
        MemoryConfigError: a ``CONDITION.KEY`` names a condition that is not listed or a key that
            condition does not take, or a plain key no listed condition takes (names those that
            would).
    """
    shares: dict[str, dict[str, Any]] = {c: {} for c in conditions}
    for key, value in options.items():
        target, dot, name = key.partition(".")
        for listed in sorted(conditions, key=len, reverse=True):  # a plugin's name may hold dots
            if key.startswith(f"{listed}.") and len(key) > len(listed) + 1:
                target, dot, name = listed, ".", key[len(listed) + 1:]
                break
        if dot and not (target and name):
            raise MemoryConfigError(f"memory option {key!r}: write CONDITION.KEY (e.g. rag.top_k) or KEY")
        if dot:
            if target not in shares:
                raise MemoryConfigError(f"memory option {key!r} is for {target!r}, which is not among the "
                                        f"listed conditions ({', '.join(conditions)})")
            if len(conditions) > 1 and name not in _option_names(target):
                valid = ", ".join(_option_names(target))
                raise MemoryConfigError(f"memory condition {target!r} has no option {name!r}; "
                                        + (f"valid: {valid}" if valid else "it takes no options"))
            shares[target][name] = value
            continue
        if len(conditions) == 1:
            shares[conditions[0]][key] = value
            continue
        takers = [c for c in conditions if key in _option_names(c)]
        if not takers:
            elsewhere = [c for c, names in MEMORY_OPTION_NAMES.items() if key in names]
            raise MemoryConfigError(
                f"no listed condition ({', '.join(conditions)}) takes memory option {key!r}"
                + (f"; {', '.join(elsewhere)} would" if elsewhere else "")
            )
        for condition in takers:
            shares[condition][key] = value
    return shares


def make_memory(
    name: str,
    *,
    client: CompletionClient | None,
    folder: Path,
    context_window: int | None = None,
    **options: Any,
) -> MemorySystem:
    """Build the memory system of a condition.

    Args:
        name: ``none``, ``oracle``, ``file``, ``prefstate`` (any name in :data:`MEMORY_BUILDERS`), or
            a plugin: ``pkg.module:Class``, an entry point of ``mempa.memory``, ``mcp:<profile>``.
        client: model client for systems that call a model (File memory: role ``memory``).
        folder: the run's store folder, ``local_memory/<run>/``.
        context_window: the PA model's context window in tokens; File memory scales its
            thresholds to it (50% -> 25%, capped at 20k -> 10k) unless given explicitly.
        **options: condition-specific options (File memory: ``consolidate_at_tokens``,
            ``consolidate_to_tokens``, ``consolidate_at_session_end``; preference-state memory: ``confident_at``,
            ``recent_changes``).

    Returns:
        A fresh, empty memory system.

    Raises:
        MemoryConfigError: unknown condition or option, or an invalid option value.
    """
    builder = MEMORY_BUILDERS.get(name)
    if builder is None and _is_plugin(name):  # bring your own memory (issue 17): _plugin.py
        from mempa_tui.memory._plugin import build_plugin

        return build_plugin(name, client=client, folder=Path(folder), context_window=context_window, **options)
    if builder is None:
        raise MemoryConfigError(
            f"unknown memory condition {name!r}; valid: {', '.join(MEMORY_BUILDERS)}"
        )
    return builder(client=client, folder=Path(folder), context_window=context_window, **options)
