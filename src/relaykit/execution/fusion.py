"""The host's fusion decisions, all of them: what runs as one step on the host.

Two kinds, both here:

1. **On the IR, at build** (:func:`host_passes`, run by ``relay.build`` and the VM after
   the standard pipeline, see :func:`relaykit.execution.build_module.build_passes`): the
   idioms of :mod:`relaykit.transform.idioms` become one operator each (``FuseLayerNorm``,
   ``FuseGelu``: one kernel instead of five to ten passes), a transposed
   ``nn.batch_matmul`` operand is read as it is (``FoldTransposeIntoBatchMatmul``), a
   quantized table is gathered before it is dequantized (``GatherBeforeDequantize``) and
   NHWC convolutions take the NCHW layout of the native kernels (``ConvolutionsToNCHW``,
   opt_level 3). The
   frontends already emit ``nn.gelu`` and ``nn.layer_norm``; these passes catch modules
   built by hand. The VM's fusion is this step alone: it runs operator by operator.
2. **On the graph executor's plan** (:func:`plan_fusion`, :func:`bind_group`): epilogue
   fusion, below.

Functions for backends are never touched here: a backend decides its own fusion in one
module (dnnl: :mod:`relaykit.backends.dnnl.compile.fuse`, after its pattern table chose the
calls; the idiom checks of that table are the shared recognisers too).

Epilogue fusion: a producer and the elementwise nodes after it run as one step.

After an ``nn.conv2d`` (depthwise, 1x1 or im2col) or an ``nn.dense``, models apply a
bias, maybe add a residual, and clamp (ReLU, ReLU6): MobileNetV2's host path spent 1.7 of
its 14 ms in NumPy's separate ``nn.bias_add`` and ``clip`` passes over tensors that had
just left the cache. :func:`plan_fusion` finds, once per build (``relay.build`` stores the
groups in the plan, and an exported artifact carries them), every chain

    producer -> [nn.bias_add | add of a per-channel constant]
             -> [add of a same-shape tensor (a residual)]
             -> [clip | nn.relu]*

(at least one of them, in that order) whose intermediate tensors are read by nothing
else and are not graph outputs, and whose nodes follow each other in the plan (so moving
the epilogue's writes to the producer's step cannot overwrite a tensor still in use). A
dense producer may also be followed by reshapes that keep its last axis (ONNX ``MatMul``
on 3-D inputs becomes reshape, dense, reshape). :func:`bind_group` binds such a chain as
one step: the producer computes its output block by block and the native epilogue
(:mod:`relaykit.backends.host.conv`) applies ``clamp(x + bias + residual)`` to each block
while it is in the cache, writing the chain's last output. Chains the native kernels
cannot take (another dtype, no compiler, odd strides) run unfused, node by node, and an
executor whose native kernels are off (``RELAYKIT_HOST_NATIVE=0``) ignores the groups.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import qnn as host_qnn
from relaykit.backends.host import qnn_ops
from relaykit.backends.host.conv import Epilogue
from relaykit.backends.host.kernels import Scratch, conv2d_run, dense_run
from relaykit.execution.graph_plan import FusedGroup, GraphPlan, PlanNode
from relaykit.transform.batch_matmul_layout import FoldTransposeIntoBatchMatmul
from relaykit.transform.gather_quantized import GatherBeforeDequantize
from relaykit.transform.gelu import FuseGelu
from relaykit.transform.layer_norm import FuseLayerNorm
from relaykit.transform.nchw_convolutions import ConvolutionsToNCHW
from relaykit.transform.pass_infra import Pass

__all__ = [
    "FusedGroup",
    "PRODUCERS",
    "QNN_PRODUCERS",
    "bind_group",
    "fusion_of",
    "host_passes",
    "plan_fusion",
]

Run = Callable[[], Any]

#: Operators whose output an epilogue can follow.
PRODUCERS = frozenset({"nn.conv2d", "nn.dense"})
#: Integer products whose requantize epilogue fuses (:mod:`relaykit.backends.host.qnn`).
QNN_PRODUCERS = frozenset({"qnn.conv2d", "qnn.dense", "qnn.batch_matmul"})
_INF = float("inf")


def host_passes() -> list[Pass]:
    """The host's fusion passes on the IR, in order (see the module docstring, 1.)."""
    return [
        FuseLayerNorm(),
        FuseGelu(),
        FoldTransposeIntoBatchMatmul(),
        GatherBeforeDequantize(),
        ConvolutionsToNCHW(),
    ]


def _channel_axis(producer: PlanNode, ndim: int) -> int:
    return 1 if producer.name == "nn.conv2d" else ndim - 1


def _is_channel_vector(shape: Sequence[int], out: Sequence[int], axis: int) -> bool:
    """Whether a constant of ``shape`` broadcast against ``out`` varies along ``axis`` only
    (and has all of it)."""
    if len(shape) > len(out) or not shape:
        return False
    lead = len(out) - len(shape)
    if axis < lead:
        return False
    return (
        all(d == (out[axis] if lead + i == axis else 1) for i, d in enumerate(shape))
        and out[axis] > 1
    )


class _Chain:
    """The chain being grown from one producer."""

    def __init__(self, plan: GraphPlan, producer: int) -> None:
        self.plan = plan
        self.producer = producer
        self.entry = plan.nodes[producer].outputs[0]
        self.stage = 0  # 0: bias next; 1: residual next; 2: clamps only
        self.members: list[int] = []
        self.real = 0  # members up to the last epilogue operator
        self.bias: int | None = None
        self.residual: int | None = None
        self.lo, self.hi = -_INF, _INF
        self.names: list[str] = []

    @property
    def shape(self) -> tuple[int, ...]:
        return self.plan.entries[self.entry].shape

    def take(self, index: int, node: PlanNode) -> bool:
        """Add ``node`` (which reads the chain's entry) when it can be fused."""
        plan = self.plan
        if node.kind != "op" or len(node.outputs) != 1:
            return False
        out = plan.entries[node.outputs[0]]
        if out.dtype != "float32":
            return False
        if node.view:  # a reshape after a dense layer that keeps its last axis
            dense = plan.nodes[self.producer].name == "nn.dense"
            ok = dense and bool(out.shape) and out.shape[-1] == self.shape[-1]
            return ok and self._accept(index, node, real=False)
        if out.shape != self.shape or not self._epilogue_op(node):
            return False
        return self._accept(index, node, real=True)

    def _epilogue_op(self, node: PlanNode) -> bool:
        """Take ``node``'s bias, residual or bounds when it is the next epilogue step."""
        axis = _channel_axis(self.plan.nodes[self.producer], len(self.shape))
        if node.name == "nn.bias_add":
            ok = self.stage == 0 and node.inputs[0] == self.entry
            if ok and node.attrs.axis % len(self.shape) == axis:
                self.bias, self.stage = node.inputs[1], 1
                return True
            return False
        if node.name == "add" and len(node.inputs) == 2:
            others = [e for e in node.inputs if e != self.entry]
            if len(others) != 1:
                return False
            oshape = self.plan.entries[others[0]].shape
            if oshape == self.shape and self.stage <= 1:
                self.residual, self.stage = others[0], 2
                return True
            if self.stage == 0 and _is_channel_vector(oshape, self.shape, axis):
                self.bias, self.stage = others[0], 1
                return True
            return False
        if node.name in ("clip", "nn.relu"):
            relu = node.name == "nn.relu"
            lo = max(self.lo, 0.0 if relu else float(node.attrs.a_min))
            hi = min(self.hi, _INF if relu else float(node.attrs.a_max))
            if lo > hi:
                return False
            self.lo, self.hi, self.stage = lo, hi, 2
            return True
        return False

    def _accept(self, index: int, node: PlanNode, real: bool) -> bool:
        self.members.append(index)
        self.entry = node.outputs[0]
        if real:
            self.real = len(self.members)
            self.names.append(node.name)
        return True

    def group(self) -> FusedGroup | None:
        if not self.real:
            return None
        members = tuple(self.members[: self.real])
        out = self.plan.nodes[members[-1]].outputs[0]
        return FusedGroup(
            self.producer, members, out, self.bias, self.residual, self.lo, self.hi,
            tuple(self.names),
        )  # fmt: skip


def plan_fusion(plan: GraphPlan) -> dict[int, FusedGroup]:
    """The fusable chains of ``plan``, by producer node index (see the module docstring)."""
    readers: Counter[int] = Counter()
    for node in plan.nodes:
        readers.update(node.inputs)
    readers.update(plan.heads)
    groups: dict[int, FusedGroup] = {}
    nodes = plan.nodes
    for i, node in enumerate(nodes):
        if node.kind == "op" and not node.view and node.name in QNN_PRODUCERS:
            qgroup = _qnn_chain(plan, i, readers)
            if qgroup is not None:
                groups[i] = qgroup
            continue
        if node.kind != "op" or node.view or node.name not in PRODUCERS:
            continue
        if len(node.outputs) != 1 or plan.entries[node.outputs[0]].dtype != "float32":
            continue
        chain = _Chain(plan, i)
        for j in range(i + 1, len(nodes)):
            nxt = nodes[j]
            if nxt.kind in ("input", "param"):
                continue
            reads = chain.entry in nxt.inputs
            if nxt.kind == "op" and nxt.view and not reads:
                continue  # a view of something else: runs nothing
            if not reads or readers[chain.entry] != 1 or not chain.take(j, nxt):
                break
        group = chain.group()
        if group is not None:
            groups[i] = group
    return groups


class _QnnChain:
    """The integer chain being grown from one ``qnn.*`` product (see :func:`_qnn_chain`)."""

    def __init__(self, plan: GraphPlan, producer: int) -> None:
        self.plan = plan
        self.producer = producer
        node = plan.nodes[producer]
        self.entry = node.outputs[0]
        self.shape = plan.entries[self.entry].shape
        self.dense = node.name == "qnn.dense"
        self.conv = node.name == "qnn.conv2d"
        self.members: list[int] = []
        self.names: list[str] = []
        self.real = 0
        self.bias: int | None = None
        self.stage = 0  # 0: bias or requantize next; 1: requantize next; 2: clips only
        self.lo, self.hi = -_INF, _INF

    def take(self, index: int, node: PlanNode) -> bool:
        """Add ``node`` (a single-output operator reading the chain's entry) if it fits."""
        out = self.plan.entries[node.outputs[0]]
        if node.view:  # a reshape after a dense layer that keeps its last axis
            if not (self.dense and out.shape and out.shape[-1] == self.shape[-1]):
                return False
            self.shape = out.shape
        elif out.shape != self.shape or not self._step(node, out.dtype):
            return False
        self.members.append(index)
        if not node.view:
            self.names.append(node.name)
            self.real = len(self.members)
        self.entry = node.outputs[0]
        return True

    def _step(self, node: PlanNode, dtype: str) -> bool:
        first = node.inputs[0] == self.entry
        if self.stage == 0 and node.name in ("nn.bias_add", "add") and first:
            axis = 1 if self.conv else len(self.shape) - 1
            other = node.inputs[1]
            oshape = self.plan.entries[other].shape
            if node.name == "nn.bias_add":
                ok = node.attrs.axis % len(self.shape) == axis and oshape == (self.shape[axis],)
            else:
                ok = _is_channel_vector(oshape, self.shape, axis)
            if ok:
                self.bias, self.stage = other, 1
            return ok
        if self.stage <= 1 and node.name == "qnn.requantize" and first:
            ok = dtype in ("int8", "uint8")
            self.stage = 2 if ok else self.stage
            return ok
        if self.stage == 2 and node.name in ("clip", "nn.relu"):
            relu = node.name == "nn.relu"
            lo = max(self.lo, 0.0 if relu else float(node.attrs.a_min))
            hi = min(self.hi, _INF if relu else float(node.attrs.a_max))
            if lo > hi:
                return False
            self.lo, self.hi = lo, hi
            return True
        return False

    def group(self) -> FusedGroup | None:
        members = tuple(self.members[: self.real])
        if self.stage != 2 or not members:
            return None
        out = self.plan.nodes[members[-1]].outputs[0]
        return FusedGroup(
            self.producer, members, out, self.bias, None, self.lo, self.hi, tuple(self.names)
        )


def _qnn_chain(plan: GraphPlan, producer: int, readers: Counter[int]) -> FusedGroup | None:
    """``qnn.conv2d | qnn.dense | qnn.batch_matmul -> [nn.bias_add | add of a per-channel
    constant] -> qnn.requantize -> [clip]*``, the requantize required (a dense layer may
    also be followed by reshapes that keep its last axis); the group's ``bias`` is the bias
    entry, ``lo`` / ``hi`` the clips' bounds (the requantize is a member)."""
    nodes = plan.nodes
    first = nodes[producer].outputs[0]
    if len(nodes[producer].outputs) != 1 or plan.entries[first].dtype != "int32":
        return None
    chain = _QnnChain(plan, producer)
    for j in range(producer + 1, len(nodes)):
        nxt = nodes[j]
        if nxt.kind in ("input", "param"):
            continue
        reads = chain.entry in nxt.inputs
        if nxt.kind == "op" and nxt.view and not reads:
            continue
        if not reads or readers[chain.entry] != 1 or nxt.kind != "op" or len(nxt.outputs) != 1:
            break
        if not chain.take(j, nxt):
            break
    return chain.group()


def fusion_of(plan: GraphPlan) -> dict[int, FusedGroup]:
    """The fusion stored in ``plan``; a plan without one (read from an artifact made
    before plans carried it) is planned now, once, and keeps the result."""
    if plan.fusion is None:
        plan.fusion = plan_fusion(plan)
    return plan.fusion


def bind_group(
    group: FusedGroup, plan: GraphPlan, views: Sequence[np.ndarray], scratch: Scratch
) -> Run | None:
    """The fused step of ``group`` on the executor's ``views``, or ``None`` when it cannot
    run fused (the nodes are then bound one by one)."""
    if plan.nodes[group.producer].name in QNN_PRODUCERS:
        return _bind_qnn(group, plan, views, scratch)
    if host_conv.kernels() is None:
        return None
    node = plan.nodes[group.producer]
    if len(node.inputs) != 2:
        return None
    x, w = (views[e] for e in node.inputs)
    t = views[node.outputs[0]]
    y = views[group.out]
    bias = None if group.bias is None else views[group.bias]
    res = None if group.residual is None else views[group.residual]
    operands = [a for a in (x, w, t, y, bias, res) if a is not None]
    if any(a.dtype != np.float32 or not a.flags.c_contiguous for a in operands):
        return None
    if y.size != t.size or (res is not None and res.size != t.size):
        return None
    reads = [a for a in (x, w, bias, res) if a is not None]
    if not any(np.may_share_memory(y, a) for a in reads):
        target = y.reshape(t.shape)  # the producer writes the final buffer, in place after
    elif _apart_or_same(t, y) and (res is None or _apart_or_same(res, y)):
        target = t  # the producer's own buffer; the epilogue reads it and writes y
    else:
        return None
    epi = Epilogue(
        target if target is not t else y.reshape(t.shape),
        None if bias is None else bias.reshape(-1),
        None if res is None else res.reshape(t.shape),
        group.lo,
        group.hi,
    )
    if node.name == "nn.conv2d":
        return conv2d_run(node.attrs, x, w, target, scratch, epi)
    return dense_run(x, w, target, epi)


def _apart_or_same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` do not overlap, or are the same memory element by element."""
    if not np.may_share_memory(a, b):
        return True
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def _bind_qnn(
    group: FusedGroup, plan: GraphPlan, views: Sequence[np.ndarray], scratch: Scratch
) -> Run | None:
    """The integer product with its bias, requantize and clips in one native step."""
    node = plan.nodes[group.producer]
    rq_node = next(plan.nodes[m] for m in group.members if plan.nodes[m].name == "qnn.requantize")
    args = [views[e] for e in node.inputs]
    y = views[group.out]
    t = views[node.outputs[0]]
    axis = 1 if node.name == "qnn.conv2d" else t.ndim - 1
    channels = int(t.shape[axis])
    params = [views[e] for e in rq_node.inputs[1:]]
    bias = None if group.bias is None else views[group.bias]
    target = y.reshape(t.shape)
    if not _qnn_operands_ok(node, rq_node, args, params, bias, target, axis):
        return None
    rq = qnn_ops.requantize_of(rq_node.attrs, params, channels, bias, group.lo, group.hi)
    if rq is None:
        return None
    if node.name == "qnn.conv2d":
        return host_qnn.conv2d_run(node.attrs, args, target, scratch, rq)
    if node.name == "qnn.dense":
        return host_qnn.dense_run(args, target, scratch, rq)
    return host_qnn.batch_matmul_run(node.attrs, args, target, scratch, rq)


def _qnn_operands_ok(
    node: PlanNode,
    rq_node: PlanNode,
    args: list[np.ndarray],
    params: list[np.ndarray],
    bias: np.ndarray | None,
    y: np.ndarray,
    axis: int,
) -> bool:
    """Whether the fused step can take these operands: per-tensor parameters or per
    channel along the output's channel axis, a constant int32 bias of one value per
    channel, constant quantization parameters, an output the product may write."""
    channels = int(y.shape[axis])
    sizes = [np.asarray(p).size for p in params]
    if any(n not in (1, channels) for n in sizes):
        return False
    if any(n > 1 for n in sizes) and int(rq_node.attrs.axis) % y.ndim != axis:
        return False
    if bias is not None and (
        bias.dtype != np.int32 or bias.size != channels or bias.flags.writeable
    ):
        return False
    if y.dtype.name != str(rq_node.attrs.out_dtype) or any(a.flags.writeable for a in args[2:]):
        return False
    if np.may_share_memory(y, args[1]):
        return False
    return not np.may_share_memory(y, args[0]) or _reads_first(node, args[0], y)


def _reads_first(node: PlanNode, x: np.ndarray, y: np.ndarray) -> bool:
    """Whether the integer product copies all of ``x`` before writing its output (the
    planner may give the output ``x``'s memory): im2col of one image, packed dense rows;
    a depthwise convolution writes an output overlapping its input any other way than
    channel for channel to scratch first (:func:`relaykit.backends.host.qnn.conv2d_run`)."""
    if node.name == "qnn.dense":
        return True
    if node.name != "qnn.conv2d" or x.shape[0] != 1:
        return False
    return int(node.attrs.groups) == 1 or int(node.attrs.groups) == x.shape[1]
