"""Create MemOS's own virtual environment now: ``python -m mempa_tui.memory.memos_setup``.

mempa creates it on the first MemOS run anyway (:func:`~mempa_tui.memory._memos.ensure_memos_env`);
this does it ahead of time and prints the environment's Python. Exit 1 with the reason on failure.
"""

from __future__ import annotations

import sys

from mempa_tui.memory._memos import MemosError, ensure_memos_env


def main() -> int:
    """Create (or check) MemOS's environment; 0 when it is ready."""
    try:
        print(ensure_memos_env())
    except MemosError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
