"""The ``dnnl`` backend record, found by name through :data:`relaykit.backends.BUILTIN`.

Loading the record imports the backend's Python code only; oneDNN itself is
opened when a region is compiled (or by the ``requires`` check).
"""

from __future__ import annotations

from relaykit.backends import Backend, Requirement
from relaykit.backends.common import RELAYKIT_VERSION

from .compile.codegen import OPTIONS_KEY, dnnl_codegen
from .partition import optimize_for_dnnl, partition_for_dnnl, tvm_api
from .partition.int8 import INT_OPS, QNN_RULES
from .partition.patterns import pattern_table
from .partition.rules import RULES, TARGET, check_call, rule_for
from .run.library import DnnlNotFoundError, find_onednn
from .run.module import DnnlModule

__all__ = ["BACKEND"]


def _onednn_missing() -> str | None:
    try:
        find_onednn()
    except DnnlNotFoundError:
        return "oneDNN is not installed"
    return None


BACKEND = Backend(
    TARGET,
    rules={name: rule_for(name) for name in {*RULES, *QNN_RULES, *INT_OPS}},
    patterns=pattern_table,
    options={"config_key": OPTIONS_KEY, "num_threads": None},
    optimize=optimize_for_dnnl,
    # Every region is worth taking: benchmarks/dnnl_overhead.py measured a region call at
    # ~1 µs (bound, one step), and dense+bias+relu regions from 256 to 1.3e8 MACs at 0.35-
    # 0.77x the host kernels' time (1 thread, OPENBLAS_NUM_THREADS=1; the MLP workload:
    # 8 µs with dnnl, 15 µs on the host). Small regions run on one thread (region.py).
    min_region_ops=1,
    min_region_macs=0,
    codegen=dnnl_codegen,
    per_module=True,
    loaders={DnnlModule.type_key: DnnlModule.load_blob},
    # TVM's runtime.DNNLJSONRuntimeCreate, where oneDNN is installed
    functions=(
        {tvm_api.RUNTIME_CREATE: tvm_api.create_runtime_module} if _onednn_missing() is None else {}
    ),
    description=(
        "CNN and transformer regions fused and run by oneDNN through one cached C++ runtime"
    ),
    version=RELAYKIT_VERSION,
    requires=Requirement(extra="dnnl", check=_onednn_missing),
    # TVM's relay.op.contrib.dnnl
    exports={
        "partition_for_dnnl": partition_for_dnnl,
        "pattern_table": pattern_table,
        "check_call": check_call,
        **{name: getattr(tvm_api, name) for name in tvm_api.__all__},
    },
)
