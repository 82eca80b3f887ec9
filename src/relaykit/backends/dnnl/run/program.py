"""The region program: what the codegen hands to the native runtime.

A region becomes a list of oneDNN-level nodes over numbered tensors (float32
unless ``dtypes`` says otherwise; static shapes), with its constants kept as
NumPy arrays. The program
is serialised to JSON (``to_json``); the constants travel separately, in the
order of ``constant_ids()``.

Node kinds and their attributes (``post`` lists fused post-ops:
``{"op": "relu"}``, ``{"op": "sum", "in": t}``, ``{"op": "binary_add", "in": t}``):

========== ========================================================================
conv       ``weight``, ``bias`` (tensor or -1), ``strides``, ``dilation``, ``pad``
           (top, left, bottom, right), ``groups``; ``winograd`` (optional): the
           transformed weight [16, C, K] of a 3x3 convolution run by Winograd's
           F(2x2, 3x3) (see :mod:`relaykit.backends.dnnl.compile.winograd`)
dense      ``weight`` (units, K), ``bias``; the input may be N-D (flattened)
pool       ``alg`` (max / avg_include / avg_exclude), ``kernel``, ``strides``,
           ``dilation``, ``pad_l``, ``pad_r``
eltwise    ``alg``, ``alpha``, ``beta``
binary     ``alg`` (add / sub / mul / div / max / min); input 1 broadcasts
concat     ``axis``
softmax    ``axis``, ``log``; ``dst_scale``: writes the output's integer type
lrn        ``size``, ``alpha``, ``beta``, ``k``
shuffle    ``axis``, ``group``
reshape    (output shape is the tensor's shape); a view of the input (no copy) when
           its layout allows
transpose  ``perm``; a view of the input (its strides permuted)
matmul     inputs [..., M, K] and [..., K, N] of the output's rank (broadcast batch
           dims), ``bias`` (tensor [1, ..., N] or -1); post-ops
layer_norm ``eps``, ``weight`` (scale) and ``bias`` (shift): constants of the last
           dimension's size, or -1; normalises the last dimension; integer input
           and output allowed (``dst_scale`` for an integer output)
qconv      an int8 convolution (attributes of conv, no winograd): ``wscale`` (input
           scale times weight scale, one or per output channel), ``src_zp``,
           ``dst_scale``, ``dst_zp``; post-ops in real units (``sum`` with ``scale``
           and ``zp``); weights are constants of integer values; ``impl``
           (optional): the prefix of the oneDNN kernel to take when it has one
qdense     an int8 matmul: ``weight`` (K, N), ``bias`` (1, N), the qconv attributes;
           a second input (a ``dynparams`` result): the source scale and zero
           point read at run time
qmatmul    an int8 batched matmul of two tensors [..., M, K] x [..., K, N] (the
           second int8): ``src_zp``, ``wei_zp``, ``wscale``, ``dst_scale``, ``dst_zp``
dynparams  a float32 tensor's dynamic quantization parameters (ONNX's
           DynamicQuantizeLinear) into an int32 [2]: the scale's float32 bits, the
           zero point
dynquant   inputs x (float32) and its ``dynparams``: x quantized to uint8
erf        the error function (the runtime's own loop; oneDNN has none): ``alpha``
           scales the input first; ``dst_scale`` / ``dst_zp``: quantized output
qreorder   a data-type conversion: ``src_scale`` (one or per channel along ``axis``),
           ``src_zp``, ``dst_scale``, ``dst_zp``
qadd       a quantized add of two tensors of the output's shape: ``s0``, ``z0``,
           ``s1``, ``z1``, ``dst_scale``, ``dst_zp``; computed in float, rounded once
           (half to even); post-ops (a clip) in real units
========== ========================================================================

>>> p = Program()
>>> x = p.add_input((1, 4))
>>> y = p.new_tensor((1, 4))
>>> p.nodes.append(Node("eltwise", [x], y, {"alg": "relu"}))
>>> p.outputs.append(y)
>>> p.to_json()
'{"format":"relaykit.dnnl","version":1,"layout":"any","tensors":[[1,4],[1,4]],"inputs":[0],"outputs":[1],"constants":[],"nodes":[{"op":"eltwise","in":[0],"out":1,"alg":"relu"}]}'
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Node", "Program", "FORMAT_VERSION"]

FORMAT_VERSION = 1


@dataclass
class Node:
    """One oneDNN-level operation writing tensor ``out``."""

    op: str
    inputs: list[int]
    out: int
    attrs: dict[str, Any] = field(default_factory=dict)
    post: list[dict[str, Any]] = field(default_factory=list)

    def reads(self) -> Iterator[int]:
        """Every tensor the node reads: inputs, weights, bias, post-op operands."""
        yield from self.inputs
        for key in ("weight", "bias", "winograd"):
            t = self.attrs.get(key, -1)
            if t >= 0:
                yield t
        for p in self.post:
            for key in ("in", "weight", "bias"):  # weight, bias: a "dw" post-op's
                if p.get(key, -1) >= 0:
                    yield p[key]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op, "in": list(self.inputs), "out": self.out}
        d.update(self.attrs)
        if self.post:
            d["post"] = [dict(p) for p in self.post]
        return d


@dataclass
class Program:
    """A region as oneDNN-level nodes over numbered tensors (float32 unless ``dtypes``
    says otherwise: uint8, int8, int32 in int8 regions)."""

    shapes: list[tuple[int, ...]] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    constants: dict[int, np.ndarray] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    #: Activation layout of convolutions: "any" (oneDNN chooses), "nhwc" or "blocked".
    layout: str = "any"
    #: Data type of each tensor (float32 unless set: int8 regions have uint8, int8, int32).
    dtypes: dict[int, str] = field(default_factory=dict)

    def dtype(self, t: int) -> str:
        """The data type of tensor ``t``."""
        return self.dtypes.get(t, "float32")

    def copy(self) -> Program:
        """A copy to edit: its own nodes, shapes, inputs, outputs and constants table; the
        constant arrays themselves are shared (no pass writes one in place)."""
        return Program(
            shapes=list(self.shapes),
            inputs=list(self.inputs),
            outputs=list(self.outputs),
            constants=dict(self.constants),
            nodes=[
                Node(n.op, list(n.inputs), n.out, copy.deepcopy(n.attrs), copy.deepcopy(n.post))
                for n in self.nodes
            ],
            layout=self.layout,
            dtypes=dict(self.dtypes),
        )

    def new_tensor(self, shape: tuple[int, ...]) -> int:
        self.shapes.append(tuple(int(d) for d in shape))
        return len(self.shapes) - 1

    def add_input(self, shape: tuple[int, ...]) -> int:
        t = self.new_tensor(shape)
        self.inputs.append(t)
        return t

    def add_constant(self, value: np.ndarray) -> int:
        arr = np.ascontiguousarray(value, dtype=np.float32)
        t = self.new_tensor(arr.shape)
        self.constants[t] = arr
        return t

    def is_constant(self, t: int) -> bool:
        return t in self.constants

    def constant_ids(self) -> list[int]:
        """Constants the nodes read, in the order the runtime receives them."""
        used: set[int] = set()
        for n in self.nodes:
            used.update(t for t in n.reads() if t in self.constants)
        used.update(t for t in self.outputs if t in self.constants)
        return sorted(used)

    def constant_arrays(self) -> list[np.ndarray]:
        return [self.constants[t] for t in self.constant_ids()]

    def to_json(self) -> str:
        doc = {
            "format": "relaykit.dnnl",
            "version": FORMAT_VERSION,
            "layout": self.layout,
            "tensors": [list(s) for s in self.shapes],
            **({"dtypes": [self.dtype(t) for t in range(len(self.shapes))]} if self.dtypes else {}),
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "constants": self.constant_ids(),
            "nodes": [n.to_dict() for n in self.nodes],
        }
        return json.dumps(doc, separators=(",", ":"))

    def op_counts(self) -> dict[str, int]:
        """Nodes per kind, fused post-ops counted as ``kind+post``."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            key = n.op + "".join("+" + p["op"] for p in n.post)
            counts[key] = counts.get(key, 0) + 1
        return counts
