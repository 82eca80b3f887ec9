"""relay.backend.Executor / Runtime: defaults, typed options, TVM's error wording."""

from __future__ import annotations

import pytest

from relaykit.errors import ArgumentError
from relaykit.relay.backend import Executor, Runtime


def test_defaults_are_filled_and_given_options_checked():
    aot = Executor("aot", {"interface-api": "c", "workspace-byte-alignment": 8})
    assert aot["interface-api"] == "c" and aot["workspace-byte-alignment"] == 8
    assert aot["link-params"] is False and aot["constant-byte-alignment"] == 16
    assert "interface-api" in aot and "woof" not in aot
    assert str(aot) == "aot" and Runtime("crt", {"system-lib": True})["system-lib"] is True


def test_errors_name_the_kind_the_option_and_the_types():
    with pytest.raises(ArgumentError, match='Executor "woof" is not defined.*aot, graph'):
        Executor("woof")
    with pytest.raises(ArgumentError, match='Attribute "bark" is not available on this Runtime'):
        Runtime("cpp", {"bark": 1})
    with pytest.raises(
        ArgumentError, match='should have type "runtime.BoxInt" but instead found "runtime.BoxBool"'
    ):
        Executor("aot", {"workspace-byte-alignment": True})


def test_registered_kinds_and_option_types():
    assert Executor.list_registered() == ["aot", "graph"]
    assert Runtime.list_registered_options(Runtime("crt")) == {"system-lib": "runtime.BoxBool"}
    opts = Executor.list_registered_options("aot")
    assert opts["interface-api"] == "runtime.String" and opts["link-params"] == "runtime.BoxBool"
