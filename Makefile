# PrDP Explorer: `make run` starts the app, `make test` runs every test.
# Both install what is missing first (uv bootstrapped with pip if absent) and are idempotent:
# a second call installs nothing unless requirements.lock or pyproject.toml changed.

PYTHON ?= python3
PORT ?= 8501
HOST ?= 127.0.0.1
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.prdp-installed
# A second environment on Python 3.13, from the same lock, for the engine's unit tests (make test-py313)
VENV313 := .venv-py313
STAMP313 := $(VENV313)/.prdp-installed
PYTEST_ARGS ?= -n 2 --dist loadgroup

export UV_COMPILE_BYTECODE := 1
export UV_LINK_MODE := copy

UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(PYTHON) -m uv
endif

.PHONY: run test test-py313 install bench clean lock

install: $(STAMP)

# The editable install maps prdp_core (the only installed package) to the checkout with an import hook;
# it does not put the checkout on sys.path, so the app's ui package is imported from the checkout only
# (Streamlit adds app.py's folder to sys.path; the tests add the checkout in tests/conftest.py).
$(STAMP): requirements.lock pyproject.toml
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@test -x $(VPY) || $(UV) venv --quiet --python 3.11 $(VENV)
	$(UV) pip sync --quiet --python $(VPY) requirements.lock
	$(UV) pip install --quiet --python $(VPY) --no-deps -e .
	@touch $(STAMP)

$(STAMP313): requirements.lock pyproject.toml
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@test -x $(VENV313)/bin/python || $(UV) venv --quiet --python "$$(.ci/find-python 3.13)" $(VENV313)
	UV_COMPILE_BYTECODE=0 $(UV) pip sync --quiet --python $(VENV313)/bin/python requirements.lock  # compiled on import
	UV_COMPILE_BYTECODE=0 $(UV) pip install --quiet --python $(VENV313)/bin/python --no-deps -e .
	@touch $(STAMP313)

run: $(STAMP)
	$(VPY) -m streamlit run app.py --server.address $(HOST) --server.port $(PORT) \
	  --server.headless true --browser.gatherUsageStats false

test: $(STAMP)
	$(VPY) -m ruff check prdp_core ui app_pages app.py tests benchmarks
	$(VPY) -m mypy
	$(VPY) -m pytest $(PYTEST_ARGS)

# The engine's unit tests on Python 3.13 (CI runs them after make test; the wheel test runs the installed
# product on 3.11, 3.12 and 3.13): the mechanisms, studies on the memory and DuckDB engines, configs, loader,
# samples, accounting and the CLI, without the statistical (slow), Spark and browser tests, which make test runs
# on 3.11 with the rest of tests/unit (about 700 of its 2,400 tests, some 90 s of processor time).
PY313_TESTS := tests/unit/granular tests/unit/multitier tests/unit/personalized tests/unit/prdp \
  tests/unit/unit_splitting tests/unit/engines/test_engines_study.py tests/unit/test_config.py \
  tests/unit/test_loader.py tests/unit/test_samples.py tests/unit/test_accounting.py tests/unit/test_noise.py \
  tests/unit/test_cli.py --ignore=tests/unit/prdp/test_imports.py

test-py313: $(STAMP313)
	$(VENV313)/bin/python -m pytest $(PYTEST_ARGS) -m "not slow and not spark and not e2e" $(PY313_TESTS)

bench: $(STAMP)
	$(VPY) benchmarks/run_all.py

# Regenerate the URL-free lock after editing pyproject.toml dependencies. One lock for every supported Python
# (3.11 to 3.13): --universal writes a marker on each pin that differs between them.
lock:
	$(UV) pip compile pyproject.toml --extra dev --universal --python-version 3.11 --quiet -o requirements.lock

clean:
	rm -rf $(VENV) $(VENV313) build dist .pytest_cache .mypy_cache test-artifacts
