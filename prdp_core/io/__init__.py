"""Files and text the engine writes: safe CSV, output folders, private files, terminal-safe text, HTML parts.

Above the privacy core, below data intake (docs/architecture.md, *Layers*).
"""
