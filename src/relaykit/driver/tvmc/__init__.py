"""``tvm.driver.tvmc``: TVM's TVMC, as a Python API and a command line.

``load`` a model file, optionally ``tune`` it, ``compile`` it to a package, ``run``
the package; ``python -m relaykit.driver.tvmc compile|tune|run ...`` does the same
from a shell (``python -m tvm.driver.tvmc`` with the ``tvm`` alias).

>>> from relaykit.driver import tvmc
>>> sorted(n for n in ("load", "compile", "tune", "run") if callable(getattr(tvmc, n)))
['compile', 'load', 'run', 'tune']
"""

from .api import compile, load, run, tune
from .model import TVMCException, TVMCModel, TVMCPackage, TVMCResult

__all__ = [
    "load",
    "compile",
    "tune",
    "run",
    "TVMCModel",
    "TVMCPackage",
    "TVMCResult",
    "TVMCException",
]
