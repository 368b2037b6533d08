# iosets: `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
C_SOURCES := $(wildcard iosets/replay/src/*.c iosets/replay/src/*.h iosets/arbiter/src/*.c iosets/arbiter/src/*.h)

.PHONY: demo test test-timing lint test-asan bench docs clean clients

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

test: $(VENV)/.installed-test clients
	$(BIN)/python -m pytest

# The plain-C programs: the arbiter's client library (build/libiosets_arbiter.a, header in
# iosets/arbiter/client/) and the periodic I/O benchmark (build/periodic). `iosets validate` builds
# its own copy on first use; these are for your own programs and runs (flags: iosets/validate/_build.py).
CC ?= cc
CLIENT_CFLAGS := -O2 -std=c11 -Wall -Wextra
CLIENT_DIR := iosets/arbiter/client

clients: build/libiosets_arbiter.a build/periodic

build/iosets_arbiter.o: $(CLIENT_DIR)/iosets_arbiter.c $(CLIENT_DIR)/iosets_arbiter.h
	mkdir -p build
	$(CC) $(CLIENT_CFLAGS) -c $< -o $@

build/libiosets_arbiter.a: build/iosets_arbiter.o
	ar rcs $@ $^

build/periodic: iosets/validate/src/periodic.c build/libiosets_arbiter.a
	$(CC) $(CLIENT_CFLAGS) -I $(CLIENT_DIR) $< build/libiosets_arbiter.a -o $@ -lm

# The tests marked timing (they wait on time, a thread, a process or a socket), 20 times in a row:
# a race that passes once in a while fails here, at its first failure (pytest-repeat's --count).
# Only the files that hold such tests are collected (20 copies of the whole suite take minutes to collect).
TIMING_FILES = $(shell grep -rlE "mark\.timing" tests --include="test_*.py")
test-timing: $(VENV)/.installed-test clients
	$(BIN)/python -m pytest $(TIMING_FILES) -m timing --count 20 -x -q -p no:randomly

# ruff (lint + format check) and mypy over the package (the C extension is typed by its .pyi stub).
lint: $(VENV)/.installed-test
	$(BIN)/ruff check iosets tests benchmarks
	$(BIN)/ruff format --check iosets tests benchmarks
	$(BIN)/mypy

# The C core under AddressSanitizer + UBSan, in its own venv, installed (not editable)
# (signals are left to the tests: a darshan-util crash in a worker must stay a SIGSEGV),
# and tested from outside the tree so that the sanitized extension is the one imported.
ASAN_VENV := .venv-asan
test-asan:
	rm -rf build  # an in-tree build left by an editable install would be reused without the sanitizer
	$(PYTHON) -m venv $(ASAN_VENV)
	IOSETS_SANITIZE=1 $(ASAN_VENV)/bin/python -m pip install --quiet ".[test]"
	cd /tmp && LD_PRELOAD=$$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_abort=0:handle_sigbus=0:allocator_may_return_null=1 PYTHONMALLOC=malloc \
		$(CURDIR)/$(ASAN_VENV)/bin/python -m pytest $(CURDIR)/tests -q -m "not slow" -p no:cacheprovider

$(VENV)/.installed-docs: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $@

# The documentation site (mkdocs.yml) into site/, offline; --strict turns every warning into an error.
# Hooks generate the command-line reference, the table formats and the API pages from the code.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/replay_phase.py
	$(BIN)/python benchmarks/replay_requests.py

clean:
	rm -rf $(VENV) $(ASAN_VENV) build *.egg-info iosets/replay/*.so iosets/arbiter/*.so
