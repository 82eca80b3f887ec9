"""SimplifyInference: batch_norm, dropout and layer_norm become inference primitives."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.ir import assert_structural_equal
from relaykit.transform import FoldConstant, InferType, SimplifyInference


def simplify(f):
    return SimplifyInference()(tvm.IRModule.from_expr(f))["main"]


def typed(f):
    return InferType()(tvm.IRModule.from_expr(f))["main"]


def vars_(shape, c):
    return (
        relay.var("x", shape=shape),
        relay.var("g", shape=(c,)),
        relay.var("b", shape=(c,)),
        relay.var("m", shape=(c,)),
        relay.var("v", shape=(c,)),
    )


@pytest.mark.parametrize(
    "shape, axis, pad", [((1, 4, 5, 5), 1, 2), ((2, 3, 4), -1, 0), ((1, 5, 5, 4), 3, 0)]
)
def test_batch_norm_becomes_scale_and_shift(shape, axis, pad):
    c = shape[axis]
    x, g, b, m, v = vars_(shape, c)
    before = relay.Function(
        [x, g, b, m, v], relay.nn.batch_norm(x, g, b, m, v, axis=axis, epsilon=1e-3)[0]
    )
    scale = relay.divide(relay.const(1.0), relay.sqrt(relay.add(v, relay.const(1e-3))))
    scale = relay.multiply(scale, g)
    shift = relay.add(relay.multiply(relay.negative(m), scale), b)
    if pad:
        scale = relay.expand_dims(scale, axis=1, num_newaxis=pad)
        shift = relay.expand_dims(shift, axis=1, num_newaxis=pad)
    after = relay.Function([x, g, b, m, v], relay.add(relay.multiply(x, scale), shift))
    assert_structural_equal(simplify(before), typed(after))


def test_batch_norm_without_scale_and_center():
    x, g, b, m, v = vars_((1, 3, 2, 2), 3)
    bn = relay.nn.batch_norm(x, g, b, m, v, center=False, scale=False)
    before = relay.Function([x, g, b, m, v], bn[0])
    scale = relay.divide(relay.const(1.0), relay.sqrt(relay.add(v, relay.const(1e-5))))
    shift = relay.multiply(relay.negative(m), scale)
    after = relay.Function(
        [x, g, b, m, v],
        relay.add(
            relay.multiply(x, relay.expand_dims(scale, axis=1, num_newaxis=2)),
            relay.expand_dims(shift, axis=1, num_newaxis=2),
        ),
    )
    assert_structural_equal(simplify(before), typed(after))


def test_other_batch_norm_outputs_are_kept():
    x, g, b, m, v = vars_((1, 3, 2, 2), 3)
    bn = relay.nn.batch_norm(x, g, b, m, v)
    out = simplify(relay.Function([x, g, b, m, v], relay.Tuple([bn[0], bn[1]])))
    assert out.body.fields[1].tuple_value.op.name == "nn.batch_norm"
    assert out.body.fields[0].op.name == "add"


def test_dropout_is_the_identity():
    x = relay.var("x", shape=(2, 8))
    before = relay.Function([x], relay.nn.relu(relay.nn.dropout(x, rate=0.3)))
    assert_structural_equal(simplify(before), typed(relay.Function([x], relay.nn.relu(x))))


def test_layer_norm_becomes_mean_and_variance():
    x, g, b = (
        relay.var("x", shape=(2, 3, 6)),
        relay.var("g", shape=(6,)),
        relay.var("b", shape=(6,)),
    )
    before = relay.Function([x, g, b], relay.nn.layer_norm(x, g, b, axis=-1, epsilon=1e-6))
    mu = relay.mean(x, axis=[2], keepdims=True)
    d = relay.subtract(x, mu)
    var = relay.mean(relay.multiply(d, d), axis=[2], keepdims=True)
    out = relay.divide(d, relay.sqrt(relay.add(var, relay.const(1e-6))))
    after = relay.Function([x, g, b], relay.add(relay.multiply(out, g), b))
    assert_structural_equal(simplify(before), typed(after))


def test_same_results_as_the_reference_kernels():
    rng = np.random.default_rng(0)
    x, g, b, m, v = vars_((2, 4, 3, 3), 4)
    ln_g, ln_b = relay.var("lg", shape=(3,)), relay.var("lb", shape=(3,))
    y = relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-3)[0]
    y = relay.nn.layer_norm(relay.nn.dropout(y), ln_g, ln_b, axis=-1)
    f = relay.Function([x, g, b, m, v, ln_g, ln_b], y)
    args = [rng.standard_normal(p.type_annotation.shape).astype("float32") for p in f.params]
    args[4] = np.abs(args[4]) + 0.5
    mod = tvm.IRModule.from_expr(f)
    ref = relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()
    got = relay.create_executor("debug", mod=SimplifyInference()(mod)).evaluate()(*args).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_with_bound_parameters_batch_norm_folds_to_two_constants():
    from relaykit.testing import resnet

    mod, params = resnet.get_workload(1, 10, num_layers=18, image_shape=(3, 32, 32))
    bound = mod.copy()
    bound["main"] = tvm.transform.bind_params_by_name(bound["main"], params)
    out = FoldConstant()(SimplifyInference()(bound))
    names = [n.op.name for n in tvm.ir.post_order(out["main"]) if isinstance(n, relay.Call)]
    assert "nn.batch_norm" not in names and "sqrt" not in names and "expand_dims" not in names
    first = out["main"].body
    while first.args and isinstance(first.args[0], relay.Call):
        first = first.args[0]
    assert first.op.name == "multiply" and isinstance(first.args[1], relay.Constant)


def test_composite_functions_keep_their_operators():
    x, g, b, m, v = vars_((1, 3, 2, 2), 3)
    comp = relay.Function([x, g, b, m, v], relay.nn.batch_norm(x, g, b, m, v)[0])
    comp = comp.with_attr("Composite", "lib.bn")
    outer = [
        relay.var(f"o{i}", type_annotation=p.type_annotation) for i, p in enumerate(comp.params)
    ]
    f = relay.Function(outer, comp(*outer))
    assert_structural_equal(simplify(f), typed(f))
