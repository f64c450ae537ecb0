# The single entry point: CI calls these same targets.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test test-heavy heavy-list test-all doctest examples bench lint format ci clean

# Create .venv when it is missing and install the package with its extras.
# Re-runs when the dependency files change.
$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,viz,dev,train]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m tf_input.cli demo

# The README's test command: unit tests and docstring examples.
# Two pytest workers (pytest-xdist), a test file each at a time: one
# pytest process keeps about one core busy, so two use a 2-core machine
# (PYTEST_WORKERS=0: one process, no workers). The tests of 4 s or more
# (tests/heavy.txt) run in test-heavy, which CI runs after test.
PYTEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest tests tf_input --doctest-modules -m "not slow and not heavy" \
		-n $(PYTEST_WORKERS) --dist loadfile --durations=20

test-heavy: $(STAMP)
	$(PY) -m pytest tests -m "heavy and not slow" \
		-n $(PYTEST_WORKERS) --dist loadfile --durations=20

# Writes tests/heavy.txt again from the durations of a whole run.
heavy-list: $(STAMP)
	$(PY) -m pytest tests -m "not slow" -n $(PYTEST_WORKERS) --dist loadfile \
		--junitxml=.heavy-report.xml
	$(PY) tests/list_heavy.py .heavy-report.xml
	rm .heavy-report.xml

test-all: $(STAMP)
	$(PY) -m pytest tests tf_input --doctest-modules \
		-n $(PYTEST_WORKERS) --dist loadfile

examples: $(STAMP)
	for f in examples/*.py; do $(PY) $$f || exit 1; done

bench: $(STAMP)
	$(PY) benchmarks/bench_layers.py
	$(PY) benchmarks/bench_tokenizers.py
	$(PY) benchmarks/bench_pipeline.py
	$(PY) benchmarks/bench_block.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

ci: lint test test-heavy examples

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
