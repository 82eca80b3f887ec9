"""PassContext.list_configs, identity semantics and same_as, as TVM scripts use them."""

import pytest

from relaykit import relay
from relaykit.errors import IRError
from relaykit.ir import IRModule
from relaykit.transform.pass_infra import (
    PassContext,
    PrintIR,
    Sequential,
    module_pass,
    register_pass_config,
)


def test_list_configs_names_registered_options_with_tvm_type_keys():
    configs = PassContext.list_configs()
    assert configs["relay.FoldConstant.max_bytes"] == {"type": "IntImm"}
    assert configs["relay.backend.use_auto_scheduler"]["type"] == "IntImm"  # a bool
    assert configs["relay.ext.dnnl.options"]["type"] == "Map"
    register_pass_config("test.pass_infra_compat.name", str)
    assert PassContext.list_configs()["test.pass_infra_compat.name"] == {"type": "runtime.String"}


def test_register_pass_config_rejects_bad_types_and_conflicts():
    with pytest.raises(IRError, match="value type"):
        register_pass_config("test.pass_infra_compat.bad", object)
    register_pass_config("test.pass_infra_compat.flag", bool)
    register_pass_config("test.pass_infra_compat.flag", bool)  # same type again is fine
    with pytest.raises(IRError, match="already registered"):
        register_pass_config("test.pass_infra_compat.flag", str)


def test_contexts_compare_by_identity():
    a, b = PassContext(), PassContext()
    assert a != b
    assert len({a, b}) == 2


def test_same_as_is_identity():
    x = relay.var("x", shape=(2,))
    m1 = IRModule.from_expr(relay.Function([x], x))
    m2 = IRModule.from_expr(relay.Function([x], x))

    @module_pass(opt_level=1)
    def keep(mod, ctx):
        return mod

    assert keep(m1).same_as(m1) and not m1.same_as(m2)
    assert x.same_as(x) and not x.same_as(relay.var("x", shape=(2,)))


def test_print_ir_prints_to_stderr_and_keeps_the_module(capfd):
    x = relay.var("x", shape=(1, 2))
    mod = IRModule.from_expr(relay.Function([x], relay.multiply(x, x)))
    with PassContext(opt_level=0):
        out = Sequential([PrintIR("after fold")])(mod)
    assert out is mod
    err = capfd.readouterr().err
    assert err.startswith("PrintIR(after fold):\n")
    assert "multiply(%x, %x)" in err
