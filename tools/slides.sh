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
# A kernel whose page was closed or reloaded stops SLIDES_KERNEL_TIMEOUT seconds later (Voilà's own shutdown on
# leaving the page is refused for want of an _xsrf cookie); the kernel of an open page is never stopped.
idle=${SLIDES_KERNEL_TIMEOUT:-120}
exec "${PYTHON:-.venv/bin/python}" -m voila "$notebook" --template=course-slides --Voila.ip=127.0.0.1 \
    --show_tracebacks=True --token --MappingKernelManager.cull_idle_timeout="$idle" \
    --MappingKernelManager.cull_interval="$(( idle > 10 ? idle / 4 : 2 ))" "$@"
