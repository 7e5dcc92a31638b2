"""study.ipynb: ``prdp run`` writes the reproduction code as a notebook beside reproduce.py — the same sections
in cells, each after a short explanation — and, executed by Jupyter's own client (nbclient, an ipykernel of this
interpreter), the notebook of a seeded teaching study writes the results.csv of the run, bit for bit."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from prdp_core.commands.cli import EXIT_OK, main
from prdp_core.review import report
from prdp_core.review.report import OUTPUT_FILES
from prdp_core.review.review_boundary import produce
from prdp_core.study.notebook import study_notebook
from prdp_core.study.reproduction import reproduction_sections

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def jupyter(tmp_path, monkeypatch):
    """A Jupyter environment of the test's own: the kernel ``python3`` is this interpreter's ipykernel, and the
    runtime, data, config and IPython folders are temporary (nothing is written to the user's home)."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}), encoding="utf-8")
    for var, sub in (("JUPYTER_PATH", "jupyter"), ("JUPYTER_DATA_DIR", "jupyter-data"),
                     ("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
                     ("IPYTHONDIR", "ipython")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")  # the machine's cores are shared


def execute(path: Path) -> nbformat.NotebookNode:
    """Run every cell of the notebook at ``path`` in its folder, as *Run All* in Jupyter does; the executed notebook."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
                   ).execute()
    return nb


def test_prdp_run_writes_a_notebook_that_reruns_a_seeded_study_to_its_results_csv(tmp_path, jupyter):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    config = tmp_path / "examples" / "bank_prdp.yaml"  # teaching mode, seeded: the PrDP algorithms, central and local
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "-q"], stdout=out, stderr=err) == EXIT_OK, \
        err.getvalue()
    folder = tmp_path / "out"
    assert "study.ipynb" in OUTPUT_FILES and "study.ipynb" in out.getvalue()
    assert "study.ipynb" in json.loads((folder / ".prdp-outputs.json").read_text())["files"]
    nb = nbformat.read(folder / "study.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    kinds = [c.cell_type for c in nb.cells]
    assert kinds[0] == "markdown" and kinds[1:] == ["markdown", "code"] * (len(kinds) // 2)
    study = report.load_config(config)
    sections = reproduction_sections(study)
    assert len(kinds) == 1 + 2 * len(sections)  # imports, the study, one cell per mechanism, the results
    script = (folder / "reproduce.py").read_text(encoding="utf-8")
    for cell in nb.cells[6::2][:len(study.mechanisms)]:  # each mechanism's cell is the script's code, as it is
        assert cell.source.startswith("# --- mechanism") and cell.source in script
    assert "Mechanism 1: prdp." in nb.cells[5].source and "__file__" not in "".join(c.source for c in nb.cells)

    executed = execute(folder / "study.ipynb")
    assert (folder / "reproduced" / "results.csv").read_bytes() == (folder / "results.csv").read_bytes()
    shown = executed.cells[-1].outputs[-1]  # the last cell shows the results table
    assert shown.output_type == "execute_result" and "estimate" in shown.data["text/plain"]
    assert not (tmp_path / "PWN").exists()


def test_the_notebook_reads_a_relative_data_path_in_its_own_folder(tmp_path, jupyter):
    """A study run on a dataset the app holds (no data file of the run): the notebook reads the config's relative
    path next to itself, as the script reads it next to itself, and reruns the study's results."""
    folder = tmp_path / "nb"
    shutil.copytree(ROOT / "examples" / "file_study", folder)
    study = report.load_config(folder / "study.yaml")  # review mode, seed 1, firms.csv next to the config
    run = report.run_study(study, dataset=report.load_data(study))  # as the Study page runs it: no data file
    assert run.data_file is None
    (folder / "study.ipynb").write_bytes(produce("study.ipynb", run, teaching=run.teaching))
    nb = study_notebook(study)
    assert "Path.cwd() / 'firms.csv'" in nb.cells[4].source and "sys.argv" not in nb.cells[4].source
    execute(folder / "study.ipynb")
    expected = produce("results.csv", run, teaching=run.teaching)
    assert (folder / "reproduced" / "results.csv").read_bytes() == expected
