# Two entry points: `make demo` runs the main job on this machine, `make test` runs the suite.
# Each creates .venv when missing. torch is installed first and pinned to the CPU build on
# this machine's disk: an unpinned torch (or a package that pulls it) fetches a multi-GB CUDA build.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)"
	# deepspeed ships as an sdist; DS_BUILD_OPS=0 builds it pure-Python (ops JIT-compile on use).
	DS_BUILD_OPS=0 $(PIP) install -q -e ".[jobs,test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/wirewise db info

test: $(STAMP)
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	$(PY) tests/benchmarks/run.py

clean:
	rm -rf $(VENV) wirewise.db wirewise.db-wal wirewise.db-shm
