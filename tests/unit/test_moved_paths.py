"""The old module paths of prdp_core (before its layer packages) keep working for one release: each gives the
very module of its new path, after a DeprecationWarning naming that path (prdp_core/_moved.py)."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import prdp_core
from prdp_core import _moved


def _fresh_import(name: str):
    """Import ``name`` as if for the first time (its old alias dropped from sys.modules; the module it names is
    kept, so no module is loaded twice)."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        if _moved.new_name(key) is not None:
            del sys.modules[key]
    return importlib.import_module(name)


def test_an_old_path_warns_with_the_new_one_and_gives_the_same_module():
    from prdp_core.review import report

    with pytest.warns(DeprecationWarning, match=r"prdp_core\.report moved to prdp_core\.review\.report"):
        old = _fresh_import("prdp_core.report")
    assert old is report and old.__name__ == "prdp_core.review.report"
    assert old.__spec__.name == "prdp_core.review.report"  # its own spec, not the alias's


def test_a_submodule_of_a_moved_package_follows_it_and_from_imports_work():
    from prdp_core.study.config import study

    with pytest.warns(DeprecationWarning, match=r"prdp_core\.study\.config\.study"):
        old = _fresh_import("prdp_core.config.study")
    assert old is study
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from prdp_core.config import load_config  # the package's names through the old path
    assert load_config is importlib.import_module("prdp_core.study.config").load_config


def test_a_monkeypatch_through_the_old_name_patches_the_one_module(monkeypatch):
    from prdp_core.core import limits

    with pytest.warns(DeprecationWarning):
        old = _fresh_import("prdp_core.limits")
    monkeypatch.setattr(old, "MAX_ROWS", 7)
    assert limits.MAX_ROWS == 7


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_every_old_path_resolves_to_its_new_module(old):
    new = importlib.import_module(_moved.MOVED[old])
    with pytest.warns(DeprecationWarning, match=_moved.MOVED[old].replace(".", r"\.")):
        assert _fresh_import(old) is new
    assert prdp_core.__name__ == "prdp_core"


def test_the_dataset_names_stay_on_the_data_package_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from prdp_core.data import Dataset, prepare_dataset
        from prdp_core.data.dataset import Dataset as Moved
    assert Dataset is Moved and callable(prepare_dataset)


def test_a_path_that_never_existed_is_not_found():
    assert _moved.new_name("prdp_core.nothing_here") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("prdp_core.nothing_here")
