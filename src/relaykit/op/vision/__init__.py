"""Vision operators (TVM's ``relay.vision``), in TVM's files: non-maximum suppression
(:mod:`.nms`), region-of-interest pooling (:mod:`.rcnn`), SSD's anchors and box decoding
(:mod:`.multibox`) and YOLO (:mod:`.yolo`). ``dyn.*`` vision operators are in
:mod:`relaykit.op.dyn.vision`.

>>> from relaykit import relay
>>> relay.vision.roi_align is roi_align
True
"""

from .multibox import multibox_prior, multibox_transform_loc
from .nms import all_class_non_max_suppression, get_valid_counts, non_max_suppression
from .rcnn import roi_align, roi_pool
from .yolo import yolo_reorg

__all__ = [
    "all_class_non_max_suppression",
    "get_valid_counts",
    "multibox_prior",
    "multibox_transform_loc",
    "non_max_suppression",
    "roi_align",
    "roi_pool",
    "yolo_reorg",
]
