"""Hostile inputs in the app. A hostile shared study: the Study page loads it (with its hostile data
file), and the report's reproduce.py and study.ipynb and every page's "Reproduce in Python" code run nothing but the
intended calls. A YAML alias bomb pasted on the Study page is refused before anything is expanded; a
Parquet upload with nested columns is refused with a message."""

from __future__ import annotations

import json
import tracemalloc

import yaml

from tests.hostile import SENTINEL, assert_user_text_only_in_literals, hostile_config, run_python, write_hostile_data
from ui.reproduce import INCOMPLETE

from .conftest import open_page, texts

PAGES = ("data", "policy_designer", "budget_functions", "personalized", "tradeoffs", "run", "analyst_tiers",
         "concepts", "study")


def _load_hostile(tmp_path):
    data = write_hostile_data(tmp_path / "shared")
    cfg = hostile_config(data)
    # the histogram lab on the hostile columns, with typed public categories
    cfg["app"] = {"concepts": {"hl_source": "dataset", "hl_columns": [data.group, data.label],
                               "hl_declared_columns": [data.group, data.label],
                               "hl_declared_categories": [", ".join(data.groups), ", ".join(data.labels)]}}
    at = open_page("study")
    at.text_area(key="study_paste").set_value(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False)).run()
    at.file_uploader(key="study_data_upload").set_value((data.filename, data.parquet_bytes(),
                                                         "application/octet-stream")).run()
    at.button(key="study_load_paste").click().run()
    assert not at.exception, at.exception
    assert "Loaded the study" in texts(at), texts(at)
    return at, data


def test_hostile_study_report_script_and_every_snippet_run_only_the_study(tmp_path):
    at, data = _load_hostile(tmp_path)
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    assert "Report built" in texts(at), texts(at)
    script = at.session_state["study_outputs"]["script"].decode("utf-8")
    assert_user_text_only_in_literals(script)
    assert repr(data.filename) in script and repr(f"Study of {data.filename}") in script  # the hostile text is there
    assert "prdp.parse_budget(" in script and "mt.tiers_from(" in script and "personalized.spec_from_labels(" in script
    (data.folder / "reproduce.py").write_text(script, encoding="utf-8")  # downloaded next to the shared data
    run_python(data.folder / "reproduce.py", data.folder, str(tmp_path / "again"))
    assert (tmp_path / "again" / "results.csv").stat().st_size > 0
    # the notebook: the same code in cells (user text only as literals), Markdown cells of the product's text only
    nb = json.loads(at.session_state["study_outputs"]["notebook"].decode("utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    assert_user_text_only_in_literals("\n\n".join(code))
    assert SENTINEL not in json.dumps([c["source"] for c in nb["cells"] if c["cell_type"] == "markdown"])
    (data.folder / "notebook.py").write_text("\n\n".join(code) + "\n", encoding="utf-8")  # next to the data
    run_python(data.folder / "notebook.py", data.folder)
    assert (data.folder / "reproduced" / "results.csv").read_bytes() == \
        (tmp_path / "again" / "results.csv").read_bytes()

    ran = set()
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        for i, block in enumerate(c for c in at.code if c.language == "python"):
            code = block.value
            assert code != INCOMPLETE, f"{page} shows no code for the loaded study"
            assert_user_text_only_in_literals(code)
            if "study.yaml" in code:  # the Study page's fixed example reads a config file by that name
                continue
            path = tmp_path / f"{page}_{i}.py"
            path.write_text(code, encoding="utf-8")
            run_python(path, data.folder)
            ran.add(page)
    assert ran == set(PAGES) - {"study"}
    assert not (data.folder / SENTINEL).exists()


def test_yaml_alias_bomb_pasted_on_the_study_page_is_refused_before_expansion():
    lol = "".join(f"l{i}: &l{i} [{', '.join(['*l' + str(i - 1)] * 9) if i else 'x, x, x, x, x, x, x, x, x'}]\n"
                  for i in range(9))
    bomb = f"version: 1\ndata: {{sample: cbp_like}}\n{lol}seed: *l8\n"
    assert len(bomb.encode()) < 600
    at = open_page("study")
    before = at.session_state["dataset"]
    at.text_area(key="study_paste").set_value(bomb).run()
    tracemalloc.start()
    at.button(key="study_load_paste").click().run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not at.exception, at.exception
    msg = at.session_state["study_msg"]
    # stored messages are Markdown-escaped (user text in them is never rendered as Markdown)
    assert msg["kind"] == "error" and "anchor (&l0) at line 3" in msg["text"].replace("\\", ""), msg
    assert at.session_state["dataset"] is before and "Nothing was changed" in texts(at)
    assert peak < 300e6  # loose: the refusal comes while reading, before any alias is resolved


def test_a_parquet_upload_with_nested_columns_is_refused_with_a_message(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0], "tags": [["a"], ["b", "c"], []]}), path)
    at = open_page("data")
    before = at.session_state["dataset"]
    at.file_uploader(key="upload").set_value(("nested.parquet", path.read_bytes(), "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert any("Columns of a type the app cannot use: tags (" in str(e.value).replace("\\", "")
               for e in at.error), texts(at)
    assert at.session_state["dataset"] is before
