"""``python -m vestige.cli``: the same as the ``vestige`` command."""

from . import main

main()
