"""``tvm.relay.transform.infer_layout_utils``: the answer type of a layout rule."""

from relaykit.transform.layout import InferCorrectLayoutOutput

__all__ = ["InferCorrectLayoutOutput"]
