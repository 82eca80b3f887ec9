"""``tvm.driver``: TVM's driver package; relaykit has its ``tvmc`` (Python API and
command line, :mod:`relaykit.driver.tvmc`)."""

from . import tvmc

__all__ = ["tvmc"]
