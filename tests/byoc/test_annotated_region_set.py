"""relay.analysis.AnnotatedRegionSet: regions, their args, nodes and rets."""

from __future__ import annotations

from relaykit import relay
from relaykit.op.annotation import compiler_begin, compiler_end


def test_regions_of_a_diamond_with_a_merge():
    x = relay.var("x", shape=(4,))
    b1, b2 = compiler_begin(x, "lib"), compiler_begin(x, "lib")
    a, n = relay.abs(b1), relay.negative(b2)
    s = relay.add(a, n)  # joins the two regions opened by b1 and b2
    e = compiler_end(s, "lib")
    bd = compiler_begin(e, "default")
    t = relay.tanh(bd)
    ed = compiler_end(t, "default")
    regions = relay.analysis.AnnotatedRegionSet(
        relay.Function([x], ed),
        relay.op.get("annotation.compiler_begin"),
        relay.op.get("annotation.compiler_end"),
    )
    assert len(regions) == 2
    lib = regions.get_region(s)
    assert lib.target == "lib" and set(lib.args) == {b1, b2} and lib.rets == [e]
    assert set(lib.nodes) == {b1, b2, a, n, s, e}
    host = regions.get_region(t)
    assert host.target == "default" and host.args == [bd] and host.rets == [ed]
    assert regions.get_region(x) is None
    assert sorted(r.target for r in regions) == ["default", "lib"]
