/* relaykit native host kernels: a small thread pool, and the parallel steps that use it.
 *
 * A fused step (a depthwise convolution, or a GEMM with its epilogue) is one ctypes
 * call: the calling thread and up to nthreads - 1 pool threads take its blocks in turn
 * (the next block not yet started, under a mutex), as onnxruntime's intra-op pool does.
 * A late pool thread delays nothing (the caller takes the blocks it has not started),
 * and the blocks depend on the shapes only, so results do not depend on the thread
 * count. Idle pool threads spin briefly (a step follows another within microseconds),
 * then sleep on a condition variable.
 *
 * GEMMs call the BLAS NumPy uses (its cblas_sgemm, found by the Python side; relaykit's
 * thread policy keeps it single-threaded) through a function pointer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RK_PAUSE() _mm_pause()
#else
#define RK_PAUSE() ((void)0)
#endif

void rk_dw_conv2d_f32(const uintptr_t *p, const int64_t *s, const float *f);
void rk_epilogue_f32(const uintptr_t *p, const int64_t *s, const float *f);

#define RK_MAX_WORKERS 63
/* How long an idle pool thread (or a caller waiting for the last block) spins before
 * sleeping, in nanoseconds: about one model run of small steps, as onnxruntime's pool
 * spins between the operators of a run (on a shared 2-core machine, MobileNetV2's
 * quarter-best run took 5.0-5.6 ms with 1 ms of spinning, 7.3-9.4 ms with 50 us). Other
 * engines park the spinning threads first (rk_pool_park). */
#define RK_SPIN_NS 1000000

static inline int64_t rk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Bumped by rk_pool_park: idle pool threads stop spinning and sleep. */
static atomic_uint_fast64_t rk_park;

/* Let idle pool threads sleep now instead of spinning: other threads are about to need
 * the cores (the Python host workers of relaykit.runtime.threads call this). */
void rk_pool_park(void) { atomic_fetch_add(&rk_park, 1); }

/* Spin until *word != value (returns 1), or RK_SPIN_NS passed or rk_pool_park was called
 * (returns 0). */
static int rk_spin_while_u64(atomic_uint_fast64_t *word, uint64_t value) {
    const int64_t end = rk_now_ns() + RK_SPIN_NS;
    const uint64_t park = atomic_load_explicit(&rk_park, memory_order_relaxed);
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(word, memory_order_acquire) != value) return 1;
            RK_PAUSE();
        }
        if (atomic_load_explicit(&rk_park, memory_order_relaxed) != park) return 0;
        if (rk_now_ns() > end) return 0;
    }
}

/* Spin until *word >= value (returns 1) or RK_SPIN_NS passed (returns 0). */
static int rk_spin_below_i64(atomic_int_fast64_t *word, int64_t value) {
    const int64_t end = rk_now_ns() + RK_SPIN_NS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(word, memory_order_acquire) >= value) return 1;
            RK_PAUSE();
        }
        if (rk_now_ns() > end) return 0;
    }
}

typedef void (*rk_task_fn)(const void *job, int64_t task);

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, finished;
    pthread_mutex_t submit; /* one job at a time; a second caller runs its blocks alone */
    pthread_t threads[RK_MAX_WORKERS];
    int started;
    atomic_uint_fast64_t gen; /* job generation: a new job wakes the pool */
    /* the job (written under mu) */
    rk_task_fn fn;
    const void *job;
    int64_t ntasks, next, helpers;
    atomic_int_fast64_t done;
    int caller_waiting;
} rk_pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .finished = PTHREAD_COND_INITIALIZER,
    .submit = PTHREAD_MUTEX_INITIALIZER,
};

/* Blocks run by pool threads since the library was loaded (tests, profiling). */
static atomic_int_fast64_t rk_worker_blocks;

int64_t rk_pool_worker_blocks(void) { return atomic_load(&rk_worker_blocks); }

/* Take and run blocks of generation g until none is left; returns blocks run. */
static void rk_drain(uint64_t g, int64_t *ran) {
    for (;;) {
        pthread_mutex_lock(&rk_pool.mu);
        if (atomic_load(&rk_pool.gen) != g || rk_pool.next >= rk_pool.ntasks) {
            pthread_mutex_unlock(&rk_pool.mu);
            return;
        }
        const int64_t i = rk_pool.next++;
        rk_task_fn fn = rk_pool.fn;
        const void *job = rk_pool.job;
        const int64_t n = rk_pool.ntasks;
        pthread_mutex_unlock(&rk_pool.mu);
        fn(job, i);
        (*ran)++;
        if (atomic_fetch_add(&rk_pool.done, 1) + 1 == n) {
            pthread_mutex_lock(&rk_pool.mu);
            if (rk_pool.caller_waiting) pthread_cond_signal(&rk_pool.finished);
            pthread_mutex_unlock(&rk_pool.mu);
        }
    }
}

static void *rk_worker(void *arg) {
    const int64_t index = (int64_t)(intptr_t)arg;
    uint64_t seen = atomic_load(&rk_pool.gen);
    for (;;) {
        rk_spin_while_u64(&rk_pool.gen, seen);
        pthread_mutex_lock(&rk_pool.mu);
        while (atomic_load(&rk_pool.gen) == seen) pthread_cond_wait(&rk_pool.wake, &rk_pool.mu);
        seen = atomic_load(&rk_pool.gen);
        const int wanted = index < rk_pool.helpers;
        pthread_mutex_unlock(&rk_pool.mu);
        if (wanted) {
            int64_t ran = 0;
            rk_drain(seen, &ran);
            atomic_fetch_add(&rk_worker_blocks, ran);
        }
    }
    return NULL;
}

/* A child process made by fork() has none of the pool threads (and maybe a lock a
 * thread of the parent held): it starts a new pool. */
static void rk_pool_atfork_child(void) {
    pthread_mutex_init(&rk_pool.mu, NULL);
    pthread_mutex_init(&rk_pool.submit, NULL);
    pthread_cond_init(&rk_pool.wake, NULL);
    pthread_cond_init(&rk_pool.finished, NULL);
    rk_pool.started = 0;
    rk_pool.caller_waiting = 0;
}

static pthread_once_t rk_pool_once = PTHREAD_ONCE_INIT;

static void rk_pool_init(void) { pthread_atfork(NULL, NULL, rk_pool_atfork_child); }

/* Run fn(job, 0..ntasks-1) on the calling thread and nthreads - 1 pool threads. */
static void rk_parallel(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads) {
    pthread_once(&rk_pool_once, rk_pool_init);
    if (nthreads > RK_MAX_WORKERS + 1) nthreads = RK_MAX_WORKERS + 1;
    if (nthreads > ntasks) nthreads = ntasks;
    if (nthreads < 2 || pthread_mutex_trylock(&rk_pool.submit) != 0) {
        for (int64_t i = 0; i < ntasks; i++) fn(job, i);
        return;
    }
    pthread_mutex_lock(&rk_pool.mu);
    while (rk_pool.started < nthreads - 1) {
        if (pthread_create(&rk_pool.threads[rk_pool.started], NULL, rk_worker,
                           (void *)(intptr_t)rk_pool.started) != 0)
            break;
        rk_pool.started++;
    }
    rk_pool.fn = fn;
    rk_pool.job = job;
    rk_pool.ntasks = ntasks;
    rk_pool.next = 0;
    rk_pool.helpers = nthreads - 1;
    atomic_store(&rk_pool.done, 0);
    const uint64_t g = atomic_fetch_add(&rk_pool.gen, 1) + 1;
    pthread_cond_broadcast(&rk_pool.wake);
    pthread_mutex_unlock(&rk_pool.mu);

    int64_t ran = 0;
    rk_drain(g, &ran);
    if (!rk_spin_below_i64(&rk_pool.done, ntasks)) {
        pthread_mutex_lock(&rk_pool.mu);
        rk_pool.caller_waiting = 1;
        while (atomic_load(&rk_pool.done) < ntasks) pthread_cond_wait(&rk_pool.finished, &rk_pool.mu);
        rk_pool.caller_waiting = 0;
        pthread_mutex_unlock(&rk_pool.mu);
    }
    pthread_mutex_unlock(&rk_pool.submit);
}

/* -- depthwise convolution over channel blocks ------------------------------------------ */

/* p, s, f as for rk_dw_conv2d_f32, except: p[0], p[3], p[4] are image 0's x, res, y and
 * p[5] holds nblocks scratch areas of s[15] floats each; s[0] = images, s[1] = channel
 * blocks, s[16..] their bounds (s[1] + 1 values); s[17 + s[1]] and s[18 + s[1]] the
 * sizes (in floats) of one image of x and of y. Block b is channels [s[16 + b],
 * s[17 + b]) of every image, in its own scratch area. */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
    const float *f;
} rk_dw_job;

static void rk_dw_task(const void *arg, int64_t b) {
    const rk_dw_job *job = (const rk_dw_job *)arg;
    const int64_t *s = job->s;
    const int64_t blocks = s[1];
    const int64_t x_img = s[17 + blocks], y_img = s[18 + blocks];
    uintptr_t p[6];
    int64_t sz[15];
    for (int k = 0; k < 15; k++) sz[k] = s[k];
    sz[0] = s[16 + b];
    sz[1] = s[17 + b];
    for (int64_t n = 0; n < s[0]; n++) {
        for (int k = 0; k < 6; k++) p[k] = job->p[k];
        p[0] += (uintptr_t)(n * x_img * 4);
        if (p[3]) p[3] += (uintptr_t)(n * y_img * 4);
        p[4] += (uintptr_t)(n * y_img * 4);
        p[5] += (uintptr_t)(b * s[15] * 4);
        rk_dw_conv2d_f32(p, sz, job->f);
    }
}

void rk_dw_conv2d_run(const uintptr_t *p, const int64_t *s, const float *f, int64_t nthreads) {
    rk_dw_job job = {p, s, f};
    rk_parallel(rk_dw_task, &job, s[1], nthreads);
}

/* -- GEMM blocks with their epilogue ---------------------------------------------------- */

typedef void (*rk_sgemm32)(int, int, int, int32_t, int32_t, int32_t, float, const float *,
                           int32_t, const float *, int32_t, float, float *, int32_t);
typedef void (*rk_sgemm64)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                           int64_t, const float *, int64_t, float, float *, int64_t);

/* C[M, N] = op(A) op(B) (row major), cut into blocks of rows or of columns; after each
 * block, the epilogue on it (when p[3] != 0).
 * p: sgemm, A, B, C, brow, bcol, res, y (0: no epilogue when y is 0)
 * s: ilp64, transA, transB, M, N, K, lda, ldb, ldc, ldr, ldy, by_rows, nblocks,
 *    bounds (nblocks + 1)
 * f: lo, hi
 */
typedef struct {
    const uintptr_t *p;
    const int64_t *s;
    const float *f;
} rk_gemm_job;

static void rk_gemm_task(const void *arg, int64_t task) {
    const rk_gemm_job *job = (const rk_gemm_job *)arg;
    const uintptr_t *p = job->p;
    const int64_t *s = job->s;
    const int64_t ta = s[1], tb = s[2], M = s[3], N = s[4], K = s[5];
    const int64_t lda = s[6], ldb = s[7], ldc = s[8], by_rows = s[11];
    const int64_t lo = s[13 + task], hi = s[14 + task];
    const float *A = (const float *)p[1], *B = (const float *)p[2];
    float *C = (float *)p[3];
    int64_t r0 = 0, r1 = M, c0 = 0, c1 = N;
    if (by_rows) {
        r0 = lo;
        r1 = hi;
        A += ta ? lo : lo * lda;
    } else {
        c0 = lo;
        c1 = hi;
        B += tb ? lo * ldb : lo;
    }
    float *Cb = C + r0 * ldc + c0;
    const int64_t m = r1 - r0, n = c1 - c0;
    if (m > 0 && n > 0) {
        if (s[0]) {
            ((rk_sgemm64)p[0])(101, ta ? 112 : 111, tb ? 112 : 111, m, n, K, 1.0f, A, lda, B, ldb,
                               0.0f, Cb, ldc);
        } else {
            ((rk_sgemm32)p[0])(101, ta ? 112 : 111, tb ? 112 : 111, (int32_t)m, (int32_t)n,
                               (int32_t)K, 1.0f, A, (int32_t)lda, B, (int32_t)ldb, 0.0f, Cb,
                               (int32_t)ldc);
        }
    }
    if (p[7] != 0 && m > 0 && n > 0) {
        const uintptr_t ep[5] = {p[3], p[7], p[4], p[5], p[6]};
        const int64_t es[7] = {r0, r1, c0, c1, ldc, s[10], s[9]};
        rk_epilogue_f32(ep, es, job->f);
    }
}

void rk_gemm_run(const uintptr_t *p, const int64_t *s, const float *f, int64_t nthreads) {
    rk_gemm_job job = {p, s, f};
    rk_parallel(rk_gemm_task, &job, s[12], nthreads);
}

/* rk_parallel for the kernels of the other sources (winograd.c). */
void rk_parallel_tasks(rk_task_fn fn, const void *job, int64_t ntasks, int64_t nthreads) {
    rk_parallel(fn, job, ntasks, nthreads);
}
