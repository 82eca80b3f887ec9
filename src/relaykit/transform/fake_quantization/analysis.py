"""``list_fake_quantized_op_freqs``: which operators sit inside fake-quantized regions
(TVM's ``relay.analysis.list_fake_quantized_op_freqs``), and how often.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,), dtype="int8")
>>> y = relay.nn.relu(relay.qnn.op.dequantize(x, relay.const(0.5), relay.const(0)))
>>> q = relay.qnn.op.quantize(y, relay.const(0.5), relay.const(0))
>>> list_fake_quantized_op_freqs(relay.Function([x], q))
{'nn.relu': 1}
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .rewrite import fake_quantized_regions

__all__ = ["list_fake_quantized_op_freqs"]


def list_fake_quantized_op_freqs(mod: Any) -> dict[str, int]:
    """Operator name -> number of calls inside fake-quantized regions (between
    ``qnn.dequantize`` and ``qnn.quantize``), over every function of ``mod`` (a module,
    a function or an expression); no type inference is needed."""
    if isinstance(mod, IRModule):
        bodies: list[Expr] = [fn.body for _, fn in mod.items() if isinstance(fn, Function)]
    elif isinstance(mod, Function):
        bodies = [mod.body]
    else:
        bodies = [mod]
    counts: Counter[str] = Counter()
    seen: set[int] = set()
    for body in bodies:
        for _, region in fake_quantized_regions(body):
            for node in region:
                if id(node) in seen or type(node) is not Call or type(node.op) is not Op:
                    continue
                seen.add(id(node))
                if node.op.name != "qnn.dequantize":
                    counts[str(node.op.name)] += 1
    return dict(counts)
