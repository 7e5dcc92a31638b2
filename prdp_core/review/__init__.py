"""What leaves a study: the review boundary every output goes through and the HTML report.

Above the board, below the commands (docs/architecture.md, *Layers*).
"""
