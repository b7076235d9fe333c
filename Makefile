# The course's jobs, in workflow order: `make help` lists them.
# Everything runs inside .venv (created by `make setup`, which every target depends on) through
# the instructor's one command line, `python -m staff <command>` (staff/cli.py). Settings
# (JOBS, CELL_TIMEOUT, COURSE_ONLINE, ...) are environment variables: see course/settings.py.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAFF  := $(PY) -m staff
STAMP  := $(VENV)/.installed
# nbgrader calls `alembic` from PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Debian packages the tests need: chromium for the browser tests; Node.js and npm for JupyterHub's proxy.
SYSTEM_PACKAGES := chromium nodejs npm
# JupyterHub's proxy (make hub), from npm, installed beside the virtualenv by system-packages.
PROXY_VERSION := 5.3.0
PROXY := $(VENV)/node/node_modules/.bin/configurable-http-proxy
# Test processes (pytest-xdist): one per core by default.
TEST_WORKERS ?= auto

.DEFAULT_GOAL := help
.PHONY: help setup system-packages new-assignment fixtures fixtures-check validate release publish figures collect samples students formgrader hub screenshots autograde feedback export report similarity solutions demo test lint format bench-autograde bench-scale bench-formgrader bench-similarity bench-distilbert bench-finetune compat clean clean-grading-data distclean

help: ## list the targets in workflow order
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(STAMP) ## create .venv and install the pinned dependencies (once; again when the pins change)

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $@

system-packages: ## install what the tests need from outside PyPI when missing: Debian's chromium, nodejs and npm (as root with apt, else print the command), then JupyterHub's proxy from npm
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
	  case $$p in nodejs|npm) command -v $$( [ $$p = nodejs ] && echo node || echo npm ) >/dev/null && continue;; esac; \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "system-packages: installing$$missing with apt-get"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "system-packages: missing$$missing; install with: sudo apt-get install$$missing (the browser and hub tests skip until then)"; \
	  fi; \
	fi
	@if [ ! -x $(PROXY) ] && command -v npm >/dev/null; then \
	  echo "system-packages: installing configurable-http-proxy@$(PROXY_VERSION) with npm into $(VENV)/node"; \
	  mkdir -p $(VENV)/node && npm install --silent --no-save --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@$(PROXY_VERSION); \
	fi

new-assignment: setup ## a new assignment that grades end to end, copied from staff/authoring/assignments/_template/ into its places (source/, its folder beside the template, samples/, due_dates.toml): make new-assignment NAME=08_layer_norm
	$(STAFF) new-assignment $(NAME)

fixtures: setup ## rebuild the saved tensors, their manifests and what each test cell checks (after changing a recipe, a solution or a test; commit the result); ASSIGNMENT=name: only that one
	$(STAFF) fixtures $(ASSIGNMENT)

fixtures-check: setup ## rebuild into a temporary folder; fail if any value moved by a tenth of its grading tolerance
	$(STAFF) fixtures-check

validate: setup ## source notebooks pass all tests; released notebooks fail only with NotImplementedError
	$(STAFF) validate

release: setup ## check the source, generate release/ atomically with nbgrader, check the release
	$(STAFF) release

publish: setup ## build the student bundle in publish/ with the assignments released by today (due_dates.toml; AS_OF=YYYY-MM-DD for another day), then push it to the public repository
	$(STAFF) publish $(if $(AS_OF),--as-of $(AS_OF))

figures: setup ## redraw docs/figures/ (attention maps, KV-cache speed-up, architecture diagrams) and embed the diagrams in source/ (then make release)
	$(STAFF) figure

collect: setup ## import an LMS zip of notebooks into submitted/ (keeps the LMS's LATE marker and any time in the name): make collect ZIP=download.zip
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=path/to/lms-download.zip"; exit 2; }
	$(STAFF) collect "$(ZIP)"

samples: setup ## copy the bundled sample submissions into submitted/ (and their students' names into the gradebook)
	$(STAFF) samples

students: setup ## import students' names into the gradebook: make students ROSTER=roster.csv (id,first_name,last_name,email)
	@test -n "$(ROSTER)" || { echo "usage: make students ROSTER=path/to/roster.csv"; exit 2; }
	$(STAFF) students "$(ROSTER)"

autograde: setup ## grade every submission on a Dask cluster (local: JOBS workers; SCHEDULER=tcp://...: yours) with a status each; FORCE=1 regrades unchanged ones; STUDENT=id and/or ASSIGNMENT=name regrade just those (forced, manual grades kept, logged; REASON=...)
	$(STAFF) autograde $(ASSIGNMENT) $(foreach s,$(STUDENT),--student $(s)) $(if $(ASSIGNMENT),--regrade) $(if $(REASON),--reason "$(REASON)") $(if $(UNSAFE),--unsafe-no-sandbox) $(if $(FORCE),--force)

formgrader: setup ## JupyterLab with nbgrader's formgrader for TAs (PORT=8888): prints the address with its token; Ctrl-C stops it
	$(STAFF) formgrader $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP))

hub: setup ## JupyterHub for a TA team: the formgrader as a shared service, access by group (jupyterhub_config.py), gradebook GRADEBOOK_URL or gradebook.db; PORT=8000, IP=127.0.0.1
	@$(MAKE) --no-print-directory system-packages
	$(STAFF) hub $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP))

feedback: setup ## per-student feedback HTML in feedback/ (warns while free-text answers wait for a TA; COMPLETE=1 refuses then)
	$(STAFF) feedback $(if $(COMPLETE),--complete)

export: setup ## grades.csv from the gradebook (status, review of flags, pending-manual and late-work columns), and a row per student for the LMS: grades-canvas.csv, grades-wide.csv (LMS_EXPORTS=canvas,wide)
	$(STAFF) export

report: setup ## print the score table; write reports/report.html (figures, flagged submissions)
	$(STAFF) report --html

similarity: setup ## similar pairs of submissions, on the code students wrote (released code left out, names normalised): reports/similarity/index.html for a human, no grade changed; ARGS="--assignment 01_attention --archive DIR"
	$(STAFF) similarity $(ARGS)

solutions: setup ## worked solutions to publish once grades are out: solutions/<assignment>/ (.ipynb with outputs and model answers, .html), no hidden tests; ASSIGNMENT=name for one
	$(STAFF) solutions $(ASSIGNMENT)

demo: setup release samples autograde feedback export report ## the whole workflow on the bundled samples (committed fixtures, never rebuilt)

# --no-loadscope-reorder: test groups go out in the order tests/conftest.py gives them (the tests
# that wait for the graded course last), not largest first.
test: setup ## the whole test suite, in parallel; prints the 10 slowest tests
	@$(MAKE) --no-print-directory system-packages
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

lint: setup ## ruff: the linter and the formatter's check on the whole tree (make test runs them; pyproject.toml configures them)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup ## ruff: sort imports, fix what the linter can, format the whole tree (notebooks and submissions excluded)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

screenshots: setup ## redraw the formgrader screenshots in docs/figures/ (docs/ta.md) with the browser test
	@$(MAKE) --no-print-directory system-packages
	$(PY) -m pytest tests/e2e/test_formgrader.py --screenshots=docs/figures

bench-autograde: setup ## the Dask grader (1 and N workers; SQLite and PostgreSQL) vs sequential nbgrader on 32 samples
	$(PY) benchmarks/autograde_parallel.py $(ARGS)

bench-scale: setup ## the one writer at MOOC scale: 1,000 students x 5 assignments of synthetic results into PostgreSQL (no kernels); FORMGRADER=1 also times every formgrader page
	$(PY) benchmarks/scale.py $(if $(FORMGRADER),--formgrader) $(ARGS)

bench-similarity: setup ## make similarity's whole report on 300 synthetic submissions of assignment 1 (goal: under a minute)
	$(PY) benchmarks/similarity_scale.py $(ARGS)

bench-formgrader: setup ## every formgrader page at 1,000 students x 5 assignments in Chromium, against nbgrader alone (ARGS=--postgres: PostgreSQL)
	$(PY) benchmarks/formgrader_scale.py --original $(ARGS)

bench-distilbert: setup ## from-scratch DistilBERT forward pass vs transformers' (batch 32 x 64, CPU)
	$(PY) benchmarks/distilbert_forward.py $(ARGS)

bench-finetune: setup ## fine-tune on SST-2 (../shared/data/sst2) vs transformers' Trainer, same run
	$(PY) benchmarks/finetune_sst2.py $(ARGS)

compat: setup ## the source notebooks on transformers 4.57 and on a simulated Colab that installs what it lacks (builds virtualenvs in .compat/; not part of make test; DOCS=1 writes the table into docs/versions.md)
	$(PY) benchmarks/compat.py $(if $(DOCS),--docs) $(ARGS)

# What `make clean` removes: what a command writes again (make feedback, export, report, publish,
# solutions) and collect's scratch copies of the zip. Never students' work or grades: submitted/,
# autograded/ (the graded notebooks the gradebook and the formgrader read, which `make autograde`
# does not rewrite for an unchanged submission; the originals of repaired notebooks; the status and
# regrade logs) and the gradebook with its backups: `make clean-grading-data` deletes those, once
# confirmed.
REGENERATED := feedback downloaded reports grades.csv grades-canvas.csv grades-wide.csv publish publish.staging solutions
GRADING_DATA := submitted autograded gradebook.db

clean: ## remove what commands write again: feedback/, grades*.csv, reports/, publish/, solutions/, downloaded/ (never submitted/, autograded/, gradebook.db or its backups)
	rm -rf $(REGENERATED)
	@kept=""; for p in $(GRADING_DATA); do \
	  [ -e $$p ] && [ "$$(ls -A $$p)" != README.md ] && kept="$$kept, $$p$$([ -d $$p ] && echo /)"; done; \
	backups=$$(ls -d gradebook.db.*.bak 2>/dev/null | wc -l); [ $$backups -eq 0 ] || kept="$$kept, $$backups backup(s)"; \
	[ -z "$$kept" ] || echo "clean: kept students' work and grades: $${kept#, } (make clean-grading-data deletes them)"

clean-grading-data: ## DELETE students' work and grades, which nothing regenerates: submitted/, autograded/, gradebook.db and its backups, then what clean removes; asks you to type the course folder's name (CONFIRM=yes: no question, for scripts)
	@here="$(notdir $(CURDIR))"; \
	students=$$(ls -A submitted 2>/dev/null | wc -l); \
	graded=$$(find autograded -mindepth 1 -maxdepth 1 ! -name README.md 2>/dev/null | wc -l); \
	backups=$$(ls -d gradebook.db.*.bak 2>/dev/null | wc -l); \
	if [ $$students -eq 0 ] && [ $$graded -eq 0 ] && [ $$backups -eq 0 ] && [ ! -e gradebook.db ]; then \
	  echo "clean-grading-data: no students' work or gradebook in $$here/: nothing to delete"; exit 0; fi; \
	echo "clean-grading-data: this DELETES, from $$here/, what nothing can regenerate:"; \
	echo "  submitted/   $$students student folder(s): the students' work"; \
	echo "  autograded/  graded notebooks, originals of repaired ones, status.jsonl, regrades.jsonl ($$graded entries)"; \
	echo "  gradebook.db and $$backups backup(s): every grade, manual grade, comment and name"; \
	[ -z "$(GRADEBOOK_URL)" ] || echo "  (not the gradebook at GRADEBOOK_URL: drop that database yourself)"; \
	if [ "$(CONFIRM)" != yes ]; then \
	  if [ ! -t 0 ]; then \
	    echo "clean-grading-data: refused, nothing deleted: no terminal to confirm on (run it in a terminal, or with CONFIRM=yes)" >&2; exit 2; fi; \
	  printf "Type the course folder's name (%s) or yes to delete them: " "$$here"; \
	  read answer || answer=""; \
	  if [ "$$answer" != "$$here" ] && [ "$$answer" != yes ]; then \
	    echo "clean-grading-data: not confirmed, nothing deleted" >&2; exit 1; fi; \
	fi; \
	rm -rf submitted gradebook.db gradebook.db.*.bak; \
	find autograded -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +; \
	echo "clean-grading-data: deleted submitted/ ($$students student folder(s)), autograded/'s $$graded entries, gradebook.db and $$backups backup(s)"
	@$(MAKE) --no-print-directory clean

distclean: clean ## also remove .venv (students' work and grades stay: make clean-grading-data)
	rm -rf $(VENV)
