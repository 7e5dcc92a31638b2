"""Generated code is data-safe: user text reaches reproduce.py, study.ipynb and every "Reproduce in Python"
snippet only as Python literals, so running a shared study's script or notebook runs nothing but the intended calls.

Hostile titles, labels, expressions, column names, group values and file names (tests/hostile.py:
triple quotes, newlines, carriage returns, #, backslashes, U+2028, U+0085, {}) go through every
generator; the result is checked token by token and run in a subprocess next to the hostile data,
where planted code would create a sentinel file. The app route (Study page, every page's snippet)
is in tests/app/test_hostile_study.py; a generator missing from ``GENERATORS`` fails
``test_every_generator_is_covered``.
"""

from __future__ import annotations

import ast
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml

from prdp_core.commands.cli import EXIT_OK, main
from prdp_core.io.codegen import literal
from prdp_core.io.export import to_csv_bytes
from prdp_core.review import report
from prdp_core.study import config
from tests.hostile import (
    RUN,
    SENTINEL,
    assert_user_text_only_in_literals,
    hostile,
    hostile_config,
    run_python,
    write_hostile_data,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# codegen.literal
# ---------------------------------------------------------------------------


def test_literal_writes_plain_values_that_evaluate_back():
    value = {hostile("k"): [1, 2.5, hostile("v"), (3,), None, True, {"x": (1, 2)}], 7: "\u2028\x85\r\\"}
    text = literal(value)
    assert ast.literal_eval(text) == value
    assert literal(np.float64(2.5)) == "2.5" and literal(np.int64(3)) == "3" and literal(np.str_("a")) == "'a'"
    assert literal(np.array([1, 2])) == "[1, 2]" and literal(()) == "()"
    assert literal(float("nan")) == "float('nan')" and literal(-float("inf")) == "-float('inf')"
    assert "\n" not in literal("a\nb\rc\u2028d\x85e") and literal(float("inf")) == "float('inf')"
    class Sneaky:  # an object whose repr is code
        def __repr__(self):
            return f"{RUN} or 1"

        def __str__(self):
            return "sneaky"

    assert literal(Sneaky()) == "'sneaky'" and literal([Sneaky()]) == "['sneaky']"
    assert literal(pd.Timestamp("2020-01-02")) == "'2020-01-02 00:00:00'"


def test_the_checks_catch_text_outside_literals(tmp_path):
    """Positive control: a naive generator putting a title in the docstring and a label in a comment
    fails both checks (the planted call runs and creates the sentinel)."""
    title, label = 'T"""\n' + RUN + '\n"""', "L\n" + RUN + "  #"
    naive = f'"""Study: {title}."""\nx = 1  # {label}\n'
    for bad in (naive, f'x = f"{{{RUN}}}"\n', f"x = {hostile('P')[:8]!r}\n{RUN}\n"):
        with pytest.raises(AssertionError):
            assert_user_text_only_in_literals(bad)
    script = tmp_path / "naive.py"
    script.write_text(naive, encoding="utf-8")
    with pytest.raises(AssertionError, match="ran planted code"):
        run_python(script, tmp_path)


# ---------------------------------------------------------------------------
# The CLI route: prdp run writes reproduce.py; run it
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_study(tmp_path_factory):
    """A folder with the hostile table and its hostile study config; the study and its dataset."""
    folder = tmp_path_factory.mktemp("hostile")
    data = write_hostile_data(folder)
    (folder / "study.yaml").write_text(yaml.safe_dump(hostile_config(data), allow_unicode=True, sort_keys=False),
                                       encoding="utf-8")
    study = report.load_config(folder / "study.yaml")
    return data, study, config.load_data(study)


def test_prdp_run_writes_a_reproduction_script_that_runs_only_the_study(hostile_study):
    data, study, _ = hostile_study
    folder = data.folder
    out = io.StringIO()
    assert main(["validate", str(folder / "study.yaml")], stdout=out, stderr=out) == EXIT_OK, out.getvalue()
    code = main(["run", str(folder / "study.yaml"), "--out", str(folder / "out"), "-q"], stdout=out, stderr=out)
    assert code == EXIT_OK, out.getvalue()
    script = (folder / "out" / "reproduce.py").read_text(encoding="utf-8")
    assert_user_text_only_in_literals(script)
    assert "TITLE, MODE, SEED = " in script and study.title not in script  # the title only as a literal
    run_python(folder / "out" / "reproduce.py", folder, str(folder / "again"))
    assert (folder / "again" / "results.csv").read_bytes() == (folder / "out" / "results.csv").read_bytes()
    # the normalised study.yaml written next to it reloads to the same study
    assert report.load_config(folder / "out" / "study.yaml").to_dict() == study.to_dict()


def test_prdp_run_writes_a_notebook_whose_cells_run_only_the_study(hostile_study, tmp_path):
    """study.ipynb of the hostile study: user text only as literals in its code cells, none in its Markdown cells or
    metadata; its code, run cell after cell in the notebook's folder, plants nothing and writes the run's
    results.csv."""
    data, study, _ = hostile_study
    out = io.StringIO()
    assert main(["run", str(data.folder / "study.yaml"), "--out", str(tmp_path / "out"), "-q"], stdout=out,
                stderr=out) == EXIT_OK, out.getvalue()
    text = (tmp_path / "out" / "study.ipynb").read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 3 + len(study.mechanisms)
    for source in [*code, "\n\n".join(code)]:
        assert_user_text_only_in_literals(source)
    prose = json.dumps([c.source for c in nb.cells if c.cell_type == "markdown"] + [nb.metadata],
                       ensure_ascii=False)
    assert SENTINEL not in prose and "\\u2028" not in prose and "\u2028" not in prose
    script = tmp_path / "notebook_code.py"  # the cells in order, in the notebook's folder
    script.write_text("\n\n".join(code) + "\n", encoding="utf-8")
    run_python(script, tmp_path / "out")
    assert (tmp_path / "out" / "reproduced" / "results.csv").read_bytes() == \
        (tmp_path / "out" / "results.csv").read_bytes()


def test_reproduction_script_of_each_mechanism_alone(hostile_study, tmp_path):
    """Each mechanism kind on its own (imports and code paths differ), review mode, data from --data."""
    data, study, _ = hostile_study
    for i, mech in enumerate(study.mechanisms):
        one = config.parse_config({**study.to_dict(), "mode": "review", "mechanisms": [mech]}, base_dir=data.folder)
        code = report.reproduction_script(one, data_file=str(data.path))
        assert_user_text_only_in_literals(code)
        script = tmp_path / f"reproduce_{i}.py"
        script.write_text(code, encoding="utf-8")
        run_python(script, data.folder, str(tmp_path / f"out_{i}"))


def test_reproduction_script_of_granular_histograms(hostile_study, tmp_path):
    """The granular kind on hostile attributes, declared categories and label (both histograms): its code
    holds them only as literals and reruns the study's results bit for bit."""
    data, study, _ = hostile_study
    cats = {data.group: list(data.groups), data.label: list(data.labels)}
    one = config.parse_config({**study.to_dict(), "mode": "review", "mechanisms": [
        {"kind": "granular", "attributes": [data.group, data.label], "categories": cats, "eps": 1.0,
         "label": hostile("M6")},
        {"kind": "granular", "histogram": "heavy_hitter", "attributes": [data.group],
         "categories": {data.group: cats[data.group]}, "eps": 2.0, "seed": 4}]}, base_dir=data.folder)
    code = report.reproduction_script(one, data_file=str(data.path))
    assert_user_text_only_in_literals(code)
    assert all(literal(v) in code for v in (data.group, list(data.groups), hostile("M6")))
    script = tmp_path / "reproduce_granular.py"
    script.write_text(code, encoding="utf-8")
    run_python(script, data.folder, str(tmp_path / "out"))
    run = report.run_study(one, data=str(data.path))
    expected = report.results_frame(run.releases, teaching=False)
    assert (tmp_path / "out" / "results.csv").read_bytes() == to_csv_bytes(expected)


# ---------------------------------------------------------------------------
# The app's generators, called with hostile session values
# ---------------------------------------------------------------------------


def _snippets(data, study, ds):
    """Every snippet part of the hostile study, and variants: the local models, generated tiers, review mode,
    the histogram lab on the hostile columns with typed categories, the data read by DuckDB."""
    from prdp_core.study.snippets import PARTS, snippet

    base = study.to_dict()

    def variant(**changes):
        return config.parse_config({**base, **changes}, base_dir=data.folder)

    lab = {"hl_source": "dataset", "hl_columns": [data.group, data.label, data.measure],
           "hl_declared_columns": [data.group, data.label], "hl_declared_categories": [", ".join(data.groups),
                                                                                       hostile("C")]}
    app = {"concepts": lab, "tradeoffs": {"tr_pcts": [90.0], "tr_rhos": [1.0], "tr_min": 1, "tr_fmin": 1,
                                          "tr_solve_min": 1}, "budget_functions": {"bf_scale_trials": 5}}
    full = variant(app=app)
    codes = [snippet(full, part, owner_method="lemma5") for part in PARTS]
    prdp_local = {**next(m for m in base["mechanisms"] if m["kind"] == "prdp"), "model": "local",
                  "threshold": "bernstein"}
    prdp_local.pop("algorithms", None)
    codes.append(snippet(variant(mechanisms=[prdp_local], mode="review"), "budget"))
    codes.append(snippet(variant(mechanisms=[m for m in base["mechanisms"] if m.get("model") == "local"
                                             and m["kind"] == "multitier"]), "multitier"))
    tiers = {**base["policy"], "specification": {"tiers": {"f_c": 0.3}, "seed": 2, "user": data.owner}}
    codes.append(snippet(variant(policy=tiers), "personalized"))
    codes.append(snippet(variant(app={"concepts": {**lab, "hl_domains": "data", "hl_match": "record"}}), "granular"))
    engine = variant(data={**base["data"], "engine": "duckdb"},  # the algorithms an engine can run
                     mechanisms=[{k: v for k, v in m.items() if k != "algorithms"} for m in base["mechanisms"]])
    codes += [snippet(engine, part) for part in ("data", "policy", "run", "budget")]
    codes.append(snippet(engine, "run", data_dir=str(data.folder)))  # the app's data folder, confined to it
    return codes


#: Every generator of code and how this file exercises it with hostile text; helpers that write part of a
#: generator's code are listed with the generator whose output contains theirs.
GENERATORS: dict[str, Callable | str] = {
    "prdp_core.study.reproduction.reproduction_sections":
        "test_prdp_run_writes_a_reproduction_script_that_runs_only_the_study",
    "prdp_core.study.reproduction._data_code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.runs.prdp._budget_code": "prdp_core.study.reproduction.reproduction_sections",
    # each mechanism kind's code (RunConfig.code), written through reproduction.mechanism_code
    "prdp_core.study.runs.unit_splitting.code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.runs.unit_splitting.policy_code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.reproduction.import_lines": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.runs.prdp.code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.runs.multitier.code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.runs.granular.code": "prdp_core.study.reproduction.reproduction_sections",
    "prdp_core.study.snippets.snippet": _snippets,
    "prdp_core.study.snippets._budget_body": "prdp_core.study.snippets.snippet",
    "prdp_core.study.snippets._multitier_body": "prdp_core.study.snippets.snippet",
    "prdp_core.study.snippets._granular_body": "prdp_core.study.snippets.snippet",
    "prdp_core.study.snippets._tradeoffs_body": "prdp_core.study.snippets.snippet",
}

#: What the pages call to show a snippet: ui.reproduce.snippet_code builds the page's study and calls
#: prdp_core.study.snippets.snippet.
PAGE_GENERATORS = {"snippet_code"}

UI_GENERATORS = {k: v for k, v in GENERATORS.items() if callable(v)}


@pytest.mark.parametrize("name", sorted(UI_GENERATORS))
def test_app_generator_writes_user_text_only_as_literals_and_runs(name, hostile_study, tmp_path):
    data, study, ds = hostile_study
    codes = UI_GENERATORS[name](data, study, ds)
    assert any(h in ast.literal_eval(tok) for tok in _string_tokens(codes[0])
               for h in (data.measure, data.filename, data.group)), "no hostile text reached the code: nothing proved"
    for i, code in enumerate(codes):
        assert_user_text_only_in_literals(code)
        script = tmp_path / f"snippet_{i}.py"
        script.write_text(code, encoding="utf-8")
        run_python(script, data.folder)
    assert not (data.folder / SENTINEL).exists()


def _string_tokens(code: str) -> list[str]:
    import tokenize

    return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type == tokenize.STRING and not t.string.lower().startswith(("f", "rf", "fr"))]


# ---------------------------------------------------------------------------
# Every generator is covered
# ---------------------------------------------------------------------------

#: A string that reads as Python source: an import, a prdp_core call, or a call on a module alias the
#: generated scripts use.
CODE_TEXT = re.compile(r"(^|\n)\s*(import \w|from [\w.]+ import )|\bprdp_core\.\w+\(|"
                       r"\b(np|pd|B|P|mt|granular|analysis|prdp|prldp|interpret|accounting|unit_splitting)\.\w+\(")


def _code_writing_functions() -> set[str]:
    """Functions of prdp_core and ui holding a string that reads as code (docstrings and error
    messages left aside)."""
    found = set()
    for base in ("prdp_core", "ui"):
        for path in sorted((ROOT / base).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                skip = {id(n) for r in ast.walk(fn) if isinstance(r, ast.Raise) for n in ast.walk(r)}
                doc = fn.body[0].value if fn.body and isinstance(fn.body[0], ast.Expr) else None
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not doc
                            and id(node) not in skip and CODE_TEXT.search(node.value)):
                        found.add(f"{module}.{fn.name}")
                        break
    return found


def test_every_generator_is_covered():
    found = _code_writing_functions()
    # the scan works
    assert "prdp_core.study.reproduction.reproduction_sections" in found
    assert "prdp_core.study.snippets._budget_body" in found
    missing = found - set(GENERATORS)
    assert not missing, (f"{sorted(missing)} write code: add them to GENERATORS with a hostile-text test "
                         "(user text only through codegen.literal / repr)")
    gone = set(GENERATORS) - found
    assert not gone, f"{sorted(gone)} no longer write code: remove them from GENERATORS"
    for name, how in GENERATORS.items():
        assert callable(how) or how in GENERATORS or how in globals(), name


def test_pages_show_only_generated_or_fixed_code():
    """Every "Reproduce in Python" block of a page is a generator's output or a fixed text (no f-string)."""
    generators = {n.rsplit(".", 1)[1] for n in GENERATORS} | PAGE_GENERATORS
    seen = 0
    for path in sorted((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                    in ("code_expander", "code")):
                continue
            if getattr(node.func, "attr", None) == "code" and not any(
                    k.arg == "language" and getattr(k.value, "value", None) == "python" for k in node.keywords):
                continue  # st.code of a YAML preview
            seen += 1
            arg = node.args[0]
            if isinstance(arg, ast.Constant):
                continue
            assert isinstance(arg, ast.Call), f"{path.name}:{node.lineno} shows code that is not a generator's"
            name = getattr(arg.func, "attr", getattr(arg.func, "id", None))
            assert name in generators, f"{path.name}:{node.lineno} shows code of {name}, which is not in GENERATORS"
    assert seen >= 8
