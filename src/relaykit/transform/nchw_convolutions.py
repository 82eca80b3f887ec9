"""``ConvolutionsToNCHW``: a host build step that gives NHWC convolutions the NCHW layout
the host's native kernels take (TFLite and TensorFlow models arrive in NHWC).

The host runs ``nn.conv2d`` and ``qnn.conv2d`` in NCHW / OIHW on its native kernels (im2col
with a GEMM, depthwise, Winograd, VNNI for int8); other layouts fall back to the NumPy
reference kernels, about ten times slower on MobileNet. This pass runs ``ConvertLayout``
to NCHW on functions that hold an NHWC convolution (others are returned as they are), so
the operators between two convolutions follow NCHW and ``layout_transform`` calls gather
at the function's edges; the transformed weights and biases are folded into constants
(the native kernels take constant weights). Functions for external backends are not
touched.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 8, 8, 4))
>>> w = relay.var("w", shape=(3, 3, 4, 4))
>>> y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
>>> mod = IRModule.from_expr(relay.Function([x, w], relay.nn.relu(y)))
>>> with relay.transform.PassContext(opt_level=3):
...     body = ConvolutionsToNCHW()(mod)["main"].body
>>> body.op.name, body.args[0].op.name, body.args[0].args[0].attrs.data_layout
('layout_transform', 'nn.relu', 'NCHW')
"""

from __future__ import annotations

from relaykit.errors import RelayKitError
from relaykit.ir.expr import Call, Function
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .fold_constant import fold_constant
from .layout.convert import convert_layout
from .pass_infra import FunctionPass, PassContext

__all__ = ["ConvolutionsToNCHW", "HOST_LAYOUTS"]

#: the convolutions converted, and the layouts they get (data, kernel)
HOST_LAYOUTS: dict[str, list[str]] = {
    "nn.conv2d": ["NCHW", "default"],
    "qnn.conv2d": ["NCHW", "default"],
}


def _has_nhwc_convolution(fn: Function) -> bool:
    return any(
        isinstance(node, Call)
        and isinstance(node.op, Op)
        and node.op.name in HOST_LAYOUTS
        and str(node.attrs.data_layout) == "NHWC"
        for node in post_order(fn.body)
    )


class ConvolutionsToNCHW(FunctionPass):
    """See the module docs (opt_level 3)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=3, name="ConvolutionsToNCHW")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        if not _has_nhwc_convolution(fn):
            return fn
        try:
            out = fold_constant(convert_layout(fn, HOST_LAYOUTS, mod), mod)
        except RelayKitError:  # an operator without a layout rule: NHWC stays, only slower
            return fn
        return out if isinstance(out, Function) else fn
