"""``FoldScaleAxis``: fold per-channel scales into the weights of a neighbouring layer.

After ``SimplifyInference`` a batch norm is ``x * scale + shift`` with constant
per-channel ``scale``. Two directions, as TVM's pass:

backward
    ``multiply(chain(layer(x, W)), s)``, where ``chain`` is any sequence of a bias
    (``add``, ``subtract``, ``nn.bias_add``) and ``nn.relu`` (when every scale is
    positive) over a ``nn.conv2d`` / ``nn.conv3d`` / ``nn.dense``, becomes
    ``chain'(layer(x, W * s))`` with each bias multiplied by ``s``;
forward
    ``layer(chain(multiply(x, s)), W)`` becomes ``layer(chain'(x), W * s)`` with each
    bias divided by ``s`` (scaling ``W`` along its input channels).

``s`` must vary along the channel axis only (or be a scalar), and every node of the
chain must have no other user. The scale enters the weights as TVM writes it: the
constant squeezed to a vector once, then ``expand_dims`` to each operand's rank.
``FoldScaleAxis()`` runs both directions and then folds the constants that made, as
TVM's sequence does; ``FoldScaleAxis("backward")`` / ``("forward")`` run one half
alone (TVM's ``BackwardFoldScaleAxis`` / ``ForwardFoldScaleAxis``).

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 2, 4, 4))
>>> w = relay.const(np.ones((3, 2, 1, 1), "float32"))
>>> s = relay.const(np.full((3, 1, 1), 2.0, "float32"))
>>> f = relay.Function([x], relay.multiply(relay.nn.relu(relay.nn.conv2d(x, w)), s))
>>> with relay.transform.PassContext(opt_level=3):
...     out = FoldScaleAxis()(IRModule.from_expr(f))["main"].body
>>> out.op.name, out.args[0].args[1].data.numpy()[:, 0, 0, 0].tolist()
('nn.relu', [2.0, 2.0, 2.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relaykit import op
from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from ._uses import use_counts
from .fold_constant import fold_constant, max_fold_bytes, max_fold_macs
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldScaleAxis", "fold_scale_axis", "forward_fold_scale_axis"]

BIASES = frozenset({"add", "subtract", "nn.bias_add"})
LAYERS = frozenset({"nn.conv2d", "nn.conv3d", "nn.dense"})
#: The convolutions among LAYERS and the rank of their (unblocked) layouts.
_CONV_RANK = {"nn.conv2d": 4, "nn.conv3d": 5}


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _rank(e: Expr) -> int | None:
    ty = checked_type_or_none(e)
    return ty.ndim if isinstance(ty, TensorType) else None


@dataclass
class _Scale:
    """A per-channel scale: the constant, its vector (squeezed once) and the channel axis
    of the tensor it scales (None for a scalar)."""

    const: Constant
    axis: int | None
    rank: int
    _vector: Expr | None = None

    @property
    def values(self) -> np.ndarray:
        return self.const.data.numpy()

    def vector(self) -> Expr:
        if self._vector is None:
            s = self.values
            if s.ndim <= 1 or self.axis is None:
                self._vector = self.const
            else:
                pos = self.axis - (self.rank - s.ndim)
                self._vector = op.squeeze(self.const, [i for i in range(s.ndim) if i != pos])
        return self._vector

    def along(self, rank: int, pos: int) -> Expr:
        """The scale shaped to broadcast along axis ``pos`` of a rank-``rank`` operand."""
        vec = self.vector()
        if self.axis is None or rank - pos - 1 <= 0:
            return vec
        return op.expand_dims(vec, axis=1, num_newaxis=rank - pos - 1)


def _scale_of(s: Expr, out: Expr) -> _Scale | None:
    """``s`` as a scale of ``out`` if it is a constant varying along one axis at most."""
    ty = checked_type_or_none(out)
    if type(s) is not Constant or not isinstance(ty, TensorType) or not ty.is_static:
        return None
    v = s.data.numpy()
    if v.ndim > ty.ndim or v.dtype.name != ty.dtype:
        return None
    full = (1,) * (ty.ndim - v.ndim) + v.shape
    axes = [i for i, d in enumerate(full) if d != 1]
    if not axes:
        return _Scale(s, None, ty.ndim) if v.size == 1 and v.ndim == 0 else None
    if len(axes) != 1 or full[axes[0]] != ty.shape[axes[0]]:
        return None
    return _Scale(s, axes[0], ty.ndim)


def _layer_axes(layer: Expr) -> tuple[int, int, int] | None:
    """(output channel axis, weight output-channel axis, weight input-channel axis)."""
    name = _name(layer)
    if name == "nn.dense":
        rank = _rank(layer)
        return None if rank is None else (rank - 1, 0, 1)
    if name in _CONV_RANK:
        a = layer.attrs  # type: ignore[attr-defined]
        out_layout = a.out_layout or a.data_layout
        rank = _CONV_RANK[name]
        if len(out_layout) != rank or len(a.kernel_layout) != rank:
            return None  # blocked layouts are not folded
        return out_layout.index("C"), a.kernel_layout.index("O"), a.kernel_layout.index("I")
    return None


def _bias_operand(old: Call, axis: int | None) -> int | None:
    """Which argument of a bias call is the bias (the other carries the channels)."""
    if _name(old) == "nn.bias_add":
        rank = _rank(old)
        ok = axis is None or (rank is not None and old.attrs.axis % rank == axis)
        return 1 if ok else None
    main_t = checked_type_or_none(old)
    for i in (0, 1) if _name(old) == "add" else (0,):
        if checked_type_or_none(old.args[i]) == main_t:
            return 1 - i if _is_bias(checked_type_or_none(old.args[1 - i]), main_t, axis) else None
    return None


def _is_bias(bias_t: object, main_t: object, axis: int | None) -> bool:
    """Whether ``bias_t`` broadcasts along ``axis`` of ``main_t`` only (for a scalar
    scale: is not a whole tensor of ``main_t``'s shape)."""
    if not isinstance(bias_t, TensorType) or not isinstance(main_t, TensorType):
        return False
    if bias_t.ndim > main_t.ndim:
        return False
    if axis is None:
        return bias_t != main_t
    full = (1,) * (main_t.ndim - bias_t.ndim) + tuple(bias_t.shape)
    return all(d == 1 for i, d in enumerate(full) if i != axis)


def _scaled_bias(new: Call, old: Call, scale: _Scale, divide: bool) -> Expr:
    i = _bias_operand(old, scale.axis)
    if i is None:  # checked when the chain was collected
        raise ArgumentError(f"{_name(old)} is not a per-channel bias here")
    bias, b_rank, rank = new.args[i], _rank(old.args[i]) or 0, _rank(old) or 0
    if _name(old) == "nn.bias_add":
        factor = scale.along(1, 0)
    else:
        factor = scale.along(b_rank, (scale.axis or 0) - (rank - b_rank))
    scaled = (op.divide if divide else op.multiply)(bias, factor)
    args = list(new.args)
    args[i] = scaled
    return new.with_fields(args=args)


def _chain_link(old: Expr, scale: _Scale, uses: dict[Expr, int]) -> Expr | None:
    """The argument the chain continues with below ``old``, or None where it stops."""
    if uses.get(old, 0) != 1:
        return None
    name = _name(old)
    if name == "nn.relu":
        return old.args[0] if bool((scale.values > 0).all()) else None  # type: ignore[attr-defined]
    if name in BIASES:
        i = _bias_operand(old, scale.axis)  # type: ignore[arg-type]
        return None if i is None else old.args[1 - i]  # type: ignore[attr-defined]
    return None


def _rebuild_chain(new: Expr, old: Expr, scale: _Scale, base: Expr, divide: bool) -> Expr:
    """``new`` (a chain over ``base``'s old value) rebuilt over ``base``."""
    links: list[tuple[Expr, Expr]] = []
    while _name(old) in BIASES or _name(old) == "nn.relu":
        links.append((new, old))
        if _name(old) == "nn.relu":
            new, old = new.args[0], old.args[0]  # type: ignore[attr-defined]
        else:
            i = _bias_operand(old, scale.axis)  # type: ignore[arg-type]
            new, old = new.args[1 - i], old.args[1 - i]  # type: ignore[attr-defined, operator]
    out = base
    for n, o in reversed(links):
        if _name(o) == "nn.relu":
            out = n.with_fields(args=[out])
            continue
        i = _bias_operand(o, scale.axis)  # type: ignore[arg-type]
        rebuilt = _scaled_bias(n, o, scale, divide)  # type: ignore[arg-type]
        args = list(rebuilt.args)  # type: ignore[attr-defined]
        args[1 - i] = out  # type: ignore[operator]
        out = rebuilt.with_fields(args=args)
    return out


def _weight_takes(old_layer: Expr, scale: _Scale) -> bool:
    """Whether the layer's weight has the scale's dtype (after a mixed-precision
    conversion it may not: scaling float16 weights by a float32 scale would change the
    arithmetic, so such a scale is left where it is)."""
    w_ty = checked_type_or_none(old_layer.args[1])  # type: ignore[attr-defined]
    return isinstance(w_ty, TensorType) and w_ty.dtype == scale.values.dtype.name


def _scaled_weight(layer: Call, old_layer: Call, scale: _Scale, w_axis: int) -> Call:
    weight = layer.args[1]
    w_rank = _rank(old_layer.args[1]) or 0
    return layer.with_fields(args=[layer.args[0], op.multiply(weight, scale.along(w_rank, w_axis))])


def fold_scale_axis(expr: Expr, mod: IRModule | None = None) -> Expr:
    """The backward half: ``expr`` with scales after conv2d / dense chains folded into
    their weights (globals it calls are typed in ``mod``)."""
    infer_type(expr, mod)
    uses = use_counts(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if _name(new) != "multiply":
            return None
        for k in (1, 0):
            scale = _scale_of(old.args[k], old.args[1 - k])  # type: ignore[attr-defined]
            if scale is None:
                continue
            node_old, node_new = old.args[1 - k], new.args[1 - k]  # type: ignore[attr-defined]
            probe = node_old
            while _name(probe) not in LAYERS:
                probe = _chain_link(probe, scale, uses)
                if probe is None:
                    break
            if probe is None or uses.get(probe, 0) != 1:
                continue
            axes = _layer_axes(probe)
            if axes is None or (scale.axis is not None and axes[0] != scale.axis):
                continue
            if not _weight_takes(probe, scale):
                continue
            return _fold_backward(node_new, node_old, probe, scale, axes[1])
        return None

    return rewrite_post_order(expr, post)


def _fold_backward(new: Expr, old: Expr, old_layer: Expr, scale: _Scale, w_axis: int) -> Expr:
    layer = new
    probe = old
    while probe is not old_layer:  # the rewritten layer sits where the old one did
        i = 0 if _name(probe) == "nn.relu" else 1 - _bias_operand(probe, scale.axis)  # type: ignore[arg-type, operator]
        layer, probe = layer.args[i], probe.args[i]  # type: ignore[attr-defined]
    base = _scaled_weight(layer, old_layer, scale, w_axis)  # type: ignore[arg-type]
    return _rebuild_chain(new, old, scale, base, divide=False)


def forward_fold_scale_axis(expr: Expr, mod: IRModule | None = None) -> Expr:
    """The forward half: ``expr`` with scales before conv2d / dense chains folded into
    their weights' input channels and the chain's biases divided by them."""
    infer_type(expr, mod)
    uses = use_counts(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if _name(new) not in LAYERS:
            return None
        axes = _layer_axes(old)
        if axes is None or (_name(old) in _CONV_RANK and old.attrs.groups != 1):  # type: ignore[attr-defined]
            return None
        channel = axes[0]
        data_old = old.args[0]  # type: ignore[attr-defined]
        probe = data_old
        # walk down to the multiply, checking each link against every possible scale later
        while _name(probe) in BIASES or _name(probe) == "nn.relu":
            probe = probe.args[0] if _name(probe) == "nn.relu" else _main_of(probe)
            if probe is None:
                return None
        if _name(probe) != "multiply" or uses.get(probe, 0) != 1:
            return None
        for k in (1, 0):
            scale = _scale_of(probe.args[k], probe.args[1 - k])
            if scale is None or (scale.axis is not None and scale.axis != channel):
                continue
            if not _weight_takes(old, scale):
                continue
            link = data_old
            while link is not probe and link is not None:
                link = _chain_link(link, scale, uses)
            if link is not probe:
                continue
            x_new = _find_new(new.args[0], data_old, probe).args[1 - k]  # type: ignore[attr-defined]
            data = _rebuild_chain(new.args[0], data_old, scale, x_new, divide=True)  # type: ignore[attr-defined]
            layer = new.with_fields(args=[data, new.args[1]])  # type: ignore[attr-defined]
            return _scaled_weight(layer, old, scale, axes[2])  # type: ignore[arg-type]
        return None

    return rewrite_post_order(expr, post)


def _main_of(call: Expr) -> Expr | None:
    """The channel-carrying argument of a bias call (the one typed like the call)."""
    ty = checked_type_or_none(call)
    for i in (0, 1) if _name(call) == "add" else (0,):
        if checked_type_or_none(call.args[i]) == ty:  # type: ignore[attr-defined]
            return call.args[i]  # type: ignore[attr-defined]
    return None


def _find_new(new: Expr, old: Expr, target_old: Expr) -> Expr:
    """The rewritten node standing where ``target_old`` stood below ``old``."""
    while old is not target_old:
        if _name(old) == "nn.relu":
            new, old = new.args[0], old.args[0]  # type: ignore[attr-defined]
            continue
        main = _main_of(old)
        i = old.args.index(main)  # type: ignore[attr-defined]
        new, old = new.args[i], main  # type: ignore[attr-defined, assignment]
    return new


class FoldScaleAxis(FunctionPass):
    """``relay.transform.FoldScaleAxis()`` (opt_level 3): fold per-channel scales into
    convolution and dense weights, backward then forward, then fold the constants that
    made (as TVM's); ``direction="backward"`` or ``"forward"`` runs one half alone."""

    def __init__(self, direction: str = "both") -> None:
        if direction not in ("both", "backward", "forward"):
            raise ArgumentError(
                f"FoldScaleAxis direction must be 'both', 'backward' or 'forward', "
                f"got {direction!r}"
            )
        self.direction = direction
        name = {"both": "FoldScaleAxis", "backward": "BackwardFoldScaleAxis"}.get(
            direction, "ForwardFoldScaleAxis"
        )
        super().__init__(self._transform_fn, opt_level=3, name=name)

    def _transform_fn(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out: Expr = fn
        if self.direction in ("both", "backward"):
            out = fold_scale_axis(out, mod)
        if self.direction in ("both", "forward"):
            out = forward_fold_scale_axis(out, mod)
        if out is fn or not isinstance(out, Function):
            return fn
        if self.direction != "both":
            return out
        folded = fold_constant(out, mod, max_fold_bytes(ctx), max_fold_macs(ctx))
        return folded if isinstance(folded, Function) else out
