"""relay.quantize.qconfig: TVM's fields and defaults, nesting, validation."""

from __future__ import annotations

import threading

import pytest

from relaykit import relay
from relaykit.errors import ArgumentError

TVM_DEFAULTS = {
    "nbit_input": 8,
    "nbit_weight": 8,
    "nbit_activation": 32,
    "dtype_input": "int8",
    "dtype_weight": "int8",
    "dtype_activation": "int32",
    "calibrate_mode": "global_scale",
    "global_scale": 8.0,
    "weight_scale": "power2",
    "skip_dense_layer": True,
    "skip_conv_layers": (0,),
    "do_simulation": False,
    "round_for_shift": True,
    "debug_enabled_ops": None,
    "rounding": "UPWARD",
    "calibrate_chunk_by": -1,
    "partition_conversions": "disabled",
}


def test_defaults_are_tvms():
    cfg = relay.quantize.current_qconfig()
    assert {k: getattr(cfg, k) for k in TVM_DEFAULTS} == TVM_DEFAULTS


def test_with_block_nests_and_restores():
    q = relay.quantize
    with q.qconfig(nbit_input=4, skip_conv_layers=None) as outer:
        assert q.current_qconfig() is outer
        with q.qconfig(global_scale=2.0):
            assert q.current_qconfig().global_scale == 2.0
            assert q.current_qconfig().nbit_input == 8  # a new config starts from defaults
        assert q.current_qconfig().nbit_input == 4
        assert q.current_qconfig().skip_conv_layers is None
    assert q.current_qconfig().nbit_input == 8


def test_config_is_per_thread():
    seen = []
    with relay.quantize.qconfig(global_scale=3.0):
        t = threading.Thread(target=lambda: seen.append(relay.quantize.current_qconfig()))
        t.start()
        t.join()
    assert seen[0].global_scale == 8.0


def test_unknown_keys_are_ignored_as_in_tvm():
    cfg = relay.quantize.qconfig(paritition_conversions="disabled", nbit_weight=4)
    assert cfg.nbit_weight == 4


def test_fields_are_immutable():
    cfg = relay.quantize.qconfig()
    with pytest.raises(AttributeError):
        cfg.nbit_input = 4


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("calibrate_mode", "minmax", "calibrate_mode must be one of"),
        ("weight_scale", "mean", "weight_scale must be one of"),
        ("rounding", "DOWN", "rounding must be one of"),
        ("partition_conversions", "yes", "partition_conversions must be one of"),
        ("dtype_input", "float32", "dtype_input must be an integer dtype"),
        ("nbit_input", 0, "nbit_input must be an int"),
        ("global_scale", -1.0, "global_scale must be > 0"),
    ],
)
def test_bad_values_are_typed_errors(key, value, words):
    with pytest.raises(ArgumentError, match=words):
        relay.quantize.qconfig(**{key: value})


def test_guard_and_kinds():
    q = relay.quantize
    x = relay.var("x", shape=(2,))
    cfg = q.qconfig(debug_enabled_ops=["nn.relu"])
    assert cfg.guard(relay.nn.relu(x)) and not cfg.guard(relay.abs(x))
    assert cfg.get_nbit_by_kind(q.QAnnotateKind.ACTIVATION) == 32
    assert cfg.get_dtype_by_kind(q.QAnnotateKind.WEIGHT) == "int8"
    assert q.kind2str(q.QAnnotateKind.INPUT) == "input"
    with pytest.raises(ArgumentError, match="unknown QAnnotateKind"):
        q.kind2str(7)
