# lakectl: every target sets up what it needs itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint bench clean check-java

$(STAMP): pyproject.toml
	@scripts/check-java.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

check-java:
	@scripts/check-java.sh

demo: $(STAMP)
	@scripts/demo.sh

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not spark"

lint: $(STAMP)
	$(BIN)/ruff check lakectl tests bench
	$(BIN)/ruff format --check lakectl tests bench
	$(BIN)/mypy lakectl

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) warehouse demo-warehouse .pytest_cache
