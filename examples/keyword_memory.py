"""A tiny keyword memory: the reference plugin for ``mempa run --memory examples.keyword_memory:KeywordMemory``.

It keeps every turn it is given and, for each PA turn, hands back the stored turns of the same
context that share the most words with the user's message. Copy it and make it yours; the
contract is in docs/memory-plugins.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mempa_tui.memory import Evidence, EvidenceItem, MemoryInspection, SessionInfo, TurnRecord

__version__ = "0.1.0"

_WORD = re.compile(r"[a-z0-9']{3,}")
_COMMON = frozenset("the and for you your with this that have from are was can will would please about".split())


def keywords(text: str) -> set[str]:
    """Lower-case words of three letters or more, less a few very common ones."""
    return set(_WORD.findall(text.lower())) - _COMMON


class KeywordMemory:
    """Stores turns as text; retrieves the ``top_k`` with the most words in common (ties: newest)."""

    def __init__(self, folder: Path, *, top_k: int = 5) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        self.folder, self.top_k = Path(folder), top_k
        self.turns: list[dict[str, str]] = []  # {"context", "text"}, oldest first
        self.last: Evidence | None = None

    async def write(self, record: TurnRecord) -> None:
        self.turns.append({"context": record.context.value, "text": record.as_text()})

    async def retrieve(self, user_message: str, session: SessionInfo) -> Evidence:
        wanted = keywords(user_message)
        scored = [(len(wanted & keywords(t["text"])), i) for i, t in enumerate(self.turns)
                  if t["context"] == session.context.value]
        best = sorted((s for s in scored if s[0] > 0), reverse=True)[: self.top_k]
        items = [EvidenceItem(text=self.turns[i]["text"], score=float(n), source=f"turn-{i}") for n, i in best]
        text = "\n\n".join(f"[{n}] {item.text}" for n, item in enumerate(items, 1))
        self.last = Evidence(system_text=f"Earlier turns that share words with this message:\n{text}" if items else "",
                             items=items)
        return self.last

    def snapshot(self) -> bytes:
        return json.dumps({"turns": self.turns}).encode("utf-8")

    def restore(self, data: bytes) -> None:
        self.turns = list(json.loads(data.decode("utf-8"))["turns"])

    def inspect(self) -> MemoryInspection:
        return MemoryInspection(system=f"keyword memory {__version__}", stored=[t["text"] for t in self.turns[-20:]],
                                last_evidence=self.last, stats={"turns": float(len(self.turns))})
