"""Read a TensorFlow model from disk as a frozen ``GraphDef`` (TVM's ``TFParser``): a
``.pb`` file (binary, or text for ``.pbtxt``), or a SavedModel directory, whose
serving signature is frozen with ``convert_variables_to_constants_v2``. Needs
TensorFlow (the ``tensorflow`` extra) for SavedModels.

>>> TFParser("model.pb").model_dir
'model.pb'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from relaykit.errors import FrontendError, MissingDependencyError

__all__ = ["TFParser"]


def _tensorflow() -> Any:
    try:
        import tensorflow as tf
    except ImportError:
        raise MissingDependencyError(
            "reading TensorFlow models needs tensorflow: pip install 'relaykit[tensorflow]' "
            "(tensorflow-cpu==2.21.0)"
        ) from None
    return tf


class TFParser:
    """``TFParser(model_dir, outputs=None).parse()`` -> a frozen ``GraphDef``.

    ``outputs`` (node names) picks which of a SavedModel signature's outputs are
    kept (default: all of them)."""

    def __init__(self, model_dir: str, outputs: Sequence[str] | None = None) -> None:
        self.model_dir = str(model_dir)
        self.outputs = list(outputs or [])

    def parse(self) -> Any:
        """The model's frozen ``GraphDef``."""
        path = self.model_dir
        if os.path.isdir(path):
            return self._saved_model(path)
        if not os.path.isfile(path):
            raise FrontendError(f"{path}: no such TensorFlow model (a .pb file or a SavedModel)")
        tf = _tensorflow()
        graph_def = tf.compat.v1.GraphDef()
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".pbtxt"):
            from google.protobuf import text_format

            text_format.Merge(data.decode("utf-8"), graph_def)
        else:
            graph_def.ParseFromString(data)
        return graph_def

    def _saved_model(self, path: str) -> Any:
        tf = _tensorflow()
        from tensorflow.python.framework.convert_to_constants import (
            convert_variables_to_constants_v2,
        )

        loaded = tf.saved_model.load(path)
        signatures = dict(getattr(loaded, "signatures", {}) or {})
        if not signatures:
            raise FrontendError(f"{path}: the SavedModel has no signature to import")
        fn = signatures.get("serving_default") or next(iter(signatures.values()))
        graph_def = convert_variables_to_constants_v2(fn).graph.as_graph_def()
        if self.outputs:
            graph_def = tf.compat.v1.graph_util.extract_sub_graph(graph_def, self.outputs)
        return graph_def
