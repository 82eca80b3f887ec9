"""A dense layer whose input is a transposed view (attention's heads merged back:
``reshape(transpose(ctx, (1, 0, 2)), (seq, hidden))``) runs oneDNN's optimized inner
product after a reorder, never its reference kernel, and computes what NumPy does."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.backends.dnnl.compile.codegen import compile_region


def test_dense_over_merged_heads_avoids_the_reference_kernel(dnnl):
    seq, heads, dh, out = 24, 4, 16, 40
    rng = np.random.default_rng(3)
    w = rng.standard_normal((out, heads * dh)).astype("float32") * 0.1
    b = rng.standard_normal(out).astype("float32")
    x = relay.var("ctx", shape=(heads, seq, dh))
    merged = relay.reshape(relay.transpose(x, (1, 0, 2)), (seq, heads * dh))
    y = relay.nn.bias_add(relay.nn.dense(merged, relay.const(w)), relay.const(b))
    mod = partition_for_dnnl(tvm.IRModule.from_expr(relay.Function([x], y)))
    (fn,) = dnnl.dnnl_functions(mod)
    region = compile_region(fn)
    data = rng.standard_normal((heads, seq, dh)).astype("float32")
    steps = [s for s, _ in region.profile([data])]
    assert not [s for s in steps if "impl=ref" in s], steps
    flat = data.astype(np.float64).transpose(1, 0, 2).reshape(seq, heads * dh)
    want = flat @ w.astype(np.float64).T + b
    lib = relay.build(mod, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("ctx", data)
    m.run()
    got = m.get_output(0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
