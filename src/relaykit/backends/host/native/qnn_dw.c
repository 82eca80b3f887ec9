/* relaykit native host kernels: integer (QNN) depthwise convolution.
 *
 * Two kernels for qnn.conv2d with one input channel per group (NCHW, one image, blocks
 * of output channels per task), both ending in the requantize epilogue of qnn.c
 * (rk_q_epi_row) applied to each output row; results equal the QNN reference bit for bit.
 *
 * rk_q_dw8_run (AVX512-VNNI with AVX512-VBMI): the channel copied once as bytes into a
 * plane padded with the input zero point; a row of at most four taps of sixteen outputs
 * is one vpermb (the sixteen 4-byte windows of one 64-byte load, any stride and
 * dilation that fit) and one vpdpbusd with the row's four weights. The weights are stored
 * minus their zero point (they must fit int8), the input as unsigned bytes (int8 + 128),
 * so the sum is sum x' w' and the input zero point's part, zx' * sum w', is taken out of
 * the channel's epilogue constant by the caller.
 *
 * rk_q_dw_run: the general kernel, int16 taps (below).
 */
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef void (*rk_task_fn)(const void *job, int64_t task);
void rk_parallel_tasks(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads);
void rk_q_epi_row(const int32_t *acc, int64_t n, const int32_t *add, const int32_t *mult,
                  const int32_t *lsh, const int32_t *rsh, const int64_t *e, void *out);

/* -- depthwise convolution, bytes and VNNI ---------------------------------------------- */

int64_t rk_q_dw8_ok(void) {
#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__)
    return 1;
#else
    return 0;
#endif
}

/* p: x, w4 (int8[OC][KH][4], weight - zero point, zero past KW), out, add, mult, lsh,
 *    rsh, scratch
 * s: C, H, W, OC, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw, flip, pad (the stored input
 *    zero point), nblocks, scratch bytes per block, chmult, Wp (plane row pitch), Hp,
 *    then the epilogue (ozp, lo, hi, ident, mode, kind)
 * The scratch of a block: the plane (Hp x Wp bytes + 64 slack) and the channel's int32
 * sums (OH x OW + 16), 64-byte aligned. */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_q_dw8_job;

#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__)
static void rk_q_dw8_task(const void *arg, int64_t b) {
    const rk_q_dw8_job *job = (const rk_q_dw8_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t H = s[1], W = s[2], OC = s[3], KH = s[4], KW = s[5], OH = s[6], OW = s[7];
    const int64_t sh = s[8], sw = s[9], pt = s[10], pl = s[11], dh = s[12], dw = s[13];
    const uint8_t flip = (uint8_t)s[14], pad = (uint8_t)s[15];
    const int64_t nb = s[16], chm = s[18], Wp = s[19], Hp = s[20];
    const int64_t *e = s + 21;
    const int64_t isz = e[5] == 2 ? 4 : 1;
    const uint8_t *x = (const uint8_t *)p[0];
    const int32_t *w4 = (const int32_t *)p[1];
    const int32_t *add = (const int32_t *)p[3], *mult = (const int32_t *)p[4];
    const int32_t *lsh = (const int32_t *)p[5], *rsh = (const int32_t *)p[6];
    uint8_t *plane = (uint8_t *)(p[7] + (uintptr_t)(b * s[17]));
    int32_t *acc = (int32_t *)(((uintptr_t)(plane + Hp * Wp + 64) + 63) & ~(uintptr_t)63);
    /* window q of the 64-byte load at output ox0 * sw: bytes q * sw + j * dw, j < 4 */
    uint8_t idx[64];
    for (int q = 0; q < 16; q++)
        for (int j = 0; j < 4; j++)
            idx[4 * q + j] = (uint8_t)(j < KW ? q * sw + j * dw : 0);
    const __m512i perm = _mm512_loadu_si512((const void *)idx);
    const int64_t o0 = OC * b / nb, o1 = OC * (b + 1) / nb;
    const int64_t left = pl < Wp ? pl : Wp;
    const int64_t n = Wp - left < W ? Wp - left : W;
    int64_t loaded = -1;
    for (int64_t oc = o0; oc < o1; oc++) {
        const int64_t c = oc / chm;
        if (c != loaded) {
            const uint8_t *src = x + c * H * W;
            for (int64_t y = 0; y < Hp; y++) {
                uint8_t *d = plane + y * Wp;
                const int64_t iy = y - pt;
                if (iy < 0 || iy >= H || n <= 0) {
                    memset(d, pad, (size_t)Wp);
                    continue;
                }
                memset(d, pad, (size_t)left);
                const uint8_t *r = src + iy * W;
                if (flip)
                    for (int64_t i = 0; i < n; i++) d[left + i] = r[i] ^ flip;
                else
                    memcpy(d + left, r, (size_t)n);
                memset(d + left + n, pad, (size_t)(Wp - left - n));
            }
            memset(plane + Hp * Wp, pad, 64);
            loaded = c;
        }
        __m512i wv[16];
        for (int64_t i = 0; i < KH; i++) wv[i] = _mm512_set1_epi32(w4[oc * KH + i]);
        /* the channel's sums, rows packed (a row's last chunk spills into the next row's
         * place, which that row then writes), then one epilogue pass */
        for (int64_t oy = 0; oy < OH; oy++) {
            const uint8_t *rows = plane + oy * sh * Wp;
            int32_t *ar = acc + oy * OW;
            for (int64_t ox = 0; ox < OW; ox += 16) {
                const uint8_t *at = rows + ox * sw;
                __m512i a = _mm512_setzero_si512();
                for (int64_t i = 0; i < KH; i++) {
                    const __m512i v = _mm512_loadu_si512((const void *)(at + i * dh * Wp));
                    a = _mm512_dpbusd_epi32(a, _mm512_permutexvar_epi8(perm, v), wv[i]);
                }
                _mm512_storeu_si512((void *)(ar + ox), a);
            }
        }
        rk_q_epi_row(acc, OH * OW, add + oc, mult + oc, lsh + oc, rsh + oc, e,
                     (uint8_t *)p[2] + oc * OH * OW * isz);
    }
}
#endif

void rk_q_dw8_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__)
    rk_q_dw8_job job = {p, s};
    rk_parallel_tasks(rk_q_dw8_task, &job, s[16], nthreads);
#else
    (void)p;
    (void)s;
    (void)nthreads;
#endif
}

/* -- depthwise convolution, int16 taps (any kernel size, any zero points) -------------- */

/* One image; output channel oc reads input channel oc / mult.
 * p: x, w (OC x KH x KW bytes), out, add, mult, lsh, rsh, wzp (int32[OC]), scratch
 * s: C, H, W, OC, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw, x_signed, w_signed, xzp,
 *    nblocks, scratch bytes per block, chmult, ozp, lo, hi, ident, mode, kind
 * The scratch of a block: the shifted channel (int16, zero padded, in column phases) and
 * a row of int32. */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_q_dw_job;

static void rk_q_dw_task(const void *arg, int64_t b) {
    const rk_q_dw_job *job = (const rk_q_dw_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t H = s[1], W = s[2], OC = s[3], KH = s[4], KW = s[5], OH = s[6], OW = s[7];
    const int64_t sh = s[8], sw = s[9], pt = s[10], pl = s[11], dh = s[12], dw = s[13];
    const int64_t xs = s[14], ws = s[15], xzp = s[16], nb = s[17], chm = s[19];
    const int64_t *e = s + 20;
    const int64_t isz = e[5] == 2 ? 4 : 1;
    const uint8_t *x = (const uint8_t *)p[0], *w = (const uint8_t *)p[1];
    const int32_t *add = (const int32_t *)p[3], *mult = (const int32_t *)p[4];
    const int32_t *lsh = (const int32_t *)p[5], *rsh = (const int32_t *)p[6];
    const int32_t *wzp = (const int32_t *)p[7];
    const int64_t Hp = (OH - 1) * sh + (KH - 1) * dh + 1, Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
    /* the channel, shifted to int16 and zero padded, split into sh x sw phases: phase
     * (fy, fx), row r, column q holds padded pixel (r * sh + fy, q * sw + fx). Tap (i, j)
     * of output (oy, ox) is then one phase at flat index oy * Q + ox + c(i, j): each tap
     * is one unit-stride pass over OH * Q outputs (the Q - OW extra columns of each row
     * are computed and dropped; the phases have a spare row for their reads). */
    const int64_t Q = (Wp + sw - 1) / sw, R = (Hp + sh - 1) / sh + 1;
    const int64_t span = OH * Q;
    int16_t *plane = (int16_t *)(p[8] + (uintptr_t)(b * s[18]));
    int32_t *acc = (int32_t *)(((uintptr_t)(plane + sh * sw * R * Q + 32) + 63) & ~(uintptr_t)63);
    int16_t taps[64];
    int64_t toff[64];
    for (int64_t i = 0; i < KH; i++)
        for (int64_t j = 0; j < KW; j++) {
            const int64_t fy = (i * dh) % sh, fx = (j * dw) % sw;
            toff[i * KW + j] = (fy * sw + fx) * R * Q + ((i * dh) / sh) * Q + (j * dw) / sw;
        }
    const int64_t o0 = OC * b / nb, o1 = OC * (b + 1) / nb;
    int64_t loaded = -1;
    for (int64_t oc = o0; oc < o1; oc++) {
        const int64_t c = oc / chm;
        if (c != loaded) {
            const uint8_t *src = x + c * H * W;
            for (int64_t fy = 0; fy < sh; fy++)
                for (int64_t fx = 0; fx < sw; fx++) {
                    int64_t qlo = pl - fx > 0 ? (pl - fx + sw - 1) / sw : 0;
                    int64_t qhi = W + pl - fx > 0 ? (W + pl - fx + sw - 1) / sw : 0;
                    if (qhi > Q) qhi = Q;
                    if (qlo > qhi) qlo = qhi;
                    int16_t *ph = plane + (fy * sw + fx) * R * Q;
                    for (int64_t r = 0; r < R; r++) {
                        const int64_t iy = r * sh + fy - pt;
                        int16_t *d = ph + r * Q;
                        if (iy < 0 || iy >= H) {
                            for (int64_t q = 0; q < Q; q++) d[q] = 0;
                            continue;
                        }
                        const uint8_t *row = src + iy * W + fx - pl;
                        for (int64_t q = 0; q < qlo; q++) d[q] = 0;
                        if (xs) {
                            for (int64_t q = qlo; q < qhi; q++)
                                d[q] = (int16_t)((int32_t)(int8_t)row[q * sw] - (int32_t)xzp);
                        } else {
                            for (int64_t q = qlo; q < qhi; q++)
                                d[q] = (int16_t)((int32_t)row[q * sw] - (int32_t)xzp);
                        }
                        for (int64_t q = qhi; q < Q; q++) d[q] = 0;
                    }
                }
            loaded = c;
        }
        for (int64_t t = 0; t < KH * KW; t++) {
            const uint8_t v = w[oc * KH * KW + t];
            taps[t] = (int16_t)((ws ? (int32_t)(int8_t)v : (int32_t)v) - wzp[oc]);
        }
        /* 16 outputs at a time, all taps summed in registers (the reads may run up to 15
         * elements past the span: the scratch has that slack, the results are dropped) */
        const int64_t nt = KH * KW;
        int32_t tw[64];
        const int16_t *tr[64];
        for (int64_t t = 0; t < nt; t++) {
            tw[t] = taps[t];
            tr[t] = plane + toff[t];
        }
#ifdef __AVX512F__
        for (int64_t k = 0; k < span; k += 16) {
            __m512i a = _mm512_setzero_si512();
            for (int64_t t = 0; t < nt; t++) {
                const __m256i r16 = _mm256_loadu_si256((const __m256i *)(tr[t] + k));
                const __m512i r32 = _mm512_cvtepi16_epi32(r16);
                a = _mm512_add_epi32(a, _mm512_mullo_epi32(r32, _mm512_set1_epi32(tw[t])));
            }
            _mm512_storeu_si512((void *)(acc + k), a);
        }
#else
        for (int64_t k = 0; k < span; k += 16) {
            int32_t a[16];
            for (int kk = 0; kk < 16; kk++) a[kk] = 0;
            for (int64_t t = 0; t < nt; t++) {
                const int16_t *r = tr[t] + k;
                const int32_t tv = tw[t];
                for (int kk = 0; kk < 16; kk++) a[kk] += tv * (int32_t)r[kk];
            }
            for (int kk = 0; kk < 16; kk++) acc[k + kk] = a[kk];
        }
#endif
        uint8_t *o = (uint8_t *)p[2] + oc * OH * OW * isz;
        for (int64_t oy = 0; oy < OH; oy++)
            rk_q_epi_row(acc + oy * Q, OW, add + oc, mult + oc, lsh + oc, rsh + oc, e,
                     o + oy * OW * isz);
    }
}

void rk_q_dw_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_dw_job job = {p, s};
    rk_parallel_tasks(rk_q_dw_task, &job, s[17], nthreads);
}

