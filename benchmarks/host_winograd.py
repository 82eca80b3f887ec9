"""Host 3x3 stride-1 convolutions (conv + bias + relu): Winograd F(2x2, 3x3) against
im2col + GEMM on relaykit's host path, and onnxruntime, one layer at a time.

    python benchmarks/host_winograd.py --threads 2
    python benchmarks/host_winograd.py --layers 64x64x56,512x512x7 --threads 1

Each layer is one ONNX ``Conv`` (pad 1, bias) + ``Relu``, built three times in this
process: relaykit with Winograd forced, relaykit with it refused (im2col + GEMM), and
onnxruntime; timed in interleaved bursts (see ``_bench.py``). ``pays`` is what
relaykit's rule (``relaykit.backends.host.convolution.winograd_pays``) chooses for the
layer. Whole models: ``host_cnn.py``.
"""

from __future__ import annotations

import argparse

import _bench
import numpy as np

#: C x K x size: ResNet-18's and VGG-11's 3x3 stride-1 layers, and small ones.
LAYERS = ("64x64x56,128x128x28,256x256x14,512x512x7,64x128x112,256x256x56,512x512x28,"
          "512x512x14,16x16x56,32x32x28,64x64x7,16x16x7,3x64x224,512x512x4")  # fmt: skip


def conv_model(c: int, k: int, size: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, size, size])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    from relaykit.backends.host import convolution as host_kernels  # where conv2d_run reads it

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", default=LAYERS, help="CxKxSIZE,...")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--gap", type=float, default=0.1, help="pause before each burst (s)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    args = parser.parse_args(argv)
    threads = _bench.num_threads(args.threads)
    rule = host_kernels.winograd_pays
    print(f"{threads} threads, median of {args.runs} runs; ratio = engine / onnxruntime")
    print(f"{'layer':>14} {'pays':>5} {'ort ms':>8} {'im2col ms':>10} {'wino ms':>9} "
          f"{'wino/im2col':>12} {'wino/ort':>9} {'rel err':>8}")  # fmt: skip
    for spec in args.layers.split(","):
        c, k, size = (int(v) for v in spec.split("x"))
        model = conv_model(c, k, size)
        x = np.random.default_rng(1).standard_normal((1, c, size, size)).astype(np.float32)
        feeds = {"x": x}
        pays = rule((1, c, size, size), (k, c, 3, 3), (1, k, size, size), (1, 1), (1, 1))
        engines = [_bench.ort_engine(model, feeds, threads)]
        try:
            for name, choice in (("im2col", False), ("winograd", True)):
                host_kernels.winograd_pays = lambda *a, _c=choice: _c  # type: ignore[misc]
                engine = _bench.relaykit_engine(model, feeds, threads)
                engine.name = name
                engines.append(engine)
        finally:
            host_kernels.winograd_pays = rule
        want = engines[0].run()
        err = _bench.rel_error(engines[2].run(), want)
        _bench.time_engines(engines, args.runs, args.burst, args.gap)
        ort, direct, wino = (e.median_ms for e in engines)
        print(f"{spec:>14} {'yes' if pays else 'no':>5} {ort:8.3f} {direct:10.3f} {wino:9.3f} "
              f"{wino / direct:12.2f} {wino / ort:9.2f} {err:8.1e}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
