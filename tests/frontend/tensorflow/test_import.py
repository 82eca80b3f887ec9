"""Whole graphs through ``from_tensorflow``: TF2 functions and Keras models frozen
with ``convert_variables_to_constants_v2``, inputs cut by ``shape=``, a graph fed
decoded images, params, errors, and the ``relay.testing.tf`` helpers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="the TensorFlow frontend tests need tensorflow")
v1 = tf.compat.v1

from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2,
)

from relaykit.errors import DynamicShapeError, FrontendError, UnsupportedOpError  # noqa: E402
from relaykit.relay.frontend import from_tensorflow  # noqa: E402

rng = np.random.default_rng(1)


def _frozen(fn: Any, *specs: Any) -> Any:
    concrete = tf.function(fn).get_concrete_function(*specs)
    return convert_variables_to_constants_v2(concrete).graph.as_graph_def()


def _close(got: np.ndarray, want: Any, tol: float = 1e-5) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_tf2_function_transformer_block(relay_run: Any) -> None:
    """Embedding lookup, layer norm, attention with batched products, GELU (erf) and
    dense layers over 3-d tensors (Tensordot's shape chains fold at import)."""
    d, heads = 16, 2
    emb = tf.Variable(rng.normal(size=(50, d)).astype("float32"))
    wq, wk, wv, wo = (tf.Variable(rng.normal(size=(d, d)).astype("float32") / 4) for _ in "qkvo")
    w1 = tf.Variable(rng.normal(size=(d, 32)).astype("float32") / 4)

    def block(ids: Any) -> Any:
        x = tf.gather(emb, ids)
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        x = (x - mean) * tf.math.rsqrt(var + 1e-6)
        b, s = tf.shape(x)[0], tf.shape(x)[1]

        def split(t: Any) -> Any:
            return tf.transpose(tf.reshape(t, [b, s, heads, d // heads]), [0, 2, 1, 3])

        q, k, v = (split(tf.tensordot(x, w, 1)) for w in (wq, wk, wv))
        att = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / np.sqrt(d // heads))
        o = tf.reshape(tf.transpose(tf.matmul(att, v), [0, 2, 1, 3]), [b, s, d])
        x = x + tf.tensordot(o, wo, 1)
        h = tf.tensordot(x, w1, 1)
        h = 0.5 * h * (1.0 + tf.math.erf(h / np.sqrt(2.0)))
        return tf.reduce_mean(h, axis=1)

    ids = rng.integers(0, 50, size=(2, 7)).astype("int32")
    graph_def = _frozen(block, tf.TensorSpec([2, 7], tf.int32))
    mod, params = from_tensorflow(graph_def, shape={"ids": (2, 7)})
    assert params and all(v.numpy().ndim >= 1 for v in params.values())
    _close(relay_run(mod, params, {"ids": ids})[0], block(ids).numpy(), 1e-4)


def test_keras_cnn_frozen(relay_run: Any) -> None:
    keras = pytest.importorskip("keras")
    layers = keras.layers
    inp = keras.Input((12, 12, 3), batch_size=1)
    x = layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = layers.BatchNormalization()(x)
    x = layers.DepthwiseConv2D(3, strides=2, padding="same")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2DTranspose(4, 3, strides=2, padding="same")(x)
    x = layers.GlobalAveragePooling2D()(x)
    out = layers.Dense(5, activation="softmax")(x)
    model = keras.Model(inp, out)
    data = rng.uniform(size=(1, 12, 12, 3)).astype("float32")
    graph_def = _frozen(lambda t: model(t, training=False), tf.TensorSpec([1, 12, 12, 3]))
    inputs = [n.name for n in graph_def.node if n.op == "Placeholder"]
    mod, params = from_tensorflow(graph_def, shape={inputs[0]: data.shape})
    _close(relay_run(mod, params, {inputs[0]: data})[0], model(data, training=False).numpy())
    mod, params = from_tensorflow(graph_def, layout="NCHW", shape={inputs[0]: data.shape})
    _close(relay_run(mod, params, {inputs[0]: data})[0], model(data, training=False).numpy())


def _v1_graph() -> tuple[Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        h = tf.nn.relu(
            tf.matmul(x, tf.constant(rng.normal(size=(4, 3)).astype("float32"), name="w")) + 1.0,
            name="hidden",
        )
        tf.tanh(h, name="out")
    return graph, graph.as_graph_def()


def test_params_are_named_consts_and_last_node_is_the_output(relay_run: Any) -> None:
    graph, graph_def = _v1_graph()
    mod, params = from_tensorflow(graph_def, shape={"x": (2, 4)})
    assert set(params) == {"w"}  # the scalar 1.0 stays an inline constant
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]
    data = rng.normal(size=(2, 4)).astype("float32")
    with v1.Session(graph=graph) as sess:
        want = sess.run("out:0", {"x:0": data})
    _close(relay_run(mod, params, {"x": data})[0], want)


def test_shape_cuts_the_graph_at_a_named_node(relay_run: Any) -> None:
    _, graph_def = _v1_graph()
    mod, params = from_tensorflow(graph_def, shape={"hidden:0": (2, 3)}, outputs=["out:0"])
    assert [p.name_hint for p in mod["main"].params] == ["hidden"] and not params
    data = rng.normal(size=(2, 3)).astype("float32")
    _close(relay_run(mod, params, {"hidden": data})[0], np.tanh(data))


def test_decoded_image_feeds_a_jpeg_decoding_graph(relay_run: Any) -> None:
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.constant(b"", name="DecodeJpeg/contents")
        img = tf.io.decode_jpeg(contents, channels=3, name="DecodeJpeg")
        x = tf.expand_dims(tf.cast(img, tf.float32), 0)
        x = v1.image.resize_bilinear(x, [6, 6])
        tf.reduce_mean(x * (1.0 / 128.0), axis=[1, 2], name="out")
    image = rng.integers(0, 256, size=(9, 7, 3)).astype("uint8")
    png = tf.io.encode_png(image).numpy()
    with v1.Session(graph=graph) as sess:
        want = sess.run("out:0", {"DecodeJpeg/contents:0": png})
    mod, params = from_tensorflow(graph.as_graph_def(), shape={"DecodeJpeg/contents": image.shape})
    assert mod["main"].params[0].checked_type.dtype == "uint8"
    _close(relay_run(mod, params, {"DecodeJpeg/contents": image})[0], want)
    with pytest.raises(FrontendError, match=r"string constant 'DecodeJpeg/contents'.*shape="):
        from_tensorflow(graph.as_graph_def())


def test_batch_norm_with_global_normalization_against_numpy(relay_run: Any) -> None:
    """The op of 2015-era graphs, which today's TensorFlow no longer builds: its NodeDef
    written by hand, the result computed in float64."""
    graph = tf.Graph()
    c = 5
    vals = {k: rng.uniform(0.5, 1.5, c).astype("float32") for k in ("m", "v", "beta", "gamma")}
    with graph.as_default():
        x = v1.placeholder(tf.float32, [1, 3, 3, c], name="x")
        for k, val in vals.items():
            tf.constant(val, name=k)
        tf.identity(x, name="bn")
    graph_def = graph.as_graph_def()
    node = graph_def.node[-1]
    node.op = "BatchNormWithGlobalNormalization"
    del node.input[:]
    node.input.extend(["x", "m", "v", "beta", "gamma"])
    node.attr["variance_epsilon"].f = 1e-3
    node.attr["scale_after_normalization"].b = True
    data = rng.normal(size=(1, 3, 3, c)).astype("float32")
    mod, params = from_tensorflow(graph_def, outputs=["bn"])
    f = {k: v.astype("float64") for k, v in vals.items()}
    want = (data - f["m"]) / np.sqrt(f["v"] + 1e-3) * f["gamma"] + f["beta"]
    _close(relay_run(mod, params, {"x": data})[0], want.astype("float32"))


def test_unsupported_ops_are_listed_at_once() -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [2, 3], name="x")
        b = tf.raw_ops.Bucketize(
            input=tf.raw_ops.Bucketize(input=x, boundaries=[0.0]), boundaries=[1.0]
        )
        y = tf.cast(b, tf.float32) + tf.linalg.cross(x, x)
        tf.identity(y, name="out")
    with pytest.raises(UnsupportedOpError) as err:
        from_tensorflow(graph.as_graph_def())
    assert set(err.value.ops) == {"Bucketize", "Cross"}
    assert err.value.ops["Bucketize"][0] == 2


def test_unfrozen_graph_says_to_freeze_it() -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [2, 3], name="x")
        w = v1.get_variable("w", [3, 2])
        tf.matmul(x, w, name="out")
    with pytest.raises(UnsupportedOpError, match="not frozen"):
        from_tensorflow(graph.as_graph_def())


def test_bad_arguments_name_what_to_do() -> None:
    _, graph_def = _v1_graph()
    with pytest.raises(DynamicShapeError, match=r"shape=\{'x'"):
        from_tensorflow(graph_def)
    with pytest.raises(FrontendError, match="not nodes of the graph"):
        from_tensorflow(graph_def, shape={"nope": (1,)})
    with pytest.raises(FrontendError, match="layout"):
        from_tensorflow(graph_def, layout="NCDHW", shape={"x": (1, 4)})
    with pytest.raises(FrontendError, match="not a node"):
        from_tensorflow(graph_def, shape={"x": (1, 4)}, outputs=["missing:0"])
    with pytest.raises(FrontendError, match="GraphDef"):
        from_tensorflow(b"not a graph")
    with pytest.raises(FrontendError, match=r"node 'MatMul' \(MatMul\): .*5 features"):
        from_tensorflow(graph_def, shape={"x": (2, 5)})


def test_testing_helpers(tmp_path: Any) -> None:
    from relaykit.relay.testing import tf as tf_testing

    labels = tmp_path / "map.pbtxt"
    labels.write_text(
        'entry {\n  target_class: 3\n  target_class_string: "n01"\n}\n'
        'entry {\n  target_class: 7\n  target_class_string: "n02"\n}\n'
    )
    uids = tmp_path / "uids.txt"
    uids.write_text("n01\tgoldfish, Carassius auratus\nn02\tcock\nn03\then\n")
    lookup = tf_testing.NodeLookup(label_lookup_path=str(labels), uid_lookup_path=str(uids))
    assert lookup.id_to_string(3) == "goldfish, Carassius auratus"
    assert lookup.id_to_string(7) == "cock" and lookup.id_to_string(4) == ""

    graph, graph_def = _v1_graph()
    assert tf_testing.ProcessGraphDefParam(graph_def) is graph_def
    with graph.as_default(), v1.Session(graph=graph) as sess:
        shaped = tf_testing.AddShapesToGraphDef(sess, "out")
    assert all("_output_shapes" in n.attr for n in shaped.node)
    assert [a.tolist() for a in tf_testing.vmobj_to_list((np.ones(2), [np.zeros(1)]))] == [
        [1.0, 1.0],
        [0.0],
    ]


def test_function_calls_are_converted_in_place(relay_run: Any) -> None:
    """An unfrozen TF2 graph calling nested functions (PartitionedCall): each call's
    body converted with its arguments bound; outputs read by argument name (TopKV2's
    ``indices``, a function's second result) land on the right tensor."""

    @tf.function
    def inner(a: Any, b: Any) -> Any:
        top = tf.math.top_k(a, 2)
        return tf.nn.relu(a @ b), tf.cast(top.indices, tf.float32) + top.values

    @tf.function
    def outer(x: Any) -> Any:
        y, t = inner(x, tf.ones([4, 3]) * 0.5)
        return tf.reduce_sum(y, 1, keepdims=True) * t

    graph_def = outer.get_concrete_function(tf.TensorSpec([2, 4])).graph.as_graph_def()
    assert any(n.op.endswith("PartitionedCall") for n in graph_def.node)
    data = rng.normal(size=(2, 4)).astype("float32")
    mod, params = from_tensorflow(graph_def, shape={"x": (2, 4)})
    _close(relay_run(mod, params, {"x": data})[0], outer(data).numpy())


def test_conditionals_choose_a_branch_or_become_relay_if() -> None:
    """``tf.cond`` in a TF2 function graph (StatelessIf): a condition known at import
    picks its branch; one computed from an input becomes a Relay ``if`` (run on the VM)."""
    import relaykit as tvm
    from relaykit import relay

    @tf.function
    def f(x: Any) -> Any:
        static = tf.cond(tf.shape(x)[0] > 1, lambda: x * 2.0, lambda: x - 1.0)
        return tf.cond(tf.reduce_sum(x) > 0, lambda: static + 1.0, lambda: tf.tanh(static))

    graph_def = f.get_concrete_function(tf.TensorSpec([2, 3])).graph.as_graph_def()
    assert any(n.op in ("If", "StatelessIf") for n in graph_def.node)
    mod, params = from_tensorflow(graph_def, shape={"x": (2, 3)})
    assert str(mod).count("if (") == 1  # the shape test was decided at import
    run = relay.create_executor("vm", mod=mod, target="llvm", device=tvm.cpu()).evaluate()
    for sign in (1.0, -1.0):
        data = (sign * np.abs(rng.normal(size=(2, 3)))).astype("float32")
        _close(run(data, **params).numpy(), f(data).numpy())


def test_frozen_conditionals(relay_run: Any) -> None:
    """Freezing lowers tf.cond to Switch/Merge: a predicate known at import takes its
    branch; a run-time one asks for ``lower_control_flow=False``, which keeps an If."""
    w = tf.Variable(rng.normal(size=(3, 3)).astype("float32"))

    def f(x: Any) -> Any:
        y = tf.cond(tf.shape(x)[1] == 3, lambda: x @ w, lambda: x[:, :3])
        return tf.cond(tf.reduce_sum(y) > 0, lambda: y + 1.0, lambda: y * 2.0)

    concrete = tf.function(f).get_concrete_function(tf.TensorSpec([2, 3]))
    lowered = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    assert {"Switch", "Merge"} <= {n.op for n in lowered.node}
    with pytest.raises(UnsupportedOpError, match="lower_control_flow=False"):
        from_tensorflow(lowered, shape={"x": (2, 3)})

    def g(x: Any) -> Any:
        return tf.cond(tf.shape(x)[1] == 3, lambda: tf.nn.relu(x @ w), lambda: x[:, :3])

    concrete = tf.function(g).get_concrete_function(tf.TensorSpec([2, 3]))
    lowered = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    assert "Switch" in {n.op for n in lowered.node}
    data = rng.normal(size=(2, 3)).astype("float32")
    mod, params = from_tensorflow(lowered, shape={"x": (2, 3)})
    assert "if (" not in str(mod)
    _close(relay_run(mod, params, {"x": data})[0], g(data).numpy())

    kept = convert_variables_to_constants_v2(
        tf.function(f).get_concrete_function(tf.TensorSpec([2, 3])), lower_control_flow=False
    ).graph.as_graph_def()
    mod, params = from_tensorflow(kept, shape={"x": (2, 3)})
    import relaykit as tvm
    from relaykit import relay

    run = relay.create_executor("vm", mod=mod, target="llvm", device=tvm.cpu()).evaluate()
    _close(run(data, **params).numpy(), f(data).numpy())


def test_tfparser_reads_pb_files_and_saved_models(tmp_path: Any, relay_run: Any) -> None:
    from relaykit.relay.frontend.tensorflow_parser import TFParser

    _, graph_def = _v1_graph()
    (tmp_path / "m.pb").write_bytes(graph_def.SerializeToString())
    parsed = TFParser(str(tmp_path / "m.pb")).parse()
    assert [n.name for n in parsed.node] == [n.name for n in graph_def.node]

    module = tf.Module()
    module.w = tf.Variable(rng.normal(size=(4, 2)).astype("float32"))
    module.f = tf.function(
        lambda x: {"y": tf.nn.softmax(x @ module.w)}, input_signature=[tf.TensorSpec([3, 4])]
    )
    tf.saved_model.save(module, str(tmp_path / "saved"), signatures=module.f)
    frozen = TFParser(str(tmp_path / "saved")).parse()
    inputs = [n.name for n in frozen.node if n.op == "Placeholder"]
    mod, params = from_tensorflow(frozen, shape={inputs[0]: (3, 4)})
    data = rng.normal(size=(3, 4)).astype("float32")
    _close(relay_run(mod, params, {inputs[0]: data})[0], module.f(data)["y"].numpy())
    with pytest.raises(FrontendError, match="no such TensorFlow model"):
        TFParser(str(tmp_path / "missing.pb")).parse()
