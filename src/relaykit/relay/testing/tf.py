"""``tvm.relay.testing.tf``: the TensorFlow helpers of TVM's tutorials and tests.

``ProcessGraphDefParam`` (a GraphDef, type-checked), ``AddShapesToGraphDef`` (the
session's graph frozen with each node's output shapes), ``NodeLookup`` (ImageNet class
ids to names from the label-map and synset files), ``get_workload`` (a frozen graph
read from a file), ``convert_to_list`` and ``vmobj_to_list``. TensorFlow is imported
when a helper needs it. TVM's PTB language-model helpers (``PTBSmallConfig``,
``get_workload_ptb``, ``do_tf_sample``, ...) download a model and are not provided.

>>> convert_to_list(3), convert_to_list([1, 2])
([3], [1, 2])
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, MissingDependencyError
from relaykit.relay._facade import module_getattr, unsupported

_UNSUPPORTED: list[str] = [
    "PTBSmallConfig", "do_tf_sample", "get_config", "get_workload_official", "get_workload_ptb",
    "pick_from_weight",
]  # fmt: skip

__all__ = [
    "AddShapesToGraphDef",
    "NodeLookup",
    "ProcessGraphDefParam",
    "convert_to_list",
    "get_workload",
    "vmobj_to_list",
    *_UNSUPPORTED,
]
_WHY = (
    "TVM's PTB language-model and official-model helpers download pretrained models; build "
    "or load the model with TensorFlow, freeze it and use relay.frontend.from_tensorflow"
)
globals().update(unsupported(__name__, _UNSUPPORTED, _WHY))
__getattr__ = module_getattr(__name__, _WHY)


def _tf() -> Any:
    try:
        import tensorflow as tf
    except ImportError:
        raise MissingDependencyError(
            "relay.testing.tf needs tensorflow: pip install 'relaykit[tensorflow]' "
            "(tensorflow-cpu==2.21.0)"
        ) from None
    return tf


def ProcessGraphDefParam(graph_def: Any) -> Any:
    """``graph_def`` as a ``GraphDef`` (a duck-typed message is copied into one)."""
    from tensorflow.core.framework import graph_pb2

    if isinstance(graph_def, graph_pb2.GraphDef):
        return graph_def
    out = graph_pb2.GraphDef()
    try:
        out.MergeFrom(graph_def)
    except TypeError:
        raise FrontendError(
            f"graph_def must be a GraphDef proto, got a {type(graph_def).__name__}"
        ) from None
    return out


def convert_to_list(x: Any) -> list[Any]:
    """``x`` as a list (a non-list in a list of one)."""
    return x if isinstance(x, list) else [x]


def vmobj_to_list(o: Any) -> list[np.ndarray]:
    """A VM or executor result (an array, or nested tuples of them) as a flat list of
    NumPy arrays."""
    if hasattr(o, "numpy"):
        return [o.numpy()]
    if isinstance(o, np.ndarray):
        return [o]
    if isinstance(o, (list, tuple)) or hasattr(o, "__iter__"):
        out: list[np.ndarray] = []
        for item in o:
            out.extend(vmobj_to_list(item))
        return out
    raise FrontendError(f"cannot turn a {type(o).__name__} into a list of arrays")


def AddShapesToGraphDef(session: Any, out_node: Any) -> Any:
    """The session's graph frozen at ``out_node`` (a name or a list), each node carrying
    its output shapes (``_output_shapes``)."""
    tf = _tf()
    return tf.compat.v1.graph_util.convert_variables_to_constants(
        session, session.graph.as_graph_def(add_shapes=True), convert_to_list(out_node)
    )


class NodeLookup:
    """ImageNet class ids to human-readable names, from TensorFlow's label map
    (``imagenet_2012_challenge_label_map_proto.pbtxt``: ``target_class`` ->
    ``target_class_string``) and the synset file
    (``imagenet_synset_to_human_label_map.txt``: ``uid<TAB>name`` lines)."""

    def __init__(
        self, label_lookup_path: str | None = None, uid_lookup_path: str | None = None
    ) -> None:
        self.node_lookup = self.load(label_lookup_path, uid_lookup_path)

    def load(self, label_lookup_path: str | None, uid_lookup_path: str | None) -> dict[int, str]:
        """Class id -> name."""
        for what, path in (
            ("uid_lookup_path", uid_lookup_path),
            ("label_lookup_path", label_lookup_path),
        ):
            if not path:
                raise FrontendError(f"NodeLookup needs {what}")
        uid_to_human: dict[str, str] = {}
        with open(uid_lookup_path, encoding="utf-8") as f:  # type: ignore[arg-type]
            for line in f:
                uid, sep, name = line.rstrip("\n").partition("\t")
                if not sep:
                    uid, _, name = line.strip().partition(" ")
                if uid:
                    uid_to_human[uid.strip()] = name.strip()
        id_to_uid: dict[int, str] = {}
        target: int | None = None
        with open(label_lookup_path, encoding="utf-8") as f:  # type: ignore[arg-type]
            for line in f:
                m = re.match(r"\s*target_class:\s*(\d+)", line)
                if m:
                    target = int(m.group(1))
                    continue
                m = re.match(r'\s*target_class_string:\s*"([^"]*)"', line)
                if m and target is not None:
                    id_to_uid[target] = m.group(1)
        missing = sorted(uid for uid in id_to_uid.values() if uid not in uid_to_human)
        if missing:
            raise FrontendError(
                f"{uid_lookup_path}: no name for {len(missing)} class uids of "
                f"{label_lookup_path} (first: {missing[0]})"
            )
        return {k: uid_to_human[v] for k, v in id_to_uid.items()}

    def id_to_string(self, node_id: int) -> str:
        """The class's name ('' for an id the label map does not hold)."""
        return self.node_lookup.get(int(node_id), "")


def get_workload(
    model_path: str, model_sub_path: str | None = None, inputs_dict: Any = None, output: Any = None
) -> Any:
    """The frozen ``GraphDef`` stored at ``model_path`` (joined with ``model_sub_path``)."""
    import os

    tf = _tf()
    path = os.path.join(model_path, model_sub_path) if model_sub_path else model_path
    if not os.path.exists(path):
        raise FrontendError(f"{path}: no such frozen graph file")
    with tf.io.gfile.GFile(path, "rb") as f:
        graph_def = tf.compat.v1.GraphDef()
        graph_def.ParseFromString(f.read())
    return graph_def
