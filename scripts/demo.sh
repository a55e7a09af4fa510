#!/usr/bin/env bash
# The demo: `diarist demo` imports the sample data shipped in the package (a ChatGPT and a
# Claude.ai export, notes, facts), asks a few questions, shows each hit and why, and prints the
# context block an agent is given. It runs the checkout's .venv, made first when missing (no
# torch, no test extras). Arguments are passed on:
#   bash scripts/demo.sh --db demo.sqlite     keep the memory, to explore it afterwards
#   bash scripts/demo.sh --locomo ../shared/data/locomo_dev.json.gz     the LoCoMo benchmark instead
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/diarist ] || { python3 -m venv .venv && .venv/bin/pip install -q -e .; }
exec .venv/bin/diarist demo "$@"
