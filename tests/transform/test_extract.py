"""extract_fused_functions and extract_intermediate_expr."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule, structural_equal


def test_fused_functions_are_distinct_primitives():
    x = relay.var("x", shape=(1, 2, 6, 6))
    w = [relay.var(f"w{i}", shape=(2, 2, 3, 3)) for i in range(3)]
    y = relay.nn.conv2d(x, w[0], padding=(1, 1))
    a = relay.nn.relu(relay.nn.conv2d(y, w[1], padding=(1, 1)))
    b = relay.nn.relu(relay.nn.conv2d(y, w[2], padding=(1, 1)))
    c = relay.nn.conv2d(x, w[1], padding=(1, 1))  # the same conv as y's: one function
    items = relay.analysis.extract_fused_functions(IRModule.from_expr(relay.Tuple([a + b, c])))
    chains = []
    for fn in items.values():
        assert fn.attrs["Primitive"]
        ops, node = [], fn.body
        while hasattr(node, "op"):
            ops.append(node.op.name)
            node = node.args[0]
        chains.append(tuple(reversed(ops)))
    # y (and c) alone, one branch conv+relu, the other conv+relu+add
    assert sorted(chains) == sorted(
        [("nn.conv2d",), ("nn.conv2d", "nn.relu"), ("nn.conv2d", "nn.relu", "add")]
    )


def test_intermediate_values_in_post_order():
    x = relay.var("x", shape=(2, 3))
    e = relay.exp(x)
    parts = relay.split(e, 3, axis=1)
    body = relay.add(parts[1], relay.const(1.0))
    mod = IRModule.from_expr(body)
    first = relay.analysis.extract_intermdeiate_expr(mod, 0)
    assert structural_equal(
        first["main"].body, relay.exp(relay.var("x", shape=(2, 3))), map_free_vars=True
    )
    assert relay.analysis.extract_intermediate_expr(mod, 1)["main"].body.op.name == "split"
    got = relay.analysis.extract_intermediate_expr(mod, 2)
    xd = np.arange(6, dtype="float32").reshape(2, 3)
    out = relay.create_executor(mod=got).evaluate()(xd).numpy()
    np.testing.assert_allclose(out, np.exp(xd)[:, 1:2], rtol=1e-6)
    assert relay.analysis.extract_intermediate_expr(mod, 9) is mod
