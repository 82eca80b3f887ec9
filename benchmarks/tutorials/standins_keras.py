"""Stand-ins for what the Keras tutorials download (``from_keras``,
``deploy_model_on_android``): Keras's pretrained ImageNet weights files.

Each is written as the released file is, a Keras HDF5 weights file (one group per
layer, read by ``model.load_weights(path)``), for the same architecture, holding the
random weights Keras initialises it with (seeded). The images and label files the
tutorials fetch are the shared ones of ``standins.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["FILES"]


def _save_h5_weights(model: Any, path: str) -> None:
    import h5py
    from keras.src.legacy.saving import legacy_h5_format

    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)


def _weights_of(build: Callable[[Any], Any]) -> Callable[[str], None]:
    def make(path: str) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras

        keras.utils.set_random_seed(0)
        _save_h5_weights(build(keras), path)
        keras.backend.clear_session()

    return make


def _resnet50(keras: Any) -> Any:
    return keras.applications.ResNet50(
        include_top=True, weights=None, input_shape=(224, 224, 3), classes=1000
    )


def _mobilenet_v2_half(keras: Any) -> Any:
    return keras.applications.MobileNetV2(
        alpha=0.5, include_top=True, weights=None, input_shape=(224, 224, 3), classes=1000
    )


#: (module, name) under the test-data cache -> writer of the file
FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("keras", "resnet50_keras_new.h5"): _weights_of(_resnet50),
    ("keras", "resnet50_keras_old.h5"): _weights_of(_resnet50),
    ("keras", "mobilenet_v2_weights.h5"): _weights_of(_mobilenet_v2_half),
}
