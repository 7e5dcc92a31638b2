"""The ``prdp`` command line: its commands, exit codes and the board, ledger and suggestion commands.

The top layer of prdp_core (docs/architecture.md, *Layers*).
"""
