# The course's jobs, in workflow order: `make help` lists them.
# Everything runs inside .venv (created by `make setup`, which every target depends on).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# nbgrader calls `alembic` from PATH; tests and kernels must never wait for the hub.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export HF_HUB_OFFLINE ?= 1
export MPLBACKEND ?= Agg

.DEFAULT_GOAL := help
.PHONY: help setup fixtures validate release publish collect samples autograde feedback export report demo test bench-autograde bench-distilbert bench-finetune clean distclean

help: ## list the targets in workflow order
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(STAMP) ## create .venv and install the pinned dependencies (once; again when the pins change)

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $@

fixtures: setup ## regenerate every fixture (deterministic) and the SHA-256 manifests
	$(PY) -m course.fixtures build

validate: setup ## source notebooks pass all tests; released notebooks fail only with NotImplementedError
	$(PY) -m course.validate

release: setup ## check the source, generate release/ atomically with nbgrader, check the release
	$(PY) -m course.validate --only source
	$(PY) -m course.release
	$(PY) -m course.validate --only release

publish: setup ## build the student bundle in publish/ (push it to the public repository)
	$(PY) -m course.publish

collect: setup ## import an LMS zip of notebooks into submitted/: make collect ZIP=download.zip
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=path/to/lms-download.zip"; exit 2; }
	$(PY) -m course.collect "$(ZIP)"

samples: setup ## copy the bundled sample submissions into submitted/
	$(PY) -m course.samples

autograde: setup ## grade every submission in parallel (JOBS=n, default: cores) with a status each
	$(PY) -m course.grading autograde $(if $(JOBS),--jobs $(JOBS))

feedback: setup ## per-student feedback HTML in feedback/
	$(PY) -m course.grading feedback

export: setup ## grades.csv from the gradebook, with status and pending-manual columns
	$(PY) -m course.grading export

report: setup ## print the score table; write reports/report.html (figures, flagged submissions)
	$(PY) -m course.report --html

demo: setup fixtures release samples autograde feedback export report ## the whole workflow on the bundled samples

test: setup ## the whole test suite
	$(PY) -m pytest

bench-autograde: setup ## parallel `make autograde` vs sequential nbgrader on 16 samples
	$(PY) benchmarks/autograde_parallel.py $(ARGS)

bench-distilbert: setup ## from-scratch DistilBERT forward pass vs transformers' (batch 32 x 64, CPU)
	$(PY) benchmarks/distilbert_forward.py $(ARGS)

bench-finetune: setup ## fine-tune on SST-2 (../shared/data/sst2) vs transformers' Trainer, same run
	$(PY) benchmarks/finetune_sst2.py $(ARGS)

clean: ## remove grading outputs (submitted/, autograded/, feedback/, grades.csv, gradebook.db)
	rm -rf submitted feedback downloaded reports grades.csv gradebook.db publish
	find autograded -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +

distclean: clean ## also remove .venv
	rm -rf $(VENV)
