#!/usr/bin/env bash
# Set up a virtual environment with the test dependencies and run the whole test suite.
# torch is pinned first to the local CPU build (a plain `torch` would pull several GB of CUDA);
# it is needed only by the [st] extra, which the cross-encoder reranker test uses.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e '.[test,st]'
.venv/bin/python -m pytest -q "$@"
