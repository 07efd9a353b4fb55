"""The one compiled part of genointerp: the viral index look-ups over reads (genointerp/_scan.c).

Everything else is in pyproject.toml; setuptools reads this file for the extension only. Built
by any `pip install` with a C compiler (gcc or clang) and the Python headers; portable code
(-O3, no -march), so a wheel built on one x86-64 machine runs on another.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("genointerp._scan", ["genointerp/_scan.c"], extra_compile_args=["-O3", "-std=c99"])])
