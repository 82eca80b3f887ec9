"""relay.random: the Threefry kernels against a pure-Python (big-integer) Threefry written
here, key updates, determinism and distributions, through the graph executor."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit
from relaykit import relay
from relaykit.errors import RelayTypeError

M = (1 << 64) - 1
ROT = [(14, 16), (52, 57), (23, 40), (5, 37), (25, 33), (46, 12), (58, 22), (32, 32)]


def py_threefry(key: list[int], block: list[int]) -> list[int]:
    """Threefry-4x64, 20 rounds, a key injection before each group of four rounds."""
    ks = [*key, 0x1BD11BDAA9FC1A22 ^ key[0] ^ key[1] ^ key[2] ^ key[3]]
    x = list(block)
    for s in range(5):
        x = [(x[j] + ks[(s + j) % 5] + (s if j == 3 else 0)) & M for j in range(4)]
        for r in range(4):
            for p in range(2):
                a, b = x[2 * p], x[2 * p + 1]
                a = (a + b) & M
                rot = ROT[(4 * s + r) % 8][p]
                b = (((b << rot) | (b >> (64 - rot))) & M) ^ a
                x[2 * p], x[2 * p + 1] = a, b
            x = [x[0], x[3], x[2], x[1]]
    return x


def evaluate(expr):
    mod = relaykit.IRModule.from_expr(relay.Function([], expr))
    out = relay.create_executor("graph", mod=mod).evaluate()()
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()


def test_key_layout():
    key = relay.random.threefry_key(5).data.numpy()
    assert key.dtype == np.uint64 and key.shape == (10,)
    assert key[0] == 5 and key[1:8].tolist() == [0] * 7 and key[8] == 1 << 63


def test_generate_matches_python_threefry():
    key = relay.random.threefry_key(7)
    new_key, bits = relay.random.threefry_generate(key, (2, 4))
    k, b = evaluate(relay.Tuple([new_key, bits]))
    words = [7, 0, 0, 0]
    expect = py_threefry(words, [0, 0, 0, 0]) + py_threefry(words, [1, 1, 1, 1])
    assert b.reshape(-1).tolist() == expect
    assert k[7] == 8 and k[:4].tolist() == words


def test_repeat_sequence_and_split():
    key = relay.random.threefry_key(1)
    k1, a = relay.random.threefry_generate(key, (12,))
    _, a_again = relay.random.threefry_generate(key, (12,))
    _, b = relay.random.threefry_generate(k1, (12,))
    left, right = relay.random.threefry_split(key)
    _, la = relay.random.threefry_generate(left, (16,))
    _, ra = relay.random.threefry_generate(right, (16,))
    a, a2, b, la, ra = evaluate(relay.Tuple([a, a_again, b, la, ra]))
    assert (a == a2).all() and (a != b).all() and (la != ra).any()


def test_generate_size_not_multiple_of_four():
    key = relay.random.threefry_key(3)
    k, a = relay.random.threefry_generate(key, (7,))
    _, b = relay.random.threefry_generate(k, (7,))
    a, b = evaluate(relay.Tuple([a, b]))
    assert a.shape == (7,) and (a != b).all()


def test_key_type_checked():
    fake = relay.const(np.arange(9, dtype="uint64"))
    with pytest.raises(RelayTypeError, match="threefry key"):
        mod = relaykit.IRModule.from_expr(relay.Function([], relay.random.threefry_split(fake)[0]))
        relay.transform.InferType()(mod)


def test_uniform_normal_multinomial_distributions():
    key = relay.random.threefry_key(0)
    _, u = relay.random.uniform(key, (4000,), "float32", -2.0, 3.0)
    _, n = relay.random.normal(key, (4000,), "float64", 1.0, 2.0)
    probs = relay.const(np.array([[1.0, 3.0, 0.0], [0.2, 0.2, 0.6]], "float32"))
    _, m = relay.random.multinomial(key, probs, 4000)
    u, n, m = evaluate(relay.Tuple([u, n, m]))
    assert u.dtype == np.float32 and u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.1 and abs(u.var() - 25 / 12) < 0.15
    assert n.dtype == np.float64 and abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    assert m.shape == (2, 4000) and m.dtype == np.int32
    freq = np.stack([np.bincount(r, minlength=3) / 4000 for r in m])
    np.testing.assert_allclose(freq, [[0.25, 0.75, 0.0], [0.2, 0.2, 0.6]], atol=0.03)


def test_text_round_trip():
    key = relay.random.threefry_key(0)
    _, u = relay.random.uniform(key, (4,))
    mod = relay.transform.InferType()(relaykit.IRModule.from_expr(relay.Function([], u)))
    again = relay.fromtext(mod.astext())
    assert relaykit.ir.structural_equal(again["main"], mod["main"])
