"""The embedded model's server process: llama.cpp's own HTTP server through ``xllamacpp``.

Run as ``python -m mempa_tui.llm._llama_server --model PATH --port N [...]`` by
:class:`~mempa_tui.llm.embedded.EmbeddedServer`; it starts llama.cpp's C++ server in this process
(``xllamacpp.Server``: ``/v1/chat/completions``, ``/health``, ``/slots``, ``/metrics``) and keeps it
up until it is sent SIGTERM or SIGINT. A child process, not a thread in mempa, so a crash of the
native code cannot take the run store down with it, and stopping it frees the model's memory.

One process serves every role (SPEC section 7): llama.cpp's host-memory prompt cache
(``--cache-ram-mib``) keeps the evaluated prompts of all roles, so a PA call after a simulator call
re-reads only what changed, instead of three processes each holding a copy of the model. Each flag
maps to one ``xllamacpp.CommonParams`` field (named beside it in :func:`build_params`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["build_params", "main", "parse_args"]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the launcher's flags (see :func:`build_params` for what each sets).

    Raises:
        SystemExit: bad flags (argparse prints which).
    """
    parser = argparse.ArgumentParser(prog="python -m mempa_tui.llm._llama_server")
    parser.add_argument("--model", required=True, help="GGUF path")
    parser.add_argument("--alias", default="", help="model name the server answers to")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, required=True, help="context tokens per slot")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--parallel", type=int, default=1, help="slots (requests decoded together)")
    parser.add_argument("--cache-ram-mib", type=int, default=4096, help="host-memory prompt cache; 0: off")
    parser.add_argument("--slot-save-path", default="", help="folder for saved slot KV states; empty: off")
    parser.add_argument("--n-batch", type=int, default=2048)
    parser.add_argument("--n-ubatch", type=int, default=512)
    parser.add_argument("--flash-attn", choices=["auto", "on", "off"], default="auto")
    parser.add_argument("--ctx-checkpoints", type=int, default=8)
    parser.add_argument("--slot-prompt-similarity", type=float, default=0.1,
                        help="share of a request a slot's prefix must cover to skip the host cache; 1.0: never skip it")
    parser.add_argument("--verbosity", type=int, default=0)
    return parser.parse_args(list(argv))


def build_params(args: argparse.Namespace) -> Any:
    """The ``xllamacpp.CommonParams`` for parsed flags.

    ``n_ctx`` is the whole KV size: llama.cpp splits it between the slots, so it is ``--n-ctx``
    times ``--parallel`` (each slot gets the window the profile asks for).

    Raises:
        ImportError: xllamacpp is not installed.
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.n_ctx * args.parallel
    params.kv_unified = False  # each slot its own window, so one probe cannot crowd out another
    params.cont_batching = True
    params.cache_prompt = True
    params.cache_ram_mib = args.cache_ram_mib
    params.cache_idle_slots = True
    params.slot_prompt_similarity = args.slot_prompt_similarity
    # llama.cpp joins this and a file name with no separator of its own
    params.slot_save_path = args.slot_save_path.rstrip("/") + "/" if args.slot_save_path else ""
    params.n_ctx_checkpoints = args.ctx_checkpoints
    params.n_batch = args.n_batch
    params.n_ubatch = args.n_ubatch
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.flash_attn_type = {
        "auto": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO,
        "on": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED,
        "off": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED,
    }[args.flash_attn]
    params.use_jinja = True
    params.endpoint_slots = True
    params.endpoint_metrics = True
    params.n_gpu_layers = 0
    params.warmup = False
    params.verbosity = args.verbosity
    return params


def main(argv: Sequence[str] | None = None) -> int:
    """Start the server and block until SIGTERM/SIGINT; returns the exit code (0 on a signal)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import xllamacpp
    except ImportError:
        print('xllamacpp is not installed, so the embedded model cannot run; install the embedded extra: '
              'pip install -e ".[embedded]"', file=sys.stderr)
        return 3
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = xllamacpp.Server(build_params(args))
    print(f"llama.cpp server listening on {server.listening_address}", flush=True)
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
