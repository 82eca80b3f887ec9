"""``tvm.autotvm``: TVM's template tuner, which relaykit does not have.

The module imports; using it raises :class:`~relaykit.errors.UnsupportedFeatureError`.
relaykit tunes nothing by search: the dnnl backend picks oneDNN's kernels and
layouts itself (``relaykit.backends.dnnl.compile.tune`` times its few layout choices).

>>> from relaykit import autotvm
>>> hasattr(autotvm, "FallbackContext")
False
"""

from __future__ import annotations

from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__: list[str] = []

INSTEAD = (
    "relaykit has no schedule templates to tune; backends choose their kernels "
    "(the dnnl backend lets oneDNN pick, see relaykit.backends.dnnl.compile.tune)"
)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.autotvm", name, INSTEAD)
