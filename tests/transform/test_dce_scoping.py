"""DeadCodeElimination: self-recursive dead functions, no inlining into closures;
the parser's recursive lets and bare ``int``/``float`` types it relies on."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import UnsupportedFeatureError
from relaykit.ir import Function, IRModule, Let, TensorType, post_order
from relaykit.target import Target, VirtualDevice
from relaykit.text import parse
from relaykit.transform import DeadCodeElimination, InferType


def _lets(expr):
    return [n.var.name_hint for n in post_order(expr) if isinstance(n, Let)]


def test_bare_dtypes_parse_as_32_bit_scalars():
    mod = parse('#[version = "0.0.5"]\ndef @main(%a: int, %b: float) { %b }')
    params = mod["main"].params
    assert params[0].type_annotation == TensorType((), "int32")
    assert params[1].type_annotation == TensorType((), "float32")


def test_let_bound_function_sees_itself():
    mod = parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: int) {\n"
        "  let %f = fn (%n: int) -> int { if (%n == 0) { %n } else { %f(%n - 1) } };\n"
        "  %f(%x)\n"
        "}"
    )
    let = mod["main"].body
    assert isinstance(let, Let) and isinstance(let.value, Function)
    # the call inside the function refers to the let's own variable
    assert any(n is let.var for n in post_order(let.value.body))


def test_dead_self_recursive_function_is_removed_live_one_kept():
    src = (
        '#[version = "0.0.5"]\n'
        "def @main(%x: int) {{\n"
        "  let %f = fn (%n: int) -> int {{ if (%n == 0) {{ %n }} else {{ %f(%n - 1) }} }};\n"
        "  {result}\n"
        "}}"
    )
    dead = DeadCodeElimination()(parse(src.format(result="%x")))
    assert _lets(dead["main"]) == []
    live = DeadCodeElimination()(parse(src.format(result="%f(%x)")))
    assert _lets(live["main"]) == ["f"]


def test_inline_once_keeps_values_out_of_closures():
    x = relay.var("x", shape=(2,))
    a, b, f = relay.var("a"), relay.var("b"), relay.var("f")
    y = relay.var("y", shape=(2,))
    closure = relay.Function([y], relay.add(a, y))
    body = relay.Let(
        a,
        relay.exp(x),
        relay.Let(f, closure, relay.Let(b, relay.negative(x), relay.Tuple([f(x), b]))),
    )
    fn = relay.Function([x], body)
    mod = InferType()(IRModule.from_expr(fn))
    out = DeadCodeElimination(inline_once=True)(mod)
    # %a is used once, but inside the closure: it stays bound; %b is inlined
    assert sorted(_lets(out["main"])) == ["a", "f"]
    data = np.array([0.5, -1.0], dtype="float32")
    run = relay.create_executor("debug", mod=out).evaluate()
    got = run(data)
    np.testing.assert_allclose(got[0].numpy(), np.exp(data) + data, rtol=1e-6)
    np.testing.assert_allclose(got[1].numpy(), -data)


def test_virtual_device_and_import_from_std():
    vd = VirtualDevice(relay.cpu(0) if hasattr(relay, "cpu") else None, Target("llvm"))
    assert vd == VirtualDevice(relay.cpu(0) if hasattr(relay, "cpu") else None, "llvm")
    assert vd.target.kind.name == "llvm"
    mod = IRModule()
    mod.import_from_std("core.rly")
    assert mod.get_global_vars() == []
    mod.import_from_std("prelude.rly")
    assert [c.name_hint for c in mod.get_type("List")[1:]] == ["Cons", "Nil"]
    with pytest.raises(UnsupportedFeatureError, match="has core.rly, prelude.rly"):
        mod.import_from_std("missing.rly")


def test_bindings_with_side_effects_stay_and_are_not_inlined():
    core = IRModule()
    core.import_from_std("core.rly")
    mod = relay.parse(
        """
        def @f(%r: ref(int32)) -> int32 {
          let %v = ref_read(%r);
          let %u = ref_write(%r, add(%v, 1));
          %v
        }
        def @main() -> int32 {
          let %r = ref(0);
          let %y = @f(%r);
          let %z = @f(%r);
          let %dead = add(1, 2);
          %z
        }""",
        "from_string",
        core,
    )
    out = relay.transform.DeadCodeElimination(inline_once=True)(relay.transform.InferType()(mod))
    assert sorted(_lets(out["main"])) == ["r", "y", "z"]  # @f writes a reference
    assert sorted(_lets(out["f"])) == ["u", "v"]
    # TVM's ignore_impurity drops and inlines them anyway: main becomes @f(ref(0))
    loose = relay.transform.DeadCodeElimination(inline_once=True, ignore_impurity=True)
    body = loose(relay.transform.InferType()(mod))["main"].body
    assert body.op.name_hint == "f" and isinstance(body.args[0], relay.RefCreate)
