"""The one compiled part, optional: BM25 accumulation (diarist/lexical/_accumulate.c).

Everything else is in pyproject.toml. Without a C compiler the install still succeeds
(``optional=True``) and BM25 scores in numpy, to the same floats, a few ms slower a query at a
million chunks."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "diarist.lexical._accumulate",
            ["src/diarist/lexical/_accumulate.c"],
            # No fused multiply-add: the sums must be numpy's to the bit.
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
