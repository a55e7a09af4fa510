"""``python -m diarist.cli``: the same as the ``diarist`` command."""

from . import main

main()
