"""vision.multibox_transform_loc against SSD's box decoding written as a loop."""

from __future__ import annotations

import numpy as np

from relaykit import relay


def test_multibox_transform_loc_decodes_like_a_loop(evaluate):
    rng = np.random.default_rng(3)
    cls_prob = rng.uniform(size=(2, 3, 4)).astype("float32")  # (batch, classes, anchors)
    cls_prob[0, 1:, 1] = 0.005  # below the threshold: background, dropped
    loc = rng.uniform(-0.5, 0.5, size=(2, 16)).astype("float32")
    anchors = np.sort(rng.uniform(size=(1, 4, 2, 2)), axis=2).transpose(0, 1, 3, 2)
    anchors = anchors.reshape(1, 4, 4).astype("float32")  # x1 < x2, y1 < y2
    c = relay.var("c", shape=cls_prob.shape)
    lp = relay.var("l", shape=loc.shape)
    an = relay.var("a", shape=anchors.shape)
    out, valid = evaluate(
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
