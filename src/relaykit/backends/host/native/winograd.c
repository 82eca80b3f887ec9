/* relaykit native host kernels: Winograd F(2x2, 3x3) convolution, NCHW.
 *
 * A 3x3, stride-1 convolution y = w * x becomes, per 2x2 output tile,
 *   Y = A^T [ U (.) V ] A,   U = G w G^T (weights, transformed once in Python),
 *                            V = B^T d B (the tile's 4x4 input patch d),
 * where the sum over input channels is 16 matrix products
 *   M[xi] (K x T) = U^T[xi] (K x C) @ V[xi] (C x T),   xi = 0..15, T = N * tiles,
 * run by NumPy's cblas_sgemm (2.25x fewer multiply-adds than the direct convolution), or
 * for at most 16 tiles (7x7 images) by rk_wino_thin_gemm.
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1]: both
 * transforms are exact additions.
 *
 * One call runs the three phases on the native pool (rk_parallel_tasks, pool.c):
 *   input transform  x [N, C, H, W] -> V [16][C][T], blocks of (image, channel) planes;
 *   16 GEMMs (times column blocks of T);
 *   output transform M [16][K][T] -> y [N, K, OH, OW], with the epilogue
 *     y = clamp(Y + bias[k] + res, lo, hi) (res may be y itself), blocks of planes.
 * Tiles are ordered t = (n * TH + ty) * TW + tx. Each tile row is computed through
 * short row buffers split into even and odd columns, so every loop is unit-stride.
 *
 * Non-finite values: the transforms add and subtract pixels, so an infinite input can
 * make NaN where a direct convolution makes +-inf.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef void (*rk_task_fn)(const void *job, int64_t task);
void rk_parallel_tasks(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads);
void rk_row_epilogue(const float *src, float *y, const float *res, float b, int64_t n,
                     float lo, float hi); /* conv.c */

typedef void (*rk_wsgemm32)(int, int, int, int32_t, int32_t, int32_t, float, const float *,
                            int32_t, const float *, int32_t, float, float *, int32_t);
typedef void (*rk_wsgemm64)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                            int64_t, const float *, int64_t, float, float *, int64_t);

typedef struct {
    const float *x, *ut, *bias, *res;
    float *v, *m, *y;
    uintptr_t sgemm;
    int64_t ilp64, N, C, H, W, K, OH, OW, pt, pl, TH, TW, T;
    int64_t in_blocks, gemm_cols, out_blocks;
    float lo, hi;
} rk_wino_job;

/* One padded input row, split into its even and odd columns: e[m] = row[2 m],
 * o[m] = row[2 m + 1], where row[q] is the input column q - pl (0 outside), q < 2 L. */
static inline void rk_wino_row(const float *xc, int64_t yy, int64_t H, int64_t W, int64_t pl,
                               int64_t L, float *restrict row, float *restrict e,
                               float *restrict o) {
    const int64_t P = 2 * L;
    const int64_t q0 = pl < P ? pl : P;              /* first column inside */
    const int64_t q1 = W + pl < P ? W + pl : P;      /* end of the inside */
    if (yy < 0 || yy >= H || q1 <= q0) {
        for (int64_t m = 0; m < L; m++) e[m] = o[m] = 0.0f;
        return;
    }
    for (int64_t q = 0; q < q0; q++) row[q] = 0.0f;
    memcpy(row + q0, xc + yy * W + (q0 - pl), (size_t)(q1 - q0) * sizeof(float));
    for (int64_t q = q1; q < P; q++) row[q] = 0.0f;
    for (int64_t m = 0; m < L; m++) {
        e[m] = row[2 * m];
        o[m] = row[2 * m + 1];
    }
}

/* Input transform of planes [b * N * C / in_blocks, (b + 1) * N * C / in_blocks). The
 * padded rows of a tile row are kept in a ring of four: the next tile row (two rows down)
 * reads two of them again. */
static void rk_wino_in_task(const void *arg, int64_t b) {
    const rk_wino_job *j = (const rk_wino_job *)arg;
    const int64_t C = j->C, H = j->H, W = j->W, TH = j->TH, TW = j->TW, T = j->T;
    const int64_t planes = j->N * C;
    const int64_t p0 = planes * b / j->in_blocks, p1 = planes * (b + 1) / j->in_blocks;
    const int64_t L = TW + 1; /* even/odd columns of a padded row of 2 L */
    float row[2 * L];
    float e[4][L], o[4][L];   /* the raw rows, padded row r in slot r & 3 */
    float te[4][L], to[4][L]; /* the rows of B^T d */
    const int64_t plane = C * T; /* floats per tile position */
    for (int64_t pc = p0; pc < p1; pc++) {
        const int64_t n = pc / C, c = pc % C;
        const float *xc = j->x + pc * H * W;
        for (int64_t ty = 0; ty < TH; ty++) {
            for (int i = ty == 0 ? 0 : 2; i < 4; i++) {
                const int64_t r = 2 * ty + i;
                rk_wino_row(xc, r - j->pt, H, W, j->pl, L, row, e[r & 3], o[r & 3]);
            }
            const int s0 = (int)((2 * ty) & 3), s1 = (int)((2 * ty + 1) & 3);
            const int s2 = (int)((2 * ty + 2) & 3), s3 = (int)((2 * ty + 3) & 3);
            {
                /* rows of B^T d: (d0 - d2, d1 + d2, d2 - d1, d1 - d3) */
                const float *restrict e0 = e[s0], *restrict e1 = e[s1];
                const float *restrict e2 = e[s2], *restrict e3 = e[s3];
                const float *restrict o0 = o[s0], *restrict o1 = o[s1];
                const float *restrict o2 = o[s2], *restrict o3 = o[s3];
                float *restrict te0 = te[0], *restrict te1 = te[1];
                float *restrict te2 = te[2], *restrict te3 = te[3];
                float *restrict to0 = to[0], *restrict to1 = to[1];
                float *restrict to2 = to[2], *restrict to3 = to[3];
                for (int64_t m = 0; m < L; m++) {
                    te0[m] = e0[m] - e2[m];
                    te1[m] = e1[m] + e2[m];
                    te2[m] = e2[m] - e1[m];
                    te3[m] = e1[m] - e3[m];
                    to0[m] = o0[m] - o2[m];
                    to1[m] = o1[m] + o2[m];
                    to2[m] = o2[m] - o1[m];
                    to3[m] = o1[m] - o3[m];
                }
            }
            const int64_t t0 = (n * TH + ty) * TW;
            for (int i = 0; i < 4; i++) {
                /* (B^T d) B, row i: columns d0 = e[tx], d1 = o[tx], d2 = e[tx+1], d3 = o[tx+1] */
                const float *restrict ei = te[i], *restrict oi = to[i];
                float *restrict v0 = j->v + (4 * i + 0) * plane + c * T + t0;
                float *restrict v1 = j->v + (4 * i + 1) * plane + c * T + t0;
                float *restrict v2 = j->v + (4 * i + 2) * plane + c * T + t0;
                float *restrict v3 = j->v + (4 * i + 3) * plane + c * T + t0;
                for (int64_t tx = 0; tx < TW; tx++) {
                    v0[tx] = ei[tx] - ei[tx + 1];
                    v1[tx] = oi[tx] + ei[tx + 1];
                    v2[tx] = ei[tx + 1] - oi[tx];
                    v3[tx] = oi[tx] - oi[tx + 1];
                }
            }
        }
    }
}

/* M (K x T) = A (K x C) @ B (C x T) for T <= NB columns (7x7 images: 16 tiles), where
 * BLAS runs far below its speed (a 512 x 512 x 16 sgemm: ~23 GMAC/s on one core): B is
 * copied into NB zero-padded columns (C x NB floats, in the L1 or L2 cache) and every
 * group of four rows of A is one pass over it with 4 x NB accumulators (registers). In
 * ResNet-18, its 512-channel 7x7 layers went from 0.88 to 0.51 of im2col. Always inlined
 * with a constant NB. */
static inline __attribute__((always_inline)) void rk_wino_thin(const float *A, const float *B,
                                                               float *M, int64_t K, int64_t C,
                                                               int64_t T, float *bp,
                                                               const int NB) {
    for (int64_t c = 0; c < C; c++) {
        for (int64_t t = 0; t < T; t++) bp[c * NB + t] = B[c * T + t];
        for (int64_t t = T; t < NB; t++) bp[c * NB + t] = 0.0f;
    }
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
        float a0[NB], a1[NB], a2[NB], a3[NB];
        for (int t = 0; t < NB; t++) a0[t] = a1[t] = a2[t] = a3[t] = 0.0f;
        const float *u0 = A + k * C, *u1 = u0 + C, *u2 = u1 + C, *u3 = u2 + C;
        for (int64_t c = 0; c < C; c++) {
            const float *restrict b = bp + c * NB;
            const float x0 = u0[c], x1 = u1[c], x2 = u2[c], x3 = u3[c];
            for (int t = 0; t < NB; t++) {
                a0[t] = fmaf(x0, b[t], a0[t]);
                a1[t] = fmaf(x1, b[t], a1[t]);
                a2[t] = fmaf(x2, b[t], a2[t]);
                a3[t] = fmaf(x3, b[t], a3[t]);
            }
        }
        for (int64_t t = 0; t < T; t++) {
            M[(k + 0) * T + t] = a0[t];
            M[(k + 1) * T + t] = a1[t];
            M[(k + 2) * T + t] = a2[t];
            M[(k + 3) * T + t] = a3[t];
        }
    }
    for (; k < K; k++) {
        float a0[NB];
        for (int t = 0; t < NB; t++) a0[t] = 0.0f;
        const float *u0 = A + k * C;
        for (int64_t c = 0; c < C; c++) {
            const float *restrict b = bp + c * NB;
            const float x0 = u0[c];
            for (int t = 0; t < NB; t++) a0[t] = fmaf(x0, b[t], a0[t]);
        }
        for (int64_t t = 0; t < T; t++) M[k * T + t] = a0[t];
    }
}

/* The thin product for T <= 16 columns (C * 16 floats of stack). Wider ones (14x14
 * images: 49 tiles, with NB = 64) measured 5-10% faster than sgemm on one thread and no
 * faster on two: they go to BLAS. */
static void rk_wino_thin_gemm(const float *A, const float *B, float *M, int64_t K, int64_t C,
                              int64_t T) {
    float bp[C * 16];
    rk_wino_thin(A, B, M, K, C, T, bp, 16);
}

/* GEMM task: tile position xi = task / gemm_cols, a block of the T columns. */
static void rk_wino_gemm_task(const void *arg, int64_t task) {
    const rk_wino_job *j = (const rk_wino_job *)arg;
    const int64_t K = j->K, C = j->C, T = j->T, nb = j->gemm_cols;
    const int64_t xi = task / nb, blk = task % nb;
    int64_t c0 = T * blk / nb, c1 = T * (blk + 1) / nb;
    if (nb > 1) { /* cut at multiples of 16 columns */
        c0 = blk == 0 ? 0 : (c0 + 15) & ~(int64_t)15;
        c1 = blk == nb - 1 ? T : (c1 + 15) & ~(int64_t)15;
        c1 = c1 > T ? T : c1;
    }
    if (c1 <= c0) return;
    const float *A = j->ut + xi * K * C, *B = j->v + xi * C * T + c0;
    float *Cm = j->m + xi * K * T + c0;
    if (T <= 16 && nb == 1 && C <= 2048) { /* B padded: at most 128 KiB on the stack */
        rk_wino_thin_gemm(A, B, Cm, K, C, T);
    } else if (j->ilp64) {
        ((rk_wsgemm64)j->sgemm)(101, 111, 111, K, c1 - c0, C, 1.0f, A, C, B, T, 0.0f, Cm, T);
    } else {
        ((rk_wsgemm32)j->sgemm)(101, 111, 111, (int32_t)K, (int32_t)(c1 - c0), (int32_t)C, 1.0f,
                                A, (int32_t)C, B, (int32_t)T, 0.0f, Cm, (int32_t)T);
    }
}

/* Output transform (and epilogue) of planes [b * N * K / out_blocks, ...). */
static void rk_wino_out_task(const void *arg, int64_t b) {
    const rk_wino_job *j = (const rk_wino_job *)arg;
    const int64_t K = j->K, OH = j->OH, OW = j->OW, TH = j->TH, TW = j->TW, T = j->T;
    const int64_t planes = j->N * K;
    const int64_t p0 = planes * b / j->out_blocks, p1 = planes * (b + 1) / j->out_blocks;
    const int64_t plane = K * T;
    const float lo = j->lo, hi = j->hi;
    float r0[2 * TW], r1[2 * TW];
    for (int64_t pk = p0; pk < p1; pk++) {
        const int64_t n = pk / K, k = pk % K;
        const float bk = j->bias != NULL ? j->bias[k] : 0.0f;
        for (int64_t ty = 0; ty < TH; ty++) {
            const float *mm[16];
            const int64_t t0 = (n * TH + ty) * TW;
            for (int xi = 0; xi < 16; xi++) mm[xi] = j->m + xi * plane + k * T + t0;
            {
                const float *restrict m0 = mm[0], *restrict m1 = mm[1], *restrict m2 = mm[2];
                const float *restrict m3 = mm[3], *restrict m4 = mm[4], *restrict m5 = mm[5];
                const float *restrict m6 = mm[6], *restrict m7 = mm[7], *restrict m8 = mm[8];
                const float *restrict m9 = mm[9], *restrict m10 = mm[10], *restrict m11 = mm[11];
                const float *restrict m12 = mm[12], *restrict m13 = mm[13];
                const float *restrict m14 = mm[14], *restrict m15 = mm[15];
                float *restrict y0 = r0, *restrict y1 = r1;
                for (int64_t tx = 0; tx < TW; tx++) {
                    /* A^T M: rows 0 (m0 + m4 + m8) and 1 (m4 - m8 - m12), per column j */
                    const float a00 = m0[tx] + m4[tx] + m8[tx], a01 = m1[tx] + m5[tx] + m9[tx];
                    const float a02 = m2[tx] + m6[tx] + m10[tx], a03 = m3[tx] + m7[tx] + m11[tx];
                    const float a10 = m4[tx] - m8[tx] - m12[tx], a11 = m5[tx] - m9[tx] - m13[tx];
                    const float a12 = m6[tx] - m10[tx] - m14[tx];
                    const float a13 = m7[tx] - m11[tx] - m15[tx];
                    y0[2 * tx] = a00 + a01 + a02;
                    y0[2 * tx + 1] = a01 - a02 - a03;
                    y1[2 * tx] = a10 + a11 + a12;
                    y1[2 * tx + 1] = a11 - a12 - a13;
                }
            }
            for (int i = 0; i < 2 && 2 * ty + i < OH; i++) {
                const int64_t off = (pk * OH + 2 * ty + i) * OW;
                const float *src = i == 0 ? r0 : r1;
                /* y may be res (same element, read first) */
                rk_row_epilogue(src, j->y + off, j->res != NULL ? j->res + off : NULL, bk, OW,
                                lo, hi);
            }
        }
    }
}

/* The Winograd convolution, all three phases on the native pool.
 * p (addresses): sgemm, x [N, C, H, W], ut [16, K, C], bias [K] or 0,
 *                res [N, K, OH, OW] or 0, y [N, K, OH, OW], v [16, C, T], m [16, K, T].
 * s (sizes):     ilp64, N, C, H, W, K, OH, OW, pt, pl, in_blocks, gemm_cols, out_blocks.
 * f:             lo, hi.
 */
void rk_wino_run(const uintptr_t *p, const int64_t *s, const float *f, int64_t nthreads) {
    rk_wino_job j;
    j.sgemm = p[0];
    j.x = (const float *)p[1];
    j.ut = (const float *)p[2];
    j.bias = (const float *)p[3];
    j.res = (const float *)p[4];
    j.y = (float *)p[5];
    j.v = (float *)p[6];
    j.m = (float *)p[7];
    j.ilp64 = s[0];
    j.N = s[1];
    j.C = s[2];
    j.H = s[3];
    j.W = s[4];
    j.K = s[5];
    j.OH = s[6];
    j.OW = s[7];
    j.pt = s[8];
    j.pl = s[9];
    j.in_blocks = s[10];
    j.gemm_cols = s[11];
    j.out_blocks = s[12];
    j.TH = (j.OH + 1) / 2;
    j.TW = (j.OW + 1) / 2;
    j.T = j.N * j.TH * j.TW;
    j.lo = f[0];
    j.hi = f[1];
    rk_parallel_tasks(rk_wino_in_task, &j, j.in_blocks, nthreads);
    rk_parallel_tasks(rk_wino_gemm_task, &j, 16 * j.gemm_cols, nthreads);
    rk_parallel_tasks(rk_wino_out_task, &j, j.out_blocks, nthreads);
}
