"""FlattenAtrousConv: the dilated convolution computes what the reshuffled chain did."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import FlattenAtrousConv, InferType


def _chain(block, paddings, crops, strides=(1, 1)):
    x = relay.var("x", shape=(1, 7, 6, 4))
    w = relay.const(np.random.RandomState(0).rand(3, 3, 4, 1).astype("float32"))
    s2b = relay.nn.space_to_batch_nd(x, block_shape=block, paddings=paddings)
    conv = relay.nn.conv2d(
        s2b,
        w,
        strides=strides,
        groups=4,
        channels=4,
        kernel_size=[3, 3],
        data_layout="NHWC",
        kernel_layout="HWOI",
    )
    return relay.Function([x], relay.nn.batch_to_space_nd(conv, block_shape=block, crops=crops))


def _run(mod, xd):
    return relay.create_executor("vm", mod=mod).evaluate()(xd).numpy()


@pytest.mark.parametrize(
    "block, paddings, crops",
    [([2, 2], [[2, 3], [2, 2]], [[0, 1], [0, 0]]), ([3, 2], [[3, 5], [2, 2]], [[0, 2], [0, 0]])],
)
def test_chain_becomes_one_dilated_conv_with_the_same_values(block, paddings, crops):
    mod = InferType()(IRModule.from_expr(_chain(block, paddings, crops)))
    flat = FlattenAtrousConv()(mod)
    body = flat["main"].body
    assert body.op.name == "nn.conv2d" and tuple(body.attrs.dilation) == tuple(block)
    top, bottom = paddings[0][0] - crops[0][0], paddings[0][1] - crops[0][1]
    left, right = paddings[1][0] - crops[1][0], paddings[1][1] - crops[1][1]
    assert tuple(body.attrs.padding) == (top, left, bottom, right)
    xd = np.random.RandomState(1).rand(1, 7, 6, 4).astype("float32")
    np.testing.assert_allclose(_run(flat, xd), _run(mod, xd), rtol=1e-5)


def test_strided_conv_is_left_alone():
    mod = InferType()(
        IRModule.from_expr(_chain([2, 2], [[1, 2], [0, 0]], [[0, 0], [0, 0]], (2, 2)))
    )
    flat = FlattenAtrousConv()(mod)
    assert flat["main"].body.op.name == "nn.batch_to_space_nd"
