/* relaykit native host kernels: integer (QNN) kernels.
 *
 * int8 x int8 -> int32 products for qnn.conv2d / qnn.dense / qnn.batch_matmul, each with
 * its requantize epilogue fused, and the elementwise QNN operators. Every result equals
 * the QNN reference kernels (relaykit.op.qnn) bit for bit: products accumulate exactly in
 * int32, and requantize is TVM's Q31 fixed-point multiply in int64.
 *
 * The products: C[m, n] = sum_k (R[m, k] - zr[m]) * (P[k, n] - zc[n]), one operand
 * unsigned bytes, the other signed (an int8 operand that must be unsigned is stored xor
 * 0x80, i.e. + 128, its zero point + 128; a uint8 one that must be signed is stored xor
 * 0x80, i.e. - 128, its zero point - 128). Expanded:
 *
 *   C = sum R P - zr[m] * colsum[n] - zc[n] * rowsum[m] + K * zr[m] * zc[n]
 *
 * R is stored as rows of Kp bytes (K rounded up to 4, zero filled); P "packed" as
 * [Kp / 4][Np][4] bytes (Np: N rounded up to 32), so four k of 16 columns are one 64-byte
 * vector: with AVX512-VNNI one vpdpbusd per 16 x 4 multiply-adds (u8 x s8, exact: no
 * saturation), else plain C the compiler vectorises with 16-bit multiplies.
 *
 * The epilogue of a row of results (acc: int32), per channel c:
 *   v = acc + add[c]                               (bias - input zero point, int32)
 *   v = (v << lsh[c]) * mult[c] rounded >> rsh[c]  (int64; skipped when ident)
 *   v = clamp(v + ozp, lo, hi)                     (lo, hi: the dtype's range and clips)
 * or, in float (mode 3): v = clamp(rint((float)v * scale[c]) + ozp, lo, hi), the float32
 * scale's bits stored in mult[c] (onnxruntime's requantization, halves to even).
 */
#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__AVX512VNNI__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef void (*rk_task_fn)(const void *job, int64_t task);
void rk_parallel_tasks(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads);

int64_t rk_q_vnni(void) {
#ifdef __AVX512VNNI__
    return 1;
#else
    return 0;
#endif
}

/* -- the requantize epilogue ------------------------------------------------------------ */

/* e: ozp, lo, hi, ident, mode, kind (0 int8, 1 uint8, 2 int32). mode: how the product
 * rounds, 0 halves up, 1 halves away from zero, 2 halves to even (Q31 fixed point), 3 in
 * float32, halves to even. The loops read the parameters into locals first (the output,
 * bytes, may alias anything) so they vectorise. */
static inline float rk_q_f32(int32_t bits) {
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

#define RK_Q_EPI_FIXED(T, ADD, MULT, LSH, RSH, ROUND)                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
        int32_t v = (int32_t)((uint32_t)acc[i] + (uint32_t)(ADD));                         \
        int64_t x = (int64_t)((uint64_t)(int64_t)v << (LSH)) * (int64_t)(MULT);            \
        x += ROUND;                                                                        \
        int32_t r = (int32_t)((int64_t)(int32_t)(x >> (RSH)) + ozp);                       \
        r = r < lo ? lo : r;                                                               \
        o[i] = (T)(r > hi ? hi : r);                                                       \
    }

#define RK_Q_EPI_BODY(T, ADD, MULT, LSH, RSH)                                              \
    do {                                                                                   \
        T *o = (T *)out;                                                                   \
        if (ident) {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                              \
                int32_t v = (int32_t)((uint32_t)acc[i] + (uint32_t)(ADD));                 \
                int32_t r = (int32_t)((int64_t)v + ozp);                                   \
                r = r < lo ? lo : r;                                                       \
                o[i] = (T)(r > hi ? hi : r);                                               \
            }                                                                              \
        } else if (tn == 3) {                                                              \
            const float flo = (float)((int64_t)lo - ozp), fhi = (float)((int64_t)hi - ozp); \
            for (int64_t i = 0; i < n; i++) {                                              \
                int32_t v = (int32_t)((uint32_t)acc[i] + (uint32_t)(ADD));                 \
                float f = (float)v * rk_q_f32(MULT);                                       \
                f = f < flo ? flo : f;                                                     \
                f = f > fhi ? fhi : f;                                                     \
                int32_t r = (int32_t)((int64_t)rintf(f) + ozp);                            \
                r = r < lo ? lo : r;                                                       \
                o[i] = (T)(r > hi ? hi : r);                                               \
            }                                                                              \
        } else if (tn == 2) {                                                              \
            RK_Q_EPI_FIXED(T, ADD, MULT, LSH, RSH,                                         \
                           ((int64_t)1 << ((RSH) - 1)) - 1 + ((x >> (RSH)) & 1))           \
        } else {                                                                           \
            RK_Q_EPI_FIXED(T, ADD, MULT, LSH, RSH,                                         \
                           ((int64_t)1 << ((RSH) - 1)) - (tn & (int64_t)(x < 0)))          \
        }                                                                                  \
    } while (0)

#define RK_Q_EPI_KIND(T)                                                                   \
    do {                                                                                   \
        if (cstep == 0) {                                                                  \
            const int32_t a0 = add[0], m0 = mult[0], l0 = lsh[0], r0 = rsh[0];             \
            RK_Q_EPI_BODY(T, a0, m0, l0, r0);                                              \
        } else {                                                                           \
            RK_Q_EPI_BODY(T, add[i], mult[i], lsh[i], rsh[i]);                             \
        }                                                                                  \
    } while (0)

#if defined(__AVX512BW__) && defined(__AVX512VL__)
/* The common case in vectors: one channel's parameters, no left shift (the multiplier
 * below 1), fixed point, bytes out. (v * mult) of 16 lanes is two 32 x 32 -> 64-bit
 * products (even and odd lanes), rounded as the mode says, shifted, and the low 32 bits
 * kept, as the scalar loop does. */
static void rk_q_epi_vec(const int32_t *acc, int64_t n, int32_t add, int32_t mult, int32_t rsh,
                         const int64_t *e, void *out) {
    const __m512i va = _mm512_set1_epi32(add), vm = _mm512_set1_epi32(mult);
    const __m512i vz = _mm512_set1_epi32((int32_t)e[0]);
    const __m512i vlo = _mm512_set1_epi32((int32_t)e[1]), vhi = _mm512_set1_epi32((int32_t)e[2]);
    const int64_t mode = e[4];
    const __m512i half = _mm512_set1_epi64(((int64_t)1 << (rsh - 1)) - (mode == 2));
    const __m128i cnt = _mm_cvtsi32_si128(rsh);
    const __m512i one = _mm512_set1_epi64(1);
    uint8_t *o = (uint8_t *)out;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        const __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, acc + i), va);
        __m512i x0 = _mm512_mul_epi32(v, vm);
        __m512i x1 = _mm512_mul_epi32(_mm512_srli_epi64(v, 32), vm);
        if (mode == 1) { /* halves away from zero: one less below zero */
            x0 = _mm512_add_epi64(x0, _mm512_srai_epi64(x0, 63));
            x1 = _mm512_add_epi64(x1, _mm512_srai_epi64(x1, 63));
        } else if (mode == 2) { /* halves to even: the quotient's low bit */
            x0 = _mm512_add_epi64(x0, _mm512_and_si512(_mm512_sra_epi64(x0, cnt), one));
            x1 = _mm512_add_epi64(x1, _mm512_and_si512(_mm512_sra_epi64(x1, cnt), one));
        }
        x0 = _mm512_sra_epi64(_mm512_add_epi64(x0, half), cnt);
        x1 = _mm512_sra_epi64(_mm512_add_epi64(x1, half), cnt);
        __m512i r = _mm512_mask_blend_epi32((__mmask16)0xAAAA, x0, _mm512_slli_epi64(x1, 32));
        r = _mm512_add_epi32(r, vz);
        r = _mm512_min_epi32(_mm512_max_epi32(r, vlo), vhi);
        _mm_mask_storeu_epi8(o + i, k, _mm512_cvtepi32_epi8(r));
    }
}
#endif

/* n results of acc into out; channel parameters at add[0] (cstep 0) or add[i] (cstep 1) */
static void rk_q_epi(const int32_t *acc, int64_t n, const int32_t *add, const int32_t *mult,
                     const int32_t *lsh, const int32_t *rsh, int64_t cstep, const int64_t *e,
                     void *out) {
    const int64_t ozp = e[0], tn = e[4];
    const int32_t lo = (int32_t)e[1], hi = (int32_t)e[2];
    const int ident = (int)e[3];
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if (cstep == 0 && !ident && tn <= 2 && e[5] != 2 && lsh[0] == 0 && rsh[0] >= 1 &&
        rsh[0] <= 62) {
        rk_q_epi_vec(acc, n, add[0], mult[0], rsh[0], e, out);
        return;
    }
#endif
    if (e[5] == 0) RK_Q_EPI_KIND(int8_t);
    else if (e[5] == 1) RK_Q_EPI_KIND(uint8_t);
    else RK_Q_EPI_KIND(int32_t);
}

/* the epilogue for the other integer kernels (qnn_dw.c) */
void rk_q_epi_row(const int32_t *acc, int64_t n, const int32_t *add, const int32_t *mult,
                  const int32_t *lsh, const int32_t *rsh, const int64_t *e, void *out) {
    rk_q_epi(acc, n, add, mult, lsh, rsh, 0, e, out);
}

/* -- the 4 x 32 product tile ------------------------------------------------------------ */

#define RK_MR 4
#define RK_NR 32
#define RK_BLOCK (64 * 128) /* RB x CB of a task at most (qnn.py: _RB, _CB) */

#ifdef __AVX512VNNI__
#define RK_TILE(NAME, FIRST, SECOND)                                                       \
    static void NAME(const uint8_t *const *r, const uint8_t *P, int64_t Np, int64_t K4,    \
                     int32_t *tile, int64_t ld) {                                          \
        __m512i c00 = _mm512_setzero_si512(), c01 = _mm512_setzero_si512();                \
        __m512i c10 = _mm512_setzero_si512(), c11 = _mm512_setzero_si512();                \
        __m512i c20 = _mm512_setzero_si512(), c21 = _mm512_setzero_si512();                \
        __m512i c30 = _mm512_setzero_si512(), c31 = _mm512_setzero_si512();                \
        const int64_t step = Np * 4;                                                       \
        for (int64_t k = 0; k < K4; k++) {                                                 \
            const uint8_t *pp = P + k * step;                                              \
            const __m512i b0 = _mm512_loadu_si512((const void *)pp);                       \
            const __m512i b1 = _mm512_loadu_si512((const void *)(pp + 64));                \
            int32_t w0, w1, w2, w3;                                                        \
            memcpy(&w0, r[0] + 4 * k, 4);                                                  \
            memcpy(&w1, r[1] + 4 * k, 4);                                                  \
            memcpy(&w2, r[2] + 4 * k, 4);                                                  \
            memcpy(&w3, r[3] + 4 * k, 4);                                                  \
            __m512i a = _mm512_set1_epi32(w0);                                             \
            c00 = _mm512_dpbusd_epi32(c00, FIRST(a, b0), SECOND(a, b0));                   \
            c01 = _mm512_dpbusd_epi32(c01, FIRST(a, b1), SECOND(a, b1));                   \
            a = _mm512_set1_epi32(w1);                                                     \
            c10 = _mm512_dpbusd_epi32(c10, FIRST(a, b0), SECOND(a, b0));                   \
            c11 = _mm512_dpbusd_epi32(c11, FIRST(a, b1), SECOND(a, b1));                   \
            a = _mm512_set1_epi32(w2);                                                     \
            c20 = _mm512_dpbusd_epi32(c20, FIRST(a, b0), SECOND(a, b0));                   \
            c21 = _mm512_dpbusd_epi32(c21, FIRST(a, b1), SECOND(a, b1));                   \
            a = _mm512_set1_epi32(w3);                                                     \
            c30 = _mm512_dpbusd_epi32(c30, FIRST(a, b0), SECOND(a, b0));                   \
            c31 = _mm512_dpbusd_epi32(c31, FIRST(a, b1), SECOND(a, b1));                   \
        }                                                                                  \
        _mm512_storeu_si512((void *)(tile + 0), c00);                                      \
        _mm512_storeu_si512((void *)(tile + 0 + 16), c01);                                     \
        _mm512_storeu_si512((void *)(tile + 1 * ld), c10);                                     \
        _mm512_storeu_si512((void *)(tile + 1 * ld + 16), c11);                                     \
        _mm512_storeu_si512((void *)(tile + 2 * ld), c20);                                     \
        _mm512_storeu_si512((void *)(tile + 2 * ld + 16), c21);                                     \
        _mm512_storeu_si512((void *)(tile + 3 * ld), c30);                                     \
        _mm512_storeu_si512((void *)(tile + 3 * ld + 16), c31);                                    \
    }
#define RK_ROWS(a, b) (a)
#define RK_COLS(a, b) (b)
/* rows unsigned: vpdpbusd(acc, rows u8, cols s8); rows signed: (acc, cols u8, rows s8) */
RK_TILE(rk_q_tile_ru, RK_ROWS, RK_COLS)
RK_TILE(rk_q_tile_rs, RK_COLS, RK_ROWS)
#else
#define RK_TILE(NAME, RT, CT)                                                              \
    static void NAME(const uint8_t *const *r, const uint8_t *P, int64_t Np, int64_t K4,    \
                     int32_t *tile, int64_t ld) {                                          \
        for (int m = 0; m < RK_MR; m++)                                                    \
            for (int n = 0; n < RK_NR; n++) tile[m * ld + n] = 0;                          \
        for (int64_t k = 0; k < K4; k++) {                                                 \
            const CT *pp = (const CT *)(P + k * Np * 4);                                   \
            for (int m = 0; m < RK_MR; m++) {                                              \
                const RT *rr = (const RT *)(r[m] + 4 * k);                                 \
                const int32_t a0 = rr[0], a1 = rr[1], a2 = rr[2], a3 = rr[3];              \
                int32_t *t = tile + m * ld;                                                \
                for (int n = 0; n < RK_NR; n++)                                            \
                    t[n] += a0 * pp[4 * n] + a1 * pp[4 * n + 1] + a2 * pp[4 * n + 2] +     \
                            a3 * pp[4 * n + 3];                                            \
            }                                                                              \
        }                                                                                  \
    }
RK_TILE(rk_q_tile_ru, uint8_t, int8_t)
RK_TILE(rk_q_tile_rs, int8_t, uint8_t)
#endif

/* -- the fused product ------------------------------------------------------------------ */

/* C[M, N] = R P with zero points, then the epilogue, into out (row stride ldc, items).
 * p: R, P, rsum (int32[M] or 0), csum (int32[N] or 0), zr (int32[M]), zc (int32[N], all
 *    equal when chan_rows), add, mult, lsh, rsh (int32, per channel: rows when chan_rows,
 *    else columns), out
 * s: M, N, K, Kp, Np, ldc, rows_unsigned, chan_rows, RB, CB, ntasks_cols,
 *    ozp, lo, hi, ident, mode, kind */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_q_gemm_job;

static void rk_q_gemm_task(const void *arg, int64_t task) {
    const rk_q_gemm_job *job = (const rk_q_gemm_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t M = s[0], N = s[1], K = s[2], Kp = s[3], Np = s[4], ldc = s[5];
    const int64_t ru = s[6], chan_rows = s[7], RB = s[8], CB = s[9], tcols = s[10];
    const int64_t *e = s + 11;
    const uint8_t *R = (const uint8_t *)p[0], *P = (const uint8_t *)p[1];
    const int32_t *rsum = (const int32_t *)p[2], *csum = (const int32_t *)p[3];
    const int32_t *zr = (const int32_t *)p[4], *zc = (const int32_t *)p[5];
    const int32_t *add = (const int32_t *)p[6], *mult = (const int32_t *)p[7];
    const int32_t *lsh = (const int32_t *)p[8], *rsh = (const int32_t *)p[9];
    const int64_t isz = e[5] == 2 ? 4 : 1;
    uint8_t *out = (uint8_t *)p[10];
    const int64_t m0 = (task / tcols) * RB, n0 = (task % tcols) * CB;
    const int64_t m1 = m0 + RB < M ? m0 + RB : M, n1 = n0 + CB < N ? n0 + CB : N;
    /* the block's sums (rows of CB, at most RK_BLOCK), then per row the zero points'
     * terms and the epilogue over the block's columns at once */
    int32_t blk[RK_BLOCK] __attribute__((aligned(64)));
    for (int64_t nb = n0; nb < n1; nb += RK_NR) {
        for (int64_t mb = m0; mb < m1; mb += RK_MR) {
            const int64_t mm = m1 - mb < RK_MR ? m1 - mb : RK_MR;
            const uint8_t *rows[RK_MR];
            for (int64_t i = 0; i < RK_MR; i++) rows[i] = R + (mb + (i < mm ? i : 0)) * Kp;
            int32_t *t = blk + (mb - m0) * CB + (nb - n0);
            if (mm == RK_MR) {
                if (ru) rk_q_tile_ru(rows, P + nb * 4, Np, Kp / 4, t, CB);
                else rk_q_tile_rs(rows, P + nb * 4, Np, Kp / 4, t, CB);
            } else { /* the last rows: a whole tile aside, its real rows copied */
                int32_t tile[RK_MR * RK_NR] __attribute__((aligned(64)));
                if (ru) rk_q_tile_ru(rows, P + nb * 4, Np, Kp / 4, tile, RK_NR);
                else rk_q_tile_rs(rows, P + nb * 4, Np, Kp / 4, tile, RK_NR);
                for (int64_t i = 0; i < mm; i++)
                    memcpy(t + i * CB, tile + i * RK_NR, RK_NR * sizeof(int32_t));
            }
        }
    }
    const int64_t nn = n1 - n0;
    for (int64_t m = m0; m < m1; m++) {
        int32_t *t = blk + (m - m0) * CB;
        /* S - zm csum[n] - zc[n] rs + K zm zc[n] = S - zm csum[n] + zc[n] d */
        const int32_t zm = zr[m], rs = rsum ? rsum[m] : 0;
        const int32_t d = (int32_t)((uint32_t)K * (uint32_t)zm - (uint32_t)rs);
        const int32_t *zcn = zc + n0;
        if (csum) {
            const int32_t *cs = csum + n0;
            for (int64_t j = 0; j < nn; j++)
                t[j] = (int32_t)((uint32_t)t[j] + (uint32_t)zcn[j] * (uint32_t)d -
                                 (uint32_t)zm * (uint32_t)cs[j]);
        } else if (d != 0 && chan_rows) {
            /* a convolution's columns share one zero point: the term joins the row's
             * epilogue constant instead of a pass of its own */
            const int32_t a = (int32_t)((uint32_t)add[m] + (uint32_t)zcn[0] * (uint32_t)d);
            rk_q_epi(t, nn, &a, mult + m, lsh + m, rsh + m, 0, e, out + (m * ldc + n0) * isz);
            continue;
        } else if (d != 0) {
            for (int64_t j = 0; j < nn; j++)
                t[j] = (int32_t)((uint32_t)t[j] + (uint32_t)zcn[j] * (uint32_t)d);
        }
        uint8_t *o = out + (m * ldc + n0) * isz;
        if (chan_rows) rk_q_epi(t, nn, add + m, mult + m, lsh + m, rsh + m, 0, e, o);
        else rk_q_epi(t, nn, add + n0, mult + n0, lsh + n0, rsh + n0, 1, e, o);
    }
}

void rk_q_gemm_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_gemm_job job = {p, s};
    const int64_t trows = (s[0] + s[8] - 1) / s[8];
    rk_parallel_tasks(rk_q_gemm_task, &job, trows * s[10], nthreads);
}

/* -- packing ---------------------------------------------------------------------------- */

/* Rows: dst[M][Kp] = src[m, k] ^ flip (zero filled past K), rsum[m] = sum of the stored
 * values read as signed (sgn) or unsigned bytes (rsum may be 0).
 * p: src, dst, rsum   s: M, K, ld (src row stride), Kp, flip, sgn */
void rk_q_pack_rows(const uintptr_t *p, const int64_t *s) {
    const uint8_t *src = (const uint8_t *)p[0];
    uint8_t *dst = (uint8_t *)p[1];
    int32_t *rsum = (int32_t *)p[2];
    const int64_t M = s[0], K = s[1], ld = s[2], Kp = s[3], sgn = s[5];
    const uint8_t flip = (uint8_t)s[4];
    for (int64_t m = 0; m < M; m++) {
        const uint8_t *a = src + m * ld;
        uint8_t *d = dst + m * Kp;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            const uint8_t v = a[k] ^ flip;
            d[k] = v;
            sum += sgn ? (int32_t)(int8_t)v : (int32_t)v;
        }
        for (int64_t k = K; k < Kp; k++) d[k] = 0;
        if (rsum) rsum[m] = sum;
    }
}

/* Columns: src[N][K] (row stride ld; kmajor: src[K][N]) packed as dst[Kp / 4][Np][4]
 * (zero filled), values ^ flip; csum[n] their sums (signed or unsigned bytes as sgn says;
 * csum may be 0).  p: src, dst, csum   s: N, K, ld, Kp, Np, flip, sgn, kmajor */
void rk_q_pack_cols(const uintptr_t *p, const int64_t *s) {
    const uint8_t *src = (const uint8_t *)p[0];
    uint8_t *dst = (uint8_t *)p[1];
    int32_t *csum = (int32_t *)p[2];
    const int64_t N = s[0], K = s[1], ld = s[2], Kp = s[3], Np = s[4], sgn = s[6], kmajor = s[7];
    const uint8_t flip = (uint8_t)s[5];
    for (int64_t n = 0; n < Np; n++) {
        int32_t sum = 0;
        for (int64_t k = 0; k < Kp; k++) {
            uint8_t v = 0;
            if (n < N && k < K) {
                v = (kmajor ? src[k * ld + n] : src[n * ld + k]) ^ flip;
                sum += sgn ? (int32_t)(int8_t)v : (int32_t)v;
            }
            dst[(k >> 2) * Np * 4 + n * 4 + (k & 3)] = v;
        }
        if (csum && n < N) csum[n] = sum;
    }
}

/* -- im2col for the products of a convolution ------------------------------------------- */

/* One image x[C][H][W] (bytes) as packed columns P[Kp / 4][Np][4], column = output pixel,
 * k = (c, i, j); values ^ flip. First the image is copied, flipped, into a padded plane
 * per channel (xp[C][Hp][Wp], the border the stored input zero point), so every row of
 * taps is a plain (strided) read; then each output row's four taps of a group are read
 * together and stored as one 32-bit word per pixel. csum per pixel (unsigned bytes) when
 * p[2]. With order 1 (C a multiple of 4) k = (i, j, c) instead: four channels of a tap.
 * 1x1 stride-1 layers without padding read the image itself (k = c).
 * p: x, P, csum, xp (scratch)
 * s: C, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw, Kp, Np, pad, flip, Hp, Wp, order */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_q_col_job;

static void rk_q_pad_task(const void *arg, int64_t c) {
    const rk_q_col_job *job = (const rk_q_col_job *)arg;
    const int64_t *s = job->s;
    const int64_t H = s[1], W = s[2], pt = s[9], pl = s[10], Hp = s[17], Wp = s[18];
    const uint8_t pad = (uint8_t)s[15], flip = (uint8_t)s[16];
    const uint8_t *x = (const uint8_t *)job->p[0] + c * H * W;
    uint8_t *xp = (uint8_t *)job->p[3] + c * Hp * Wp;
    for (int64_t y = 0; y < Hp; y++) {
        uint8_t *d = xp + y * Wp;
        const int64_t iy = y - pt;
        if (iy < 0 || iy >= H) {
            memset(d, pad, (size_t)Wp);
            continue;
        }
        const int64_t left = pl < Wp ? pl : Wp;
        const int64_t n = Wp - left < W ? Wp - left : W;
        const int64_t right = Wp - left - n;
        memset(d, pad, (size_t)left);
        const uint8_t *r = x + iy * W;
        for (int64_t i = 0; i < n; i++) d[left + i] = r[i] ^ flip;
        memset(d + left + n, pad, (size_t)right);
    }
}

static void rk_q_csum_row(const uint8_t *P, int32_t *csum, int64_t Kp, int64_t Np,
                          int64_t OW, int64_t oy) {
    for (int64_t ox = 0; ox < OW; ox++) {
        int32_t sum = 0;
        const uint8_t *d = P + (oy * OW + ox) * 4;
        for (int64_t k4 = 0; k4 < Kp / 4; k4++) {
            const uint8_t *q = d + k4 * Np * 4;
            sum += q[0] + q[1] + q[2] + q[3];
        }
        csum[oy * OW + ox] = sum;
    }
}

static void rk_q_im2col_task(const void *arg, int64_t oy) {
    const rk_q_col_job *job = (const rk_q_col_job *)arg;
    const int64_t *s = job->s;
    uint8_t *P = (uint8_t *)job->p[1];
    int32_t *csum = (int32_t *)job->p[2];
    const uint8_t *xp = (const uint8_t *)job->p[3];
    const int64_t C = s[0], KH = s[3], KW = s[4], OW = s[6];
    const int64_t sh = s[7], sw = s[8], dh = s[11], dw = s[12];
    const int64_t Kp = s[13], Np = s[14], Hp = s[17], Wp = s[18];
    const int64_t K = C * KH * KW;
    static const uint8_t zeros[1]; /* marks a k past K: reads as 0, never dereferenced */
    for (int64_t k4 = 0; k4 < Kp / 4; k4++) {
        const uint8_t *r[4];
        int64_t step = sw;
        for (int q = 0; q < 4; q++) {
            const int64_t k = 4 * k4 + q;
            if (k >= K) {
                r[q] = zeros;
                continue;
            }
            const int64_t c = k / (KH * KW), i = (k / KW) % KH, j = k % KW;
            r[q] = xp + (c * Hp + oy * sh + i * dh) * Wp + j * dw;
        }
        if (4 * k4 + 3 >= K) step = 0; /* a row of zeros: only in the last group */
        uint32_t *d32 = (uint32_t *)(P + k4 * Np * 4 + oy * OW * 4);
        const uint8_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
        if (step == 1) {
            for (int64_t ox = 0; ox < OW; ox++)
                d32[ox] = (uint32_t)r0[ox] | ((uint32_t)r1[ox] << 8) |
                          ((uint32_t)r2[ox] << 16) | ((uint32_t)r3[ox] << 24);
        } else {
            for (int64_t ox = 0; ox < OW; ox++) {
                const int64_t a = ox * sw;
                const uint32_t b0 = r0[a], b1 = r1 == zeros ? 0 : r1[a];
                const uint32_t b2 = r2 == zeros ? 0 : r2[a], b3 = r3 == zeros ? 0 : r3[a];
                d32[ox] = b0 | (b1 << 8) | (b2 << 16) | (b3 << 24);
            }
        }
    }
    if (csum) rk_q_csum_row(P, csum, Kp, Np, OW, oy);
}

/* n pixels of four byte rows (^ flip) as n 32-bit words at d */
static void rk_q_interleave4(const uint8_t *const *r, int64_t n, uint8_t flip, uint8_t *d) {
    int64_t i = 0;
#ifdef __AVX512F__
    const __m128i f = _mm_set1_epi8((char)flip);
    for (; i + 16 <= n; i += 16) {
        const __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[0] + i)), f);
        const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[1] + i)), f);
        const __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[2] + i)), f);
        const __m128i e = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[3] + i)), f);
        const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
        const __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
        __m128i *o = (__m128i *)(d + 4 * i);
        _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, ce0));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, ce0));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, ce1));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, ce1));
    }
#endif
    for (; i < n; i++)
        for (int q = 0; q < 4; q++) d[4 * i + q] = r[q][i] ^ flip;
}

/* as rk_q_interleave4 (no flip), reading every second byte of the rows */
static void rk_q_interleave4_s2(const uint8_t *const *r, int64_t n, uint8_t *d) {
    int64_t i = 0;
#ifdef __AVX512F__
    const __m128i lo = _mm_set1_epi16(0x00FF);
    /* 16 pixels read 31 bytes of a row: the last group stops 16 pixels short of n so
     * the 32-byte loads stay inside the row's padded plane */
    for (; i + 16 < n; i += 16) {
        __m128i v[4];
        for (int q = 0; q < 4; q++) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(r[q] + 2 * i));
            const __m128i b = _mm_loadu_si128((const __m128i *)(r[q] + 2 * i + 16));
            v[q] = _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo));
        }
        const __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]);
        const __m128i ce0 = _mm_unpacklo_epi8(v[2], v[3]), ce1 = _mm_unpackhi_epi8(v[2], v[3]);
        __m128i *o = (__m128i *)(d + 4 * i);
        _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, ce0));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, ce0));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, ce1));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, ce1));
    }
#endif
    for (; i < n; i++)
        for (int q = 0; q < 4; q++) d[4 * i + q] = r[q][2 * i];
}

/* 1x1, stride 1, no padding: the image is already the columns' k-rows; four channel
 * rows interleaved into 32-bit words per pixel, task = one group of four channels */
static void rk_q_pw_task(const void *arg, int64_t k4) {
    const rk_q_col_job *job = (const rk_q_col_job *)arg;
    const int64_t *s = job->s;
    const uint8_t *x = (const uint8_t *)job->p[0];
    uint8_t *P = (uint8_t *)job->p[1];
    const int64_t C = s[0], HW = s[1] * s[2], Np = s[14];
    const uint8_t flip = (uint8_t)s[16];
    uint8_t *d = P + k4 * Np * 4;
    if (4 * k4 + 3 < C) {
        const uint8_t *r[4] = {x + 4 * k4 * HW, x + (4 * k4 + 1) * HW, x + (4 * k4 + 2) * HW,
                               x + (4 * k4 + 3) * HW};
        rk_q_interleave4(r, HW, flip, d);
        return;
    }
    for (int64_t i = 0; i < HW; i++)
        for (int q = 0; q < 4; q++) {
            const int64_t c = 4 * k4 + q;
            d[4 * i + q] = c < C ? x[c * HW + i] ^ flip : 0;
        }
}

/* k = (i, j, c), C a multiple of 4: a group is four channels of one tap, so a row of
 * pixels is four rows of the padded planes interleaved (unit stride: in vectors) */
static void rk_q_taps_task(const void *arg, int64_t oy) {
    const rk_q_col_job *job = (const rk_q_col_job *)arg;
    const int64_t *s = job->s;
    uint8_t *P = (uint8_t *)job->p[1];
    const uint8_t *xp = (const uint8_t *)job->p[3];
    const int64_t C = s[0], KH = s[3], KW = s[4], OW = s[6];
    const int64_t sh = s[7], sw = s[8], dh = s[11], dw = s[12];
    const int64_t Np = s[14], Hp = s[17], Wp = s[18];
    for (int64_t i = 0; i < KH; i++)
        for (int64_t j = 0; j < KW; j++)
            for (int64_t c = 0; c < C; c += 4) {
                const int64_t k4 = ((i * KW + j) * C + c) / 4;
                const uint8_t *r[4];
                for (int q = 0; q < 4; q++)
                    r[q] = xp + ((c + q) * Hp + oy * sh + i * dh) * Wp + j * dw;
                uint8_t *d = P + k4 * Np * 4 + oy * OW * 4;
                if (sw == 1) {
                    rk_q_interleave4(r, OW, 0, d);
                } else if (sw == 2) {
                    rk_q_interleave4_s2(r, OW, d);
                } else {
                    uint32_t *d32 = (uint32_t *)d;
                    for (int64_t ox = 0; ox < OW; ox++) {
                        const int64_t a = ox * sw;
                        d32[ox] = (uint32_t)r[0][a] | ((uint32_t)r[1][a] << 8) |
                                  ((uint32_t)r[2][a] << 16) | ((uint32_t)r[3][a] << 24);
                    }
                }
            }
    if (job->p[2]) rk_q_csum_row(P, (int32_t *)job->p[2], s[13], Np, OW, oy);
}

static void rk_q_csum_task(const void *arg, int64_t oy) {
    const rk_q_col_job *job = (const rk_q_col_job *)arg;
    const int64_t *s = job->s;
    rk_q_csum_row((const uint8_t *)job->p[1], (int32_t *)job->p[2], s[13], s[14], s[6], oy);
}

void rk_q_im2col_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_col_job job = {p, s};
    if (s[3] == 1 && s[4] == 1 && s[7] == 1 && s[8] == 1 && s[9] == 0 && s[10] == 0 &&
        s[5] == s[1] && s[6] == s[2]) {
        rk_parallel_tasks(rk_q_pw_task, &job, s[13] / 4, nthreads);
        if (p[2]) rk_parallel_tasks(rk_q_csum_task, &job, s[5], nthreads);
        return;
    }
    rk_parallel_tasks(rk_q_pad_task, &job, s[0], nthreads);
    rk_parallel_tasks(s[19] ? rk_q_taps_task : rk_q_im2col_task, &job, s[5], nthreads);
}

/* -- elementwise ------------------------------------------------------------------------ */

/* requantize of int32 or (u)int8 x[outer][C][inner] with per-channel parameters (C = 1:
 * per tensor). p: x, out, add, mult, lsh, rsh   s: outer, C, inner, in_kind (0 s8, 1 u8,
 * 2 s32), ozp, lo, hi, ident, mode, kind. Tasks: (outer, channel) rows. */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_q_ew_job;

static void rk_q_requant_task(const void *arg, int64_t t) {
    const rk_q_ew_job *job = (const rk_q_ew_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t C = s[1], inner = s[2], ik = s[3];
    const int64_t *e = s + 4;
    const int64_t c = t % C;
    const int64_t osz = e[5] == 2 ? 4 : 1;
    int32_t buf[512];
    for (int64_t i0 = 0; i0 < inner; i0 += 512) {
        const int64_t n = inner - i0 < 512 ? inner - i0 : 512;
        const int64_t at = t * inner + i0;
        if (ik == 2) {
            memcpy(buf, (const int32_t *)p[0] + at, (size_t)n * 4);
        } else if (ik == 1) {
            const uint8_t *x = (const uint8_t *)p[0] + at;
            for (int64_t i = 0; i < n; i++) buf[i] = x[i];
        } else {
            const int8_t *x = (const int8_t *)p[0] + at;
            for (int64_t i = 0; i < n; i++) buf[i] = x[i];
        }
        rk_q_epi(buf, n, (const int32_t *)p[2] + c, (const int32_t *)p[3] + c,
                 (const int32_t *)p[4] + c, (const int32_t *)p[5] + c, 0, e,
                 (uint8_t *)p[1] + at * osz);
    }
}

void rk_q_requant_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_ew_job job = {p, s};
    rk_parallel_tasks(rk_q_requant_task, &job, s[0] * s[1], nthreads);
}

/* quantize float32 x[outer][C][inner]: clamp(round(x / scale[c]) + zp[c]) in float32
 * (round: 0 halves away from zero, 1 halves up, 2 halves to even).
 * p: x, out, scale (float[C]), zp (float[C])   s: outer, C, inner, rounding, lo, hi, kind */
static void rk_q_quant_task(const void *arg, int64_t t) {
    const rk_q_ew_job *job = (const rk_q_ew_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t C = s[1], inner = s[2], rnd = s[3], kind = s[6];
    const int64_t c = t % C;
    const float sc = ((const float *)p[2])[c], zp = ((const float *)p[3])[c];
    const float lo = (float)s[4], hi = (float)s[5];
    const float *x = (const float *)p[0] + t * inner;
    float buf[512];
    for (int64_t i0 = 0; i0 < inner; i0 += 512) {
        const int64_t n = inner - i0 < 512 ? inner - i0 : 512;
        for (int64_t i = 0; i < n; i++) {
            const float q = x[i0 + i] / sc;
            float r;
            if (rnd == 0) r = roundf(q);
            else if (rnd == 1) r = floorf(q + 0.5f);
            else r = nearbyintf(q);
            float v = r + zp;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            buf[i] = v;
        }
        const int64_t at = t * inner + i0;
        if (kind == 0) {
            int8_t *o = (int8_t *)p[1] + at;
            for (int64_t i = 0; i < n; i++) o[i] = (int8_t)buf[i];
        } else if (kind == 1) {
            uint8_t *o = (uint8_t *)p[1] + at;
            for (int64_t i = 0; i < n; i++) o[i] = (uint8_t)buf[i];
        } else {
            int32_t *o = (int32_t *)p[1] + at;
            for (int64_t i = 0; i < n; i++) o[i] = (int32_t)buf[i];
        }
    }
}

void rk_q_quant_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_ew_job job = {p, s};
    rk_parallel_tasks(rk_q_quant_task, &job, s[0] * s[1], nthreads);
}

/* dequantize (u)int8 x[outer][C][inner]: (float)(x - zp[c]) * scale[c].
 * p: x, out, scale (float[C]), zp (int32[C])   s: outer, C, inner, in_kind (0 s8, 1 u8) */
static void rk_q_dequant_task(const void *arg, int64_t t) {
    const rk_q_ew_job *job = (const rk_q_ew_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t C = s[1], inner = s[2];
    const int64_t c = t % C;
    const float sc = ((const float *)p[2])[c];
    const int32_t zp = ((const int32_t *)p[3])[c];
    float *o = (float *)p[1] + t * inner;
    if (s[3] == 1) {
        const uint8_t *x = (const uint8_t *)p[0] + t * inner;
        for (int64_t i = 0; i < inner; i++) o[i] = (float)((int32_t)x[i] - zp) * sc;
    } else {
        const int8_t *x = (const int8_t *)p[0] + t * inner;
        for (int64_t i = 0; i < inner; i++) o[i] = (float)((int32_t)x[i] - zp) * sc;
    }
}

void rk_q_dequant_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_ew_job job = {p, s};
    rk_parallel_tasks(rk_q_dequant_task, &job, s[0] * s[1], nthreads);
}

/* qnn.add / qnn.mul of two (u)int8 tensors with per-tensor parameters, in rows of L
 * elements: an operand is either full (row r at r * L) or one row broadcast to all.
 * add: each operand moved to the output's parameters (requantize UPWARD to int32, no
 * clamp), summed in int32, the output zero point subtracted once, clamped;
 * mul: (a - lz) * (b - rz) in int32, requantized (scale ls * rs, UPWARD) and clamped.
 * p: a, b, out   s: n, L, a_full, b_full, kind (0 s8, 1 u8), op (0 add, 1 mul), lo, hi,
 *   ozp, lz, rz, then three moves (add, mult, lsh, rsh, how): a's, b's, the product's
 *   (how: 0 requantize, 1 as it is, 2 zero points only). Tasks: rows. */
typedef struct {
    int32_t add, mult, lsh, rsh, how;
} rk_q_mv;

static inline int32_t rk_q_move(int32_t x, rk_q_mv q, int32_t ozp) {
    const int32_t v = (int32_t)((uint32_t)x + (uint32_t)q.add);
    int64_t y = v;
    if (q.how == 0) {
        y = (int64_t)((uint64_t)(int64_t)v << q.lsh) * q.mult;
        y = (y + ((int64_t)1 << (q.rsh - 1))) >> q.rsh;
    }
    return q.how == 1 ? x : (int32_t)((int64_t)(int32_t)y + ozp);
}

#define RK_Q_BIN_LOOP(T)                                                                   \
    do {                                                                                   \
        const T *a = (const T *)p[0] + (s[2] ? i0 : 0);                                    \
        const T *b = (const T *)p[1] + (s[3] ? i0 : 0);                                    \
        T *o = (T *)p[2] + i0;                                                             \
        if (op == 0) {                                                                     \
            for (int64_t i = 0; i < len; i++) {                                            \
                const int32_t x = rk_q_move(a[i], qa, ozp), y = rk_q_move(b[i], qb, ozp);  \
                int32_t v = (int32_t)((int64_t)(int32_t)((uint32_t)x + (uint32_t)y) - ozp);\
                v = v < lo ? lo : v;                                                       \
                o[i] = (T)(v > hi ? hi : v);                                               \
            }                                                                              \
        } else {                                                                           \
            for (int64_t i = 0; i < len; i++) {                                            \
                const int32_t v = (int32_t)(((int32_t)a[i] - lz) * ((int32_t)b[i] - rz));  \
                int32_t r = rk_q_move(v, qm, ozp);                                         \
                r = r < lo ? lo : r;                                                       \
                o[i] = (T)(r > hi ? hi : r);                                               \
            }                                                                              \
        }                                                                                  \
    } while (0)

static rk_q_mv rk_q_mv_at(const int64_t *q) {
    const rk_q_mv m = {(int32_t)q[0], (int32_t)q[1], (int32_t)q[2], (int32_t)q[3], (int32_t)q[4]};
    return m;
}

static void rk_q_binary_task(const void *arg, int64_t r) {
    const rk_q_ew_job *job = (const rk_q_ew_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t n = s[0], L = s[1], kind = s[4], op = s[5];
    const int32_t lo = (int32_t)s[6], hi = (int32_t)s[7], ozp = (int32_t)s[8];
    const int32_t lz = (int32_t)s[9], rz = (int32_t)s[10];
    const rk_q_mv qa = rk_q_mv_at(s + 11), qb = rk_q_mv_at(s + 16), qm = rk_q_mv_at(s + 21);
    const int64_t i0 = r * L, len = i0 + L < n ? L : n - i0;
    if (kind == 1) RK_Q_BIN_LOOP(uint8_t);
    else RK_Q_BIN_LOOP(int8_t);
}

void rk_q_binary_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_q_ew_job job = {p, s};
    rk_parallel_tasks(rk_q_binary_task, &job, (s[0] + s[1] - 1) / s[1], nthreads);
}
