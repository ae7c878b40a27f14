#!/usr/bin/env bash
# One notebook (or a folder of them) as slides on 127.0.0.1: `make slides NB=notebooks/03_....ipynb` runs it.
# Voilà runs the notebook in a fresh kernel and shows it with the course's reveal template (slides/voila/...),
# so every widget answers; everything the page loads is served from this machine. A token guards the page, and
# the address printed carries it. Arguments after the notebook go to voila (e.g. --port=8867, --no-browser).
set -euo pipefail
cd "$(dirname "$0")/.."
notebook=${1:?usage: tools/slides.sh NOTEBOOK.ipynb [voila options]}
shift
export JUPYTER_PATH="$PWD/slides${JUPYTER_PATH:+:$JUPYTER_PATH}"
exec "${PYTHON:-.venv/bin/python}" -m voila "$notebook" --template=course-slides --Voila.ip=127.0.0.1 \
    --show_tracebacks=True --token "$@"
