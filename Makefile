# gpuops.cluster developer loop. `make demo` runs the main job, `make test` runs every test.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
BUILD := $(ROOT)/build
COLL := $(BUILD)/ansible_collections/gpuops/cluster
SANITY := $(BUILD)/sanity/ansible_collections/gpuops/cluster
PYBIN := $(BUILD)/pybin
export PATH := $(BIN):$(PYBIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(BUILD)
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export PYTHONPATH := $(BUILD)
export PYTHONDONTWRITEBYTECODE := 1
PYTEST_ARGS ?=
DEMO_NODES ?= 64

.PHONY: help deps setup lint ruff ansible-lint sanity docs-lint unit package integration molecule test demo demo-noprofiles testbed-up testbed-down bench clean stage sim-example

help:
	@echo "make deps       install Debian packages the tests need (root; apt)"
	@echo "make setup      build .venv and make the collection resolvable as gpuops.cluster"
	@echo "make demo       inspect the built-in simulated cluster and print where the reports are"
	@echo "make demo-noprofiles  the same cluster without hardware profiles (zero-config fleet baseline)"
	@echo "make test       every test: lint, sanity, docs, unit, package, integration, molecule"
	@echo "make package    the Galaxy tarball installed offline into an empty collections path, and the tools package"

deps:
	bash tests/testbed/deps.sh

$(VENV)/.stamp: requirements-dev.txt tools/pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@# the tools package (gpuops-runbook, gpuops-audit, gpuops-sim, gpuops-simnode), not part of the collection build;
	@# it was the distribution gpuops-runbook before issue 14: drop that one so that only one owns the scripts
	$(BIN)/pip uninstall -q -y gpuops-runbook >/dev/null 2>&1 || true
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e tools/ 2>&1 | { grep -v "is ignored: it is neither" || true; }
	touch $@

setup: $(VENV)/.stamp
	mkdir -p $(BUILD)/ansible_collections/gpuops $(PYBIN)
	ln -sfn ../../.. $(COLL)
	@# ansible-test --venv downloads get-pip from a host that is unreachable here: use a local shim
	mkdir -p $(HOME)/.ansible/test/cache
	for v in 24_2 25_2; do cp tests/get_pip_shim.py $(HOME)/.ansible/test/cache/get_pip_$$v.py; done
	@# real interpreters for ansible-test (pyenv shims fail without a global version)
	for v in $$(ls -d $$(pyenv root 2>/dev/null || echo /nonexistent)/versions/3.* 2>/dev/null); do \
	  b=$$(basename $$v); ln -sfn $$v/bin/python$${b%.*} $(PYBIN)/python$${b%.*}; done
	@echo "setup done: collection at $(COLL)"

ruff:
	$(BIN)/ruff check plugins tests tools bench
	$(BIN)/ruff format --check plugins tools || { echo "run: .venv/bin/ruff format plugins tools"; exit 1; }

ansible-lint:
	$(BIN)/ansible-lint --offline -q

lint: ruff ansible-lint

# ansible-test needs a real .../ansible_collections/gpuops/cluster path: stage the tracked tree there.
# (files are overwritten, not wiped, so a concurrent sanity run in the staged tree survives; `make clean` wipes it)
stage:
	mkdir -p $(SANITY)
	@# what the collection ships: galaxy.yml's build_ignore (tools/, bench/, .ci/) is not part of it
	@# (.venv: a worktree's symlink to a shared venv is no directory, so .gitignore's `.venv/` does not hide it)
	git ls-files -co --exclude-standard | grep -v -E '^(tools|bench|\.ci)/|^\.venv$$' | while read -r f; do [ -e "$$f" ] && echo "$$f"; done > $(BUILD)/sanity-files.txt
	tar -cf - -T $(BUILD)/sanity-files.txt | tar -xf - -C $(SANITY)
	@# a file moved or deleted in the tree must not linger in the staged copy (it would be sanity-tested as shipped)
	cd $(SANITY) && find . -path ./.git -prune -o -path ./tests/output -prune -o \( -type f -o -type l \) -print | sed 's|^\./||' | sort \
	  | comm -23 - <(sort $(BUILD)/sanity-files.txt) | while read -r f; do rm -f -- "$$f"; done
	cd $(SANITY) && find . -path ./.git -prune -o -path ./tests/output -prune -o -type d -empty -print | xargs -r rmdir -p --ignore-fail-on-non-empty 2>/dev/null || true
	@# its own git repo, so ansible-test does not see the outer repo (where build/ is ignored)
	cd $(SANITY) && { [ -d .git ] || git init -q .; } && { git add -A >/dev/null 2>&1 || true; }

sanity: stage
	cd $(SANITY) && ansible-test sanity --venv --python 3.11 --color no $(SANITY_ARGS)
	cd $(SANITY) && ansible-test sanity --venv --python 3.8 --test compile --test import --color no

docs-lint:
	$(BIN)/antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck $(COLL)
	$(BIN)/antsibull-changelog lint

# the store tests need a PostgreSQL server: with-pg.sh starts one unless run-stages.sh already did (once per run)
unit:
	bash tests/testbed/pg/with-pg.sh $(BIN)/pytest tests/unit -n 2 $(PYTEST_ARGS)

# What a user gets (docs/install.md): the Galaxy tarball built, checked and installed offline with its dependencies
# into an empty collections path, then the offline inspection and ansible-doc from there; the tools package in a
# fresh venv. No test bed; about a minute.
package:
	$(BIN)/pytest tests/package $(PYTEST_ARGS)

integration:
	bash tests/testbed/pg/with-pg.sh bash tests/testbed/run-integration.sh $(PYTEST_ARGS)

# Every stage runs (and is timed) even when an earlier one failed; the exit status says whether all passed.
test: setup
	bash tests/run-stages.sh

# every molecule scenario (one per role that changes a node), each on its own 4-node test bed (create/destroy);
# MOLECULE_SCENARIOS="isolate onboard" runs some of them
MOLECULE_SCENARIOS ?= $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))
molecule:
	bash tests/testbed/run-molecule.sh $(BIN)/molecule $(MOLECULE_SCENARIOS)

DEMO_REPORT ?= $(ROOT)/reports/demo
demo: setup
	rm -rf $(BUILD)/sim
	$(PY) tools/simcluster/generate.py --nodes $(DEMO_NODES) --out $(BUILD)/sim --seed 7 --faults default $(DEMO_SIM_ARGS)
	$(BIN)/ansible-playbook -i $(BUILD)/sim/inventory playbooks/inspect.yml -e gpuops_report_dir=$(DEMO_REPORT) \
	  > $(BUILD)/demo-ansible.log || { tail -40 $(BUILD)/demo-ansible.log; exit 1; }
	@grep -A6 'Show the summary' $(BUILD)/demo-ansible.log | tail -n +2
	@$(PY) tools/simcluster/score.py $(DEMO_REPORT)/report.json $(BUILD)/sim/answer_key.json || true
	@echo; sed -n '1,40p' $(DEMO_REPORT)/report.md
	@echo; echo "Reports: $(DEMO_REPORT)/report.json report.md report.html gpuops.prom"
	@echo "Simulated cluster: $(BUILD)/sim (captures, inventory, answer_key.json); ansible log: $(BUILD)/demo-ansible.log"

# the same cluster without hardware profiles: each class's baseline is inferred from the nodes (docs/policy.md)
demo-noprofiles:
	$(MAKE) --no-print-directory demo DEMO_SIM_ARGS=--no-profiles DEMO_REPORT=$(ROOT)/reports/demo-noprofiles

# inventories/sim: the small committed example cluster (the default inventory of ansible.cfg; not in the tarball).
# tests/package/test_sim_example.py checks it is exactly what this command writes.
SIM_EXAMPLE_ARGS := --nodes 2 --seed 7 --faults xid79:1 --layout inventory --jobs 1
sim-example:
	rm -rf inventories/sim
	$(PY) tools/simcluster/generate.py $(SIM_EXAMPLE_ARGS) --out inventories/sim

# The long parser fuzz campaign (issue 12): over 1,000,000 mutated inputs across all parsers, zero exceptions other
# than ParseError, 1 s per input at most. Not part of `make test` (which runs a short seeded set in the unit stage).
# Narrow or lengthen it with FUZZ_ARGS, e.g. make fuzz FUZZ_ARGS="--total 20000 --targets nvlink ipmi_sel".
.PHONY: fuzz
FUZZ_ARGS ?=
fuzz: setup
	nice -n 10 $(PY) tests/fuzz/run_fuzz.py $(FUZZ_ARGS)

# Benchmarks are not part of `make test` (figures: docs/performance.md).
bench: setup
	$(PY) bench/bench_gpu.py
	$(PY) bench/bench_planner.py
	$(PY) bench/bench_inspect.py

# issue 40: the real-time chain on the test bed (real slurmd health check, node_exporter, Prometheus,
# Alertmanager, ansible-rulebook, real playbooks): per fault p50/p95/max to detection, action, verified action.
# BENCH_RT_ARGS="--n 3 --ib-n 1" for a quick look; figures and settings: docs/performance.md
BENCH_RT_ARGS ?=
.PHONY: bench-realtime
bench-realtime: setup
	bash tests/testbed/deps.sh
	bash tests/testbed/eda-setup.sh
	$(PY) bench/bench_realtime.py $(BENCH_RT_ARGS)

testbed-up:
	bash tests/testbed/testbed.sh up

testbed-down:
	bash tests/testbed/testbed.sh down

clean:
	rm -rf $(BUILD) reports tests/output

# issue 15: a simulated quarter (tools/simcluster/generate.py --history-days, docs/simulation.md "History") loaded
# into a fresh store, the service report over it, and its figures against the answer key (score_history.py).
# 92 days from 2026-10-01 is the whole of 2026Q4; the period label comes from the history's manifest.
# Service report vs fault truth (issue 39, docs/simulation.md): a quarter of a 16-node cluster drawn as a fault timeline,
# the captures each 3-hourly inspection would have seen, the real inspections over them in time order into a fresh
# store, then the service report, scored against the key computed from the timeline alone.
TRUTH_NODES ?= 16
TRUTH_DAYS ?= 92
TRUTH_START ?= 2026-07-01
TRUTH_INTERVAL_H ?= 3
TRUTH_OUT := $(BUILD)/truth
HISTORY_REPORT ?= $(ROOT)/reports/demo-history
.PHONY: demo-history
demo-history: setup
	PYTHONPATH=$(BUILD) $(PY) tools/simcluster/truth_run.py --out $(TRUTH_OUT) --nodes $(TRUTH_NODES) \
	  --days $(TRUTH_DAYS) --start $(TRUTH_START) --interval-h $(TRUTH_INTERVAL_H)
	$(BIN)/ansible-playbook playbooks/service_report.yml -e gpuops_period=$(TRUTH_START)/$$($(PY) -c \
	  'import datetime, sys; print((datetime.date.fromisoformat(sys.argv[1]) + datetime.timedelta(days=int(sys.argv[2]) - 1)).isoformat())' \
	  $(TRUTH_START) $(TRUTH_DAYS)) -e gpuops_state_dir=$(TRUTH_OUT)/run/state -e gpuops_report_dir=$(HISTORY_REPORT) \
	  > $(BUILD)/demo-history-ansible.log || { tail -40 $(BUILD)/demo-history-ansible.log; exit 1; }
	@echo "Reports: $(HISTORY_REPORT)/service-report.json service-report.md service-report.html"
	@echo "Truth: $(TRUTH_OUT)/timeline.json key.json; store $(TRUTH_OUT)/run/state; log: $(BUILD)/demo-history-ansible.log"

# The ledger rows drawn directly (issue 15's history, 64 nodes): the loader and the report's arithmetic at scale.
HISTORY_NODES ?= 64
HISTORY_DAYS ?= 92
HISTORY_START ?= 2026-10-01
HISTORY_OUT := $(BUILD)/sim-history
.PHONY: demo-history-rows
demo-history-rows: setup
	rm -rf $(HISTORY_OUT)
	$(PY) tools/simcluster/generate.py --nodes $(HISTORY_NODES) --out $(HISTORY_OUT) --seed 7 --faults default \
	  --history-days $(HISTORY_DAYS) --history-start $(HISTORY_START)
	$(PY) tools/simcluster/history.py load --state-dir $(HISTORY_OUT)/state $(HISTORY_OUT)/history
	period=$$($(PY) -c 'import json, sys; print(json.load(open(sys.argv[1]))["period"])' $(HISTORY_OUT)/history/manifest.json); \
	  echo "service report for $$period"; \
	  $(BIN)/ansible-playbook playbooks/service_report.yml -e gpuops_period=$$period \
	    -e gpuops_state_dir=$(HISTORY_OUT)/state -e gpuops_report_dir=$(HISTORY_REPORT)-rows \
	    > $(BUILD)/demo-history-rows-ansible.log || { tail -40 $(BUILD)/demo-history-rows-ansible.log; exit 1; }
	$(PY) tools/simcluster/score_history.py $(HISTORY_REPORT)-rows/service-report.json $(HISTORY_OUT)/answer_key.json
