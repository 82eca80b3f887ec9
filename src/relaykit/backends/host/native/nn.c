/* relaykit native host kernels: erf, softmax and layer normalisation in float32.
 *
 * Plain C11, written so that gcc/clang -O3 vectorise the inner loops (no
 * branches in them: both sides of a choice are computed and one is selected;
 * reductions run in fixed-width lane arrays, since without -ffast-math a
 * compiler may not reorder a single float accumulator). Every function
 * computes one block (elements or rows) of an operator, so the host workers
 * can split an operator into blocks (backend/host_nn.py).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

/* a * b + c, fused where the CPU has FMA (ISO C mode does not contract on its own). */
#ifdef __FMA__
#define MADD(a, b, c) fmaf((a), (b), (c))
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

static inline float bits_to_float(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

static inline int32_t float_to_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

/* exp(x) for x in [-87.3, 88.7] (callers clamp), within 1 ulp (Cephes' expf):
 * x = n ln2 + r, |r| <= ln2/2, exp(r) by a degree-6 polynomial, times 2^n. */
static inline float exp_core(float x) {
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float fn = MADD(x, 1.44269504088896341f, shifter) - shifter;
    float r = MADD(fn, -0.693359375f, x);
    r = MADD(fn, 2.12194440e-4f, r);
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = MADD(p, r, 1.3981999507e-3f);
    p = MADD(p, r, 8.3334519073e-3f);
    p = MADD(p, r, 4.1665795894e-2f);
    p = MADD(p, r, 1.6666665459e-1f);
    p = MADD(p, r, 5.0000001201e-1f);
    p = MADD(p, z, r) + 1.0f;
    int32_t n = (int32_t)fn;
    return p * bits_to_float((n + 127) << 23);
}

/* exp(x) for x <= 0 (0 below -87.3: no denormals); NaN stays NaN. */
static inline float exp_nonpos(float x) {
    float c = x < -87.3f ? -87.3f : x;
    float e = exp_core(c);
    e = x < -87.3f ? 0.0f : e;
    return x != x ? x : e;
}

/* erf in float32 as onnxruntime's MLAS computes it: x P(x^2) for |x| < 0.921875,
 * else sign(x) (1 - exp(Q(|x|))), which is exactly 1 from 3.925 on. P and Q are the
 * least-squares fits of backend/host_kernels.py's NumPy version (within 2.4 ulp). */
static inline float erf_one(float x) {
    float a = fabsf(x);
    float t = a * a;
    float p = -0.0005986208561807871f;
    p = MADD(p, t, 0.004992180969566107f);
    p = MADD(p, t, -0.026765860617160797f);
    p = MADD(p, t, 0.1128179281949997f);
    p = MADD(p, t, -0.37612491846084595f);
    p = MADD(p, t, 1.1283791065216064f);
    float small = p * a;
    float b = a < 3.925f ? a : 3.925f;
    float q = -1.4283556993177626e-05f;
    q = MADD(q, b, 0.000334386044414714f);
    q = MADD(q, b, -0.003557961666956544f);
    q = MADD(q, b, 0.023092646151781082f);
    q = MADD(q, b, -0.10438274592161179f);
    q = MADD(q, b, -0.6376983523368835f);
    q = MADD(q, b, -1.1269067525863647f);
    q = MADD(q, b, -0.0004721708537545055f);
    float big = 1.0f - exp_core(q);
    big = a < 3.925f ? big : 1.0f;
    float r = a < 0.921875f ? small : big;
    r = bits_to_float(float_to_bits(r) | (float_to_bits(x) & (int32_t)0x80000000u));
    return x != x ? x : r;
}

static void erf_apart(const float *restrict x, float *restrict y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = erf_one(x[i]);
}

static void erf_inplace(float *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = erf_one(y[i]);
}

/* y = erf(x); x and y are the same array (the planner runs elementwise operators in
 * place) or do not overlap. */
void rk_erf_f32(const float *x, float *y, ptrdiff_t n) {
    if (x == y)
        erf_inplace(y, n);
    else
        erf_apart(x, y, n);
}

static inline float gelu_one(float v) {
    return 0.5f * v * (1.0f + erf_one(v * 0.70710678118654752f));
}

static void gelu_apart(const float *restrict x, float *restrict y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = gelu_one(x[i]);
}

static void gelu_inplace(float *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = gelu_one(y[i]);
}

/* y = 0.5 x (1 + erf(x / sqrt(2))), the exact GELU; in place or apart, as rk_erf_f32. */
void rk_gelu_erf_f32(const float *x, float *y, ptrdiff_t n) {
    if (x == y)
        gelu_inplace(y, n);
    else
        gelu_apart(x, y, n);
}

/* Softmax of each of `rows` rows of `n` elements: exp(x - max) / sum. In place is allowed
 * (y == x). A row with a NaN is all NaN; with +inf, NaN (as NumPy). */
void rk_softmax_f32(const float *x, float *y, ptrdiff_t rows, ptrdiff_t n) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float lane[LANES];
        for (int j = 0; j < LANES; j++) lane[j] = -INFINITY;
        ptrdiff_t i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int j = 0; j < LANES; j++) lane[j] = xr[i + j] > lane[j] ? xr[i + j] : lane[j];
        float m = -INFINITY;
        for (int j = 0; j < LANES; j++) m = lane[j] > m ? lane[j] : m;
        for (; i < n; i++) m = xr[i] > m ? xr[i] : m;
        for (int j = 0; j < LANES; j++) lane[j] = 0.0f;
        i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int j = 0; j < LANES; j++) {
                float e = exp_nonpos(xr[i + j] - m);
                yr[i + j] = e;
                lane[j] += e;
            }
        float s = 0.0f;
        for (; i < n; i++) {
            float e = exp_nonpos(xr[i] - m);
            yr[i] = e;
            s += e;
        }
        for (int j = 0; j < LANES; j++) s += lane[j];
        for (i = 0; i < n; i++) yr[i] /= s; /* divided, as NumPy: one rounding */
    }
}

/* Layer normalisation of each of `rows` rows of `n` elements:
 * (x - mean) / sqrt(var + eps) * gamma + beta (gamma, beta may be NULL). The statistics
 * are taken of x - x[0] (exact where the row's values are within a factor 2 of each
 * other), and the variance in a second pass over the centred row, so a large mean with a
 * tiny variance loses nothing. In place is allowed (y == x). */
void rk_layer_norm_f32(const float *x, const float *gamma, const float *beta, float *y,
                       ptrdiff_t rows, ptrdiff_t n, float eps) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        const float x0 = xr[0];
        float lane[LANES];
        for (int j = 0; j < LANES; j++) lane[j] = 0.0f;
        ptrdiff_t i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int j = 0; j < LANES; j++) lane[j] += xr[i + j] - x0;
        float s = 0.0f;
        for (; i < n; i++) s += xr[i] - x0;
        for (int j = 0; j < LANES; j++) s += lane[j];
        const float md = s / (float)n; /* mean of x - x0 */
        for (int j = 0; j < LANES; j++) lane[j] = 0.0f;
        i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int j = 0; j < LANES; j++) {
                float d = (xr[i + j] - x0) - md;
                lane[j] += d * d;
            }
        float v = 0.0f;
        for (; i < n; i++) {
            float d = (xr[i] - x0) - md;
            v += d * d;
        }
        for (int j = 0; j < LANES; j++) v += lane[j];
        const float inv = 1.0f / sqrtf(v / (float)n + eps);
        if (gamma && beta)
            for (i = 0; i < n; i++) yr[i] = ((xr[i] - x0) - md) * inv * gamma[i] + beta[i];
        else if (gamma)
            for (i = 0; i < n; i++) yr[i] = ((xr[i] - x0) - md) * inv * gamma[i];
        else if (beta)
            for (i = 0; i < n; i++) yr[i] = ((xr[i] - x0) - md) * inv + beta[i];
        else
            for (i = 0; i < n; i++) yr[i] = ((xr[i] - x0) - md) * inv;
    }
}
