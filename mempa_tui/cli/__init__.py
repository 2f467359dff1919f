"""The ``mempa`` command line (argparse); entry point :func:`mempa_tui.cli.main.main`."""
