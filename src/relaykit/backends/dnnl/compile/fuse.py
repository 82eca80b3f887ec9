"""Region-level fusion: fewer, bigger oneDNN primitives. dnnl's fusion decisions are
all here (the pattern table only chooses the calls a region takes, and names the GELU
and layer-norm composites the lowering makes one node each).

Run on a lowered :class:`~relaykit.backends.dnnl.run.program.Program`, in this order:

0. ``sink_reshapes`` — a reshape that keeps the trailing dimensions moves past
   the eltwise, broadcast binary, softmax and layer-norm nodes after it, so
   that they meet the dense or matmul node before it (exporters put a reshape
   between a matrix product and its bias, scale, mask and activation);
   reshapes and transposes themselves cost nothing (the runtime makes them
   views: the same buffer with other strides).
1. ``fold_affine`` — a per-channel constant multiply / add / subtract right
   after a convolution or dense layer (batch norm, bias) is folded into its
   weights and bias; ``fold_affine_chains`` merges other runs of them (a
   batch norm after a concatenation) into one multiply with a fused add.
2. ``fold_flatten`` — a flatten feeding a dense layer disappears: oneDNN's
   inner product reads the 4-D (blocked) tensor directly.
3. ``fold_channel_shuffle`` — reshape → transpose(0, 2, 1, 3, 4) → reshape
   (ShuffleNet) becomes one oneDNN shuffle.
4. ``fold_matmul_bias`` — a constant added along the last axis of a matmul
   becomes its bias; ``scale_to_linear`` — a multiply, divide, add or subtract
   by a scalar constant becomes an eltwise ``linear`` (a post-op below);
   ``minmax_to_clip`` — a maximum or minimum with a scalar constant becomes an
   eltwise ``clip_v2`` (ONNX Clip, ReLU6, arrives as maximum then minimum), and
   two clips in a row fuse into one post-op instead of two binary ones.
5. ``fuse_post_ops`` — activations, residual adds (oneDNN ``sum``: the
   convolution accumulates into the residual's buffer) and broadcast binary
   ops become post-ops of the convolution, dense, matmul or binary node
   before them.
6. ``eliminate_dead`` — nodes nobody reads are dropped, and chains of
   reshapes become one.

A node is fused into its producer only when the producer's output has no
other reader and is not a region output, so results never change.

>>> from relaykit.backends.dnnl.run.program import Node, Program
>>> import numpy as np
>>> p = Program()
>>> x = p.add_input((1, 2, 4, 4))
>>> w = p.add_constant(np.ones((2, 2, 1, 1)))
>>> c = p.new_tensor((1, 2, 4, 4)); r = p.new_tensor((1, 2, 4, 4))
>>> p.nodes += [Node("conv", [x], c, {"weight": w, "bias": -1, "strides": [1, 1],
...             "dilation": [1, 1], "pad": [0, 0, 0, 0], "groups": 1}),
...             Node("eltwise", [c], r, {"alg": "relu"})]
>>> p.outputs = [r]
>>> optimize(p).op_counts()
{'conv+relu': 1}
"""

from __future__ import annotations

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program

from .dedup import merge_duplicates

__all__ = [
    "optimize",
    "fold_affine",
    "fold_affine_chains",
    "fold_flatten",
    "fold_channel_shuffle",
    "fuse_post_ops",
    "eliminate_dead",
    "sink_reshapes",
    "collapse_reshapes",
    "fold_matmul_bias",
    "matmul_output_layout",
    "scale_to_linear",
    "minmax_to_clip",
    "fuse_depthwise",
]

_POST_PRODUCERS = frozenset({"conv", "dense", "binary", "matmul"})


def _float_qdense(p: Program, node: Node) -> bool:
    """An int8 matmul writing float32 (a dynamically quantized dense: its scales are
    applied before post-ops, so they see the float result as after a dense)."""
    return node.op == "qdense" and p.dtype(node.out) == "float32" and "dst_scale" not in node.attrs


def _post_producer(p: Program, node: Node) -> bool:
    return node.op in _POST_PRODUCERS or _float_qdense(p, node)


class _Graph:
    """Producers and readers of a program's tensors, kept up to date by the passes."""

    def __init__(self, p: Program) -> None:
        self.p = p
        self.order: list[Node | None] = list(p.nodes)
        self.pos: dict[int, int] = {id(n): i for i, n in enumerate(p.nodes)}
        self.producer: dict[int, Node] = {n.out: n for n in p.nodes}
        self.readers: dict[int, list[Node]] = {}
        for n in p.nodes:
            for t in n.reads():
                self.readers.setdefault(t, []).append(n)
        self.outputs = set(p.outputs)

    def sole_reader(self, t: int) -> Node | None:
        """The only node reading ``t`` (once), when ``t`` is not a region output."""
        readers = self.readers.get(t, ())
        if t in self.outputs or len(readers) != 1:
            return None
        return readers[0]

    def absorb(self, producer: Node, consumer: Node, move: bool, keep_reads: bool = True) -> None:
        """``producer`` now also computes ``consumer`` and writes its output; the
        consumer's other reads become the producer's (post-op operands) unless
        ``keep_reads`` is False (folded constants)."""
        old = producer.out
        self.readers[old].remove(consumer)
        for t in consumer.reads():
            if t == old:
                continue
            readers = self.readers[t]
            readers[readers.index(consumer)] = producer
            if not keep_reads:
                readers.remove(producer)
        producer.out = consumer.out
        self.producer[consumer.out] = producer
        i = self.pos.pop(id(consumer))
        if move:
            self.order[self.pos[id(producer)]] = None
            self.order[i] = producer
            self.pos[id(producer)] = i
        else:
            self.order[i] = None

    def remove(self, node: Node) -> None:
        i = self.pos.pop(id(node))
        self.order[i] = None
        for t in node.reads():
            self.readers[t].remove(node)

    def add_reads(self, node: Node, tensors: list[int]) -> None:
        for t in tensors:
            self.readers.setdefault(t, []).append(node)

    def replace(self, old: Node, new: Node) -> None:
        i = self.pos[id(old)]
        self.remove(old)
        self.add_reads(new, list(new.reads()))
        self.order[i] = new
        self.pos[id(new)] = i
        self.producer[new.out] = new

    def commit(self) -> None:
        self.p.nodes = [n for n in self.order if n is not None]


def _channel_vector(p: Program, t: int, out_shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """The constant ``t`` as a per-channel vector along ``axis`` of ``out_shape``, if it is one."""
    c = p.constants.get(t)
    if c is None or c.ndim != len(out_shape):
        return None
    for i, d in enumerate(c.shape):
        if i != axis and d != 1:
            return None
    if c.shape[axis] not in (1, out_shape[axis]):
        return None
    return np.broadcast_to(c.reshape(-1), (out_shape[axis],)).astype(np.float32)


def fold_affine(p: Program) -> None:
    """Fold per-channel constant mul/add/sub after conv and dense into weights and bias."""
    g = _Graph(p)
    for n in list(g.order):
        if n is None or n.op not in ("conv", "dense"):
            continue
        while not n.post:
            c = g.sole_reader(n.out)
            if c is None or c.op != "binary" or c.post:
                break
            alg = c.attrs["alg"]
            first = c.inputs[0] == n.out
            other = c.inputs[1] if first else c.inputs[0]
            if alg not in ("add", "sub", "mul") or (not first and alg == "sub"):
                break
            out_shape = p.shapes[n.out]
            vec = _channel_vector(p, other, out_shape, 1)
            if vec is None or p.shapes[c.out] != out_shape or not p.is_constant(n.attrs["weight"]):
                break
            weight = p.constants[n.attrs["weight"]]
            bias_t = n.attrs.get("bias", -1)
            bias = p.constants[bias_t] if bias_t >= 0 else np.zeros(out_shape[1], np.float32)
            if alg == "mul":
                scale = vec.reshape((-1,) + (1,) * (weight.ndim - 1))
                n.attrs["weight"] = p.add_constant(weight * scale)
                if bias_t >= 0:
                    n.attrs["bias"] = p.add_constant(bias * vec)
            else:
                n.attrs["bias"] = p.add_constant(bias + vec if alg == "add" else bias - vec)
            g.absorb(n, c, move=False, keep_reads=False)
    g.commit()


def _affine_operand(p: Program, node: Node, x: int) -> np.ndarray | None:
    """The constant of ``node = binary(x, c)`` when it broadcasts over ``x`` (an affine step)."""
    if node.op != "binary" or node.post or node.attrs["alg"] not in ("add", "sub", "mul"):
        return None
    if node.inputs[0] != x or p.shapes[node.out] != p.shapes[x]:
        return None
    return p.constants.get(node.inputs[1])


def fold_affine_chains(p: Program) -> None:
    """Merge runs of constant mul/add/sub on one tensor into ``x * s`` plus a fused ``+ t``."""
    g = _Graph(p)
    for n in list(g.order):
        if n is None or n.op != "binary" or n.post:
            continue
        x = n.inputs[0]
        first = _affine_operand(p, n, x)
        if first is None:
            continue
        scale = np.ones((1,) * first.ndim, np.float32)
        shift = np.zeros((1,) * first.ndim, np.float32)
        steps = 0
        node: Node | None = n
        while node is not None:
            c = _affine_operand(p, node, node.inputs[0])
            if c is None:
                break
            alg = node.attrs["alg"]
            if alg == "mul":
                scale, shift = scale * c, shift * c
            else:
                shift = shift + c if alg == "add" else shift - c
            steps += 1
            if node is not n:
                g.absorb(n, node, move=False, keep_reads=False)
            node = g.sole_reader(n.out)
        if steps < 2:
            continue
        g.readers[n.inputs[1]].remove(n)
        n.post = []
        if np.all(scale == 1):
            n.attrs["alg"] = "add"
            n.inputs = [x, p.add_constant(shift)]
        else:
            n.attrs["alg"] = "mul"
            n.inputs = [x, p.add_constant(scale)]
            if np.any(shift != 0):
                n.post = [{"op": "binary_add", "in": p.add_constant(shift)}]
        g.add_reads(n, [n.inputs[1]] + [q["in"] for q in n.post])
    g.commit()


def fold_flatten(p: Program) -> None:
    """Let dense layers read the tensor before a flatten (no reorder to plain layout)."""
    g = _Graph(p)
    for n in list(g.order):
        if n is None or n.op != "dense":
            continue
        r = g.producer.get(n.inputs[0])
        if r is None or r.op != "reshape" or g.sole_reader(r.out) is not n:
            continue
        src_shape = p.shapes[r.inputs[0]]
        if len(src_shape) < 2 or src_shape[0] != p.shapes[r.out][0] or len(src_shape) > 5:
            continue
        g.remove(r)
        g.readers[n.inputs[0]].remove(n)
        n.inputs = [r.inputs[0]]
        g.add_reads(n, n.inputs)
    g.commit()


def fold_channel_shuffle(p: Program) -> None:
    """reshape(N,C,H,W -> N,G,C/G,H,W) -> transpose(0,2,1,3,4) -> reshape back: a shuffle."""
    g = _Graph(p)
    for n in list(g.order):
        if n is None or n.op != "transpose" or n.attrs["perm"] != [0, 2, 1, 3, 4]:
            continue
        r1 = g.producer.get(n.inputs[0])
        if r1 is None or r1.op != "reshape" or g.sole_reader(r1.out) is not n:
            continue
        r2 = g.sole_reader(n.out)
        if r2 is None or r2.op != "reshape":
            continue
        src, mid, dst = p.shapes[r1.inputs[0]], p.shapes[r1.out], p.shapes[r2.out]
        if len(src) != 4 or src != dst or len(mid) != 5:
            continue
        if (mid[0], mid[1] * mid[2], mid[3], mid[4]) != src:
            continue
        shuffle = Node("shuffle", [r1.inputs[0]], r2.out, {"axis": 1, "group": mid[2]})
        g.remove(r1)
        g.remove(n)
        g.replace(r2, shuffle)
    g.commit()


def fuse_post_ops(p: Program) -> None:
    """Make activations, residual adds and broadcast binaries post-ops of their producer."""
    g = _Graph(p)
    i = 0
    while i < len(g.order):
        c = g.order[i]
        i += 1
        if c is None:
            continue
        if c.op == "eltwise":
            prod = g.producer.get(c.inputs[0])
            if prod is not None and _post_producer(p, prod) and g.sole_reader(c.inputs[0]) is c:
                spec = {"op": c.attrs["alg"]}
                for key in ("alpha", "beta"):
                    if c.attrs.get(key):
                        spec[key] = c.attrs[key]
                if not _merge_clip(prod.post, spec):
                    prod.post.append(spec)
                g.absorb(prod, c, move=False)
        elif c.op == "binary" and not c.post:
            _fuse_binary(g, c)
    g.commit()


def _fuse_binary(g: _Graph, c: Node) -> None:
    p = g.p
    a, b = c.inputs
    alg = c.attrs["alg"]
    full = p.shapes[c.out]
    if alg == "add" and p.shapes[a] == full and p.shapes[b] == full:
        # Residual add: the later of the two producers accumulates into the other operand.
        best: tuple[int, Node, int] | None = None
        for t, other in ((a, b), (b, a)):
            prod = g.producer.get(t)
            if (
                prod is not None
                and (prod.op in ("conv", "dense") or _float_qdense(p, prod))
                and g.sole_reader(t) is c
                and not any(q["op"] == "sum" for q in prod.post)
                and not p.is_constant(other)
                and other != t
                # an intermediate the node also reads would be accumulated into in place
                and (other not in prod.inputs or other in p.inputs)
            ):
                pos = g.pos[id(prod)]
                if best is None or pos > best[0]:
                    best = (pos, prod, other)
        if best is not None:
            _, prod, other = best
            prod.post.append({"op": "sum", "in": other})
            g.absorb(prod, c, move=True)
            return
    prod = g.producer.get(a)
    if prod is None or not _post_producer(p, prod) or g.sole_reader(a) is not c or a == b:
        return
    prod.post.append({"op": "binary_" + alg, "in": b})
    g.absorb(prod, c, move=True)


def _trailing_kept(src: tuple[int, ...], dst: tuple[int, ...]) -> int:
    """How many trailing dimensions a reshape from ``src`` to ``dst`` keeps."""
    k = 0
    while k < min(len(src), len(dst)) and src[-1 - k] == dst[-1 - k]:
        k += 1
    return k


def _strip_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


def _sunk(p: Program, c: Node, y: int, x: int, extra: list[Node]) -> Node | None:
    """``c`` (reading ``y = reshape(x)``) rewritten to read ``x``, or None if it cannot;
    reshapes of its other operand go to ``extra``."""
    sx, sy = p.shapes[x], p.shapes[y]
    kept = _trailing_kept(sx, sy)
    if c.op == "eltwise" and not c.post:
        return Node("eltwise", [x], -1, dict(c.attrs))
    if c.op == "softmax" and len(sy) - c.attrs["axis"] <= kept:
        attrs = dict(c.attrs, axis=len(sx) - (len(sy) - c.attrs["axis"]))
        return Node("softmax", [x], -1, attrs)
    if c.op == "layer_norm" and kept >= 1:
        return Node("layer_norm", [x], -1, dict(c.attrs))
    if c.op != "binary" or c.post:
        return None
    a, b = c.inputs
    if b == y and a != y and c.attrs["alg"] in ("add", "mul", "max", "min"):
        a, b = b, a
    if a != y or b == y or p.shapes[c.out] != sy:
        return None
    sb = p.shapes[b]
    if sb == sy:  # a full operand: read it reshaped too (a view)
        b_shape = sx
    else:
        tail = _strip_ones(sb)
        if len(tail) > kept:
            return None
        b_shape = (1,) * (len(sx) - len(tail)) + tail
    return Node("binary", [x, _reshaped(p, b, b_shape, extra)], -1, dict(c.attrs))


def _reshaped(p: Program, t: int, shape: tuple[int, ...], extra: list[Node]) -> int:
    if p.shapes[t] == shape:
        return t
    c = p.constants.get(t)
    if c is not None:
        return p.add_constant(c.reshape(shape))
    out = p.new_tensor(shape)
    if t in p.dtypes:  # an integer tensor stays one
        p.dtypes[out] = p.dtypes[t]
    extra.append(Node("reshape", [t], out))
    return out


def _sink_round(p: Program, pinned: set[int]) -> bool:
    readers: dict[int, list[Node]] = {}
    for n in p.nodes:
        for t in n.reads():
            readers.setdefault(t, []).append(n)
    outputs = set(p.outputs)
    removed: set[int] = set()
    before: dict[int, list[Node]] = {}
    for n in p.nodes:
        if n.op != "reshape" or n.out in outputs or len(readers.get(n.out, ())) != 1:
            continue
        if id(n) in pinned:  # reshapes an operand for a node sunk before: stays
            continue
        c = readers[n.out][0]
        if id(c) in before:
            continue
        extra: list[Node] = []
        new = _sunk(p, c, n.out, n.inputs[0], extra)
        if new is None:
            continue
        new.out = p.new_tensor(p.shapes[n.inputs[0]])
        if c.out in p.dtypes:  # the node's integer output type comes along
            p.dtypes[new.out] = p.dtypes[c.out]
        # c becomes the reshape back; the rewritten node runs where c ran.
        c.op, c.inputs, c.attrs, c.post = "reshape", [new.out], {}, []
        before[id(c)] = [*extra, new]
        pinned.update(id(e) for e in extra)
        removed.add(id(n))
    if not removed:
        return False
    nodes: list[Node] = []
    for n in p.nodes:
        nodes.extend(before.get(id(n), ()))
        if id(n) not in removed:
            nodes.append(n)
    p.nodes = nodes
    return True


def sink_reshapes(p: Program) -> None:
    """Move reshapes that keep the trailing dimensions past the nodes after them (see
    the module docstring), so that those nodes can fuse with what precedes the reshape."""
    pinned: set[int] = set()
    for _ in range(64):  # each round moves every reshape one node further
        if not _sink_round(p, pinned):
            return


def collapse_reshapes(p: Program) -> None:
    """reshape(reshape(x)) reads x directly; a reshape to the same shape disappears."""
    producer = {n.out: n for n in p.nodes}
    outputs = set(p.outputs)
    rename: dict[int, int] = {}
    for n in p.nodes:
        n.inputs = [rename.get(t, t) for t in n.inputs]
        for key in ("weight", "bias"):
            if key in n.attrs and n.attrs[key] in rename:
                n.attrs[key] = rename[n.attrs[key]]
        for q in n.post:
            if "in" in q:
                q["in"] = rename.get(q["in"], q["in"])
        if n.op != "reshape":
            continue
        src = producer.get(n.inputs[0])
        while src is not None and src.op == "reshape":
            n.inputs = [src.inputs[0]]
            src = producer.get(n.inputs[0])
        if p.shapes[n.inputs[0]] == p.shapes[n.out] and n.out not in outputs:
            rename[n.out] = n.inputs[0]


def matmul_output_layout(p: Program) -> None:
    """A batched matmul [B, M, N] whose result is split along B and transposed before
    anything reads it (attention's P V: heads then tokens, read as tokens then heads)
    writes in the layout that makes the transposed tensor contiguous
    (``dst_strides``), so the reshapes and the transpose after it are views, not a
    reorder (the runtime falls back to a plain result where oneDNN has no kernel)."""
    g = _Graph(p)
    for n in p.nodes:
        if n.op not in ("matmul", "qmatmul") or len(p.shapes[n.out]) != 3:
            continue
        if any(q["op"] == "sum" for q in n.post):
            continue
        r = g.sole_reader(n.out)
        t = g.sole_reader(r.out) if r is not None and r.op == "reshape" else None
        if t is None or t.op != "transpose" or t.out in g.outputs:
            continue
        b, m, k = p.shapes[n.out]
        d = p.shapes[r.out]  # type: ignore[union-attr]
        perm = [int(x) for x in t.attrs["perm"]]
        if len(d) < 3 or tuple(d[-2:]) != (m, k) or perm[-1] != len(d) - 1:
            continue
        shape = p.shapes[t.out]
        contiguous = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            contiguous[i] = contiguous[i + 1] * shape[i + 1]
        strides = [0] * len(d)
        for i, axis in enumerate(perm):
            strides[axis] = contiguous[i]
        batch = len(d) - 2
        if any(d[j] != 1 and strides[j] != d[j + 1] * strides[j + 1] for j in range(batch - 1)):
            continue  # the batch axes do not make one stride (unit axes have none)
        if strides == [contiguous[i] for i in range(len(d))] or b == 1:
            continue  # already plain
        n.attrs["dst_strides"] = [strides[batch - 1], strides[batch], strides[batch + 1]]


def fold_matmul_bias(p: Program) -> None:
    """A constant vector added along the last axis of a matmul becomes its bias."""
    g = _Graph(p)
    for n in list(g.order):
        if n is None or n.op != "matmul" or n.post or n.attrs.get("bias", -1) >= 0:
            continue
        c = g.sole_reader(n.out)
        if c is None or c.op != "binary" or c.post or c.attrs["alg"] != "add":
            continue
        other = c.inputs[1] if c.inputs[0] == n.out else c.inputs[0]
        out_shape = p.shapes[n.out]
        vec = _channel_vector(p, other, out_shape, len(out_shape) - 1)
        if vec is None or p.shapes[c.out] != out_shape:
            continue
        n.attrs["bias"] = p.add_constant(vec.reshape((1,) * (len(out_shape) - 1) + (-1,)))
        g.absorb(n, c, move=False, keep_reads=False)
    g.commit()


def scale_to_linear(p: Program) -> None:
    """``x * c``, ``x / c``, ``x + c``, ``x - c`` for a scalar constant ``c``: eltwise
    linear (alpha * x + beta), which fuses as a post-op."""
    for i, n in enumerate(p.nodes):
        if n.op != "binary" or n.post or n.attrs["alg"] not in ("mul", "div", "add", "sub"):
            continue
        c = p.constants.get(n.inputs[1])
        if c is None or c.size != 1 or p.shapes[n.inputs[0]] != p.shapes[n.out]:
            continue
        v = float(c.reshape(()))
        alg = n.attrs["alg"]
        if alg == "div" and v == 0:
            continue
        # Only the chosen form is computed: ``1 / v`` exists for a division alone.
        if alg in ("add", "sub"):
            alpha, beta = 1.0, (v if alg == "add" else -v)
        else:
            alpha, beta = (v if alg == "mul" else 1.0 / v), 0.0
        p.nodes[i] = Node("eltwise", [n.inputs[0]], n.out, {"alg": "linear", "alpha": alpha,
                                                            "beta": beta})  # fmt: skip


def minmax_to_clip(p: Program) -> None:
    """``maximum(x, c)`` / ``minimum(x, c)`` for a scalar constant ``c``: eltwise clip_v2
    with bounds (c, +inf) / (-inf, c), a post-op that costs no operand load (the binary
    max/min post-ops ONNX's Clip became load a broadcast scalar per vector each)."""
    for i, n in enumerate(p.nodes):
        if n.op != "binary" or n.post or n.attrs["alg"] not in ("max", "min"):
            continue
        c = p.constants.get(n.inputs[1])
        if c is None or c.size != 1 or p.shapes[n.inputs[0]] != p.shapes[n.out]:
            continue
        v = float(c.reshape(()))
        if v != v:  # NaN bound: clip would not propagate it as maximum/minimum do
            continue
        lo, hi = (v, float("inf")) if n.attrs["alg"] == "max" else (float("-inf"), v)
        p.nodes[i] = Node("eltwise", [n.inputs[0]], n.out, {"alg": "clip_v2", "alpha": lo,
                                                            "beta": hi})  # fmt: skip


def _merge_clip(post: list[dict], spec: dict) -> bool:
    """Fold the clip_v2 post-op ``spec`` into a clip_v2 ending ``post`` when their ranges
    overlap (then clip(clip(x, a1, b1), a2, b2) is clip(x, max(a1, a2), min(b1, b2)))."""
    if spec["op"] != "clip_v2" or not post or post[-1]["op"] != "clip_v2":
        return False
    last = post[-1]
    lo = max(last.get("alpha", 0.0), spec.get("alpha", 0.0))
    hi = min(last.get("beta", 0.0), spec.get("beta", 0.0))
    if lo > hi:
        return False
    last["alpha"], last["beta"] = lo, hi
    return True


def _is_conv(n: Node, p: Program, kernel: int, strides: tuple[int, ...], pad: int) -> bool:
    """``n`` is a 2-D convolution with a square ``kernel``, one of ``strides``, padding
    ``pad`` on every side, no dilation, and only eltwise post-ops."""
    if n.op != "conv" or len(p.shapes[n.attrs["weight"]]) != 4:
        return False
    a = n.attrs
    return (
        tuple(p.shapes[a["weight"]][2:]) == (kernel, kernel)
        and len(set(a["strides"])) == 1
        and a["strides"][0] in strides
        and list(a["pad"]) == [pad] * 4
        and list(a["dilation"]) == [1, 1]
        and all("in" not in q and q["op"] not in ("sum", "dw") for q in n.post)
    )


def fuse_depthwise(p: Program, exclude: frozenset[int] = frozenset()) -> Program | None:
    """A copy of optimized ``p`` in which each 1x1 convolution (stride 1, no padding) whose
    only reader is a depthwise 3x3 convolution (padding 1, stride 1 or 2) takes it as a
    ``dw`` post-op (oneDNN's 1x1 + depthwise fusion: MobileNet's expansion and depthwise
    layers, the expanded tensor never written whole), or None when there is no such pair.
    Pairs whose depthwise convolution writes a tensor in ``exclude`` stay apart.
    Only oneDNN's blocked-layout kernels fuse them (see ``tune.fastest_build``)."""
    readers: dict[int, list[Node]] = {}
    for n in p.nodes:
        for t in n.reads():
            readers.setdefault(t, []).append(n)
    pairs: list[tuple[Node, Node]] = []
    for a in p.nodes:
        if not _is_conv(a, p, 1, (1,), 0) or a.attrs.get("groups", 1) != 1:
            continue
        rs = readers.get(a.out, [])
        if len(rs) != 1 or a.out in p.outputs:
            continue
        b = rs[0]
        channels = p.shapes[a.out][1]
        if (
            _is_conv(b, p, 3, (1, 2), 1)
            and b.inputs[0] == a.out
            and b.attrs.get("groups", 1) == channels
            and p.shapes[b.attrs["weight"]][:2] == (channels, 1)
            and b.out not in exclude
        ):
            pairs.append((a, b))
    if not pairs:
        return None
    q = p.copy()
    index = {id(n): i for i, n in enumerate(p.nodes)}
    drop = set()
    for a, b in pairs:
        qa, qb = q.nodes[index[id(a)]], q.nodes[index[id(b)]]
        spec = {"op": "dw", "weight": qb.attrs["weight"], "bias": qb.attrs.get("bias", -1),
                "stride": qb.attrs["strides"][0]}  # fmt: skip
        qa.post = [*qa.post, spec, *qb.post]
        qa.out = qb.out
        qa.attrs["layout"] = "blocked"
        drop.add(index[id(b)])
    q.nodes = [n for i, n in enumerate(q.nodes) if i not in drop]
    return q


def eliminate_dead(p: Program) -> None:
    """Drop nodes whose outputs nobody reads."""
    live = set(p.outputs)
    kept: list[Node] = []
    for n in reversed(p.nodes):
        if n.out in live:
            kept.append(n)
            live.update(n.reads())
    kept.reverse()
    p.nodes = kept


def optimize(p: Program) -> Program:
    """Run every fusion on ``p`` (in place) and return it."""
    merge_duplicates(p)
    sink_reshapes(p)
    collapse_reshapes(p)
    fold_affine(p)
    fold_matmul_bias(p)
    fold_affine_chains(p)
    scale_to_linear(p)
    minmax_to_clip(p)
    fold_flatten(p)
    fold_channel_shuffle(p)
    fuse_post_ops(p)
    eliminate_dead(p)
    matmul_output_layout(p)
    return p
