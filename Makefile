# iosets: `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
C_SOURCES := $(wildcard iosets/replay/src/*.c iosets/replay/src/*.h)

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The package with its C extension (rebuilt when the build files or the C sources change).
$(VENV)/.installed: $(BIN)/python pyproject.toml setup.py $(C_SOURCES)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/iosets demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/replay_phase.py

clean:
	rm -rf $(VENV) build *.egg-info iosets/replay/*.so
