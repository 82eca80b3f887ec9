"""Tiny inputs, huge costs: peak memory and time of each bomb from issue 15.

- ``expand``: a 74-byte ONNX model, ``Expand`` of one constant to 16384 x 16384
  (folded at import: 1 GiB of float32, 3.1 GiB peak before the fix);
- ``relay-broadcast`` / ``relay-full``: a few dozen bytes of Relay text whose
  ``relay.build`` folded a 1 GiB constant;
- ``lstm``: an LSTM whose input declares a sequence length of 2**62 (the
  importer unrolled it forever);
- ``matmul``: ``MatMul`` of a 4096 x 4096 expanded constant with itself (64 MiB,
  within the folding limit, but 2**36 multiply-adds to fold);
- ``flipped-bit``: ``light_bvlc_alexnet.onnx`` (3,968 bytes) with one bit flipped
  in the shape of ``conv2_w_0`` (256 -> 1,048,832 output channels: 4.9 GB of
  weights folded before the type error).

Each bomb runs in a fresh subprocess with an address-space limit (so a bomb
cannot take the machine) and a time limit; the peak is the subprocess's peak
RSS minus its RSS once relaykit is imported. ``--before DIR`` runs the same
bombs against another relaykit source tree (e.g. ``git worktree`` of main, or
``git archive HEAD src | tar -x -C /tmp/base``) and prints both side by side.

Run: python benchmarks/bounds.py [--before /tmp/base/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
HERE = os.path.dirname(os.path.abspath(__file__))


def expand_bomb() -> bytes:
    g = helper.make_graph(
        [helper.make_node("Expand", ["a", "s"], ["y"])],
        "",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("a", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("s", TensorProto.INT64, [2], [16384, 16384]),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="")
    m.ir_version = 8
    return m.SerializeToString()


def matmul_bomb(n: int = 4096) -> bytes:
    """``MatMul`` of an expanded constant with itself: 64 MiB, but n**3 multiply-adds."""
    g = helper.make_graph(
        [
            helper.make_node("Expand", ["a", "s"], ["e"]),
            helper.make_node("MatMul", ["e", "e"], ["y"]),
        ],
        "",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("a", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("s", TensorProto.INT64, [2], [n, n]),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="")
    m.ir_version = 8
    return m.SerializeToString()


def lstm_bomb(seq: int = 2**62) -> bytes:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, 1, 1])
    w = helper.make_tensor("W", TensorProto.FLOAT, [1, 4, 1], [0.1] * 4)
    r = helper.make_tensor("R", TensorProto.FLOAT, [1, 4, 1], [0.1] * 4)
    n = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=1)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    g = helper.make_graph([n], "", [x], [y], [w, r])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="")
    m.ir_version = 8
    return m.SerializeToString()


#: the byte and bit of light_bvlc_alexnet.onnx whose flip makes conv2_w_0's shape
#: (256, 48, 5, 5) into (1048832, 48, 5, 5)
FLIP_OFFSET, FLIP_BIT = 2813, 4


def flipped_alexnet() -> bytes:
    with open(os.path.join(LIGHT, "light_bvlc_alexnet.onnx"), "rb") as f:
        raw = bytearray(f.read())
    raw[FLIP_OFFSET] ^= 1 << FLIP_BIT
    return bytes(raw)


RELAY_BOMBS = {
    "relay-broadcast": "def @main() { broadcast_to(1f, shape=[16384, 16384]) }",
    "relay-full": 'def @main() { full(1f, shape=[16384, 16384], dtype="float32") }',
}

RUNNER = r"""
import json, resource, sys, time
lim = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
import relaykit
from relaykit import relay
from relaykit.errors import RelayKitError
from relaykit.frontend import from_onnx
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
base = rss()
kind, arg = sys.argv[2], sys.argv[3]
t = time.perf_counter()
try:
    if kind == "onnx":
        from_onnx(open(arg, "rb").read())
    else:
        relay.build(relaykit.parse('#[version = "0.0.5"]\n' + arg), target="llvm")
    status = "ok"
except RelayKitError as err:
    status = f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"
except BaseException as err:
    status = f"UNTYPED {type(err).__name__}: {str(err)[:60]}"
dt = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"status": status, "seconds": dt, "peak": max(peak - base, 0)}))
"""


def measure(src: str, kind: str, arg: str, limit: int, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, "-c", RUNNER, str(limit), kind, arg]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"no answer within {timeout:.0f} s (killed)", "seconds": timeout}
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines:
        return {"status": f"died (exit {out.returncode}): {out.stderr.strip()[-80:]}"}
    return json.loads(lines[-1])


def fmt(r: dict) -> str:
    mem = f"{r['peak'] / 2**20:8.0f} MiB" if "peak" in r else "       ? MiB"
    sec = f"{r['seconds']:7.2f} s" if "seconds" in r else "      ? s"
    return f"{mem} {sec}  {r['status']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="another relaykit src directory to compare with")
    ap.add_argument("--limit-gib", type=float, default=8.0, help="address space per bomb")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per bomb")
    args = ap.parse_args()
    after = os.path.join(os.path.dirname(HERE), "src")
    trees = [("before", args.before)] if args.before else []
    trees.append(("after", after))
    limit = int(args.limit_gib * 2**30)

    tmp = tempfile.mkdtemp()
    bombs: list[tuple[str, str, str, int]] = []
    for name, data in (
        ("expand", expand_bomb()),
        ("lstm", lstm_bomb()),
        ("flipped-bit", flipped_alexnet()),
        ("matmul", matmul_bomb()),
    ):
        path = os.path.join(tmp, f"{name}.onnx")
        with open(path, "wb") as f:
            f.write(data)
        bombs.append((name, "onnx", path, len(data)))
    for name, text in RELAY_BOMBS.items():
        bombs.append((name, "relay", text, len(text.encode())))

    print(
        f"each bomb in a subprocess, address space <= {args.limit_gib:g} GiB, "
        f"<= {args.timeout:g} s; peak = peak RSS above the RSS after importing relaykit"
    )
    for name, kind, arg, size in bombs:
        what = "import" if kind == "onnx" else "relay.build"
        print(f"\n{name} ({size} bytes, {what})")
        for label, src in trees:
            print(f"  {label:6s} {fmt(measure(src, kind, arg, limit, args.timeout))}", flush=True)


if __name__ == "__main__":
    main()
