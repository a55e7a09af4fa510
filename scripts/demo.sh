#!/usr/bin/env bash
# The demo: ingest real conversations (LoCoMo) into one SQLite file and ask a question whose
# answer hinges on a rare proper noun. Each hit shows its rank in the dense and lexical channels.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${DIARIST_DEMO_DATA:-../shared/data/locomo_dev.json.gz}"
DB="${DIARIST_DEMO_DB:-demo.sqlite}"
QUESTION='What did Caroline take away from the book "Becoming Nicole"?'

diarist ingest "$DATA" --db "$DB" --app locomo
echo
echo "Q: $QUESTION"
echo "--- default search (dense + BM25, a convex fusion of their normalised scores, then the evidence stage):"
diarist search "$QUESTION" --db "$DB" --app locomo -k 3
echo "--- vectors only (DIARIST_LEXICAL_FUSION=0):"
DIARIST_LEXICAL_FUSION=0 diarist search "$QUESTION" --db "$DB" --app locomo -k 3
echo "--- the context block an agent is given (diarist context: dated memories, the answer turn whole; 400 tokens here, 1000 by default):"
diarist context "$QUESTION" --db "$DB" --app locomo --budget 400
