#!/usr/bin/env bash
# The course on the versions a student's own pip may give them, at either end of pyproject.toml's ranges:
#   tools/test_versions.sh newest   the newest release of every dependency that the ranges allow
#   tools/test_versions.sh floor    the lowest version each range declares (numpy>=1.24 -> numpy==1.24, ...)
# The helpers are installed from the repository (not editable, not the pins of requirements.txt); then the
# unit tests, and every notebook run top to bottom. A cell that raises fails; printed numbers that differ from
# the stored outputs do not (nbval-lax): strict comparison stays on the pinned set-up (make test).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?"say which end: newest or floor"}
python=${PYTHON:-python3}
venv=.venv-$which
export PIP_CONSTRAINT=/dev/null   # a machine-wide pip constraint file must not cap a version here

"$python" -m venv --clear "$venv"
case "$which" in
  newest) pins=() ;;
  floor) read -r -a pins <<< "$("$venv/bin/python" -c 'import tomllib
print(" ".join(d.replace(">=", "==") for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')" ;;
  *) echo "usage: tools/test_versions.sh newest|floor" >&2; exit 2 ;;
esac
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "${pins[@]}" . pytest nbval nbconvert ipykernel
"$venv/bin/python" -c 'import sys, numpy, matplotlib, PIL, ipywidgets, torch
print(f"{sys.argv[1]}: python {sys.version.split()[0]}, torch {torch.__version__}, numpy {numpy.__version__}, "
      f"matplotlib {matplotlib.__version__}, pillow {PIL.__version__}, ipywidgets {ipywidgets.__version__}")' "$which"

# From inside the venv's folder, so that the tests import the installed helpers, not the repository's.
cd "$venv"
bin/python -m pytest ../tests ../notebooks -q -o addopts="" -p no:cacheprovider --ignore=../tests/browser \
  --nbval-lax --nbval-current-env --nbval-cell-timeout 300 -W "ignore::DeprecationWarning"
