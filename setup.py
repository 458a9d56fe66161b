"""Builds the parse hot path's loops (`parsers/line_kernels.py`) with Cython and the machine's C compiler.

Everything else is in pyproject.toml. The extension is optional: where no compiler is found, or it
fails, the package installs without it and the same loops' vectorised Python path runs instead
(`logmine.parsers.hot_path`).
"""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # a build without its isolated environment and no Cython: the Python path only
    setup()
else:
    KERNELS = Extension("logmine.parsers.line_kernels", ["parsers/line_kernels.py"], optional=True)
    setup(ext_modules=cythonize([KERNELS], language_level=3, quiet=True))
