"""Independent NumPy forward passes of the built-in workloads (float64).

Written from the architecture descriptions, not from relaykit: each network is
spelled out layer by layer and reads its parameters by name from ``params``
(name -> array). Every function returns ``(logits, probabilities)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

Params = Mapping[str, np.ndarray]


# -- layers ------------------------------------------------------------------------


def conv2d(x, w, stride=1, pad=0, groups=1):
    """NCHW x OIHW convolution, summing over kernel positions explicitly."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    xg = xp.reshape(n, groups, cg, *xp.shape[2:])
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    out = np.zeros((n, groups, o // groups, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xg[:, :, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
    return out.reshape(n, o, oh, ow)


def bias_add(x, b, axis=1):
    shape = [1] * x.ndim
    shape[axis] = -1
    return x + b.reshape(shape)


def batch_norm(x, p: Params, name: str, eps: float, scale: bool = True):
    """Inference batch norm over axis 1 from ``<name>_gamma/_beta/_moving_mean/_moving_var``."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = p[name + "_moving_mean"].reshape(shape)
    var = p[name + "_moving_var"].reshape(shape)
    y = (x - mean) / np.sqrt(var + eps)
    if scale:
        y = y * p[name + "_gamma"].reshape(shape)
    return y + p[name + "_beta"].reshape(shape)


def relu(x):
    return np.maximum(x, 0.0)


def max_pool(x, size, stride, pad=0):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    oh = (x.shape[2] + 2 * pad - size) // stride + 1
    ow = (x.shape[3] + 2 * pad - size) // stride + 1
    out = np.full((*x.shape[:2], oh, ow), -np.inf)
    for i in range(size):
        for j in range(size):
            out = np.maximum(
                out, xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            )
    return out


def dense(x, p: Params, name: str):
    return x @ p[name + "_weight"].T + p[name + "_bias"]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _f64(params: Params) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}


# -- networks ----------------------------------------------------------------------


def mlp(data, params: Params):
    p = _f64(params)
    x = np.asarray(data, np.float64).reshape(data.shape[0], -1)
    x = relu(dense(x, p, "fc1"))
    x = relu(dense(x, p, "fc2"))
    logits = dense(x, p, "fc3")
    return logits, softmax(logits)


VGG_STAGES = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}


def vgg(data, params: Params, num_layers=11, batch_norm_layers=False):
    p = _f64(params)
    x = np.asarray(data, np.float64)
    for i, convs in enumerate(VGG_STAGES[num_layers], start=1):
        for j in range(1, convs + 1):
            x = conv2d(x, p[f"conv{i}_{j}_weight"], stride=1, pad=1)
            x = bias_add(x, p[f"conv{i}_{j}_bias"])
            if batch_norm_layers:
                x = batch_norm(x, p, f"bn{i}_{j}", eps=1e-5)
            x = relu(x)
        x = max_pool(x, 2, 2)
    x = x.reshape(x.shape[0], -1)
    x = relu(dense(x, p, "fc6"))  # dropout is the identity at inference
    x = relu(dense(x, p, "fc7"))
    logits = dense(x, p, "fc8")
    return logits, softmax(logits)


RESNET_UNITS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}


def _basic_unit(x, p, name, stride, project):
    eps = 2e-5
    act1 = relu(batch_norm(x, p, name + "_bn1", eps))
    y = conv2d(act1, p[name + "_conv1_weight"], stride=stride, pad=1)
    y = relu(batch_norm(y, p, name + "_bn2", eps))
    y = conv2d(y, p[name + "_conv2_weight"], stride=1, pad=1)
    shortcut = conv2d(act1, p[name + "_sc_weight"], stride=stride) if project else x
    return y + shortcut


def _bottleneck_unit(x, p, name, stride, project):
    eps = 2e-5
    act1 = relu(batch_norm(x, p, name + "_bn1", eps))
    y = conv2d(act1, p[name + "_conv1_weight"], stride=stride)
    y = relu(batch_norm(y, p, name + "_bn2", eps))
    y = conv2d(y, p[name + "_conv2_weight"], stride=1, pad=1)
    y = relu(batch_norm(y, p, name + "_bn3", eps))
    y = conv2d(y, p[name + "_conv3_weight"])
    shortcut = conv2d(act1, p[name + "_sc_weight"], stride=stride) if project else x
    return y + shortcut


def resnet(data, params: Params, num_layers=18):
    """ImageNet-style pre-activation ResNet (inputs taller than 28 pixels)."""
    p = _f64(params)
    x = np.asarray(data, np.float64)
    x = batch_norm(x, p, "bn_data", eps=2e-5, scale=False)
    if x.shape[2] <= 32:
        x = conv2d(x, p["conv0_weight"], stride=1, pad=1)
    else:
        x = conv2d(x, p["conv0_weight"], stride=2, pad=3)
        x = relu(batch_norm(x, p, "bn0", eps=2e-5))
        x = max_pool(x, 3, 2, pad=1)
    unit = _bottleneck_unit if num_layers >= 50 else _basic_unit
    for s, count in enumerate(RESNET_UNITS[num_layers], start=1):
        for u in range(1, count + 1):
            stride = 2 if (u == 1 and s > 1) else 1
            x = unit(x, p, f"stage{s}_unit{u}", stride, project=(u == 1))
    x = relu(batch_norm(x, p, "bn1", eps=2e-5))
    x = x.mean(axis=(2, 3))
    logits = dense(x, p, "fc1")
    return logits, softmax(logits)


# (depthwise channels, pointwise channels, stride) of MobileNet v1's 13 separable blocks
MOBILENET_BLOCKS = [
    (32, 64, 1),
    (64, 128, 2),
    (128, 128, 1),
    (128, 256, 2),
    (256, 256, 1),
    (256, 512, 2),
    (512, 512, 1),
    (512, 512, 1),
    (512, 512, 1),
    (512, 512, 1),
    (512, 512, 1),
    (512, 1024, 2),
    (1024, 1024, 1),
]


def mobilenet(data, params: Params):
    p = _f64(params)
    x = np.asarray(data, np.float64)
    x = conv2d(x, p["conv_block_1_conv_weight"], stride=2, pad=1)
    x = relu(batch_norm(x, p, "conv_block_1_bn", eps=1e-5))
    for i, (dw, _pw, stride) in enumerate(MOBILENET_BLOCKS, start=1):
        name = f"separable_conv_block_{i}"
        x = conv2d(x, p[name + "_weight"], stride=stride, pad=1, groups=dw)
        x = relu(batch_norm(x, p, name + "_bn1", eps=1e-5))
        x = conv2d(x, p[name + "_conv2_weight"])
        x = relu(batch_norm(x, p, name + "_bn2", eps=1e-5))
    x = x.mean(axis=(2, 3))
    logits = dense(x, p, "fc")
    return logits, softmax(logits)
