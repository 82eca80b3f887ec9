"""A model with unsupported ops fails with one typed error listing every one of them
(count and first location); missing torch names the extra; bad arguments say what to pass."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from relaykit.errors import FrontendError, MissingDependencyError, UnsupportedOpError  # noqa: E402
from relaykit.frontend import from_exported_program, from_pytorch  # noqa: E402


class TwoOddOps(torch.nn.Module):
    def forward(self, x):
        a = torch.lgamma(x.abs() + 1)  # line of the first lgamma
        b = torch.lgamma(a) + torch.digamma(x.abs() + 1)
        return torch.relu(a + b)


def test_from_pytorch_lists_every_unsupported_op_at_once():
    x = torch.rand(2, 3)
    traced = torch.jit.trace(TwoOddOps(), (x,))
    with pytest.raises(UnsupportedOpError) as info:
        from_pytorch(traced, [("x", (2, 3))])
    err = info.value
    assert set(err.ops) == {"aten::lgamma", "aten::digamma"}
    assert err.ops["aten::lgamma"][0] == 2 and err.ops["aten::digamma"][0] == 1
    line = TwoOddOps.forward.__code__.co_firstlineno + 1
    assert f"test_errors.py({line}): forward" in err.ops["aten::lgamma"][1]
    assert "aten::lgamma: 2 nodes" in str(err) and "aten::digamma: 1 node " in str(err)
    assert isinstance(err, FrontendError)


def test_custom_convert_map_supplies_missing_ops():
    from relaykit import relay

    def lgamma(inputs, input_types):  # TVM's signature: converted inputs and their dtypes
        assert input_types == ["float32"]
        return relay.log(inputs[0])  # not lgamma: what matters is that it is used

    def digamma(inputs, input_types):
        return relay.negative(inputs[0])

    x = torch.rand(2, 3)
    traced = torch.jit.trace(TwoOddOps(), (x,))
    mod, _ = from_pytorch(
        traced, [("x", (2, 3))], {"aten::lgamma": lgamma, "aten::digamma": digamma}
    )
    text = mod.astext()
    assert text.count("log(") == 2 and "negative(" in text


def test_from_exported_program_lists_every_unsupported_op_at_once():
    ep = torch.export.export(TwoOddOps(), (torch.rand(2, 3),))
    with pytest.raises(UnsupportedOpError) as info:
        from_exported_program(ep)
    assert set(info.value.ops) == {"aten::lgamma", "aten::digamma"}
    assert info.value.ops["aten::lgamma"][0] == 2
    assert "test_errors.py:" in info.value.ops["aten::lgamma"][1]


def test_wrong_arguments_say_what_to_pass():
    with pytest.raises(FrontendError, match="torch.jit.trace"):
        from_pytorch(torch.nn.ReLU(), [("x", (2,))])
    traced = torch.jit.trace(torch.nn.ReLU(), (torch.rand(2),))
    with pytest.raises(FrontendError, match="1 inputs but input_infos describes 2"):
        from_pytorch(traced, [("x", (2,)), ("y", (2,))])
    with pytest.raises(FrontendError, match="ExportedProgram"):
        from_exported_program(traced)


def test_training_mode_batch_norm_is_refused():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).train()
    traced = torch.jit.trace(model, (torch.rand(2, 3, 8, 8),))
    with pytest.raises(FrontendError, match=r"model.eval\(\)"):
        from_pytorch(traced, [("x", (2, 3, 8, 8))])


def test_missing_torch_names_the_extra():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import relaykit\n"
        "from relaykit.frontend import from_pytorch\n"
        "from relaykit.errors import MissingDependencyError\n"
        "try:\n"
        "    from_pytorch(object(), [])\n"
        "except MissingDependencyError as e:\n"
        "    print('ERR', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'relaykit[torch]'" in proc.stdout
    assert issubclass(MissingDependencyError, ImportError)


def test_import_relaykit_does_not_import_torch():
    code = "import sys, relaykit, relaykit.frontend; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


def test_a_converter_that_fails_gives_a_frontend_error_naming_the_node() -> None:
    def broken(inputs, input_types):
        raise TypeError("boom")

    script = torch.jit.trace(torch.nn.ReLU(), torch.randn(2))
    with pytest.raises(FrontendError, match=r"relu.*TypeError: boom") as info:
        from_pytorch(script, [("x", (2,))], custom_convert_map={"aten::relu": broken})
    assert isinstance(info.value.__cause__, TypeError)
