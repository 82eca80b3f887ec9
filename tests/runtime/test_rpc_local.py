"""tvm.rpc.LocalSession: a remote-style script run on this machine."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay, rpc
from relaykit.contrib import graph_executor
from relaykit.errors import UnsupportedFeatureError
from relaykit.transform import PassContext


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_upload_load_and_run_an_exported_model(tmp_path):
    x = relay.var("x", shape=(2, 3))
    w = np.arange(12, dtype="float32").reshape(4, 3) / 10
    fn = relay.Function([x], relay.nn.relu(relay.nn.dense(x, relay.const(w))))
    with PassContext(opt_level=3):
        lib = relay.build(relay.IRModule.from_expr(fn), target="llvm")
    path = tmp_path / "net.tar"
    lib.export_library(str(path))  # the tutorials name it net.tar

    remote = rpc.LocalSession()
    remote.upload(str(path))
    assert remote.listdir() == ["net.tar"]
    module = graph_executor.GraphModule(remote.load_module("net.tar")["default"](remote.cpu(0)))
    data = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, -4.0]], dtype="float32")
    module.set_input("x", data)
    module.run()
    expected = np.maximum(data.astype("float64") @ w.T.astype("float64"), 0)
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-5)
    remote.remove("net.tar")
    assert remote.listdir() == []


def test_session_files_stay_in_its_workspace_and_remote_sessions_are_refused():
    remote = rpc.LocalSession()
    remote.upload(b"abc", target="sub/data.bin")
    assert remote.download("sub/data.bin") == b"abc"
    assert not remote.cuda(0).exist
    with pytest.raises(UnsupportedFeatureError, match="outside the session's workspace"):
        remote.download("../../etc/passwd")
    with pytest.raises(UnsupportedFeatureError, match="need a target file name"):
        remote.upload(b"abc")
    with pytest.raises(UnsupportedFeatureError, match="tvm.rpc.connect"):
        rpc.connect("127.0.0.1", 9090)
