"""The oneDNN (DNNL) backend: offload CNN and transformer regions to oneDNN through BYOC.

Convolutions, pooling, dense layers, batched matrix products, layer norms,
softmax (with additive masks) and GELU are taken, with the reshapes and
transposes between them (views, not copies): a BERT encoder layer becomes one
region, run by one native call.

Partition a model, build it, run it::

    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor
    from relaykit.backends.dnnl import partition_for_dnnl

    mod = partition_for_dnnl(mod, params)             # optimize, then the 4 BYOC passes
    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))

oneDNN comes from PyPI (``pip install relaykit[dnnl]``: the
``onednn-cpu-gomp`` and ``onednn-devel-cpu-gomp`` wheels). Each region runs
in one native call of a C++ runtime compiled once against them (see
:mod:`.native`); oneDNN uses all cores unless ``RELAYKIT_NUM_THREADS`` or the
``"relay.ext.dnnl.options"`` PassContext config says otherwise (regions too small
to gain from a second thread run on one). Each executor runs a region in buffers
of its own, so executors of one build run in parallel threads.

The ``target.dnnl`` operator rules, the ``dnnl`` pattern table and the
``relay.ext.dnnl`` codegen are fields of the backend's record (:mod:`.backend`),
which relaykit finds by name: importing this package registers nothing.
"""

from .compile.codegen import OPTIONS_KEY, compile_region, dnnl_codegen
from .partition import optimize_for_dnnl, partition_for_dnnl, pre_partition_passes
from .partition.patterns import pattern_table
from .partition.rules import check_call
from .run.library import INSTALL_HINT, DnnlNotFoundError, OneDNN, find_onednn
from .run.module import DnnlModule
from .run.region import DnnlRegion
from .run.threads import resolve_num_threads


def is_available() -> bool:
    """Whether oneDNN is installed (the library; its headers are needed on first build)."""
    try:
        find_onednn()
    except DnnlNotFoundError:
        return False
    return True


__all__ = [
    "partition_for_dnnl",
    "optimize_for_dnnl",
    "pre_partition_passes",
    "pattern_table",
    "check_call",
    "dnnl_codegen",
    "compile_region",
    "DnnlModule",
    "DnnlRegion",
    "OPTIONS_KEY",
    "find_onednn",
    "is_available",
    "OneDNN",
    "DnnlNotFoundError",
    "INSTALL_HINT",
    "resolve_num_threads",
]
