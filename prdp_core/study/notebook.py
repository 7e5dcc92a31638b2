"""The reproduction notebook of a study, ``study.ipynb``: the code of ``reproduce.py`` in cells, each after a short
explanation, for analysts who work in Jupyter.

The cells are the sections of :func:`prdp_core.study.reproduction.reproduction_sections` (imports, the study and its
data, one cell per mechanism, the results), in the notebook's form of that code: relative paths are read in the
notebook's folder, there are no command-line arguments, and the last cell shows the results table after writing it
to ``reproduced/results.csv`` — for a seeded study, the ``results.csv`` that ``prdp run`` wrote, bit for bit. User
text reaches the code cells only as ``repr`` literals, as in the script; the Markdown cells hold the product's own
text (the sections' headings and the mechanism kinds' names), never a title, label or column name. Cell ids are
numbered, so the same study gives the same file.
"""

from __future__ import annotations

import nbformat

from .config import Study
from .reproduction import reproduction_sections

#: The first cell: what the notebook is.
INTRO = ("# Reproduce a PrDP Explorer study\n\n"
         "Run every cell in order (*Run All*): the study's mechanisms run again with `prdp_core`, with the same seeds, "
         "and the results are written to `reproduced/results.csv` next to this notebook. A file the study reads by "
         "a relative path is read next to the notebook. Seeded runs are for teaching and review only, never for a "
         "real release; a secure mechanism runs again unseeded, so its answers differ.")

#: The notebook's kernel: the Python 3 kernel of the environment that has prdp_core installed.
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def study_notebook(study: Study, *, data_file: str | None = None) -> nbformat.NotebookNode:
    """The reproduction notebook of ``study`` (``data_file``: the data file the run read, as for the script)."""
    cells = [nbformat.v4.new_markdown_cell(INTRO)]
    for section in reproduction_sections(study, data_file=data_file, notebook=True):
        cells.append(nbformat.v4.new_markdown_cell(section.heading))
        cells.append(nbformat.v4.new_code_cell("\n".join(section.lines).strip("\n")))
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC),
                                                         "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


def notebook_text(study: Study, *, data_file: str | None = None) -> str:
    """``study.ipynb`` as the text of its file (nbformat 4 JSON)."""
    return nbformat.writes(study_notebook(study, data_file=data_file)) + "\n"


__all__ = ["INTRO", "KERNELSPEC", "notebook_text", "study_notebook"]
