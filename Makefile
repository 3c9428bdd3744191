# lakectl: every target sets up what it needs itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test check test-fast lint bench clean check-java fuzz

JAR := lakectl/jars/lakectl-spark.jar
JAVA_SOURCES := $(wildcard jvm/src/io/lakectl/spark/*.java)

# The exact versions the tests run with (constraints.txt) within pyproject.toml's ranges.
PIP_INSTALL := $(BIN)/pip install --quiet -c constraints.txt

$(STAMP): pyproject.toml constraints.txt
	@scripts/check-java.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(PIP_INSTALL) -e '.[dev]'
	@touch $(STAMP)

# lakectl's Spark data source; skipped with a warning where there is no JDK.
$(JAR): $(STAMP) $(JAVA_SOURCES) scripts/build-jar.sh
	@scripts/build-jar.sh $(BIN)/python

setup: $(STAMP) $(JAR)

check-java:
	@scripts/check-java.sh

demo: $(STAMP) $(JAR)
	@scripts/demo.sh

# Every test, real servers and kill -9 included. Test files are spread over TEST_WORKERS
# processes (one Spark session each), a file per process; files sharing the Spark servers run on
# one worker, heaviest groups first (tests/conftest.py).
TEST_WORKERS ?= 2

test: $(STAMP) $(JAR)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The inner loop: lint, types and every test that needs no JVM and no server. `java` is replaced
# by one that fails, so a test that would start a JVM here fails instead of running.
FAST_TESTS := env -u JAVA_HOME PATH="$(CURDIR)/tests/support/no_java:$$PATH" \
	$(BIN)/python -m pytest -q -m "not spark and not server"

check: lint
	$(FAST_TESTS) -n $(TEST_WORKERS)

test-fast: $(STAMP)
	$(FAST_TESTS)

# The differential tests of the expression language with a larger budget of random cases than
# the test suite's: FUZZ_EXAMPLES batches of 8 conditions (Spark, Arrow and DuckDB), and
# FUZZ_READS random reads of one table through the data source, the live-row kernel in Spark's
# tasks and Arrow.
FUZZ_EXAMPLES ?= 500
FUZZ_READS ?= 150
fuzz: $(STAMP) $(JAR)
	LAKECTL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) LAKECTL_FUZZ_READS=$(FUZZ_READS) \
		$(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/expr/test_differential_fuzz.py tests/expr/test_three_backends.py

lint: $(STAMP)
	$(BIN)/ruff check lakectl tests bench build_support
	$(BIN)/ruff format --check lakectl tests bench build_support
	$(BIN)/mypy lakectl

bench: $(STAMP) $(JAR)
	$(PIP_INSTALL) -e '.[bench]'
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) $(JAR) warehouse demo-warehouse .pytest_cache build dist
