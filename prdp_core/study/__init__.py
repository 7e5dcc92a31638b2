"""Studies: the config schema, the runs of each mechanism kind, running a study, its tables and its code.

Above the mechanisms, below the board (docs/architecture.md, *Layers*).
"""
