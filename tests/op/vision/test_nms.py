"""vision.non_max_suppression and vision.all_class_non_max_suppression against
hand-worked cases (IoUs computed by hand in the comments)."""

from __future__ import annotations

import numpy as np

from relaykit import relay

DATA = np.array(
    [
        [
            [0, 0.6, 0, 0, 10, 10],  # A
            [0, 0.9, 1, 0, 11, 10],  # B: IoU(A, B) = 90 / 110 = 0.82
            [1, 0.8, 1, 0, 11, 10],  # C: same box as B, another class
            [0, 0.7, 20, 20, 30, 30],  # D: apart
            [0, 0.95, 50, 50, 60, 60],  # E: beyond valid_count
        ]
    ],
    "float32",
)


def _vars():
    return (
        relay.var("d", shape=DATA.shape),
        relay.var("v", shape=(1,), dtype="int32"),
        relay.var("i", shape=(1, 5), dtype="int32"),
    )


def test_nms_suppresses_same_class_overlaps_best_first(evaluate):
    d, v, i = _vars()
    valid, order = np.array([4], "int32"), np.array([[10, 11, 12, 13, 14]], "int32")
    idx, count = evaluate(
        relay.vision.non_max_suppression(d, v, i, iou_threshold=0.5), [d, v, i], DATA, valid, order
    )
    # B (0.9) keeps; C is another class; D is apart; A overlaps B (0.82) and goes
    assert idx.numpy().tolist() == [[11, 12, 13, -1, -1]] and count.numpy().tolist() == [[3]]
    rows = evaluate(
        relay.vision.non_max_suppression(
            d, v, i, iou_threshold=0.5, force_suppress=True, return_indices=False
        ),
        [d, v, i],
        DATA,
        valid,
        order,
    ).numpy()
    # force_suppress ignores classes: C goes with A
    np.testing.assert_array_equal(rows[0, :2], DATA[0, [1, 3]])
    assert (rows[0, 2:] == -1).all()
    top = evaluate(
        relay.vision.non_max_suppression(d, v, i, max_output_size=1, iou_threshold=0.5),
        [d, v, i],
        DATA,
        valid,
        order,
    )
    assert top[0].numpy().tolist() == [[11, -1, -1, -1, -1]]


def test_all_class_nms_selects_per_batch_and_class(evaluate):
    boxes = np.array([[[0, 0, 10, 10], [0, 1, 10, 11], [20, 20, 30, 30]]], "float32")
    scores = np.array([[[0.6, 0.9, 0.7], [0.2, 0.1, 0.05]]], "float32")
    b = relay.var("b", shape=boxes.shape)
    s = relay.var("s", shape=scores.shape)
    sel, num = evaluate(
        relay.vision.all_class_non_max_suppression(b, s, 2, 0.5, 0.08), [b, s], boxes, scores
    )
    n = int(num.numpy()[0])
    # class 0: box 1 (0.9), box 2 (0.7); box 0 overlaps box 1 (0.82). class 1: box 0, then
    # box 1 is suppressed by it and box 2 (0.05) is under the threshold
    assert sel.numpy()[:n].tolist() == [[0, 0, 1], [0, 0, 2], [0, 1, 0]]
    assert sel.numpy().dtype == np.int64 and num.numpy().dtype == np.int64
