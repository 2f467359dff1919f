"""mempa-tui: run MemPABench (interaction-preference memory for personal agents) offline.

The engine lives in the component packages (taxonomy, world, tools, scripts, simulator, agent, ix,
memory, runner, scoring, store, llm); only :mod:`mempa_tui.tui` imports Textual.
"""

__version__ = "0.1.0"
