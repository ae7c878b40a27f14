# Self-Attention from Scratch. Two commands do everything:
#   make course   set up (first time only) and open the course in JupyterLab
#   make test     set up (first time only) and run the checks (CI also runs test-training, test-browser,
#                 test-colab, test-newest and test-floor)
# To present: make slides NB=notebooks/NN_....ipynb serves one notebook as slides, widgets working, offline.
# TORCH_INDEX=URL takes torch from that index (PyTorch's CPU-only or CUDA builds), e.g.
#   make course TORCH_INDEX=https://download.pytorch.org/whl/cpu
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
START  := notebooks/00_start_here.ipynb
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))

.PHONY: course slides test test-browser test-training test-colab test-newest test-floor setup lint unit notebooks execute links benchmark clean

# The index named the first time is kept in the environment: a rebuild (after requirements.txt or pyproject.toml
# changes) takes torch from the same place, until make clean.
ifndef TORCH_INDEX
TORCH_INDEX := $(shell cat $(VENV)/.torch-index 2>/dev/null)
endif

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) tools/check_python.py
	$(PYTHON) -m venv --clear $(VENV)
	@echo "Installing PyTorch and the course's packages into $(VENV). The first time, pip downloads them: about \
	300 MB with PyTorch's CPU-only build, several GB with a CUDA build (README: Using an NVIDIA GPU)."
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install "torch==2.13.0" --index-url $(TORCH_INDEX))
	$(if $(TORCH_INDEX),echo "$(TORCH_INDEX)" > $(VENV)/.torch-index)
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# JupyterLab for a classroom: no news pop-ups, no update checks (no requests leave the machine)
	@mkdir -p $(VENV)/share/jupyter/lab/settings
	@printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
	@touch $(STAMP)
	@echo "Environment ready in $(VENV)."

setup: $(STAMP)

# Slides: Voilà and reveal.js (requirements-slides.txt) over the course's environment. reveal.js's files come
# from the sphinx-revealjs package and are copied to where the course's slides template (slides/) serves them.
SLIDES := $(VENV)/.slides-installed
REVEAL := $(VENV)/share/jupyter/voila/templates/course-slides/static/reveal.js
$(SLIDES): $(STAMP) requirements-slides.txt
	$(BIN)/python -m pip install --quiet -r requirements-slides.txt
	rm -rf $(REVEAL) && mkdir -p $(dir $(REVEAL))
	cp -R "$$($(BIN)/python -c 'import os, sphinx_revealjs as p; print(os.path.dirname(p.__file__))')/_static/revealjs" \
		$(REVEAL)
	@touch $@

# The printed address opens notebook 00; as root (containers, some classroom VMs) JupyterLab needs --allow-root.
course: setup
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --LabApp.default_url=/lab/tree/$(START) \
		$(if $(filter 0,$(shell id -u)),--allow-root)

# One notebook as slides on 127.0.0.1 (token-guarded, like make course): Voilà runs it in a fresh kernel, so every
# widget answers; nothing is fetched from outside. Arrow keys or space move on; Ctrl-C stops it.
slides: $(SLIDES)
	@test -n "$(NB)" || { echo "Name the notebook to present, e.g.: make slides NB=$(START)"; exit 1; }
	bash tools/slides.sh $(NB)

test: setup lint
	$(BIN)/python -m pytest

# Notebook 10's three models retrained from their seed (about a minute on 2 cores): the heads form, and the
# committed weights (helpers/data/induction.pt) agree with what the code trains.
test-training: setup
	$(BIN)/python -m pytest tests/test_induction_training.py --training -p no:nbval -o addopts="" -q

# Every notebook in JupyterLab, and as slides, in headless Chromium: widgets render, sliders redraw, and the
# slides ask nothing of the network. Needs Debian's chromium (installed here with apt-get when missing, as root)
# and Playwright.
test-browser: $(SLIDES)
	@command -v chromium >/dev/null || [ "$$(id -u)" = 0 ] || { echo "make test-browser needs Chromium, and \
	installing it takes root: run 'sudo apt-get install chromium' (Debian, Ubuntu), then make test-browser again."; \
	exit 1; }
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(BIN)/python -m pip install --quiet -r requirements-browser.txt
	$(BIN)/python -m pytest tests/browser --browser -p no:nbval -o addopts=""

# The helpers as Google Colab gets them: installed from the repository (not editable) with their loose
# dependencies over an older ipywidgets (7.7.1), then every unit test against that installed copy.
COLAB_VENV := .venv-colab
test-colab:
	$(PYTHON) -m venv --clear $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet "torch==2.13.0" "ipywidgets==7.7.1" numpy matplotlib pillow \
		ipykernel pytest
	$(COLAB_VENV)/bin/python -m pip install --quiet .
	cd $(COLAB_VENV) && bin/python -m pytest ../tests -q -o addopts="" -p no:cacheprovider \
		--ignore=../tests/browser --ignore=../tests/test_notebooks.py -W "ignore::DeprecationWarning"

# The course at both ends of pyproject.toml's ranges, installed as a student's pip resolves it (not the pins):
# unit tests and every notebook run top to bottom, without comparing printed numbers (tools/test_versions.sh).
test-newest:
	PYTHON=$(PYTHON) bash tools/test_versions.sh newest

test-floor:
	PYTHON=$(PYTHON) bash tools/test_versions.sh floor

lint: setup
	$(BIN)/ruff check helpers tests benchmarks tools notebooks

unit: setup
	$(BIN)/python -m pytest tests

notebooks: setup
	$(BIN)/python -m pytest notebooks

# For authors: re-run every notebook top to bottom in a fresh kernel and store its outputs.
execute: setup
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=300 $(if $(NB),$(NB),$(NOTEBOOKS))

# For maintainers: Colab and Binder badges and Colab's install cell, from pyproject.toml's
# [project.urls] Repository (see tools/colab_binder.py), then a clean re-run of every notebook.
links: setup
	$(BIN)/python tools/colab_binder.py
	$(MAKE) execute

benchmark: setup
	$(BIN)/python benchmarks/attention.py $(ARGS)

clean:
	rm -rf $(VENV) $(COLAB_VENV) .venv-newest .venv-floor .pytest_cache .ruff_cache *.egg-info artifacts build
