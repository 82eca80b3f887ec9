"""Backends that take grouped convolution weights decline TVM's depthwise weight with a
channel multiplier ``(C, M, kh, kw)`` (the host runs it) and take the grouped form."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc.pipeline import partition_for


def depthwise(wshape):
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(np.ones(wshape, "float32"))
    y = relay.nn.conv2d(x, w, groups=4, channels=12, kernel_size=3)
    return tvm.IRModule.from_expr(relay.Function([x], y))


@pytest.mark.parametrize("target", ["dnnl", "ccompiler", "jsonref", "onnxruntime"])
def test_the_multiplier_form_stays_on_the_host(target):
    if target == "onnxruntime":
        pytest.importorskip("onnx", reason="the onnxruntime backend exports to ONNX")
    declined = partition_for(depthwise((4, 3, 3, 3)), target)
    assert [gv.name_hint for gv in declined.get_global_vars()] == ["main"]
    grouped = partition_for(depthwise((12, 1, 3, 3)), target)
    assert len(grouped.get_global_vars()) == 2  # main and the backend's function
