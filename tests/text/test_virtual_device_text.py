"""Virtual devices in the text format: meta[VirtualDevice][i] on calls, parameters and
functions, the metadata section, TVM's older param_virtual_devices attributes."""

from __future__ import annotations

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ParseError
from relaykit.target import Target, VirtualDevice

CPU = VirtualDevice(tvm.cpu(), Target("llvm").with_host(Target("llvm")))
GPU = VirtualDevice(tvm.cuda(1), Target("cuda"), memory_scope="global")

TEXT = """
#[version = "0.0.5"]
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(2), float32],
          %b: Tensor[(2), float32], virtual_device=meta[VirtualDevice][1]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = device_copy(%0, src_virtual_device=meta[VirtualDevice][0],
                   dst_virtual_device=meta[VirtualDevice][1]);
  add(%1, %b)
}
"""


def _parse(text, meta=None):
    return tvm.relay.parse(text, "from_string", None, meta or {"VirtualDevice": [CPU, GPU]})


def test_virtual_devices_parse_onto_parameters_functions_and_calls():
    fn = _parse(TEXT)["main"]
    assert fn.params[0].virtual_device_ == CPU and fn.virtual_device_ == GPU
    assert not fn.params[1].virtual_device_  # unconstrained
    copy = fn.body.args[0]
    assert copy.attrs.src_virtual_device == CPU and copy.attrs.dst_virtual_device == GPU
    assert copy.args[0].attrs.virtual_device == CPU


def test_virtual_devices_round_trip_through_the_metadata_section():
    mod = _parse(TEXT)
    text = mod.astext(show_meta_data=True)
    assert '"VirtualDevice": [' in text and '"memory_scope": "global"' in text
    back = tvm.parser.fromtext(text)
    tvm.ir.assert_structural_equal(back, mod)
    assert back["main"].params[0].virtual_device_.target.host == Target("llvm")
    assert back["main"].virtual_device_ == GPU


def test_a_parameter_virtual_device_takes_part_in_structural_equality():
    a = _parse(TEXT)
    b = _parse(TEXT.replace("%a {virtual_device=meta[VirtualDevice][0]}", "%a"))
    assert not tvm.ir.structural_equal(a, b)


def test_older_param_and_result_virtual_device_attributes_are_read():
    fn = _parse(
        """
        def @main(%a: Tensor[(2), float32], param_virtual_devices=[meta[VirtualDevice][0]],
                  result_virtual_device=meta[VirtualDevice][1]) {
          negative(%a)
        }"""
    )["main"]
    assert fn.params[0].virtual_device_ == CPU and fn.virtual_device_ == GPU
    assert "param_virtual_devices" not in fn.attrs


def test_a_missing_virtual_device_entry_points_at_the_reference():
    with pytest.raises(ParseError, match=r"3:.*meta\[VirtualDevice\]\[5\] does not exist"):
        _parse(
            '#[version = "0.0.5"]\ndef @main(%a: Tensor[(2), float32]) {\n'
            "  on_device(%a, virtual_device=meta[VirtualDevice][5])\n}"
        )
    with pytest.raises(ParseError, match="must be a tvm.target.VirtualDevice"):
        _parse(TEXT, {"VirtualDevice": ["cpu"]})
    with pytest.raises(ParseError, match="relay.Constant and VirtualDevice"):
        _parse(TEXT, {"Other": []})


def test_a_let_variable_may_carry_a_virtual_device():
    fn = _parse(
        """
        def @main(%a: Tensor[(2), float32]) {
          let %x {virtual_device=meta[VirtualDevice][0]}: Tensor[(2), float32] = negative(%a);
          %x
        }"""
    )["main"]
    assert fn.body.var.virtual_device_ == CPU
    assert "%x {virtual_device=meta[VirtualDevice][0]}" in fn.astext(show_meta_data=False)
    relay.transform.InferType()(tvm.IRModule.from_expr(fn))
