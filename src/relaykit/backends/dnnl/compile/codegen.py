"""The dnnl codegen (``relay.ext.dnnl``): partitioned functions to compiled regions.

``relay.build`` hands it every ``Compiler="dnnl"`` function of the module at
once; each is lowered to a region program (:mod:`.lower`), fused
(:mod:`.fuse`) and compiled into oneDNN primitives
(:class:`~relaykit.backends.dnnl.run.region.DnnlRegion`).
The thread count comes from, in order: ``num_threads`` here, the
``"relay.ext.dnnl.options"`` entry of the current ``PassContext`` config
(``{"num_threads": 4}``), ``RELAYKIT_NUM_THREADS``, all cores. The same config
may set ``"layout"`` and ``"winograd"`` (see :func:`compile_region`)::

    with tvm.transform.PassContext(opt_level=3,
                                   config={"relay.ext.dnnl.options": {"num_threads": 2}}):
        lib = relay.build(partition_for_dnnl(mod, params), target="llvm")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit.backends.dnnl.run.module import DnnlModule
from relaykit.backends.dnnl.run.program import Program
from relaykit.backends.dnnl.run.region import DnnlRegion
from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Function
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.transform.pass_infra import PassContext

from .fuse import optimize
from .lower import lower_function, op_name
from .tune import fastest_build

__all__ = ["dnnl_codegen", "compile_region", "region_ops", "OPTIONS_KEY"]

#: PassContext config key of the codegen's options.
OPTIONS_KEY = "relay.ext.dnnl.options"


def region_ops(func: Function) -> list[str]:
    """The operators (and composite names) of a region, in program order."""
    names: list[str] = []
    for node in post_order(func.body, skip=lambda n: type(n) is Function):
        if type(node) is Call:
            if type(node.op) is Op:
                names.append(op_name(node))
            elif type(node.op) is Function:
                names.append(str(node.op.attrs.get("Composite", "function")))
    return names


def _symbol(func: Function) -> str:
    symbol = func.attrs.get("global_symbol") if func.attrs else None
    if not symbol:
        raise CodegenError("dnnl: the partitioned function has no global_symbol attribute")
    return str(symbol)


#: Layout choices: "auto" tunes (see :mod:`.tune`), the others are fixed.
LAYOUTS = ("auto", "nhwc", "blocked", "any")


def compile_region(
    func: Function,
    name: str | None = None,
    num_threads: int | None = None,
    layout: str = "auto",
    winograd: bool = True,
) -> DnnlRegion:
    """Lower, fuse and compile one partitioned (typed) function.

    ``layout`` is the activation layout of convolutions: ``"nhwc"``, ``"blocked"``
    (nChw16c; concatenations run in place), ``"any"`` (oneDNN picks the first one, the
    rest follow), or ``"auto"`` (default): the fastest of a few builds, timed on random
    inputs (:func:`.tune.fastest_build`). With ``"auto"`` and ``winograd`` (default), the
    3x3 convolutions that measure faster by Winograd's F(2x2, 3x3) run so
    (:mod:`.winograd`); ``winograd=False`` keeps every convolution direct.
    """
    if layout not in LAYOUTS:
        raise CodegenError(f"dnnl: layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    symbol = name or _symbol(func)
    program = optimize(lower_function(func))
    ops = region_ops(func)

    def build(p: Program) -> DnnlRegion:
        return DnnlRegion.from_program(p, name=symbol, num_threads=num_threads, ops=ops)

    if layout == "auto":
        return fastest_build(program, build, winograd=winograd)
    program.layout = layout
    return build(program)


def _options() -> dict[str, Any]:
    opts = PassContext.current().config.get(OPTIONS_KEY) or {}
    if not isinstance(opts, dict):
        raise CodegenError(f"PassContext config {OPTIONS_KEY!r} must be a dict, got {opts!r}")
    unknown = set(opts) - {"num_threads", "layout", "winograd"}
    if unknown:
        raise CodegenError(f"unknown {OPTIONS_KEY} option(s): {', '.join(sorted(unknown))}")
    if not isinstance(opts.get("winograd", True), bool):
        raise CodegenError(
            f"{OPTIONS_KEY} option 'winograd' must be True or False, got {opts['winograd']!r}"
        )
    return opts


def dnnl_codegen(
    funcs: Function | Sequence[Function],
    num_threads: int | None = None,
    layout: str | None = None,
) -> DnnlModule:
    """The runtime module of ``funcs`` (one function or all of a module's dnnl functions)."""
    if isinstance(funcs, Function):
        funcs = [funcs]
    opts = _options()
    if num_threads is None:
        num_threads = opts.get("num_threads")
    if layout is None:
        layout = str(opts.get("layout", "auto"))
    regions: dict[str, DnnlRegion] = {}
    for func in funcs:
        symbol = _symbol(func)
        try:
            regions[symbol] = compile_region(
                func, symbol, num_threads, layout, opts.get("winograd", True)
            )
        except CodegenError as err:
            raise CodegenError(f"dnnl codegen of {symbol}: {err}") from err
    return DnnlModule(regions, num_threads)
