"""Closed or occasional studies that are not the lab's instrument: code that the library does not
ship (``diarist.bench`` is the instrument), run from the repository root with ``python -m
benchmarks.studies.NAME``. See ``benchmarks/README.md``."""
