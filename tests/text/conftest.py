"""Operators for the text tests, in a private registry so the tests do not depend
on (or disturb) the real operator library."""

from types import SimpleNamespace

import pytest

from relaykit.ir import Call, OpRegistry
from relaykit.op.define import define_op, make_attrs

REG = OpRegistry()


def _first(types, attrs):
    return types[0]


_SCHEMAS = {
    "add": (2, {}),
    "multiply": (2, {}),
    "subtract": (2, {}),
    "negative": (1, {}),
    "nn.relu": (1, {}),
    "nn.batch_flatten": (1, {}),
    "nn.softmax": (1, {"axis": -1}),
    "nn.dense": (2, {"units": None, "out_dtype": ""}),
    "nn.bias_add": (2, {"axis": 1}),
    "nn.conv2d": (
        2,
        {
            "strides": (1, 1),
            "padding": (0, 0, 0, 0),
            "dilation": (1, 1),
            "groups": 1,
            "channels": None,
            "kernel_size": None,
            "data_layout": "NCHW",
            "kernel_layout": "OIHW",
            "out_dtype": "",
        },
    ),
    "nn.batch_norm": (5, {"axis": 1, "epsilon": 1e-05, "center": True, "scale": True}),
    "nn.pad": (2, {"pad_width": (), "pad_mode": "constant"}),
    "nn.dropout": (1, {"rate": 0.5}),
    "clip": (1, {"a_min": 0.0, "a_max": 0.0}),
    "cast": (1, {"dtype": ""}),
    "concatenate": (1, {"axis": 0}),
    "my.attrs": (1, {"flag": False, "names": (), "table": None, "scale": 1.0}),
}

for _name, (_arity, _schema) in _SCHEMAS.items():
    define_op(_name, num_inputs=_arity, type_rel=_first, compute=None, attrs=_schema, registry=REG)


def call(name, *args, **attrs):
    """A call of a test operator with its schema defaults filled in."""
    op = REG.get(name)
    return Call(op, list(args), make_attrs(op, attrs))


@pytest.fixture(scope="session")
def ops():
    return SimpleNamespace(reg=REG, call=call)


@pytest.fixture(name="call", scope="session")
def call_fixture():
    return call
