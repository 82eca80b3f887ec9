"""``?`` and symbolic dimensions round-trip through the text format (issue 12)."""

from relaykit import relay


def test_parse_any_and_symbolic_dims():
    mod = relay.fromtext(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(?, 3), float32], %y: Tensor[(n, 3), float32], "
        "%z: Tensor[(n, 3), float32]) { add(%y, %z) }"
    )
    mod = relay.transform.InferType()(mod)
    x, y, z = mod["main"].params
    assert x.type_annotation == relay.TensorType((relay.Any(), 3))
    n = y.type_annotation.shape[0]
    assert z.type_annotation.shape[0] is n  # one variable per name within one text
    assert mod["main"].body.checked_type == relay.TensorType((n, 3))


def test_printed_dynamic_types_parse_back():
    x = relay.var("x", shape=(relay.Any(), 3))
    f = relay.Function([x], relay.nn.relu(x))
    text = relay.IRModule.from_expr(f).astext()
    assert "Tensor[(?, 3), float32]" in text
    again = relay.fromtext(text)
    assert again["main"].params[0].type_annotation == relay.TensorType((relay.Any(), 3))
