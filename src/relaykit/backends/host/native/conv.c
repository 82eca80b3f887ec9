/* relaykit native host kernels: depthwise convolution and the bias/residual/clamp epilogue.
 *
 * Both kernels take their operands as one array of addresses and one array of int64
 * sizes (made once, when the executor binds the step), so a call costs one ctypes
 * conversion of three pointers. Each call computes one block (channels, or rows and
 * columns) of its operator; blocks do not overlap, so the host workers run them in
 * parallel.
 */
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

/* Extra floats after the phases and the accumulator: the padded tap loops run to a
 * multiple of 16 outputs and read (and write) up to 15 past their ends. */
#define RK_SLACK 32

static inline int64_t rk_round16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* One row of phase b of a padded input row: dst[q] = xr[q * sw + b - pl] where that is
 * inside [0, W), else 0 (plain loops: the rows are short, libc calls would dominate). */
static inline void rk_phase_row(float *restrict dst, const float *restrict xr, int64_t W,
                                int64_t Q, int64_t sw, int64_t b, int64_t pl) {
    const int64_t first = pl - b; /* q * sw >= first, q * sw < W + first */
    int64_t qlo = first <= 0 ? 0 : (first + sw - 1) / sw;
    int64_t qhi = W + first <= 0 ? 0 : (W + first - 1) / sw + 1;
    qlo = qlo < Q ? qlo : Q;
    qhi = qhi < Q ? qhi : Q;
    qhi = qhi > qlo ? qhi : qlo;
    const float *src = xr - first;
    for (int64_t q = 0; q < qlo; q++) dst[q] = 0.0f;
    if (sw == 1) {
        for (int64_t q = qlo; q < qhi; q++) dst[q] = src[q];
    } else {
        for (int64_t q = qlo; q < qhi; q++) dst[q] = src[q * sw];
    }
    for (int64_t q = qhi; q < Q; q++) dst[q] = 0.0f;
}

/* Fill the sh * sw stride phases of one zero-padded channel: phase (a, b), row r, column q
 * holds the padded input at row r * sh + a, column q * sw + b (R rows of Q columns). */
static void rk_dw_phases(const float *xc, float *planes, int64_t H, int64_t W, int64_t R,
                         int64_t Q, int64_t sh, int64_t sw, int64_t pt, int64_t pl) {
    const int64_t RQ = R * Q;
    for (int64_t a = 0; a < sh; a++) {
        for (int64_t r = 0; r < R; r++) {
            const int64_t iy = r * sh + a - pt;
            float *dst0 = planes + (a * sw) * RQ + r * Q;
            if (iy < 0 || iy >= H) {
                for (int64_t b = 0; b < sw; b++) {
                    float *d = dst0 + b * RQ;
                    for (int64_t q = 0; q < Q; q++) d[q] = 0.0f;
                }
                continue;
            }
            const float *xr = xc + iy * W;
            if (sw == 2 && pl == 1 && 2 * Q >= W + 1 && 2 * Q <= W + 3) {
                /* the common stride-2, pad-1 case: columns -1, 1, 3... and 0, 2, 4... */
                float *restrict d0 = dst0, *restrict d1 = dst0 + RQ;
                const int64_t pairs = (W - 1) / 2; /* q = 1..pairs: both phases inside */
                d0[0] = 0.0f;
                d1[0] = xr[0];
                for (int64_t q = 1; q <= pairs; q++) {
                    d0[q] = xr[2 * q - 1];
                    d1[q] = xr[2 * q];
                }
                for (int64_t q = pairs + 1; q < Q; q++) {
                    const int64_t i0 = 2 * q - 1, i1 = 2 * q;
                    d0[q] = i0 < W ? xr[i0] : 0.0f;
                    d1[q] = i1 < W ? xr[i1] : 0.0f;
                }
            } else {
                for (int64_t b = 0; b < sw; b++) rk_phase_row(dst0 + b * RQ, xr, W, Q, sw, b, pl);
            }
        }
    }
}

/* The common 3x3 depthwise layer: stride 1, dilation 1, one row and column of zero padding
 * on each side, so the output has the input's size. The channel is copied once (one
 * memcpy) between two zero rows, with the input's own row pitch W; the taps of output t
 * are then plane[t - 1 + {0, 1, 2} + W * {0, 1, 2}] and every output is one pass straight
 * into y. The left and right columns, whose outer taps wrapped around to the neighbouring
 * row (instead of the zero padding), are computed again without those taps. */
static void rk_dw3x3s1_channel(const float *xc, float *plane, const float *wo, float b,
                               const float *ro, float *yo, int64_t H, int64_t W, float lo,
                               float hi) {
    float *p = plane + 1; /* p[-1] and p[(H + 2) * W] are read (times a tap), kept 0 */
    p[-1] = 0.0f;
    for (int64_t q = 0; q < W; q++) p[q] = 0.0f;
    {
        float *restrict d = p + W;
        const float *restrict src = xc;
        for (int64_t i = 0; i < H * W; i++) d[i] = src[i];
    }
    for (int64_t q = 0; q <= W; q++) p[(H + 1) * W + q] = 0.0f;
    const float *restrict r0 = p - 1, *restrict r1 = p + W - 1, *restrict r2 = p + 2 * W - 1;
    const float w0 = wo[0], w1 = wo[1], w2 = wo[2], w3 = wo[3], w4 = wo[4];
    const float w5 = wo[5], w6 = wo[6], w7 = wo[7], w8 = wo[8];
    const int64_t T = H * W;
    const float *restrict rr = ro;
    float *restrict y = yo;
    /* two loops, not a test inside one: gcc would turn "if (rr) u += rr[t]" into a masked
     * load from address ~0, which AMD CPUs run through a microcode assist (10x slower) */
#define RK_DW3X3_TAPS                                                                      \
    float u = fmaf(w0, r0[t], b), v = w1 * r0[t + 1];                                      \
    u = fmaf(w2, r0[t + 2], u);                                                            \
    v = fmaf(w3, r1[t], v);                                                                \
    u = fmaf(w4, r1[t + 1], u);                                                            \
    v = fmaf(w5, r1[t + 2], v);                                                            \
    u = fmaf(w6, r2[t], u);                                                                \
    v = fmaf(w7, r2[t + 1], v);                                                            \
    u = fmaf(w8, r2[t + 2], u);                                                            \
    u = u + v;
    if (rr != NULL) {
        for (int64_t t = 0; t < T; t++) {
            RK_DW3X3_TAPS
            u += rr[t];
            u = u < lo ? lo : u;
            y[t] = u > hi ? hi : u;
        }
    } else {
        for (int64_t t = 0; t < T; t++) {
            RK_DW3X3_TAPS
            u = u < lo ? lo : u;
            y[t] = u > hi ? hi : u;
        }
    }
#undef RK_DW3X3_TAPS
    for (int64_t oy = 0; oy < H; oy++) {
        const int64_t t0 = oy * W, t1 = oy * W + W - 1;
        /* column 0: taps j = 1, 2 */
        float u = fmaf(w1, r0[t0 + 1], b);
        u = fmaf(w2, r0[t0 + 2], u);
        u = fmaf(w4, r1[t0 + 1], u);
        u = fmaf(w5, r1[t0 + 2], u);
        u = fmaf(w7, r2[t0 + 1], u);
        u = fmaf(w8, r2[t0 + 2], u);
        if (rr != NULL) u += rr[t0];
        u = u < lo ? lo : u;
        y[t0] = u > hi ? hi : u;
        /* column W - 1: taps j = 0, 1 */
        float v = fmaf(w0, r0[t1], b);
        v = fmaf(w1, r0[t1 + 1], v);
        v = fmaf(w3, r1[t1], v);
        v = fmaf(w4, r1[t1 + 1], v);
        v = fmaf(w6, r2[t1], v);
        v = fmaf(w7, r2[t1 + 1], v);
        if (rr != NULL) v += rr[t1];
        v = v < lo ? lo : v;
        y[t1] = v > hi ? hi : v;
    }
}

/* Depthwise convolution, NCHW, one image, input channels [c0, c1).
 *
 * p (addresses): x [C, H, W], w [C * mult, KH * KW], bias [C * mult] or 0,
 *                res [C * mult, OH, OW] or 0 (not overlapping y), y [C * mult, OH, OW],
 *                scratch (rk_dw_scratch_floats floats).
 * s (sizes):     c0, c1, mult, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl.
 * f:             lo, hi (the clamp; -inf/inf for none).
 *
 * y[o] = clamp(bias[o] + sum_taps w[o, tap] * x_padded[c, tap] + res[o], lo, hi).
 * Each input channel is copied, zero padded, into its sh * sw stride phases, all with
 * the same row pitch Q; then the tap (i, j) of output pixel (oy, ox) is one phase read
 * at flat index oy * Q + ox + (a constant of the tap), so every tap is one unit-stride
 * pass over the OH * Q outputs (the Q - OW extra columns of each row are computed and
 * dropped) whatever the stride, dilation and image size; 3x3 taps are summed in one pass.
 */
void rk_dw_conv2d_f32(const uintptr_t *p, const int64_t *s, const float *f) {
    const float *x = (const float *)p[0], *w = (const float *)p[1];
    const float *bias = (const float *)p[2], *res = (const float *)p[3];
    float *y = (float *)p[4], *scratch = (float *)p[5];
    const int64_t c0 = s[0], c1 = s[1], mult = s[2], H = s[3], W = s[4], OH = s[5], OW = s[6];
    const int64_t KH = s[7], KW = s[8], sh = s[9], sw = s[10], dh = s[11], dw = s[12];
    const int64_t pt = s[13], pl = s[14];
    const float lo = f[0], hi = f[1];
    const int64_t Q = OW + ((KW - 1) * dw) / sw;
    const int64_t R = OH + ((KH - 1) * dh) / sh + 1;  /* a spare row: the last tap reads on */
    const int64_t T = OH * Q, T16 = rk_round16(T), K = KH * KW;
    float *planes = scratch;
    float *restrict acc = scratch + sh * sw * R * Q + RK_SLACK;
    const float *tap[9];
    const int fused = KH == 3 && KW == 3;
    const float l = lo, h = hi;

    const int same3x3 = KH == 3 && KW == 3 && sh == 1 && sw == 1 && dh == 1 && dw == 1 &&
                        pt == 1 && pl == 1 && OH == H && OW == W && W >= 2;
    if (same3x3) {
        for (int64_t c = c0; c < c1; c++) {
            for (int64_t m = 0; m < mult; m++) {
                const int64_t o = c * mult + m;
                rk_dw3x3s1_channel(x + c * H * W, scratch, w + o * 9,
                                   bias != NULL ? bias[o] : 0.0f,
                                   res != NULL ? res + o * H * W : NULL, y + o * H * W, H, W,
                                   lo, hi);
            }
        }
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        rk_dw_phases(x + c * H * W, planes, H, W, R, Q, sh, sw, pt, pl);
        for (int64_t m = 0; m < mult; m++) {
            const int64_t o = c * mult + m;
            const float *wo = w + o * K;
            const float b = bias != NULL ? bias[o] : 0.0f;
            /* without a residual, the clamp goes into the tap loop */
            const float cl = res == NULL ? l : -INFINITY, ch = res == NULL ? h : INFINITY;
            if (fused) {
                for (int64_t i = 0, k = 0; i < 3; i++) {
                    for (int64_t j = 0; j < 3; j++, k++) {
                        const int64_t r = i * dh, q = j * dw;
                        tap[k] = planes + ((r % sh) * sw + q % sw) * R * Q + (r / sh) * Q + q / sw;
                    }
                }
                const float *restrict t0 = tap[0], *restrict t1 = tap[1], *restrict t2 = tap[2];
                const float *restrict t3 = tap[3], *restrict t4 = tap[4], *restrict t5 = tap[5];
                const float *restrict t6 = tap[6], *restrict t7 = tap[7], *restrict t8 = tap[8];
                const float w0 = wo[0], w1 = wo[1], w2 = wo[2], w3 = wo[3], w4 = wo[4];
                const float w5 = wo[5], w6 = wo[6], w7 = wo[7], w8 = wo[8];
                for (int64_t t = 0; t < T16; t++) {
                    /* two chains of fused multiply-adds */
                    float u = fmaf(w0, t0[t], b), v = w1 * t1[t];
                    u = fmaf(w2, t2[t], u);
                    v = fmaf(w3, t3[t], v);
                    u = fmaf(w4, t4[t], u);
                    v = fmaf(w5, t5[t], v);
                    u = fmaf(w6, t6[t], u);
                    v = fmaf(w7, t7[t], v);
                    u = fmaf(w8, t8[t], u);
                    u = u + v;
                    u = u < cl ? cl : u;
                    acc[t] = u > ch ? ch : u;
                }
            } else {
                for (int64_t t = 0; t < T16; t++) acc[t] = b;
                for (int64_t i = 0, k = 0; i < KH; i++) {
                    for (int64_t j = 0; j < KW; j++, k++) {
                        const int64_t r = i * dh, q = j * dw;
                        const float *restrict src =
                            planes + ((r % sh) * sw + q % sw) * R * Q + (r / sh) * Q + q / sw;
                        const float wk = wo[k];
                        for (int64_t t = 0; t < T16; t++) acc[t] = fmaf(wk, src[t], acc[t]);
                    }
                }
                if (res == NULL) {
                    for (int64_t t = 0; t < T16; t++) {
                        float v = acc[t];
                        v = v < cl ? cl : v;
                        acc[t] = v > ch ? ch : v;
                    }
                }
            }
            float *yo = y + o * OH * OW;
            const float *ro = res != NULL ? res + o * OH * OW : NULL;
            for (int64_t oy = 0; oy < OH; oy++) {
                float *restrict yr = yo + oy * OW;
                const float *ar = acc + oy * Q;
                if (ro != NULL) {
                    const float *rr = ro + oy * OW;
                    for (int64_t ox = 0; ox < OW; ox++) {
                        float v = ar[ox] + rr[ox];
                        v = v < l ? l : v;
                        yr[ox] = v > h ? h : v;
                    }
                } else {
                    for (int64_t ox = 0; ox < OW; ox++) yr[ox] = ar[ox];
                }
            }
        }
    }
}

/* Floats of scratch one rk_dw_conv2d_f32 call needs: s as for that kernel. */
int64_t rk_dw_scratch_floats(const int64_t *s) {
    const int64_t OH = s[5], OW = s[6], KH = s[7], KW = s[8];
    const int64_t sh = s[9], sw = s[10], dh = s[11], dw = s[12];
    const int64_t Q = OW + ((KW - 1) * dw) / sw;
    const int64_t R = OH + ((KH - 1) * dh) / sh + 1;
    return sh * sw * R * Q + RK_SLACK + rk_round16(OH * Q) + RK_SLACK;
}

/* One row of a fused epilogue with a scalar bias: y[i] = clamp(src[i] + b (+ res[i]),
 * lo, hi) for i < n; res may be NULL. y may be src or res (each element is read before
 * it is written), so no restrict. Shared by rk_epilogue_f32 and the Winograd output
 * transform (winograd.c). */
void rk_row_epilogue(const float *src, float *y, const float *res, float b, int64_t n,
                     float lo, float hi) {
    if (res != NULL) {
        for (int64_t i = 0; i < n; i++) {
            float v = (src[i] + b) + res[i];
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            float v = src[i] + b;
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
    }
}

/* The epilogue of a matrix product, on rows [r0, r1) and columns [k0, k1) of a 2-D block:
 *     y[r, k] = clamp(src[r, k] + bias + res[r, k], lo, hi)
 * with bias = brow[r] (per row), bcol[k] (per column) or none.
 *
 * p (addresses): src, y, brow or 0, bcol or 0, res or 0 (y may be src, or res).
 * s (sizes):     r0, r1, k0, k1, ld_src, ld_y, ld_res (row pitches, in floats).
 * f:             lo, hi.
 */
void rk_epilogue_f32(const uintptr_t *p, const int64_t *s, const float *f) {
    const float *src = (const float *)p[0];
    float *y = (float *)p[1];
    const float *brow = (const float *)p[2], *bcol = (const float *)p[3];
    const float *res = (const float *)p[4];
    const int64_t r0 = s[0], r1 = s[1], k0 = s[2], k1 = s[3];
    const int64_t lds = s[4], ldy = s[5], ldr = s[6];
    const float lo = f[0], hi = f[1];
    const int64_t n = k1 - k0;
    for (int64_t r = r0; r < r1; r++) {
        /* y may be src or res (same element, read before written): no restrict */
        const float *sr = src + r * lds + k0;
        float *yr = y + r * ldy + k0;
        const float *bc = bcol != NULL ? bcol + k0 : NULL;
        const float b = brow != NULL ? brow[r] : 0.0f;
        if (res != NULL) {
            const float *rr = res + r * ldr + k0;
            if (bc != NULL) {
                for (int64_t i = 0; i < n; i++) {
                    float v = (sr[i] + bc[i]) + rr[i];
                    v = v < lo ? lo : v;
                    yr[i] = v > hi ? hi : v;
                }
            } else {
                rk_row_epilogue(sr, yr, rr, b, n, lo, hi);
            }
        } else if (bc != NULL) {
            for (int64_t i = 0; i < n; i++) {
                float v = sr[i] + bc[i];
                v = v < lo ? lo : v;
                yr[i] = v > hi ? hi : v;
            }
        } else {
            rk_row_epilogue(sr, yr, NULL, b, n, lo, hi);
        }
    }
}

/* im2col of one NCHW image for a convolution: cols[(c * KH + i) * KW + j, oy * OW + ox] =
 * x_padded[c, oy * sh + i * dh, ox * sw + j * dw], through the stride phases of each
 * channel (as rk_dw_conv2d_f32), so every row of taps is one contiguous copy.
 *
 * p (addresses): x [C, H, W], cols [C * KH * KW, OH * OW], scratch (rk_dw_scratch_floats).
 * s (sizes):     C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl.
 */
void rk_im2col_f32(const uintptr_t *p, const int64_t *s) {
    const float *x = (const float *)p[0];
    float *cols = (float *)p[1], *planes = (float *)p[2];
    const int64_t C = s[0], H = s[1], W = s[2], OH = s[3], OW = s[4], KH = s[5], KW = s[6];
    const int64_t sh = s[7], sw = s[8], dh = s[9], dw = s[10], pt = s[11], pl = s[12];
    const int64_t Q = OW + ((KW - 1) * dw) / sw;
    const int64_t R = OH + ((KH - 1) * dh) / sh + 1;
    for (int64_t c = 0; c < C; c++) {
        rk_dw_phases(x + c * H * W, planes, H, W, R, Q, sh, sw, pt, pl);
        for (int64_t i = 0; i < KH; i++) {
            for (int64_t j = 0; j < KW; j++) {
                const int64_t r = i * dh, q = j * dw;
                const float *src = planes + ((r % sh) * sw + q % sw) * R * Q + (r / sh) * Q + q / sw;
                float *dst = cols + ((c * KH + i) * KW + j) * OH * OW;
                for (int64_t oy = 0; oy < OH; oy++)
                    memcpy(dst + oy * OW, src + oy * Q, (size_t)OW * sizeof(float));
            }
        }
    }
}
