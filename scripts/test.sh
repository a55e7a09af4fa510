#!/usr/bin/env bash
# Set up a virtual environment with the test dependencies and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -e '.[test]'
.venv/bin/python -m pytest -q "$@"
