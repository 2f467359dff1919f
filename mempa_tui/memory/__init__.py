"""Memory systems behind the common adapter (SPEC section 4.7; paper Sections 3.4, 4; App. F.1).

Conditions: No Memory and Oracle (references), File memory (MEMORY.md + HISTORY.md), Simple RAG
and Mem0 (both the published mem0ai 2.0.2 library, :class:`Mem0aiMemory`, ``infer=False`` /
``infer=True``), MemOS (MemoryOS 2.0.15 as a local server, :class:`MemosMemory`). Ours:
preference-state memory (SPEC section 6, taxonomy-aware) is :class:`PrefStateMemory`, and
``ours-rag`` (:class:`RagMemory`) our FAISS store of whole turns. Each condition's source and
offline substitutions are in :data:`CONDITION_SOURCES`.
Build one with :func:`make_memory`. Bring your own: a class by import path or entry point, or a
memory server over MCP (:mod:`mempa_tui.memory._plugin`, :mod:`mempa_tui.memory._mcp`).
"""

from mempa_tui.memory._consolidation import CompletionClient, ConsolidationReply
from mempa_tui.memory._embed import (
    Embedder,
    EmbedderError,
    LocalEmbedder,
    ProfileEmbedder,
    make_embedder,
)
from mempa_tui.memory._factory import (
    MEMORY_BUILDERS,
    MEMORY_OPTION_NAMES,
    MemoryConfigError,
    make_memory,
    options_per_condition,
)
from mempa_tui.memory._file import (
    FileMemory,
    FileMemoryState,
    FileMemoryStats,
    HistoryEntry,
    default_thresholds,
)
from mempa_tui.memory._mem0ai import (
    Mem0aiError,
    Mem0aiFailure,
    Mem0aiMemory,
    Mem0aiStats,
)
from mempa_tui.memory._plugin import (
    ENTRY_POINT_GROUP,
    MemoryPluginError,
    PluginMemory,
    canonical_plugin_name,
    entry_point_plugins,
    is_plugin_spec,
    memory_choices,
    plugin_identity,
)
from mempa_tui.memory._memos import MemosError, MemosMemory, MemosStats, ensure_memos_env, stop_memos_server
from mempa_tui.memory._prefstate import PrefStateMemory
from mempa_tui.memory._prefstate_state import (
    CellChange,
    CellState,
    Observation,
    PrefStateStats,
)
from mempa_tui.memory._rag import RagMemory, RagStats
from mempa_tui.memory._sources import CONDITION_SOURCES, ConditionSource, source_notes
from mempa_tui.memory._reference import (
    NoMemory,
    OracleMemory,
    OracleTarget,
    SnapshotError,
)
from mempa_tui.memory._vectors import DimensionMismatchError
from mempa_tui.memory.base import (
    Evidence,
    EvidenceItem,
    MemoryInspection,
    MemorySystem,
    SessionInfo,
    TurnRecord,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "CONDITION_SOURCES",
    "MEMORY_BUILDERS",
    "MEMORY_OPTION_NAMES",
    "CellChange",
    "CellState",
    "CompletionClient",
    "ConditionSource",
    "ConsolidationReply",
    "DimensionMismatchError",
    "Embedder",
    "EmbedderError",
    "Evidence",
    "EvidenceItem",
    "FileMemory",
    "FileMemoryState",
    "FileMemoryStats",
    "HistoryEntry",
    "LocalEmbedder",
    "Mem0aiError",
    "Mem0aiFailure",
    "Mem0aiMemory",
    "Mem0aiStats",
    "MemoryConfigError",
    "MemosError",
    "MemosMemory",
    "MemosStats",
    "MemoryInspection",
    "MemoryPluginError",
    "MemorySystem",
    "NoMemory",
    "Observation",
    "OracleMemory",
    "OracleTarget",
    "PluginMemory",
    "PrefStateMemory",
    "PrefStateStats",
    "ProfileEmbedder",
    "RagMemory",
    "RagStats",
    "SessionInfo",
    "SnapshotError",
    "TurnRecord",
    "default_thresholds",
    "entry_point_plugins",
    "canonical_plugin_name",
    "is_plugin_spec",
    "memory_choices",
    "make_embedder",
    "make_memory",
    "options_per_condition",
    "plugin_identity",
    "ensure_memos_env",
    "make_embedder",
    "make_memory",
    "options_per_condition",
    "source_notes",
    "stop_memos_server",
]
