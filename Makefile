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

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)"
	# deepspeed ships as an sdist; DS_BUILD_OPS=0 builds it pure-Python (ops JIT-compile on use).
	DS_BUILD_OPS=0 $(PIP) install -q -e ".[jobs,test]"
	touch $(STAMP)

install: $(STAMP)

# The main job on this machine: wiring, collectives, two strategies, what was stored.
# Uses the GPUs here through NCCL when there are any, else CPU ranks through gloo.
demo: $(STAMP)
	@echo "== 1/4 wiring of this node"
	-@$(WW) topo save && $(WW) topo show
	@echo "== 2/4 collectives: all_reduce, all_gather, reduce_scatter, 1M..64M"
	$(WW) bench collectives -b 1M -e 64M -f 4 --check
	@echo "== 3/4 training: tiny-mistral, ddp then fsdp"
	@ranks=$$(n=$$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$$n" = 1 ] && echo 1 || echo 2); \
	for strategy in ddp fsdp; do $(WW) bench train --model tiny-mistral --strategy $$strategy --nproc $$ranks --steps 5 || exit; done
	@echo "== 4/4 stored in the database"
	$(WW) db info

test: $(STAMP)
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	$(PY) tests/benchmarks/run.py

clean:
	rm -rf $(VENV) wirewise.db wirewise.db-wal wirewise.db-shm
