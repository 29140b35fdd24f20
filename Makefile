# `make run`: a short DQN run on CartPole (threads launcher), summary.json at the end.
# `make test`: the fast test tier. Both create .venv with the pinned stack on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-slow lint clean

$(STAMP): setup.py
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
