"""Memory systems behind the common adapter (SPEC section 4.7; paper Sections 3.4, 4; App. F.1).

Conditions: No Memory and Oracle (references), File memory (MEMORY.md + HISTORY.md) and more;
preference-state memory (SPEC section 6) is :class:`PrefStateMemory`; Simple RAG is
:class:`RagMemory` and Mem0-style extraction :class:`Mem0Memory` (FAISS, :func:`make_embedder`).
The real mem0ai library (optional extra ``mem0ai``) is :class:`Mem0aiMemory`.
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
from mempa_tui.memory._mem0 import Mem0Failure, Mem0Memory, Mem0Stats
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
    entry_point_plugins,
    is_plugin_spec,
    memory_choices,
    plugin_identity,
)
from mempa_tui.memory._prefstate import PrefStateMemory
from mempa_tui.memory._prefstate_state import (
    CellChange,
    CellState,
    Observation,
    PrefStateStats,
)
from mempa_tui.memory._rag import RagMemory, RagStats
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
    "MEMORY_BUILDERS",
    "MEMORY_OPTION_NAMES",
    "CellChange",
    "CellState",
    "CompletionClient",
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
    "Mem0Failure",
    "Mem0Memory",
    "Mem0Stats",
    "Mem0aiError",
    "Mem0aiFailure",
    "Mem0aiMemory",
    "Mem0aiStats",
    "MemoryConfigError",
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
    "is_plugin_spec",
    "memory_choices",
    "make_embedder",
    "make_memory",
    "options_per_condition",
    "plugin_identity",
]
