"""Where each memory condition comes from, and what running it offline substitutes (SPEC 4.7).

Results tables and ``mempa results`` print these notes under the table, so a reader can tell the
paper's systems (run through their own code) from ours, and sees every substitution forced by
running offline (paper Section 4 and Table 11 name what the paper ran).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["CONDITION_SOURCES", "ConditionSource", "source_notes"]


class ConditionSource(BaseModel):
    """One condition's provenance.

    Attributes:
        source: the library and version, or ``ours``.
        paper: True for the paper's conditions (Section 4), False for ours.
        taxonomy_aware: True when the system reads the benchmark's taxonomy (knows what is tested).
        substitutions: what differs from the paper's set-up, one sentence each.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    paper: bool
    taxonomy_aware: bool = False
    substitutions: tuple[str, ...] = ()


_EMBEDDER = ("embedder: the packaged all-MiniLM-L6-v2 (384 dimensions, offline) in place of the "
             "paper's text-embedding-3-small")

CONDITION_SOURCES: dict[str, ConditionSource] = {
    "none": ConditionSource(source="ours (reference: no memory)", paper=True),
    "oracle": ConditionSource(source="ours (reference: the probed cell's target)", paper=True),
    "file": ConditionSource(source="ours, after nanobot's built-in File memory", paper=True),
    "rag": ConditionSource(source="mem0ai 2.0.2, add with infer=False and its search", paper=True,
                           substitutions=(_EMBEDDER, "vector store: Mem0's FAISS store under local_memory/<run>/")),
    "mem0": ConditionSource(
        source="mem0ai 2.0.2, add with inference (its own prompts) and its search", paper=True,
        substitutions=(_EMBEDDER, "vector store: Mem0's FAISS store under local_memory/<run>/",
                       "memory LLM: the profile's memory role in place of DeepSeek-V4-Flash")),
    "memos": ConditionSource(
        source="MemoryOS 2.0.15 (MemCube, textual memory only) as a local server in its own environment",
        paper=True,
        substitutions=(
            "memory type: general_text (Qdrant embedded on disk) in place of tree_text, whose graph "
            "store needs a Neo4j, PolarDB or PostgreSQL server",
            "embedder: the packaged all-MiniLM-L6-v2 through MemOS's sentence_transformer backend in "
            "place of text-embedding-3-small",
            "memory LLM: the profile's memory role (OpenAI-compatible) in place of GPT-5.5")),
    "prefstate": ConditionSource(source="ours (SPEC section 6)", paper=False, taxonomy_aware=True),
    "ours-rag": ConditionSource(source="ours: whole turns in a FAISS index", paper=False),
}
"""Condition name -> its source. Every name in ``MEMORY_BUILDERS`` has one."""


def source_notes(conditions: list[str]) -> list[str]:
    """One note line per listed condition that is ours or substitutes something, in the given order.

    Args:
        conditions: condition names as ``make_memory`` takes them.

    Returns:
        Lines like ``mem0: mem0ai 2.0.2, ...; embedder: ...`` (empty for a condition with nothing to
        say, or an unknown name).
    """
    lines = []
    for name in dict.fromkeys(conditions):
        src = CONDITION_SOURCES.get(name)
        if src is None or (src.paper and not src.substitutions):
            continue
        kind = "taxonomy-aware (ours)" if src.taxonomy_aware else "ours" if not src.paper else src.source
        lines.append(f"{name}: {kind}" + "".join(f"; {s}" for s in src.substitutions))
    return lines
