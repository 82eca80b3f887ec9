"""The code cells of TVM's Relay tutorial (seed 002) run unchanged under
``import relaykit as tvm`` and print what TVM printed (minus the version header)."""

import numpy

import relaykit as tvm
from relaykit import relay


def test_variables_operators_functions_modules():
    x = relay.var("x")
    x = relay.var("x", dtype="int32")
    x = relay.var("x", shape=(10, 1))

    w = relay.op.add(x, x)
    assert str(w) == "free_var %x: Tensor[(10, 1), float32];\nadd(%x, %x)"

    z = x + x
    assert str(z) == "free_var %x: Tensor[(10, 1), float32];\nadd(%x, %x)"

    f = relay.Function([x], z)
    assert str(f) == "fn (%x: Tensor[(10, 1), float32]) {\n  add(%x, %x)\n}"

    mod = relay.Module({})
    fname = relay.GlobalVar("f")
    mod[fname] = f
    assert str(mod) == (
        "def @f(%x: Tensor[(10, 1), float32]) -> Tensor[(10, 1), float32] {\n"
        "  add(%x, %x) /* ty=Tensor[(10, 1), float32] */\n"
        "}"
    )


MLP_TEXT = """\
def @main(%data: Tensor[(1, 1, 28, 28), float32], %fc1_weight: Tensor[(128, 784), float32], \
%fc1_bias: Tensor[(128), float32], %fc2_weight: Tensor[(64, 128), float32], \
%fc2_bias: Tensor[(64), float32], %fc3_weight: Tensor[(10, 64), float32], \
%fc3_bias: Tensor[(10), float32]) -> Tensor[(1, 10), float32] {
  %0 = nn.batch_flatten(%data) /* ty=Tensor[(1, 784), float32] */;
  %1 = nn.dense(%0, %fc1_weight, units=128) /* ty=Tensor[(1, 128), float32] */;
  %2 = nn.bias_add(%1, %fc1_bias, axis=-1) /* ty=Tensor[(1, 128), float32] */;
  %3 = nn.relu(%2) /* ty=Tensor[(1, 128), float32] */;
  %4 = nn.dense(%3, %fc2_weight, units=64) /* ty=Tensor[(1, 64), float32] */;
  %5 = nn.bias_add(%4, %fc2_bias, axis=-1) /* ty=Tensor[(1, 64), float32] */;
  %6 = nn.relu(%5) /* ty=Tensor[(1, 64), float32] */;
  %7 = nn.dense(%6, %fc3_weight, units=10) /* ty=Tensor[(1, 10), float32] */;
  %8 = nn.bias_add(%7, %fc3_bias, axis=-1) /* ty=Tensor[(1, 10), float32] */;
  nn.softmax(%8) /* ty=Tensor[(1, 10), float32] */
}"""


def test_text_format_and_executors():
    import relaykit.relay.testing  # noqa: F401  - as `import tvm.relay.testing`

    mlp, params = relay.testing.mlp.get_workload(1)
    assert str(mlp) == MLP_TEXT
    assert mlp.astext(show_meta_data=True).startswith('#[version = "0.0.5"]\n' + MLP_TEXT[:40])

    i = 0

    def ann(*args):
        nonlocal i
        i += 1
        return f" <expression: {i}>"

    annotated = mlp.astext(show_meta_data=True, annotate=ann)
    assert "nn.dense <expression: 3>(%0, %fc1_weight, units=128)" in annotated
    assert "nn.dense <expression: 3>(%3, %fc2_weight, units=64)" in annotated  # op memoised

    mod = relay.Module()
    debug_ex = relay.create_executor("debug", mod=mod)
    graph_ex = relay.create_executor("graph", mod=mod)
    vm_ex = relay.create_executor("vm", mod=mod)
    debug_mlp = debug_ex.evaluate(mlp["main"])
    graph_mlp = graph_ex.evaluate(mlp["main"])
    vm_mlp = vm_ex.evaluate(mlp["main"])
    data = numpy.random.rand(1, 1, 28, 28).astype("float32")
    out = debug_mlp(data, **params).numpy()
    assert out.shape == (1, 10)
    numpy.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)
    numpy.testing.assert_allclose(graph_mlp(data, **params).numpy(), out, rtol=1e-6)
    numpy.testing.assert_allclose(vm_mlp(data, **params).numpy(), out, rtol=1e-6)


def test_heterogeneous_style_mutator_from_the_tutorial():
    from relaykit.relay.expr_functor import ExprMutator

    class CountConv(ExprMutator):
        def __init__(self):
            super().__init__()
            self.n = 0

        def visit_call(self, expr):
            visit = super().visit_call(expr)
            if expr.op == tvm.relay.op.get("nn.conv2d"):
                self.n += 1
            return visit

    resnet, _params = relay.testing.resnet.get_workload()
    m = CountConv()
    out = m.visit(resnet["main"])
    assert m.n == 21 and out is resnet["main"]
