"""vision.non_max_suppression and vision.all_class_non_max_suppression against
hand-worked cases (IoUs computed by hand in the comments)."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule


def _eval(outs, params, *arrays):
    body = outs.astuple() if hasattr(outs, "astuple") else outs
    mod = IRModule.from_expr(relay.Function(params, body))
    return relay.create_executor("debug", mod=mod).evaluate()(*arrays)


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


def test_nms_suppresses_same_class_overlaps_best_first():
    d, v, i = _vars()
    valid, order = np.array([4], "int32"), np.array([[10, 11, 12, 13, 14]], "int32")
    idx, count = _eval(
        relay.vision.non_max_suppression(d, v, i, iou_threshold=0.5), [d, v, i], DATA, valid, order
    )
    # B (0.9) keeps; C is another class; D is apart; A overlaps B (0.82) and goes
    assert idx.numpy().tolist() == [[11, 12, 13, -1, -1]] and count.numpy().tolist() == [[3]]
    rows = _eval(
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
    top = _eval(
        relay.vision.non_max_suppression(d, v, i, max_output_size=1, iou_threshold=0.5),
        [d, v, i],
        DATA,
        valid,
        order,
    )
    assert top[0].numpy().tolist() == [[11, -1, -1, -1, -1]]


def test_all_class_nms_selects_per_batch_and_class():
    boxes = np.array([[[0, 0, 10, 10], [0, 1, 10, 11], [20, 20, 30, 30]]], "float32")
    scores = np.array([[[0.6, 0.9, 0.7], [0.2, 0.1, 0.05]]], "float32")
    b = relay.var("b", shape=boxes.shape)
    s = relay.var("s", shape=scores.shape)
    sel, num = _eval(
        relay.vision.all_class_non_max_suppression(b, s, 2, 0.5, 0.08), [b, s], boxes, scores
    )
    n = int(num.numpy()[0])
    # class 0: box 1 (0.9), box 2 (0.7); box 0 overlaps box 1 (0.82). class 1: box 0, then
    # box 1 is suppressed by it and box 2 (0.05) is under the threshold
    assert sel.numpy()[:n].tolist() == [[0, 0, 1], [0, 0, 2], [0, 1, 0]]
    assert sel.numpy().dtype == np.int64 and num.numpy().dtype == np.int64


def test_multibox_transform_loc_decodes_like_a_loop():
    rng = np.random.default_rng(3)
    cls_prob = rng.uniform(size=(2, 3, 4)).astype("float32")  # (batch, classes, anchors)
    cls_prob[0, 1:, 1] = 0.005  # below the threshold: background, dropped
    loc = rng.uniform(-0.5, 0.5, size=(2, 16)).astype("float32")
    anchors = np.sort(rng.uniform(size=(1, 4, 2, 2)), axis=2).transpose(0, 1, 3, 2)
    anchors = anchors.reshape(1, 4, 4).astype("float32")  # x1 < x2, y1 < y2
    c = relay.var("c", shape=cls_prob.shape)
    lp = relay.var("l", shape=loc.shape)
    an = relay.var("a", shape=anchors.shape)
    out, valid = _eval(
        relay.vision.multibox_transform_loc(c, lp, an), [c, lp, an], cls_prob, loc, anchors
    )
    out, valid = out.numpy(), valid.numpy()
    for b in range(2):
        rows = []
        for i in range(4):
            cls = 1 + int(np.argmax(cls_prob[b, 1:, i]))
            score = float(cls_prob[b, cls, i])
            if score < 0.01:
                continue
            x1, y1, x2, y2 = (float(v) for v in anchors[0, i])
            px, py, pw, ph = (float(v) for v in loc[b, 4 * i : 4 * i + 4])
            cx, cy = px * 0.1 * (x2 - x1) + (x1 + x2) / 2, py * 0.1 * (y2 - y1) + (y1 + y2) / 2
            hw, hh = np.exp(pw * 0.2) * (x2 - x1) / 2, np.exp(ph * 0.2) * (y2 - y1) / 2
            box = [min(max(v, 0.0), 1.0) for v in (cx - hw, cy - hh, cx + hw, cy + hh)]
            rows.append([cls - 1, score, *box])
        assert valid[b] == len(rows)
        np.testing.assert_allclose(out[b, : len(rows)], rows, rtol=1e-5, atol=1e-6)
        assert (out[b, len(rows) :] == -1).all()
