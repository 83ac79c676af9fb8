# Two entry points: `make demo` runs the main job on this machine, `make test` runs the suite.
# Each creates .venv when missing. torch is installed first and pinned to the CPU build on
# this machine's disk: an unpinned torch (or a package that pulls it) fetches a multi-GB CUDA build.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
WW     := $(VENV)/bin/wirewise
# pytest-xdist workers for make test; each Slurm test cluster's tests run on one of them (tests/conftest.py).
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: demo test bench bench-scale install clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)"
	# deepspeed ships as an sdist; DS_BUILD_OPS=0 builds it pure-Python (ops JIT-compile on use).
	DS_BUILD_OPS=0 $(PIP) install -q -e ".[jobs,test]"
	touch $(STAMP)

install: $(STAMP)

# The main job on this machine: a campaign (docs/campaigns/demo.yaml) through the local executor,
# the collectives and the five strategies on the best-connected GPU pair here (one GPU: 1 rank),
# or on two CPU ranks without a GPU; then what was stored. Each run is a new campaign.
demo: $(STAMP)
	@echo "== wiring of this node"
	@$(WW) topo save 2>/dev/null && $(WW) topo show || echo "no NVIDIA GPU or driver here: the demo runs on CPU ranks"
	@name=demo-$$(date +%Y%m%d-%H%M%S); \
	gpus=$$(n=$$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$$n" = 1 ] && echo 1 || echo 2); \
	echo "== campaign $$name: collectives and five strategies, $$gpus rank(s)"; \
	$(WW) campaign submit docs/campaigns/demo.yaml --executor local --name $$name --gpus $$gpus && \
	echo "== stored in the database: campaign $$name" && $(WW) results --campaign $$name --include-cpu && \
	echo "== where the data went (wirewise config show; docs/configuration.md)" && $(WW) config show db runs

test: $(STAMP)
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup

bench: $(STAMP)
	$(PY) tests/benchmarks/run.py

# Every fleet-wide command at 1,250 and 12,500 simulated nodes on SQLite and PostgreSQL, with the
# growth between them (tests/benchmarks/scale_bench.py; docs/scale.md). The fleets are built once
# into WIREWISE_SCALE_DATA (default /work/scale-data; one scale's into WIREWISE_SCALE_DATA_12500 or
# _1250 where set) and kept. SCALE=1250, DATABASES=sqlite: part of it.
bench-scale: $(STAMP)
	$(PY) tests/benchmarks/scale_bench.py

clean:
	rm -rf $(VENV)
