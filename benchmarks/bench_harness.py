"""Harness overhead: a whole user run on a zero-latency scripted model (SPEC section 7).

Plays the user's timeline, then every probe x repeat, with the scripted model of
``mempa_tui.llm.scripted_roles`` answering over real HTTP on loopback through litellm, and prints
wall time, model calls and time per step/probe. Tests never assert timings; this script prints them.

    python benchmarks/bench_harness.py --user A --repeats 3 [--profile-out harness.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import anyio

from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.llm.scripted_roles import RolePlayer
from mempa_tui.runner import RunConfig, Runner
from mempa_tui.store import RunStore
from mempa_tui.tools import default_registry


async def _run(user: str, repeats: int, memory: str, worlds: Path, root: Path) -> None:
    async with ScriptedModelServer(RolePlayer()) as server:
        client = LLMClient(server.profile(context_window=131072))
        config = RunConfig(user=user, profile="scripted", memory=memory, repeats=repeats, worlds_dir=worlds)
        async with RunStore(root / "saves" / "mempa.sqlite") as store:
            start = time.perf_counter()
            outcome = await Runner(config, store, client, default_registry(),
                                   memory_root=root / "local_memory").run()
            wall = time.perf_counter() - start
            steps = await store.steps(outcome.run_id)
            probes = await store.probe_results(outcome.run_id)
    calls = len(client.calls)
    print(f"user {user}, memory {memory}, repeats {repeats}")
    print(f"  steps {len(steps)}, probe runs {len(probes)}, model calls {calls}")
    print(f"  wall {wall:.1f} s; {wall / max(1, len(steps) + len(probes)):.2f} s per step or probe; "
          f"{1000 * wall / max(1, calls):.1f} ms per model call (zero-latency model)")
    print(f"  status {outcome.status.value}; outcomes scored {outcome.report.outcomes if outcome.report else 0}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="A")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory", default="file")
    parser.add_argument("--worlds", type=Path, default=Path("worlds"))
    parser.add_argument("--profile-out", type=Path, help="write cProfile stats here and print the top")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        job = lambda: anyio.run(_run, args.user, args.repeats, args.memory, args.worlds, Path(tmp))  # noqa: E731
        if args.profile_out:
            cProfile.runctx("job()", globals(), {"job": job}, str(args.profile_out))
            pstats.Stats(str(args.profile_out)).sort_stats("cumulative").print_stats(30)
        else:
            job()


if __name__ == "__main__":
    main()
