/* relaykit native host kernels: max pooling of bytes (uint8 / int8), NCHW.
 *
 * One task per (image, channel) plane. Each output row is the maximum of its KH input
 * rows taken first, column by column over the padded width (unit stride: vectorised),
 * then the maximum of KW taps along that row at the output stride. Padding and the
 * rows and columns past the input (ceil mode) hold the dtype's minimum, as in the
 * reference kernel, so they never win. int8 is compared as unsigned bytes xor 0x80
 * (the order is kept) and stored back.
 */
#include <stdint.h>
#include <string.h>

typedef void (*rk_task_fn)(const void *job, int64_t task);
void rk_parallel_tasks(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads);

#define RK_QP_WMAX 4096 /* the widest padded row taken (qnn_ops.py checks) */

/* p: x, out
 * s: planes, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw, flip (0x80 for int8),
 *    unused, Wp (the padded width the taps reach, at most RK_QP_WMAX) */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
} rk_qp_job;

static void rk_qp_rowmax(uint8_t *restrict d, const uint8_t *restrict src, int64_t n,
                         uint8_t flip) {
    for (int64_t q = 0; q < n; q++) {
        const uint8_t v = src[q] ^ flip;
        d[q] = v > d[q] ? v : d[q];
    }
}

static void rk_qp_task(const void *arg, int64_t t) {
    const rk_qp_job *job = (const rk_qp_job *)arg;
    const int64_t *s = job->s;
    const int64_t H = s[1], W = s[2], KH = s[3], KW = s[4], OH = s[5], OW = s[6];
    const int64_t sh = s[7], sw = s[8], pt = s[9], pl = s[10], dh = s[11], dw = s[12];
    const uint8_t flip = (uint8_t)s[13];
    const int64_t Wp = s[15];
    const uint8_t *x = (const uint8_t *)job->p[0] + t * H * W;
    uint8_t *o = (uint8_t *)job->p[1] + t * OH * OW;
    uint8_t r[RK_QP_WMAX]; /* the row maxima over the padded width */
    const int64_t left = pl < Wp ? pl : Wp;
    const int64_t n = Wp - left < W ? Wp - left : W;
    for (int64_t oy = 0; oy < OH; oy++) {
        memset(r, 0, (size_t)Wp); /* the minimum (bytes compared unsigned) */
        for (int64_t i = 0; i < KH; i++) {
            const int64_t iy = oy * sh + i * dh - pt;
            if (iy < 0 || iy >= H || n <= 0) continue;
            rk_qp_rowmax(r + left, x + iy * W, n, flip);
        }
        /* the taps reach (OW - 1) * sw + (KW - 1) * dw = Wp - 1 at most */
        uint8_t *restrict orow = o + oy * OW;
        for (int64_t ox = 0; ox < OW; ox++) orow[ox] = r[ox * sw];
        for (int64_t j = 1; j < KW; j++) {
            const uint8_t *restrict rj = r + j * dw;
            for (int64_t ox = 0; ox < OW; ox++) {
                const uint8_t v = rj[ox * sw];
                orow[ox] = v > orow[ox] ? v : orow[ox];
            }
        }
        if (flip)
            for (int64_t ox = 0; ox < OW; ox++) orow[ox] ^= flip;
    }
}

void rk_q_maxpool_run(const uintptr_t *p, const int64_t *s, int64_t nthreads) {
    rk_qp_job job = {p, s};
    rk_parallel_tasks(rk_qp_task, &job, s[0], nthreads);
}
