"""Splittable pseudorandom numbers (TVM's ``relay.random``): ``random.threefry_generate``,
``random.threefry_split``, ``random.uniform``, ``random.normal`` and ``random.multinomial``,
and the key constructor :func:`threefry_key`.

A key is a ``uint64`` tensor of 10 words: the Threefry-4x64 key (words 0-3), the path
of splits taken (4-5), the counter (6-7) and the position of the next path bit (8-9).
Random bits are Threefry (20 rounds, 64-bit words, the Skein rotation constants) of the
key applied to the path-and-counter block plus ``i`` for block ``i``; each operation
returns a new key to use next, so a program is deterministic given its first key.

>>> import numpy as np
>>> from relaykit import relay
>>> key = threefry_key(1)
>>> key.data.numpy().dtype, key.data.numpy().shape
(dtype('uint64'), (10,))
>>> len(threefry_generate(key, (8,)))
2
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Constant, Expr, TupleWrapper, const
from relaykit.ir.types import TensorType, TupleType, Type, check_dtype

from ._relations import FLOAT_DTYPES, tensor_arg
from .define import OpPattern, TypeRelError, define_op, int_tuple, make_call

__all__ = [
    "threefry_key",
    "threefry_generate",
    "threefry_split",
    "uniform",
    "normal",
    "multinomial",
]

_U64 = np.uint64
_KEY_TYPE = TensorType((10,), "uint64")
_PARITY = _U64(0x1BD11BDAA9FC1A22)
_TOP = _U64(1 << 63)
#: Threefry-4x64 rotation distances per round (mod 8), for the two word pairs (Skein paper).
_ROT = ((14, 16), (52, 57), (23, 40), (5, 37), (25, 33), (46, 12), (58, 22), (32, 32))
_PERM = (0, 3, 2, 1)


# -- the Threefry block function and the key updates (NumPy uint64, wrapping) --------------------


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def threefry4x64(key: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Threefry-4x64 with 20 rounds of each row of ``blocks`` (shape ``(n, 4)``) under the
    4-word ``key``: a key injection before each group of four rounds."""
    k = np.empty(5, dtype=_U64)
    k[:4] = key[:4]
    k[4] = _PARITY ^ key[0] ^ key[1] ^ key[2] ^ key[3]
    x = [blocks[:, j].astype(_U64) for j in range(4)]
    with np.errstate(over="ignore"):
        for s in range(5):
            for j in range(4):
                x[j] = x[j] + k[(s + j) % 5] + (_U64(s) if j == 3 else _U64(0))
            for r in range(4):
                rot = _ROT[(4 * s + r) % 8]
                for p in range(2):
                    a, b = x[2 * p], x[2 * p + 1]
                    a = a + b
                    x[2 * p], x[2 * p + 1] = a, _rotl(b, rot[p]) ^ a
                x = [x[_PERM[j]] for j in range(4)]
    return np.stack(x, axis=1)


def _shift_path(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
    """The 128-bit path position ``(a, b)`` moved one bit to the right."""
    if a == 1:
        return _U64(0), _TOP
    if a == 0:
        return _U64(0), b >> _U64(1)
    return a >> _U64(1), _U64(0)


def _blocks(start: np.ndarray, n: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return start[None, :4].astype(_U64) + np.arange(n, dtype=_U64)[:, None]


def generate_ref(key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The new key and ``n`` random ``uint64`` from ``key``."""
    gen = np.asarray(key, dtype=_U64)
    tmp = gen.copy()
    if not gen[7] < _U64(2**64 - 1) - _U64(n):  # the counter is used up
        if gen[8] == 0 and gen[9] == 0:  # and so is the path: hash into a new key
            ones = np.full((1, 4), 2**64 - 1, dtype=_U64)
            tmp[:4] = threefry4x64(gen[:4], ones)[0]
            tmp[4:] = 0
            tmp[8] = _TOP
        else:  # take the right branch of the path
            tmp[4] = gen[4] | gen[8]
            tmp[5] = gen[5] | gen[9]
            tmp[6] = tmp[7] = 0
            tmp[8], tmp[9] = _shift_path(gen[8], gen[9])
    nblocks = -(-n // 4)
    bits = threefry4x64(tmp[:4], _blocks(tmp[4:8], nblocks)).reshape(-1)[:n]
    new = tmp.copy()
    new[6] = 0
    with np.errstate(over="ignore"):
        new[7] = tmp[7] + _U64(n)
    return new, bits


def split_ref(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two distinct keys from ``key`` (left: a 0 added to the path, right: a 1)."""
    gen = np.asarray(key, dtype=_U64)
    left, right = gen.copy(), gen.copy()
    if gen[8] == 0 and gen[9] == 0:  # no room left in the path: hash into a new key
        fresh = threefry4x64(gen[:4], gen[None, 4:8])[0]
        left[:4] = right[:4] = fresh
        left[4:] = right[4:] = 0
        right[4] = _TOP
        left[8] = right[8] = _U64(1 << 62)
        return left, right
    pos = _shift_path(gen[8], gen[9])
    right[4] = gen[4] | gen[8]
    right[5] = gen[5] | gen[9]
    left[8], left[9] = pos
    right[8], right[9] = pos
    return left, right


_FRACTION_BITS = {"float16": 10, "float32": 23, "float64": 52}


def _standard_uniform(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Values in [0, 1) from the top mantissa-width bits of each random word."""
    nf = _FRACTION_BITS[dtype]
    top = (bits >> _U64(64 - nf)).astype(np.float64)
    return top / float(1 << nf)


# -- type relations ------------------------------------------------------------------------------


def _key_arg(arg_types: Sequence[Type]) -> TensorType:
    key = tensor_arg(arg_types, 0, "key")
    if tuple(key.shape) != (10,) or key.dtype != "uint64":
        raise TypeRelError(f"a threefry key must be Tensor[(10,), uint64], got {key}")
    return key


def _generate_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    _key_arg(arg_types)
    return TupleType([_KEY_TYPE, TensorType(tuple(attrs.out_shape), "uint64")])


def _split_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    _key_arg(arg_types)
    return TupleType([_KEY_TYPE, _KEY_TYPE])


def _out_dtype(attrs: Attrs, what: str) -> str:
    dtype = str(attrs.out_dtype)
    if dtype not in FLOAT_DTYPES or dtype not in _FRACTION_BITS:
        raise TypeRelError(f"{what} generates float16, float32 or float64, not {dtype}")
    return dtype


def _scalar_params(arg_types: Sequence[Type], names: Sequence[str], dtype: str) -> None:
    for i, name in enumerate(names, start=1):
        t = tensor_arg(arg_types, i, name)
        if t.ndim != 0 or t.dtype != dtype:
            raise TypeRelError(f"{name} must be a {dtype} scalar, got {t}")


def _dist_rel(names: tuple[str, str], what: str):
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        _key_arg(arg_types)
        dtype = _out_dtype(attrs, what)
        _scalar_params(arg_types, names, dtype)
        return TupleType([_KEY_TYPE, TensorType(tuple(attrs.out_shape), dtype)])

    return rel


def _multinomial_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    _key_arg(arg_types)
    probs = tensor_arg(arg_types, 1, "probs")
    if probs.ndim not in (1, 2):
        raise TypeRelError(f"multinomial probs must be 1-D or 2-D, got {probs}")
    if probs.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"multinomial probs must be floating-point, got {probs}")
    n = int(attrs.num_samples)
    if n < 1:
        raise TypeRelError(f"multinomial num_samples must be positive, got {n}")
    return TupleType([_KEY_TYPE, TensorType((*probs.shape[:-1], n), "int32")])


# -- kernels -------------------------------------------------------------------------------------


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _generate_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    shape = tuple(attrs.out_shape)
    new, bits = generate_ref(ins[0], _size(shape))
    return new, bits.reshape(shape)


def _split_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    return split_ref(ins[0])


def _uniform_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    key, low, high = ins
    shape, dtype = tuple(attrs.out_shape), str(attrs.out_dtype)
    new, bits = generate_ref(key, _size(shape))
    u = _standard_uniform(bits, dtype).astype(dtype)
    out = u * (high.astype(dtype) - low.astype(dtype)) + low.astype(dtype)
    return new, np.asarray(out, dtype=dtype).reshape(shape)


def _normal_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    key, mean, scale = ins
    shape, dtype = tuple(attrs.out_shape), str(attrs.out_dtype)
    n = _size(shape)
    half = -(-n // 2)
    new, bits = generate_ref(key, 2 * half)
    u = _standard_uniform(bits, "float64").reshape(2, half)
    radius = np.sqrt(-2.0 * np.log1p(-u[0]))  # Box-Muller; 1 - u > 0
    angle = 2.0 * np.pi * u[1]
    z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:n]
    out = float(mean) + float(scale) * z
    return new, out.astype(dtype).reshape(shape)


def _multinomial_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    key, probs = ins
    n = int(attrs.num_samples)
    rows = probs.reshape(-1, probs.shape[-1]).astype(np.float64)
    new, bits = generate_ref(key, rows.shape[0] * n)
    u = _standard_uniform(bits, "float64").reshape(rows.shape[0], n)
    cdf = np.cumsum(rows, axis=1)
    total = cdf[:, -1:]
    total = np.where(total > 0, total, 1.0)
    cdf = cdf / total
    out = np.stack([np.searchsorted(c, v, side="right") for c, v in zip(cdf, u, strict=True)])
    out = np.minimum(out, rows.shape[1] - 1).astype(np.int32)
    return new, out.reshape((*probs.shape[:-1], n))


_O = OpPattern.OPAQUE

define_op(
    "random.threefry_generate",
    num_inputs=1,
    num_outputs=2,
    attrs={"out_shape": ()},
    attrs_type_key="relay.attrs.ThreefryGenerateAttrs",
    type_rel=_generate_rel,
    compute=_generate_kernel,
    pattern=_O,
    doc="A new key and random uint64 bits of out_shape.",
)
define_op(
    "random.threefry_split",
    num_inputs=1,
    num_outputs=2,
    type_rel=_split_rel,
    compute=_split_kernel,
    pattern=_O,
    doc="Two distinct keys from one.",
)
define_op(
    "random.uniform",
    num_inputs=3,
    num_outputs=2,
    attrs={"out_shape": (), "out_dtype": "float32"},
    attrs_type_key="relay.attrs.UniformAttrs",
    type_rel=_dist_rel(("low", "high"), "uniform"),
    compute=_uniform_kernel,
    pattern=_O,
    doc="A new key and values uniform on [low, high).",
)
define_op(
    "random.normal",
    num_inputs=3,
    num_outputs=2,
    attrs={"out_shape": (), "out_dtype": "float32"},
    attrs_type_key="relay.attrs.NormalAttrs",
    type_rel=_dist_rel(("mean", "scale"), "normal"),
    compute=_normal_kernel,
    pattern=_O,
    doc="A new key and normally distributed values.",
)
define_op(
    "random.multinomial",
    num_inputs=2,
    num_outputs=2,
    attrs={"num_samples": 1},
    attrs_type_key="relay.attrs.MultinomialAttrs",
    type_rel=_multinomial_rel,
    compute=_multinomial_kernel,
    pattern=_O,
    doc="A new key and category indices drawn with the (unnormalised) probabilities probs.",
)


# -- constructors --------------------------------------------------------------------------------


def threefry_key(seed: int) -> Constant:
    """A new key from an integer ``seed`` (its 256 low bits, in native byte order)."""
    words = np.frombuffer(int(seed).to_bytes(32, sys.byteorder), dtype=_U64)
    rest = np.array([0, 0, 0, 0, 1 << 63, 0], dtype=_U64)
    return const(np.concatenate([words, rest]), dtype="uint64")


def threefry_generate(key: Expr, shape: Any) -> TupleWrapper:
    """``(new_key, bits)``: random ``uint64`` of ``shape``; use ``new_key`` afterwards."""
    return TupleWrapper(
        make_call("random.threefry_generate", [key], out_shape=int_tuple(shape, "shape")), 2
    )


def threefry_split(key: Expr) -> TupleWrapper:
    """Two new, distinct keys from ``key`` (do not use ``key`` again)."""
    return TupleWrapper(make_call("random.threefry_split", [key]), 2)


def _param(v: Any, dtype: str) -> Expr:
    return v if isinstance(v, Expr) else const(v, dtype=dtype)


def uniform(
    key: Expr, shape: Any, dtype: str = "float32", low: Any = 0.0, high: Any = 1.0
) -> TupleWrapper:
    """``(new_key, values)``: ``shape`` values uniform on ``[low, high)``."""
    dtype = check_dtype(dtype)
    call = make_call(
        "random.uniform",
        [key, _param(low, dtype), _param(high, dtype)],
        out_shape=int_tuple(shape, "shape"),
        out_dtype=dtype,
    )
    return TupleWrapper(call, 2)


def normal(
    key: Expr, shape: Any, dtype: str = "float32", mean: Any = 0.0, scale: Any = 1.0
) -> TupleWrapper:
    """``(new_key, values)``: ``shape`` values normal with ``mean`` and std ``scale``."""
    dtype = check_dtype(dtype)
    call = make_call(
        "random.normal",
        [key, _param(mean, dtype), _param(scale, dtype)],
        out_shape=int_tuple(shape, "shape"),
        out_dtype=dtype,
    )
    return TupleWrapper(call, 2)


def multinomial(key: Expr, probs: Expr, num_samples: int = 1) -> TupleWrapper:
    """``(new_key, indices)``: ``num_samples`` category indices (int32) per row of
    ``probs`` (1-D or 2-D, normalised here), drawn with replacement."""
    call = make_call("random.multinomial", [key, probs], num_samples=int(num_samples))
    return TupleWrapper(call, 2)
