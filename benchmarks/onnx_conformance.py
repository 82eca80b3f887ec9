"""ONNX conformance: onnx's node test suite on relaykit and on onnxruntime, side by side,
and the light models (import, optimise, run; compared with their stored outputs and
with onnxruntime).

Run: python benchmarks/onnx_conformance.py [--update] [--no-light] [--failures] [--reimport]

relaykit imports each model once (its inputs' shapes pinned) and runs it as compiled,
on the Relay VM when it is dynamic, without the re-import-per-value fallback.
``--update`` rewrites tests/frontend/onnx_expected_passes.txt with relaykit's
current passes (the CI test fails when an expected pass regresses). ``--reimport``
also runs the suite with the fallback on (``RelayKitReimportBackend``), for comparison.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from relaykit import relay
from relaykit.frontend import load_model
from relaykit.frontend.onnx.backend import (
    RelayKitBackend,
    RelayKitReimportBackend,
    node_test_cases,
    run_node_test,
)
from relaykit.transform import optimize

EXPECTED = Path(__file__).resolve().parent.parent / "tests/frontend/onnx_expected_passes.txt"
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
LIGHT_MODELS = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


def _reason(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    if "element type" in text or "sequence_type" in text or "optional_type" in text:
        return "value relaykit's IR cannot hold (string tensors)"
    return type(err).__name__


def run_suite(backend, cases) -> tuple[set[str], collections.Counter, dict[str, str]]:
    passed: set[str] = set()
    reasons: collections.Counter = collections.Counter()
    detail: dict[str, str] = {}
    for case in cases:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                run_node_test(case, backend)
            passed.add(case.name)
        except Exception as err:  # every failure is counted
            reasons[_reason(err)] += 1
            detail[case.name] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return passed, reasons, detail


def light_models() -> None:
    import onnxruntime as ort

    print("\nlight models (onnx/backend/test/data/light): import + optimise + run")
    for name in LIGHT_MODELS:
        path = os.path.join(LIGHT, f"light_{name}.onnx")
        model = onnx.load(path)
        inits = {t.name for t in model.graph.initializer}
        vi = next(i for i in model.graph.input if i.name not in inits)
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        x = (np.arange(n).reshape(shape) / n).astype("float32")
        stored = numpy_helper.to_array(
            onnx.load_tensor(os.path.join(LIGHT, f"light_{name}_output_0.pb"))
        )
        t0 = time.perf_counter()
        mod, _ = load_model(path)
        t1 = time.perf_counter()
        mod = optimize(mod)
        t2 = time.perf_counter()
        fn = relay.create_executor("debug", mod=mod).evaluate()
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            out = fn(x).numpy()
            runs.append(time.perf_counter() - t)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, {vi.name: x})[0]
        ok_stored = np.allclose(out, stored, rtol=1e-3, atol=1e-7)
        ok_ort = np.allclose(out, want, rtol=1e-3, atol=1e-6)
        print(
            f"  {name:13s} import {t1 - t0:6.2f}s  optimise {t2 - t1:5.2f}s  "
            f"run {statistics.median(runs):6.2f}s  stored: {'ok' if ok_stored else 'MISMATCH'}"
            f"  onnxruntime: {'ok' if ok_ort else 'MISMATCH'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the expected passes")
    parser.add_argument("--no-light", action="store_true", help="skip the light models")
    parser.add_argument("--failures", action="store_true", help="list relaykit's failures")
    parser.add_argument(
        "--reimport", action="store_true", help="also run with the re-import fallback on"
    )
    args = parser.parse_args()

    cases = node_test_cases()
    print(f"onnx {onnx.__version__}: {len(cases)} node tests")
    t = time.perf_counter()
    rk, rk_reasons, rk_detail = run_suite(RelayKitBackend, cases)
    t_rk = time.perf_counter() - t
    try:
        import onnxruntime
        import onnxruntime.backend as ort_backend

        t = time.perf_counter()
        ort, _, _ = run_suite(ort_backend, cases)
        t_ort = time.perf_counter() - t
        ort_label = f"onnxruntime {onnxruntime.__version__}"
    except ImportError:
        ort, t_ort, ort_label = set(), 0.0, "onnxruntime"
    n = len(cases)
    print(f"\n{'backend':26s} {'passed':>7s} {'rate':>7s} {'time':>7s}")
    print(f"{'relaykit (imported once)':26s} {len(rk):7d} {len(rk) / n:7.1%} {t_rk:6.1f}s")
    print(f"{ort_label:26s} {len(ort):7d} {len(ort) / n:7.1%} {t_ort:6.1f}s")
    if args.reimport:
        t = time.perf_counter()
        fb, _, _ = run_suite(RelayKitReimportBackend, cases)
        t_fb = time.perf_counter() - t
        label = "relaykit + re-import"
        print(f"{label:26s} {len(fb):7d} {len(fb) / n:7.1%} {t_fb:6.1f}s")
    print(
        f"\nboth pass {len(rk & ort)}, only relaykit {len(rk - ort)}, only onnxruntime "
        f"{len(ort - rk)}"
    )
    print("\nrelaykit's failures by reason:")
    for reason, count in rk_reasons.most_common():
        print(f"  {count:5d}  {reason}")
    expected = set(EXPECTED.read_text().split()) if EXPECTED.exists() else set()
    lost = sorted(expected - rk)
    if lost:
        print(f"\nREGRESSIONS ({len(lost)}): {', '.join(lost[:20])}")
    new = sorted(rk - expected)
    if new:
        print(f"\nnew passes not yet in {EXPECTED.name}: {len(new)}")
    if args.failures:
        for name, msg in sorted(rk_detail.items()):
            print(f"  {name}: {msg}")
    if args.update:
        EXPECTED.write_text("\n".join(sorted(rk)) + "\n")
        print(f"\nwrote {len(rk)} names to {EXPECTED}")
    if not args.no_light:
        light_models()


if __name__ == "__main__":
    main()
