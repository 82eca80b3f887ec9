"""The shared idiom recognisers (relaykit.transform.idioms): what they take and refuse."""

import math

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir.types import TensorType
from relaykit.transform.idioms import (
    IDIOMS,
    match_gelu,
    match_gelu_tanh,
    match_layer_norm,
)


def c(v):
    return relay.const(np.float32(v))


def test_the_table_names_each_idiom_and_its_operator():
    assert IDIOMS == {"gelu": "nn.gelu", "gelu_tanh": None, "layer_norm": "nn.layer_norm"}


def test_gelu_constants_in_the_wrong_places_are_not_gelu():
    x = relay.var("x", shape=(4,))
    good = relay.multiply(relay.multiply(x, relay.erf(x / c(math.sqrt(2))) + c(1.0)), c(0.5))
    swapped = relay.multiply(relay.multiply(x, relay.erf(x / c(0.5)) + c(1.0)), c(math.sqrt(2)))
    assert match_gelu(good) is x
    assert match_gelu(swapped) is None


def _tanh_onnx(x):
    inner = c(math.sqrt(2 / math.pi)) * (x + c(0.044715) * relay.power(x, c(3.0)))
    return c(0.5) * x * (c(1.0) + relay.tanh(inner))


def _tanh_torch(x):
    inner = c(math.sqrt(2 / math.pi)) * (x + c(0.044715) * (x * x * x))
    return x * c(0.5) * (relay.tanh(inner) + c(1.0))


@pytest.mark.parametrize("form", [_tanh_onnx, _tanh_torch])
def test_tanh_gelu_in_the_frontends_forms(form):
    x = relay.var("x", shape=(4,))
    assert match_gelu_tanh(form(x)) is x
    assert match_gelu(form(x)) is None


def test_tanh_gelu_with_another_coefficient_is_not():
    x = relay.var("x", shape=(4,))
    inner = c(math.sqrt(2 / math.pi)) * (x + c(0.05) * relay.power(x, c(3.0)))
    assert match_gelu_tanh(c(0.5) * x * (c(1.0) + relay.tanh(inner))) is None


def test_a_looser_tolerance_and_unit_constants_when_asked():
    x = relay.var("x", shape=(2, 4))
    one = relay.const(np.ones((1,), "float32"))
    y = relay.multiply(relay.multiply(x, relay.erf(x * c(0.70711)) + one), c(0.5))
    assert match_gelu(y) is None
    assert match_gelu(y, rtol=1e-4, rank=2) is x


def test_layer_norm_with_the_variance_operator():
    x = relay.var("x", shape=(3, 8))
    mu = relay.mean(x, axis=[-1], keepdims=True)
    var = relay.Call(
        relay.op.get("variance"),
        [x, mu],
        relay.variance(x, axis=[-1], keepdims=True).attrs,
    )
    y = (x - mu) / relay.sqrt(var + c(1e-5))
    m = match_layer_norm(y, TensorType((3, 8), "float32"))
    assert m is not None and m.data is x and m.axis == 1 and m.gamma is None
    assert m.epsilon == pytest.approx(1e-5)
