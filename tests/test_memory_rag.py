"""ours-rag (our whole-turn store, not the paper's Simple RAG) with the real packaged MiniLM embedder and FAISS.

The store is built through ``make_memory`` with a client of the scripted model over loopback HTTP
(its token counter; the scripted runtime makes the factory choose the packaged embedder).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from mempa_tui.ix.types import IXCall
from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.llm.types import Role
from mempa_tui.memory import (
    MemoryConfigError,
    SessionInfo,
    SnapshotError,
    TurnRecord,
    make_memory,
)
from mempa_tui.memory._embed import EmbedderError, LocalEmbedder, normalise_rows
from mempa_tui.memory._rag import RagMemory
from mempa_tui.memory._vectors import DimensionMismatchError, VectorIndex
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.taxonomy import Context
from mempa_tui.tools import default_registry

START = datetime(2025, 3, 3, 9, 0)
WORLDS = Path(__file__).resolve().parent.parent / "worlds"

# Loading torch and the embedding model the first time takes tens of seconds on a busy 2-core
# machine; the per-test default of 120 s is too tight for the test that loads it.
pytestmark = pytest.mark.timeout(600)

FILLER = [
    "Book the small meeting room for the design review on Thursday afternoon.",
    "Find me a recipe for a vegetarian lasagna for Saturday dinner.",
    "What is the status of the shipment of the new office chairs?",
    "Move my dentist appointment to next week if there is a free slot.",
    "Summarise the three newest papers on battery recycling.",
    "Check the weather in Lisbon for the weekend trip.",
    "Add the cinema tickets for Friday to my calendar.",
    "Order more printer paper for the office.",
]
PREFERENCE = (
    "Please stop asking me before you send routine emails to my team - just send them and tell me afterwards."
)


def turn(i: int, message: str, *, step: str | None = None, context: Context = Context.WORK, reply: str = "Done.") -> TurnRecord:
    return TurnRecord(
        step_id=step or f"A-s{i:02d}",
        context=context,
        at=START + timedelta(days=i),
        turn_index=0,
        user_message=message,
        ix_calls=[IXCall(attribute="autonomy_level", setting="Self-directed")],
        reply=reply,
    )


def session(step: str = "A-s99", probe: bool = False) -> SessionInfo:
    return SessionInfo(step_id=step, context=Context.WORK, at=START + timedelta(days=60), is_probe=probe)


@dataclass
class Setup:
    client: LLMClient
    server: ScriptedModelServer


def _no_calls(request: ScriptedRequest) -> str:
    raise AssertionError(f"ours-rag must not call a model, got a call to {request.model}")


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    async with ScriptedModelServer(_no_calls) as server:
        yield Setup(LLMClient(server.profile(num_retries=0)), server)


def rag(setup: Setup, folder: Path, **options: object) -> RagMemory:
    memory = make_memory("ours-rag", client=setup.client, folder=folder, context_window=16_384, **options)
    assert isinstance(memory, RagMemory)
    return memory


async def test_planted_preference_is_handed_back_at_a_later_decision_point(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    assert memory.embedder.name == "all-MiniLM-L6-v2" and memory.embedder.dim == 384
    for i, text in enumerate(FILLER[:4]):
        await memory.write(turn(i, text))
    await memory.write(turn(4, PREFERENCE, reply="Understood, I will send them directly from now on."))
    for i, text in enumerate(FILLER[4:], start=5):
        await memory.write(turn(i, text))

    evidence = await memory.retrieve("Send the weekly status email to my team about the release.", session())

    assert evidence.items, "a non-empty store must return results"
    top = evidence.items[0]
    assert PREFERENCE in top.text
    assert top.score is not None and 0.0 < top.score <= 1.0
    assert PREFERENCE in evidence.system_text
    scores = [i.score or 0.0 for i in evidence.items]
    assert scores == sorted(scores, reverse=True)
    assert memory.inspect().last_evidence == evidence
    # the raw conversation of earlier sessions is carried outside probes, not inside them
    assert len(evidence.prior_messages) == 2 * 9
    probe = await memory.retrieve("Send the weekly status email to my team about the release.", session(probe=True))
    assert probe.prior_messages == [] and probe.items == evidence.items


async def test_empty_store_returns_nothing(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    evidence = await memory.retrieve("anything at all", session())
    assert evidence.items == [] and evidence.system_text == "" and evidence.prior_messages == []


async def test_top_ten_within_token_budget_and_current_step_left_out(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    for i in range(14):
        await memory.write(turn(i, f"{FILLER[i % len(FILLER)]} (request number {i})"))
    await memory.write(turn(20, "Send the email to the team now.", step="A-s99"))
    evidence = await memory.retrieve("Send the email to the team.", session("A-s99"))
    assert len(evidence.items) == 10
    assert all("A-s99" not in item.text for item in evidence.items)

    small = rag(setup, tmp_path / "small", evidence_tokens=60)
    for i in range(6):
        await small.write(turn(i, FILLER[i]))
    limited = await small.retrieve("Send the email to the team.", session())
    assert 0 < len(limited.items) < 6
    assert sum(setup.client.count_tokens(item.text) for item in limited.items) <= 60


async def test_duplicate_writes_do_not_duplicate_results(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    record = turn(1, PREFERENCE)
    await memory.write(record)
    await memory.write(record)
    await memory.write(record.model_copy(deep=True))
    evidence = await memory.retrieve("send emails to my team", session())
    assert len(evidence.items) == 1
    stats = memory.inspect().stats
    assert stats["turns_stored"] == 1 and stats["duplicate_writes"] == 2


async def test_raw_conversation_trimmed_at_the_limit(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag", trim_at_tokens=300, trim_to_tokens=150)
    for i in range(12):
        await memory.write(turn(i, f"{FILLER[i % len(FILLER)]} {'more detail ' * 5}"))
    evidence = await memory.retrieve("Book a room", session())
    stats = memory.inspect().stats
    assert stats["turns_trimmed"] > 0
    assert stats["window_tokens"] <= 300
    assert len(evidence.prior_messages) == 2 * stats["window_turns"] < 24
    # the trimmed turns are still in the store and retrievable
    assert stats["turns_stored"] == 12
    oldest = await memory.retrieve(FILLER[0], session())
    assert any("A-s00" in item.text for item in oldest.items)


async def test_probe_restores_a_copy_and_leaves_the_store_exactly_as_it_was(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "run")
    for i, text in enumerate(FILLER[:5]):
        await memory.write(turn(i, text))
    before = memory.snapshot()
    before_files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}

    branch = rag(setup, tmp_path / "probe")
    branch.restore(before)
    assert branch.snapshot() == before
    await branch.write(turn(30, "Probe-only message that must not leak back.", step="P-01"))
    assert len((await branch.retrieve("probe-only message", session(probe=True))).items) == 6

    assert memory.snapshot() == before
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before_files
    assert len((await memory.retrieve("probe-only message", session())).items) == 5
    branch.restore(before)
    assert branch.snapshot() == before


async def test_bad_snapshot_is_refused_with_the_field(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    with pytest.raises(SnapshotError, match="ours-rag: bad snapshot at"):
        memory.restore(b'{"system": "file"}')


class TinyEmbedder:
    """A deterministic 8-dimensional embedder standing in for a changed model."""

    name = "tiny-8"
    dim = 8

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[float((hash(t) >> k) & 7) + 1.0 for k in range(8)] for t in texts]
        return normalise_rows(np.asarray(rows))


async def test_changed_embedding_model_names_both_dimensions(setup: Setup, tmp_path: Path) -> None:
    memory = rag(setup, tmp_path / "rag")
    await memory.write(turn(0, FILLER[0]))
    other = RagMemory(TinyEmbedder(), tmp_path / "other")
    with pytest.raises(DimensionMismatchError) as info:
        other.restore(memory.snapshot())
    assert "384" in str(info.value) and "8 dimensions" in str(info.value)
    assert "all-MiniLM-L6-v2" in str(info.value) and "tiny-8" in str(info.value)

    index = VectorIndex(384, "all-MiniLM-L6-v2")
    with pytest.raises(DimensionMismatchError, match="384-dimensional.*8-dimensional"):
        index.add([0], await TinyEmbedder().embed(["x"]), "tiny-8")


def test_local_embedder_is_cached_and_normalised() -> None:
    first, second = LocalEmbedder(), LocalEmbedder()
    assert first._model is second._model
    vectors = first.embed_sync(["short replies please", "no"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embedder_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from mempa_tui.memory._embed import EMBED_THREADS_ENV, _set_torch_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv(EMBED_THREADS_ENV, raising=False)
        _set_torch_threads()
        assert torch.get_num_threads() == 1
        monkeypatch.setenv(EMBED_THREADS_ENV, "2")
        _set_torch_threads()
        assert torch.get_num_threads() == 2
        monkeypatch.setenv(EMBED_THREADS_ENV, "zero")
        with pytest.raises(EmbedderError, match=r"MEMPA_EMBED_THREADS='zero': expected a whole number"):
            _set_torch_threads()
    finally:
        torch.set_num_threads(before)


async def test_factory_rejects_bad_options(setup: Setup, tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="unknown option"):
        make_memory("ours-rag", client=setup.client, folder=tmp_path, bogus=1)
    with pytest.raises(MemoryConfigError, match="top_k must be an integer"):
        make_memory("ours-rag", client=setup.client, folder=tmp_path, top_k="ten")
    with pytest.raises(MemoryConfigError, match="embedder must be"):
        make_memory("ours-rag", client=setup.client, folder=tmp_path, embedder="cloud")
    with pytest.raises(MemoryConfigError, match="names no 'embedder' role"):
        make_memory("ours-rag", client=None, folder=tmp_path, embedder="profile")
    with pytest.raises(MemoryConfigError, match="must be below"):
        make_memory("ours-rag", client=setup.client, folder=tmp_path, trim_at_tokens=100, trim_to_tokens=200)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_user_a_slice_with_ours_rag(tmp_path: Path) -> None:
    """``mempa run --memory ours-rag`` over User A's slice: every step and probe completes, and
    retrieved turns reach the PA's prompt at the probes (which carry no raw conversation)."""
    bundle = load_user(WORLDS, "A").sliced()
    async with ScriptedModelServer(RolePlayer()) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user="A", profile="scripted", memory="ours-rag", repeats=1, worlds_dir=WORLDS, slice=True)
        async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=tmp_path / "local_memory", resamples=200).run()
            steps = await store.steps(outcome.run_id)
            results = await store.probe_results(outcome.run_id)
        pa_prompts = [m.content for r in server.requests if r.model.endswith("-pa") for m in r.messages if m.role == "system"]
    assert outcome.status is RunStatus.COMPLETED
    assert [s.step_id for s in steps] == bundle.timeline.steps
    assert {s.status for s in steps} == {"completed"}
    assert len(results) == len(bundle.probes) and {r.status for r in results} == {"completed"}, [
        (r.probe_id, r.status, r.reason) for r in results if r.status != "completed"
    ]
    assert any("Earlier conversation turns similar to the user's message" in p for p in pa_prompts)
    store_folder = tmp_path / "local_memory" / outcome.run_id
    assert any(store_folder.rglob("index.faiss")) and any(store_folder.rglob("turns.jsonl"))
    assert outcome.report is not None


@pytest.mark.parametrize("model", ["openai/scripted-embedder", "ollama/scripted-embedder"])
async def test_profile_embedder_role_through_litellm(model: str, tmp_path: Path) -> None:
    """The profile's embedder role is called over HTTP (OpenAI and Ollama wires); a store it built
    refuses to load under the packaged 384-dimensional model, naming both dimensions."""
    async with ScriptedModelServer(_no_calls) as server:
        client = LLMClient(server.profile({Role.EMBEDDER: model}, num_retries=0))
        memory = rag(Setup(client, server), tmp_path / "profile", embedder="profile")
        assert memory.embedder.name == model
        await memory.write(turn(0, "Book the meeting room for the review"))
        await memory.write(turn(1, "Order printer paper"))
        evidence = await memory.retrieve("printer paper order", session())
        assert server.embed_requests and memory.embedder.dim == server.embedding_dim == 16
        assert "Order printer paper" in evidence.items[0].text
        assert any(call.role is Role.EMBEDDER and call.ok for call in client.calls)
        local = RagMemory(LocalEmbedder(), tmp_path / "local")
        with pytest.raises(DimensionMismatchError) as info:
            local.restore(memory.snapshot())
        assert "16 dimensions" in str(info.value) and "384 dimensions" in str(info.value)


async def test_restore_into_a_profile_embedder_checks_the_model_before_its_first_call(tmp_path: Path) -> None:
    """Issue 15.4: a fresh profile embedder does not know its dimension yet; a snapshot of another
    model is still refused on restore (the model names differ), at the same dimension too, and the
    error names both models and both dimensions (ours: not known before its first call)."""
    async with ScriptedModelServer(_no_calls) as server:
        first = LLMClient(server.profile({Role.EMBEDDER: "openai/scripted-embedder"}, num_retries=0))
        built = rag(Setup(first, server), tmp_path / "built", embedder="profile")
        await built.write(turn(0, "Book the meeting room for the review"))
        snapshot = built.snapshot()
        other = LLMClient(server.profile({Role.EMBEDDER: "ollama/other-embedder"}, num_retries=0))
        fresh = rag(Setup(other, server), tmp_path / "fresh", embedder="profile")
        assert fresh.embedder.dim == 0
        with pytest.raises(DimensionMismatchError) as info:
            fresh.restore(snapshot)  # both would give 16 dimensions: the vectors would mix silently
        message = str(info.value)
        assert "'openai/scripted-embedder' (16 dimensions)" in message
        assert "'ollama/other-embedder' (dimension not known before its first call)" in message
        # a packaged-MiniLM snapshot into a profile store: refused too (the old check waited for the dimension)
        local = RagMemory(LocalEmbedder(), tmp_path / "local")
        await local.write(turn(0, "Order printer paper"))
        with pytest.raises(DimensionMismatchError, match="'all-MiniLM-L6-v2' \\(384 dimensions\\)"):
            rag(Setup(other, server), tmp_path / "fresh2", embedder="profile").restore(local.snapshot())
        # the same model restores, and takes the snapshot's dimension
        same = rag(Setup(first, server), tmp_path / "same", embedder="profile")
        same.restore(snapshot)
        assert same.embedder.dim == 16 and same.snapshot() == snapshot


async def test_write_many_stores_what_single_writes_store(setup: Setup, tmp_path: Path) -> None:
    records = [turn(i, text) for i, text in enumerate(FILLER)]
    one_by_one = rag(setup, tmp_path / "single")
    for record in records:
        await one_by_one.write(record)
    batched = rag(setup, tmp_path / "batched")
    await batched.write_many([*records, records[0]], batch=3)
    assert batched.inspect().stored == one_by_one.inspect().stored
    assert batched.inspect().stats["duplicate_writes"] == 1
    query = "Send the weekly status email to my team."
    single_items = (await one_by_one.retrieve(query, session())).items
    batch_items = (await batched.retrieve(query, session())).items
    assert [i.source for i in batch_items] == [i.source for i in single_items]
    assert [i.score for i in batch_items] == pytest.approx([i.score for i in single_items], abs=1e-3)


def test_a_turn_without_a_reply_embeds_no_empty_assistant_line() -> None:
    from mempa_tui.memory._rag import embedding_text

    rule = TurnRecord(step_id="A-E01", context=Context.WORK, at=datetime(2025, 3, 3, 9, 0), turn_index=2,
                      user_message="From now on, give me a couple of options.", reply="")
    assert embedding_text(rule) == "User: From now on, give me a couple of options."
    assert embedding_text(rule.model_copy(update={"reply": "Will do."})).endswith("\nAssistant: Will do.")


def test_the_plain_text_of_a_turn_without_a_reply_has_no_empty_assistant_line() -> None:
    # as_text feeds File memory's consolidation and the MemOS/Mem0 message builders' neighbours
    rule = TurnRecord(step_id="A-E01", context=Context.WORK, at=datetime(2025, 3, 3, 9, 0), turn_index=2,
                      user_message="From now on, give me a couple of options.", reply="")
    assert "Assistant:" not in rule.as_text()
    assert rule.model_copy(update={"reply": "Will do."}).as_text().endswith("\nAssistant: Will do.")
