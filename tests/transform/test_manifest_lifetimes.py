"""ManifestLifetimes: a memory.kill after each variable's last use, on every path."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import IRError
from relaykit.ir import Call, Let, post_order
from relaykit.transform import InferType, ManifestLifetimes


def _kills_after(body: relay.Expr) -> dict[str, list[str]]:
    """For each let-bound variable, the variables killed right after its binding."""
    out: dict[str, list[str]] = {}
    for node in post_order(body):
        if isinstance(node, Let) and not _is_kill(node.value):
            killed = []
            rest = node.body
            while isinstance(rest, Let) and _is_kill(rest.value):
                killed.append(rest.value.args[0].name_hint)
                rest = rest.body
            out[node.var.name_hint] = killed
    return out


def _is_kill(e: relay.Expr) -> bool:
    return isinstance(e, Call) and getattr(e.op, "name", "") == "memory.kill"


def test_each_variable_dies_after_its_last_use() -> None:
    mod = tvm.relay.parse(
        """#[version = "0.0.5"]
        def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) {
          let %s = add(%a, %b);
          let %t = multiply(%s, %a);
          let %u = subtract(%t, %s);
          %u
        }"""
    )
    out = ManifestLifetimes()(mod)
    assert _kills_after(out["main"].body) == {"s": ["b"], "t": ["a"], "u": ["s", "t"]}
    a = np.array([1.0, -2.0, 3.0], "float32")
    b = np.array([0.5, 4.0, -1.0], "float32")
    got = relay.create_executor("debug", mod=InferType()(out)).evaluate()(a, b).numpy()
    np.testing.assert_allclose(got, (a + b) * a - (a + b), rtol=1e-6)


def test_aliases_are_dropped_and_their_uses_renamed() -> None:
    mod = tvm.relay.parse(
        """#[version = "0.0.5"]
        def @main(%a: Tensor[(3), float32]) {
          let %b = %a;
          let %c = negative(%b);
          %c
        }"""
    )
    body = ManifestLifetimes()(mod)["main"].body
    assert isinstance(body, Let) and body.var.name_hint == "c"
    assert body.value.args[0].name_hint == "a"
    assert _kills_after(body) == {"c": ["a"]}


def test_a_value_used_in_one_branch_only_dies_inside_it() -> None:
    mod = tvm.relay.parse(
        """#[version = "0.0.5"]
        def @main(%c: bool, %x: int32, %y: int32) {
          let %r = if (%c) { let %p = add(%x, %y); %p } else { %y };
          %r
        }"""
    )
    kills = _kills_after(ManifestLifetimes()(mod)["main"].body)
    assert kills["p"] == ["x", "y"]  # the last use of both in this branch
    assert kills["r"] == ["c"]  # the condition, once the if is bound


def test_non_anf_if_is_an_error() -> None:
    c = relay.var("c", "bool")
    x = relay.var("x", "int32")
    mod = tvm.IRModule.from_expr(relay.Function([c, x], relay.If(c, x, x)))
    with pytest.raises(IRError, match="A-normal form"):
        ManifestLifetimes()(mod)
