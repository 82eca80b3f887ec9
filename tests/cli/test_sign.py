"""``relaykit keygen``, ``relaykit sign`` and ``relaykit verify``."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.cli import main
from relaykit.errors import ArtifactSignatureError
from relaykit.runtime.artifact import load_module


@pytest.fixture
def model(tmp_path):
    x = relay.var("x", shape=(2, 3))
    w = relay.const(np.ones((4, 3), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.dense(x, w))))
    path = tmp_path / "m.rkmod"
    relay.build(ccompiler.partition_for_ccompiler(mod), target="llvm").export_library(str(path))
    return path


def test_keygen_sign_verify_and_load(model, tmp_path, capsys):
    priv, pub = tmp_path / "k.pem", tmp_path / "k.pub"
    assert main(["keygen", str(priv), str(pub)]) == 0
    assert main(["verify", str(model), "--trusted-key", str(pub)]) == 1
    assert "is not signed" in capsys.readouterr().err
    assert main(["sign", str(model), "--key", str(priv)]) == 0
    assert main(["verify", str(model), "--trusted-key", str(pub)]) == 0
    out = capsys.readouterr().out
    assert "intact (sha256:" in out and "signed by trusted key" in out
    assert load_module(model, trusted_keys=[pub]) is not None
    other, other_pub = tmp_path / "o.pem", tmp_path / "o.pub"
    assert main(["keygen", str(other), str(other_pub)]) == 0
    with pytest.raises(ArtifactSignatureError, match="none of them a trusted key"):
        load_module(model, trusted_keys=[other_pub])


def test_keygen_never_overwrites_and_sign_checks_its_inputs(model, tmp_path, capsys):
    priv, pub = tmp_path / "k.pem", tmp_path / "k.pub"
    priv.write_text("precious")
    assert main(["keygen", str(priv), str(pub)]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err and priv.read_text() == "precious"
    assert main(["sign", str(tmp_path), "--key", str(priv)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["sign", str(model), "--key", str(priv)]) == 1
    assert "not an unencrypted PEM private key" in capsys.readouterr().err
