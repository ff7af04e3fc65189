# gpufleet: one entry point for people and CI. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY ?= python3
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
INVENTORY ?= inventory/lab
# Molecule scenarios (molecule/README.md lists them). `make molecule SCENARIOS="a b"` runs the
# named ones one after another with their output on the terminal.
SCENARIOS ?= slurm_cluster slurm_cluster_trixie pool_rebalance health_gate k8s_render slurm_policy node_stack node_stack_trixie k8s_cluster
# Plain `make molecule` (and CI) runs these lanes at the same time, the scenarios of a lane in
# order (comma-separated); a scenario in SCENARIOS that no lane names gets a lane of its own. k8s_cluster waits
# for the Go build that `make test` starts first.
LANES ?= slurm_cluster_trixie,node_stack_trixie slurm_cluster,node_stack pool_rebalance slurm_policy health_gate k8s_render,k8s_cluster

.PHONY: help venv lab lab-down site up k8s-bins lab-k8s lab-k8s-down lint unit molecule test clean

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(BIN)/ansible-playbook: requirements.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

venv: $(BIN)/ansible-playbook ## Create .venv with the pinned Python requirements

lab: venv ## Build the container lab (podman) from inventory/lab
	ansible-playbook -i $(INVENTORY) playbooks/lab.yml

lab-down: venv ## Remove the lab's containers, network and image
	ansible-playbook -i $(INVENTORY) playbooks/lab.yml -e lab_state=absent

site: venv ## Run site.yml against INVENTORY (default: the lab)
	ansible-playbook -i $(INVENTORY) playbooks/site.yml

up: lab site ## Bring up the lab and converge the whole site on it

k8s-bins: ## Build the lab's Kubernetes from its Go modules (scripts/k8s_bins; a no-op when built)
	scripts/k8s_bins

lab-k8s: venv k8s-bins ## Bring up the Kubernetes lab (kubeadm, molecule/k8s_cluster) and show its nodes and a GPU pod
	ansible-playbook -i molecule/k8s_cluster/inventory playbooks/lab.yml
	ansible-playbook -i molecule/k8s_cluster/inventory molecule/k8s_cluster/converge.yml
	ansible-playbook -i molecule/k8s_cluster/inventory molecule/k8s_cluster/show.yml

lab-k8s-down: venv ## Remove the Kubernetes lab's containers and volumes
	ansible-playbook -i molecule/k8s_cluster/inventory playbooks/lab.yml -e lab_state=absent -e lab_remove_image=false

# ansible-lint syntax-checks every playbook and role with ansible.cfg's inventory (the lab's); the loop checks the
# playbooks against the example site's too.
lint: venv ## Static checks: ansible-config, yamllint, ansible-lint, syntax, ansible-doc, ruff
	ansible-config validate -t all >/dev/null
	yamllint --strict .
	ansible-lint --profile production
	for p in playbooks/*.yml; do ansible-playbook -i inventory/example --syntax-check "$$p" >/dev/null || exit 1; done
	for m in library/*.py; do ansible-doc -M library -t module "$$(basename $$m .py)" >/dev/null || exit 1; done
	ruff check .

unit: venv ## Unit tests (pytest) on module_utils, modules, filters and playbooks
	python -m pytest

molecule: venv ## Molecule scenarios on real daemons in the container lab (parallel lanes)
ifeq ($(origin SCENARIOS),command line)
	for s in $(SCENARIOS); do molecule test -s $$s || exit 1; done
else
	scripts/molecule_lanes --all "$(SCENARIOS)" $(foreach w,$(LANES_WATCH),--watch $(w)) $(LANES)
endif

# The lanes are the long pole (tens of minutes); lint and the unit tests run beside them, and the target fails if
# any of the three failed, after all three have finished. The Kubernetes lab's Go build starts first, in the
# background (on a new machine it is the longest single piece of CPU work: 2,063 s in session 13's cold run, 2,420 s
# in session 14's, and k8s_cluster waits for it). The Go build, lint and the unit tests run at normal priority and
# the lanes `nice`: lint and then pytest use one core and must end, so they go ahead of the lanes, which use
# whatever is left (stop 49 ran
# them all nice: its unit tests were at 63% when CI stopped it at 5,400 s). Lint's and pytest's output goes to
# .cache/checks.log (its summary, and its tail when they fail, are printed), so the lanes' lines, and the status
# line molecule_lanes prints every 10 minutes, are what the end of CI's output shows.
LANES_WATCH ?= .cache/k8s-bins.log .cache/checks.log
test: venv ## Everything CI runs: the molecule lanes, with lint and the unit tests beside them
	mkdir -p .cache; scripts/k8s_bins > .cache/k8s-bins.log 2>&1 & \
	nice -n 5 $(MAKE) --no-print-directory molecule & lanes=$$!; \
	checks=0; $(MAKE) --no-print-directory --keep-going lint unit > .cache/checks.log 2>&1 || checks=$$?; \
	grep -E '^(All checks passed|=+ .* in [0-9.]+s)' .cache/checks.log || true; \
	[ $$checks -eq 0 ] || tail -n 120 .cache/checks.log; \
	echo "make test: lint and unit rc $$checks at $$SECONDS s (their output: .cache/checks.log)"; \
	molecule=0; wait $$lanes || molecule=$$?; \
	grep -E '^k8s_bins: (built|.* up to date)' .cache/k8s-bins.log 2>/dev/null || tail -3 .cache/k8s-bins.log || true; \
	echo "make test: lint and unit rc $$checks, molecule lanes rc $$molecule, $$SECONDS s"; \
	[ $$checks -eq 0 ] && [ $$molecule -eq 0 ]

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache .hypothesis
