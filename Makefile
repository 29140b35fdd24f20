# `make run`: a short DQN run on CartPole (threads launcher), summary.json at the end.
# `make test`: the fast test tier. Both create .venv with the pinned stack on first use.
# dm-reverb 0.14, the last release, has wheels for Python 3.10 and 3.11 only: .venv is made
# with the first of python3.11, python3.10, python3 that is one of those (or PYTHON=...).
SUPPORTED := import sys; sys.exit(sys.version_info[:2] not in ((3, 10), (3, 11)))
PYTHON ?= $(shell for p in python3.11 python3.10 python3; do \
	$$p -c '$(SUPPORTED)' 2>/dev/null && { echo $$p; break; }; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-slow lint clean which-python

# The interpreter's version, for the one line make stops with when it is not one of those.
version = $(or $(shell $(1) -c 'import sys; print(sys.version.split()[0])' 2>/dev/null),not found)
CHECK_PYTHON = $(if $(PYTHON),$(if $(shell $(PYTHON) -c '$(SUPPORTED)' 2>/dev/null && echo ok),,\
	$(error PYTHON=$(PYTHON) is not Python 3.10 or 3.11 (it is $(call version,$(PYTHON))); dm-reverb 0.14, the last release, has wheels up to 3.11 only: give one, e.g. make run PYTHON=/path/to/python3.11)),\
	$(error no Python 3.10 or 3.11 found (python3: $(call version,python3)); dm-reverb 0.14, the last release, has wheels up to 3.11 only: install python3.11, or give one: make run PYTHON=/path/to/python3.11))

which-python:
	$(CHECK_PYTHON)
	@echo $(PYTHON)

$(STAMP): setup.py
	$(CHECK_PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip setuptools wheel
	$(VENV)/bin/pip install -q -e '.[dev]'
	$(PY) -c "import reverb, tensorflow, sonnet, ray, ale_py; print('stack ok: tensorflow', tensorflow.__version__)"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m launch_programs.run --agent=dqn --env=gym:CartPole-v1 --launch=threads \
		--max_actor_steps=60000 --logdir=runs/make-run --fresh --seed=0

test: $(STAMP)
	$(PY) -m pytest -q

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check agentkit components agents launch_programs tests bench

clean:
	rm -rf $(VENV) runs *.egg-info
