#!/usr/bin/env bash
# Set up a virtual environment with the test dependencies and run the whole test suite (CI's
# command). Arguments go to pytest: `bash scripts/test.sh -m "not slow"` is the fast loop (the
# tests marked slow, a second or more each, left out), `tests/importers/test_sync.py` one file.
# torch is pinned first to the local CPU build (a plain `torch` would pull several GB of CUDA);
# it is needed only by the [st] extra, which the cross-encoder reranker test uses.
set -euo pipefail
cd "$(dirname "$0")/.."
# The inspector's browser tests (tests/ui/test_ui_browser.py) drive the system's Chromium through
# Playwright (never `playwright install`): install Debian's when it is missing. Without root or
# apt-get they are skipped, and say why.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "test.sh: could not install chromium with apt-get; the browser tests will be skipped" >&2
  else
    echo "test.sh: chromium is missing and apt-get cannot run as root here; the browser tests will be skipped" >&2
  fi
fi
python3 -m venv .venv
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e '.[test,st]'
.venv/bin/python -m pytest -q "$@"
