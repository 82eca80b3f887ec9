"""TVM's ``relay.transform``: relaykit's passes and, under Relay's names, the BYOC passes.

In TVM the partitioning passes sit beside the others in ``relay.transform``; in relaykit
they live in :mod:`relaykit.byoc`, which builds on :mod:`relaykit.transform`, so this
facade module is where the two meet.

>>> from relaykit import relay
>>> relay.transform.MergeComposite.__module__
'relaykit.byoc.merge_composite'
>>> relay.transform.InferType is relaykit.transform.InferType
True
"""

import sys
from typing import Any

import relaykit.relay.op.contrib  # the module pattern tables are read from (by name)
import relaykit.transform
from relaykit.byoc import (
    AnnotateTarget,
    CapturePostDfsIndexInSpans,
    MergeCompilerRegions,
    MergeComposite,
    PartitionGraph,
)
from relaykit.errors import IRError
from relaykit.text.spans import AnnotateSpans
from relaykit.transform import *  # noqa: F403 - every pass and the pass infrastructure
from relaykit.transform import FoldScaleAxis
from relaykit.transform.fuse_ops import FuseOps
from relaykit.transform.layout import AlterOpLayout
from relaykit.transform.legalize import CanonicalizeOps, Legalize
from relaykit.transform.mixed_precision import ToMixedPrecision
from relaykit.transform.simplify_expr import SimplifyExpr
from relaykit.tuning import CollagePartition as _collage_partition

from . import mixed_precision
from .recast import recast  # the function, as in TVM (it hides the module's name)

_CONTRIB = "relaykit.relay.op.contrib"


def CollagePartition(config: Any, cost_estimator: Any = None) -> relaykit.transform.Pass:
    """TVM's ``relay.transform.CollagePartition`` (:func:`relaykit.tuning.CollagePartition`):
    external codegens' pattern tables are looked up through ``relay.op.contrib``
    when the pass runs, as TVM does."""

    def pattern_table(name: str) -> Any:
        # the facade module, so that a table patched or registered there is seen
        return sys.modules[_CONTRIB].get_pattern_table(name)

    return _collage_partition(config, cost_estimator, pattern_table)


def RecoverVirtualDeviceMap(mod: Any, expr: Any) -> dict[Any, Any]:
    """TVM's ``relay.transform.RecoverVirtualDeviceMap(mod, expr)`` (a global function
    there): the planned virtual device of each sub-expression of ``expr``."""
    return relaykit.transform.recover_virtual_device_map(mod, expr)


def BackwardFoldScaleAxis() -> FoldScaleAxis:
    """TVM's backward half of ``FoldScaleAxis`` (scales after a layer)."""
    return FoldScaleAxis("backward")


def ForwardFoldScaleAxis() -> FoldScaleAxis:
    """TVM's forward half of ``FoldScaleAxis`` (scales before a layer)."""
    return FoldScaleAxis("forward")


__all__ = [
    *relaykit.transform.__all__,
    "MergeComposite",
    "AnnotateTarget",
    "MergeCompilerRegions",
    "PartitionGraph",
    "CollagePartition",
    "CapturePostDfsIndexInSpans",
    "BackwardFoldScaleAxis",
    "ForwardFoldScaleAxis",
    "RecoverVirtualDeviceMap",
    "AnnotateSpans",
    "FuseOps",
    "Legalize",
    "AlterOpLayout",
    "CanonicalizeOps",
    "SimplifyExpr",
    "ToMixedPrecision",
    "build_config",
    "mixed_precision",
    "recast",
]


def build_config(
    opt_level: int = 2,
    required_pass: Any = None,
    disabled_pass: Any = None,
    trace: Any = None,
) -> relaykit.transform.PassContext:
    """TVM's older spelling of ``tvm.transform.PassContext(opt_level=...)`` (a ``with``
    block around ``relay.build``); ``trace`` is not supported and must be None."""
    if trace is not None:
        raise IRError("relay.build_config(trace=...) is not supported: use instruments")
    return relaykit.transform.PassContext(
        opt_level=opt_level, required_pass=required_pass or (), disabled_pass=disabled_pass or ()
    )
