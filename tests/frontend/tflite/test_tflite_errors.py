"""Bad input to from_tflite is a FrontendError saying what and where; every unsupported
operator of a model is listed at once."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import FrontendError, UnsupportedOpError
from relaykit.frontend.tflite import OperatorConverter, from_tflite, supported_ops


def _unsupported_model(tf):
    @tf.function(input_signature=[tf.TensorSpec((2, 5), tf.float32)])
    def f(x):
        return tf.math.cumsum(x, axis=1) + tf.math.cumsum(x * 2.0, axis=0)

    conv = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
    return conv.convert()


def test_unsupported_operators_are_listed_at_once():
    tf = pytest.importorskip("tensorflow")
    buf = _unsupported_model(tf)
    with pytest.raises(UnsupportedOpError, match=r"CUMSUM \(x2, first output") as info:
        from_tflite(buf)
    assert info.value.ops["CUMSUM"][0] == 2
    assert "CUMSUM" not in supported_ops()


def test_a_subclass_can_add_a_converter():
    tf = pytest.importorskip("tensorflow")
    buf = _unsupported_model(tf)

    class WithCumsum(OperatorConverter):
        def __init__(self, model, subgraph, exp_tab):
            super().__init__(model, subgraph, exp_tab)
            self.convert_map["CUMSUM"] = self.convert_cumsum

        def convert_cumsum(self, op):
            data, axis = self.get_input_tensors(op)
            return relay.cumsum(self.get_expr(data), axis=int(self.get_tensor_value(axis)))

    mod, _params = from_tflite(buf, op_converter=WithCumsum)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = relay.create_executor("graph", mod=mod).evaluate()(x).numpy()
    np.testing.assert_allclose(got, np.cumsum(x, axis=1) + np.cumsum(2 * x, axis=0))


def test_what_is_not_a_model_is_named():
    with pytest.raises(FrontendError, match="takes a tflite.Model .* got dict"):
        from_tflite({"not": "a model"})


def test_an_unknown_input_name_lists_the_inputs():
    tf = pytest.importorskip("tensorflow")
    buf = _unsupported_model(tf)

    class Anything(OperatorConverter):
        def check_unsupported_ops(self):
            raise AssertionError("not reached: the input names are checked first")

    with pytest.raises(FrontendError, match=r"shape_dict names \['data'\].*its inputs are \["):
        from_tflite(buf, shape_dict={"data": (2, 5)}, op_converter=Anything)


def test_facade_names():
    from relaykit.relay.frontend.tflite import from_tflite as facade

    assert relay.frontend.from_tflite is from_tflite is facade
