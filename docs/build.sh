#!/usr/bin/env bash
# Build the documentation site into docs/_build/html (warnings are errors). Needs the package
# installed (`pip install -e .`) and the docs extra (`pip install -e ".[docs]"`); runs every
# example of the gallery (a few minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
