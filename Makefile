# gpu-platform: every entry point. `make up` deploys the local stack; `make test` runs every test layer.
SHELL := /bin/bash
.DEFAULT_GOAL := help
STACK ?= local
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(shell scripts/toolchain --print-path):$(PATH)
# Bytecode caches (__pycache__/, ignored by git) on even where the environment turns them off (some
# container images set PYTHONDONTWRITEBYTECODE): every test process imports the SDKs and the project and
# pytest rewrites every test module's asserts, which without the cache costs ~3 s of a 20 s fast suite.
unexport PYTHONDONTWRITEBYTECODE

# The Go-built tool chain (scripts/toolchain) is what the local stack runs on (its local API server) and
# the fallback where nothing can be downloaded (GPU_PLATFORM_OFFLINE=1). Other stacks on a connected
# machine run the official Pulumi CLI, and scripts/pulumi-env installs their provider plugins.
# The local stack builds only what its cluster runs, after checking the machine (localcluster/prerequisites.py).
ENGINE := $(if $(filter local,$(STACK)),local-tools,$(if $(filter 1,$(GPU_PLATFORM_OFFLINE)),toolchain,))
# `down` starts no cluster: the engine alone.
ENGINE_ONLY := $(if $(filter local,$(STACK)),local-engine,$(if $(filter 1,$(GPU_PLATFORM_OFFLINE)),toolchain,))

.PHONY: help venv toolchain local-tools local-engine validate plan render check config-reference acceptance test test-unit test-integration test-live test-faults preview up down refresh cluster-start cluster-stop bench clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 20

# The first prerequisite, checked before anything else: without it nothing below (localcluster/prerequisites.py
# included) can run. Debian and Ubuntu ship python3 without ensurepip, which `-m venv` needs, unless python3-venv
# is installed.
$(VENV)/.installed: requirements.txt constraints.txt
	@$(PYTHON) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "prerequisites: missing:" >&2; \
	  echo "  - Python 3.11 or newer with venv as '$(PYTHON)' (it makes the virtualenv): install it (Debian and Ubuntu: apt-get install python3 python3-venv), or name another with make PYTHON=python3.12 ..." >&2; \
	  exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt -c constraints.txt
	touch $@

venv: $(VENV)/.installed  ## create the virtualenv from pinned requirements

toolchain:  ## build or reuse pulumi, its Python host, the Kubernetes provider, kube-apiserver, promtool
	scripts/toolchain

local-tools: venv  ## check the local cluster's prerequisites; build or reuse only the tools it runs
	$(PY) -m localcluster.prerequisites

local-engine: venv
	$(PY) -m localcluster.prerequisites --engine

validate: venv  ## validate STACK's config
	$(PY) -m platform_cli validate --stack $(STACK)

plan: venv  ## print STACK's derived plan
	$(PY) -m platform_cli plan --stack $(STACK)

render: venv  ## render STACK under mocks into .local/render/STACK
	$(PY) -m platform_cli render --stack $(STACK) --out .local/render/$(STACK)

check: venv  ## run the policy pack over STACK's resources without the engine
	$(PY) -m platform_cli check --stack $(STACK)

config-reference: venv  ## regenerate docs/config-reference.md and docs/*.schema.json from the spec models
	$(PY) -m platform_cli config-reference

test-unit: venv  ## spec, plan, components under mocks, policy pack, promtool and actionlint (fast, no engine)
	scripts/toolchain promtool actionlint
	$(PY) -m pytest -q tests/unit tests/policy tests/promtool

test-integration: venv toolchain  ## the real engine and the local stack on the live local cluster
	$(PY) -m pytest -q tests/integration

test-live: venv toolchain  ## queues, preemption and tenants on the live local cluster (real Kueue, scheduler, KWOK)
	$(PY) -m pytest -q tests/live

test-faults: venv toolchain  ## killed, failed and concurrent ups, controller restarts, drift, secrets (live local cluster)
	$(PY) -m pytest -q tests/faults

acceptance: venv  ## the acceptance test's seven steps on a local cluster with a real node, as root (docs/acceptance.md)
	$(PY) -m localcluster.acceptance_cluster

test: venv toolchain  ## every layer: the fast ones, then the cluster layers in four lanes (scripts/run-tests)
	$(PY) scripts/run-tests

preview: venv $(ENGINE)  ## real `pulumi preview` of STACK with the policy pack
	scripts/pulumi-env $(STACK) preview --policy-pack policies --diff

up: venv $(ENGINE)  ## deploy STACK (local: onto the local API server)
	scripts/pulumi-env $(STACK) up

down: venv $(ENGINE_ONLY)  ## destroy STACK (local: and stop the local API server)
	scripts/pulumi-env $(STACK) down

refresh: venv $(ENGINE)
	scripts/pulumi-env $(STACK) refresh

cluster-start: local-tools  ## start the local API server
	scripts/local-cluster start

cluster-stop:  ## stop the local API server
	scripts/local-cluster stop

bench: venv  ## benchmarks (ratios)
	$(PY) -m bench.run

clean:  ## remove local state (not the tool cache)
	-scripts/local-cluster stop
	rm -rf .local
