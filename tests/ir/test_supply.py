"""tvm.ir.supply: fresh names and global variables."""

from __future__ import annotations

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.ir.supply import GlobalVarSupply, NameSupply


def test_fresh_names_skip_every_taken_one():
    names = NameSupply("m")
    assert names.reserve_name("f") == "m_f"
    assert [names.fresh_name("f") for _ in range(3)] == ["m_f_1", "m_f_2", "m_f_3"]
    names.reserve_name("g_1", add_prefix=False)
    assert names.fresh_name("g", add_prefix=False) == "g"
    assert names.fresh_name("g", add_prefix=False) == "g_2"  # g_1 is taken
    assert names.contains_name("f_2") and not names.contains_name("f_2", add_prefix=False)


def test_global_var_supply_from_a_module():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule({"main": relay.Function([x], x)})
    supply = GlobalVarSupply(mod)
    assert supply.unique_global_for("main", add_prefix=False) is mod.get_global_var("main")
    fresh = supply.fresh_global("main", add_prefix=False)
    assert fresh.name_hint == "main_1" and fresh is not mod.get_global_var("main")
    with pytest.raises(ArgumentError, match="already reserved"):
        supply.reserve_global(relay.GlobalVar("main"), allow_conflict=False)
    with pytest.raises(ArgumentError, match="takes a NameSupply"):
        GlobalVarSupply(3)
