"""Each converter of the TensorFlow frontend on a small graph, against TensorFlow's
own output."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="the TensorFlow frontend tests need tensorflow")
v1 = tf.compat.v1

rng = np.random.default_rng(0)


def f32(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype("float32")


def w32(*shape: int) -> Any:
    return tf.constant(f32(*shape))


IMG = f32(1, 9, 9, 4)

CASES: list[tuple[str, Any, dict[str, np.ndarray]]] = [
    # element-wise and activations
    (
        "binary",
        lambda x, y: [
            x + y,
            x - y,
            x * y,
            x / (tf.abs(y) + 1),
            tf.maximum(x, y),
            tf.minimum(x, y),
            tf.math.squared_difference(x, y),
            tf.raw_ops.Add(x=x, y=y),
        ],
        {"x": f32(2, 3), "y": f32(3)},
    ),
    ("pow", lambda x: tf.pow(tf.abs(x) + 0.5, 1.7), {"x": f32(2, 3)}),
    (
        "unary",
        lambda x: [
            tf.math.rsqrt(tf.abs(x) + 1),
            tf.sqrt(tf.abs(x)),
            tf.square(x),
            tf.exp(x),
            tf.math.log(tf.abs(x) + 1),
            tf.tanh(x),
            tf.sigmoid(x),
        ],
        {"x": f32(4, 5)},
    ),
    (
        "activations",
        lambda x: [
            tf.nn.relu(x),
            tf.nn.relu6(x * 8),
            tf.nn.elu(x),
            tf.nn.selu(x),
            tf.nn.softplus(x * 30),
            tf.nn.leaky_relu(x, 0.1),
        ],
        {"x": f32(4, 5, lo=-3, hi=3)},
    ),
    (
        "more_unary",
        lambda x: [
            tf.math.erfc(x),
            tf.math.expm1(x),
            tf.math.log1p(tf.abs(x)),
            tf.round(x * 4),
            tf.clip_by_value(x, -0.3, 0.4),
            tf.tan(x),
            tf.atan(x),
            tf.math.cumsum(x, 1),
            tf.math.cumprod(x, 0, reverse=True),
            tf.math.cumsum(x, -1, exclusive=True, reverse=True),
        ],
        {"x": np.concatenate([f32(3, 4), np.array([[0.125, 0.375, -0.125, 0.625]], "float32")])},
    ),
    (
        "compare_select",
        lambda x, y: [tf.where(x > y, x, y), v1.where(x > 0, x, y)],
        {"x": f32(3, 4), "y": f32(3, 4)},
    ),
    (
        "select_rows",
        lambda x, y: tf.raw_ops.Select(condition=x[:, 0] > 0, x=x, y=y),
        {"x": f32(3, 4), "y": f32(3, 4)},
    ),
    ("cast", lambda x: [tf.cast(x * 10, tf.int32), tf.cast(x > 0, tf.float32)], {"x": f32(3, 4)}),
    # reductions
    (
        "reduce",
        lambda x: [
            tf.reduce_mean(x, [1, 2]),
            tf.reduce_sum(x, 1, keepdims=True),
            tf.reduce_max(x, -1),
            tf.reduce_min(x, [0]),
            tf.reduce_prod(x, 2),
        ],
        {"x": f32(2, 3, 4)},
    ),
    (
        "argmax",
        lambda x: [tf.argmax(x, 1), tf.argmax(x, -1, output_type=tf.int32), tf.argmin(x, 0)],
        {"x": f32(3, 5)},
    ),
    ("softmax", lambda x: [tf.nn.softmax(x), tf.nn.log_softmax(x)], {"x": f32(2, 7)}),
    # matrix products
    (
        "matmul",
        lambda x: [
            tf.matmul(x, w32(5, 3)),
            tf.matmul(x, w32(3, 5), transpose_b=True),
            tf.matmul(x, w32(4, 3), transpose_a=True),
        ],
        {"x": f32(4, 5)},
    ),
    (
        "batch_matmul",
        lambda a, b: [
            tf.matmul(a, b),
            tf.matmul(a, a, transpose_b=True),
            tf.matmul(a, b[0]),
            tf.matmul(a, a, adjoint_a=True),
        ],
        {"a": f32(2, 3, 4, 4), "b": f32(2, 3, 4, 5)},
    ),
    ("einsum", lambda x: tf.einsum("bij,jk->bik", x, w32(4, 2)), {"x": f32(2, 3, 4)}),
    # convolutions and pooling
    (
        "conv2d",
        lambda x: [
            tf.nn.conv2d(x, w32(3, 3, 4, 6), 1, "SAME"),
            tf.nn.conv2d(x, w32(3, 2, 4, 5), [1, 2, 2, 1], "VALID"),
            tf.nn.conv2d(x, w32(3, 3, 4, 2), 2, "SAME"),
            tf.nn.conv2d(x, w32(3, 3, 4, 2), 1, "SAME", dilations=2),
            tf.nn.conv2d(x, w32(2, 2, 4, 2), 1, [[0, 0], [1, 0], [0, 2], [0, 0]]),
        ],
        {"x": IMG},
    ),
    (
        "depthwise",
        lambda x: [
            tf.nn.depthwise_conv2d(x, w32(3, 3, 4, 2), [1, 1, 1, 1], "SAME"),
            tf.nn.depthwise_conv2d(x, w32(3, 3, 4, 1), [1, 2, 2, 1], "VALID"),
        ],
        {"x": IMG},
    ),
    (
        "conv2d_transpose",
        lambda x: [
            tf.nn.conv2d_transpose(x, w32(3, 3, 5, 4), [1, 18, 18, 5], 2, "SAME"),
            tf.nn.conv2d_transpose(x, w32(3, 3, 3, 4), [1, 19, 19, 3], 2, "VALID"),
            tf.nn.conv2d_transpose(x, w32(2, 2, 2, 4), [1, 9, 9, 2], 1, "SAME"),
        ],
        {"x": IMG},
    ),
    (
        "bias_batchnorm",
        lambda x: [
            tf.nn.bias_add(x, w32(4)),
            v1.nn.fused_batch_norm(
                x, w32(4), w32(4), w32(4), tf.abs(w32(4)) + 0.5, epsilon=1e-3, is_training=False
            )[0],
            tf.raw_ops.FusedBatchNorm(
                x=x,
                scale=w32(4),
                offset=w32(4),
                mean=w32(4),
                variance=tf.abs(w32(4)),
                is_training=False,
            )[0],
        ],
        {"x": IMG},
    ),
    (
        "pooling",
        lambda x: [
            tf.nn.max_pool2d(x, 3, 2, "SAME"),
            tf.nn.max_pool2d(x, 2, 2, "VALID"),
            tf.nn.avg_pool2d(x, 3, 2, "SAME"),
            tf.nn.avg_pool2d(x, [2, 3], 1, "VALID"),
        ],
        {"x": IMG},
    ),
    (
        "3d",
        lambda x: [
            tf.nn.conv3d(x, w32(3, 2, 3, 3, 4), [1, 1, 2, 1, 1], "SAME"),
            tf.nn.conv3d(
                x, w32(2, 3, 3, 3, 2), [1, 1, 1, 2, 1], "VALID", dilations=[1, 2, 1, 1, 1]
            ),
            tf.nn.max_pool3d(x, 2, 2, "SAME"),
            tf.nn.avg_pool3d(x, [3, 2, 2], 1, "SAME"),
            tf.nn.avg_pool3d(x, 2, [1, 2, 2], "VALID"),
        ],
        {"x": f32(1, 5, 6, 7, 3)},
    ),
    (
        "fake_quant",
        lambda x: [
            tf.quantization.fake_quant_with_min_max_args(x, -1.3, 2.1),
            tf.quantization.fake_quant_with_min_max_args(
                x, -0.8, 0.9, num_bits=4, narrow_range=True
            ),
            tf.quantization.fake_quant_with_min_max_vars(x, tf.constant(-1.0), tf.constant(1.7)),
            tf.quantization.fake_quant_with_min_max_vars_per_channel(
                x, tf.constant([-1.0, -0.5, -2.0, 0.1]), tf.constant([1.0, 1.5, 0.3, 2.0])
            ),
        ],
        {"x": f32(2, 5, 4, lo=-2.5, hi=2.5)},
    ),
    ("lrn", lambda x: tf.nn.local_response_normalization(x, 2, 1.0, 0.1, 0.75), {"x": IMG}),
    (
        "resize",
        lambda x: [
            v1.image.resize_bilinear(x, [13, 7]),
            v1.image.resize_bilinear(x, [5, 14], align_corners=True),
            v1.image.resize_bilinear(x, [12, 12], half_pixel_centers=True),
            v1.image.resize_nearest_neighbor(x, [13, 7]),
            v1.image.resize_nearest_neighbor(x, [5, 14], align_corners=True),
            v1.image.resize_nearest_neighbor(x, [17, 12], half_pixel_centers=True),
        ],
        {"x": IMG},
    ),
    (
        "pad",
        lambda x: [
            tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]]),
            tf.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]], constant_values=2.5),
            tf.pad(x, [[0, 0], [2, 1], [1, 2], [0, 0]], mode="REFLECT"),
            tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], mode="SYMMETRIC"),
        ],
        {"x": IMG},
    ),
    # shapes and arrays
    (
        "reshape",
        lambda x: [
            tf.reshape(x, [3, -1]),
            tf.squeeze(tf.reshape(x, [1, 6, 1, 4]), [0, 2]),
            tf.expand_dims(x, -1),
            tf.expand_dims(x, 0),
            tf.reshape(x, tf.stack([tf.shape(x)[0] * 2, -1])),
        ],
        {"x": f32(6, 4)},
    ),
    (
        "concat_pack",
        lambda x, y: [
            tf.concat([x, y], 1),
            tf.concat([x, y], -2),
            tf.stack([x, y], 1),
            *tf.unstack(x, axis=1),
        ],
        {"x": f32(2, 3), "y": f32(2, 3)},
    ),
    ("transpose", lambda x: tf.transpose(x, [2, 0, 1]), {"x": f32(2, 3, 4)}),
    (
        "strided_slice",
        lambda x: [
            x[1:, ::2],
            x[:, -1],
            x[..., 1:3],
            x[::-1, 1],
            x[None, 0, :, 2:],
            x[-2:, tf.newaxis, ::-2],
            x[1, ..., 0],
            x[:, 5:1:-2],
        ],
        {"x": f32(4, 6, 5)},
    ),
    (
        "slice",
        lambda x: [tf.slice(x, [1, 0, 2], [2, -1, 3]), tf.slice(x, [0, 1, 0], [-1, 2, 1])],
        {"x": f32(4, 6, 5)},
    ),
    (
        "split",
        lambda x: [
            *tf.split(x, 3, axis=1),
            *tf.split(x, [1, 4, -1], axis=1),
            *tf.split(x, [2, 4], axis=-1),
        ],
        {"x": f32(2, 6, 6)},
    ),
    (
        "shape_fill",
        lambda x: [
            tf.shape(x),
            tf.fill(tf.shape(x)[1:], 3.0) + x[0],
            tf.zeros_like(x),
            tf.ones_like(x),
            tf.size(x),
        ],
        {"x": f32(2, 3, 4)},
    ),
    (
        "gather",
        lambda x, i: [tf.gather(x, i), tf.gather(x, i, axis=1), tf.gather(x, [[0, 2]], axis=-1)],
        {"x": f32(4, 4), "i": np.array([3, 0, 1], dtype="int32")},
    ),
    (
        "tile_range",
        lambda x: [
            tf.tile(x, [2, 3]),
            tf.range(0, 10, 3) + tf.cast(tf.shape(x)[0], tf.int32),
            x + tf.cast(tf.range(tf.shape(x)[1]), tf.float32),
        ],
        {"x": f32(2, 3)},
    ),
    (
        "where_const",
        lambda x: tf.gather(x, tf.reshape(tf.where([True, False, True]), [-1])),
        {"x": f32(3, 2)},
    ),
    (
        "broadcast",
        lambda x, y: [
            tf.broadcast_to(x, tf.broadcast_dynamic_shape(tf.shape(x), tf.shape(y))),
            tf.broadcast_to(y, [2, 3, 4]),
        ],
        {"x": f32(3, 1), "y": f32(1, 4)},
    ),
    (
        "space_batch",
        lambda x: [
            tf.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 1]]),
            tf.batch_to_space(
                tf.space_to_batch_nd(x, [3, 3], [[0, 0], [0, 0]]), [3, 3], [[1, 0], [0, 2]]
            ),
            tf.nn.depth_to_space(tf.tile(x, [1, 1, 1, 2]), 2),
            tf.nn.space_to_depth(x[:, 1:, 1:], 2),
        ],
        {"x": IMG},
    ),
    ("topk", lambda x: list(tf.math.top_k(x, 3)), {"x": f32(4, 9)}),
    (
        "int_math",
        lambda a, b: [
            a // b,
            a % b,
            tf.truncatediv(a, b),
            tf.truncatemod(a, b),
            tf.raw_ops.Mod(x=a, y=b),
            tf.raw_ops.Div(x=a, y=b),
        ],
        {"a": np.array([[7, -7, 9, -3]], "int32"), "b": np.array([2, 3, -4, 5], "int32")},
    ),
    (
        "gather_nd_onehot",
        lambda x, i: [
            tf.gather_nd(x, [[0, 1], [2, 3]]),
            tf.gather_nd(x, [[1]]),
            tf.one_hot(i, 5),
            tf.one_hot(i, 4, 2.0, -1.0, axis=0),
        ],
        {"x": f32(3, 4, 2), "i": np.array([3, 0, 1], dtype="int32")},
    ),
    (
        "reverse_rank_concat",
        lambda x, y: [
            tf.reverse(x, [0, -1]),
            tf.rank(x) + 1,
            tf.raw_ops.Concat(concat_dim=1, values=[x, y]),
        ],
        {"x": f32(2, 3), "y": f32(2, 3)},
    ),
    (
        "band_part",
        lambda x: [
            tf.linalg.band_part(x, 1, 0),
            tf.linalg.band_part(x, -1, 2),
            tf.linalg.band_part(x, 0, -1),
        ],
        {"x": f32(2, 4, 5)},
    ),
    (
        "identity_addn",
        lambda x: [tf.identity(x), tf.stop_gradient(x), tf.add_n([x, x, x])],
        {"x": f32(2, 2)},
    ),
]


@pytest.mark.parametrize(("build", "feeds"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_op(check: Any, build: Any, feeds: dict[str, np.ndarray]) -> None:
    check(build, feeds)


def test_nchw_layout_matches_tensorflow(check: Any) -> None:
    def build(x: Any) -> Any:
        y = tf.nn.conv2d(x, w32(3, 3, 4, 6), 1, "SAME")
        y = tf.nn.depthwise_conv2d(y, w32(3, 3, 6, 1), [1, 2, 2, 1], "SAME")
        y = tf.nn.max_pool2d(tf.nn.relu(y), 2, 1, "VALID")
        return tf.nn.avg_pool2d(y, 2, 2, "SAME")

    mod = check(build, {"x": IMG}, layout="NCHW")
    text = mod.astext() if hasattr(mod, "astext") else str(mod)
    assert 'data_layout="NHWC"' not in text and "transpose" in text


def test_convert_config_matmul_forms(check: Any) -> None:
    def build(a: Any, b: Any) -> Any:
        return [tf.matmul(a[0], w32(4, 2)), tf.matmul(a, b, adjoint_b=True)]

    feeds = {"a": f32(3, 5, 4), "b": f32(3, 6, 4)}
    mod = check(build, feeds, config={"use_dense": False, "use_nt_batch_matmul": False})
    assert "nn.dense" not in str(mod) and "nn.matmul" in str(mod)
    assert "nn.dense" in str(check(build, feeds))
