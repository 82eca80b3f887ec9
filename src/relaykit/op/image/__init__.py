"""Image operators (TVM's ``relay.image``), one file per family: resizing
(:mod:`.resize`), sampling grids (:mod:`.grid_sample`) and morphology
(:mod:`.dilation`). ``dyn.image.*`` are in :mod:`relaykit.op.dyn.image`.

>>> from relaykit import relay
>>> relay.image.resize2d is resize2d
True
"""

from .dilation import dilation2d
from .grid_sample import affine_grid, grid_sample
from .resize import axis_weights, crop_and_resize, resize, resize1d, resize2d, resize3d

__all__ = [
    "resize", "resize1d", "resize2d", "resize3d", "axis_weights", "grid_sample",
    "affine_grid", "crop_and_resize", "dilation2d",
]  # fmt: skip
