"""The compiled parts of genointerp: the viral index look-ups over reads (genointerp/_scan.c), the
folded XVir's element-wise passes (genointerp/_fused.c) and the reader of plain FASTQ records
(genointerp/_fastq.c).

Everything else is in pyproject.toml; setuptools reads this file for the extensions only. Built
by any `pip install` with a C compiler (gcc or clang) and the Python headers; portable code
(-O3, no -march), so a wheel built on one x86-64 machine runs on another.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("genointerp._scan", ["genointerp/_scan.c"], extra_compile_args=["-O3", "-std=c99"]),
    Extension("genointerp._fastq", ["genointerp/_fastq.c"], extra_compile_args=["-O3", "-std=c99"]),
    # no fused multiply-adds, so the folded model's element-wise passes give the same bytes on any x86-64;
    # no trapping math (floating-point exception flags, never read) lets its exp loop vectorize
    Extension("genointerp._fused", ["genointerp/_fused.c"],
              extra_compile_args=["-O3", "-std=c99", "-ffp-contract=off", "-fno-trapping-math"]),
])
