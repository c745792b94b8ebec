/* The worker pool that runs a launch's blocks: one thread per core, woken by a futex.
 *
 * Compiled into the same library as guard.c (guard.py), so that every worker's share of a
 * launch runs as a guarded call. The launching thread is worker 0. A launch opens a job;
 * workers that wake while it is open join it (a count in the job's `entry` word) and take
 * blocks from the launch's shared counter like worker 0 does. When worker 0 has run out of
 * blocks it closes the job and waits only for the workers that joined: a small launch is
 * not held up by the time a sleeping thread takes to wake, and a worker that wakes late
 * never touches a launch that has returned (the job's entry word carries the launch's
 * number, so a late worker cannot join the next one by mistake either). Idle workers
 * sleep in futex_wait (no polling, no spinning); a launch wakes them with one futex_wake
 * when any sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int cuport_guarded_call(void *worker, void *ctx, uint32_t id, volatile uint32_t *error_word,
                        uint32_t illegal, uint32_t misaligned, void **where);
int cuport_fault_state(uint64_t *regs, uint32_t nregs, void *fp, uint32_t cap, uint32_t *fp_size);

/* A worker's fault (faultaddr.py's WorkerFault): guard.c keeps the machine state of a
 * fault per thread, so the worker copies it out for the launching thread to decode. */
#define FAULT_REGS 23    /* x86-64 ucontext gregs */
#define FAULT_FP 8192
struct fault {
    int32_t sig;         /* 0: none */
    int32_t code;        /* si_code */
    uint32_t fp_size, pad;
    void *where;
    uint64_t regs[FAULT_REGS];
    unsigned char fp[FAULT_FP];
};

#define MAX_WORKERS 1024
#define OPEN 0x80000000ull

struct job {
    void *worker;                /* the compiled worker(ctx, id) */
    void *ctx;                   /* the launch's LaunchCtx */
    uint32_t *error_word;        /* ctx's error field (guard.c writes fault kinds there) */
    uint32_t illegal, misaligned;
    uint32_t guarded;
    uint32_t nworkers;           /* ids 0 .. nworkers-1 may run */
    uint64_t entry;              /* launch number << 32 | OPEN | workers that joined */
    uint32_t done;               /* joined workers that finished */
    struct fault *faults;        /* per worker */
};

static struct {
    pthread_mutex_t lock;        /* one launch at a time; pool start */
    uint32_t started;            /* worker threads running (ids 1 .. started) */
    uint32_t epoch;              /* bumped by every launch (the futex workers sleep on) */
    uint32_t sleepers;           /* workers in futex_wait */
    struct job job;              /* the launch in progress (one at a time) */
} pool = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0}};

static long futex(uint32_t *addr, int op, uint32_t val)
{
    return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static void run_share(struct job *j, uint32_t id)
{
    typedef void (*worker_fn)(void *, uint32_t);
    if (j->guarded) {
        void *where = NULL;
        int sig = cuport_guarded_call(j->worker, j->ctx, id, j->error_word, j->illegal,
                                      j->misaligned, &where);
        if (sig) {
            struct fault *f = &j->faults[id];
            f->where = where;
            f->code = cuport_fault_state(f->regs, FAULT_REGS, f->fp, FAULT_FP, &f->fp_size);
            f->sig = sig;
        }
    } else {
        ((worker_fn)j->worker)(j->ctx, id);
    }
}

static void *worker_main(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    uint32_t seen = __atomic_load_n(&pool.epoch, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t now = __atomic_load_n(&pool.epoch, __ATOMIC_ACQUIRE);
        if (now == seen) {
            __atomic_add_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&pool.epoch, __ATOMIC_SEQ_CST) == seen)
                futex(&pool.epoch, FUTEX_WAIT_PRIVATE, seen);
            __atomic_sub_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        seen = now;
        struct job *j = &pool.job;
        /* join launch `seen` while it is open */
        uint64_t e = __atomic_load_n(&j->entry, __ATOMIC_ACQUIRE);
        int joined = 0;
        while ((e >> 32) == seen && (e & OPEN)) {
            if (__atomic_compare_exchange_n(&j->entry, &e, e + 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                joined = 1;
                break;
            }
        }
        if (!joined)
            continue;
        if (id >= j->nworkers) {  /* (joined, so the fields are this launch's) */
            __atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE);
            futex(&j->done, FUTEX_WAKE_PRIVATE, 1);
            continue;
        }
        run_share(j, id);
        __atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE);
        futex(&j->done, FUTEX_WAKE_PRIVATE, 1);
    }
    return NULL;
}

/* Make sure `n` - 1 worker threads run; returns how many the pool has (ids 1 .. result). */
int cuport_pool_start(int n)
{
    pthread_mutex_lock(&pool.lock);
    if (n > MAX_WORKERS)
        n = MAX_WORKERS;
    while ((int)pool.started + 1 < n) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 8u << 20); /* device recursion runs on this stack */
        if (pthread_create(&t, &a, worker_main, (void *)(uintptr_t)(pool.started + 1)) != 0) {
            pthread_attr_destroy(&a);
            break;
        }
        pthread_attr_destroy(&a);
        pthread_detach(t);
        pool.started++;
    }
    int have = (int)pool.started + 1;
    pthread_mutex_unlock(&pool.lock);
    return have;
}

/* Run worker(ctx, id) for ids 0 .. nworkers-1 (0 on this thread) and return when every
 * share that started has finished. `guarded`: through guard.c, faults into faults[id]. */
void cuport_pool_run(void *worker, void *ctx, uint32_t nworkers, uint32_t guarded,
                     uint32_t *error_word, uint32_t illegal, uint32_t misaligned,
                     struct fault *faults)
{
    pthread_mutex_lock(&pool.lock);
    struct job *j = &pool.job;
    if (nworkers > pool.started + 1)
        nworkers = pool.started + 1;
    j->worker = worker;
    j->ctx = ctx;
    j->error_word = error_word;
    j->illegal = illegal;
    j->misaligned = misaligned;
    j->guarded = guarded;
    j->faults = faults;
    j->nworkers = nworkers;
    __atomic_store_n(&j->done, 0, __ATOMIC_RELAXED);
    uint32_t number = pool.epoch + 1;
    if (nworkers > 1) {
        __atomic_store_n(&j->entry, ((uint64_t)number << 32) | OPEN, __ATOMIC_RELEASE);
        __atomic_store_n(&pool.epoch, number, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pool.sleepers, __ATOMIC_SEQ_CST))
            futex(&pool.epoch, FUTEX_WAKE_PRIVATE, INT32_MAX);
    }
    run_share(j, 0);
    uint32_t joined = 0;
    if (nworkers > 1) {
        /* close the job: workers that have not joined yet stay out of it */
        uint64_t e = __atomic_load_n(&j->entry, __ATOMIC_ACQUIRE);
        while (!__atomic_compare_exchange_n(&j->entry, &e, e & ~OPEN, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            ;
        joined = (uint32_t)(e & 0x7FFFFFFFu);
    }
    for (;;) {
        uint32_t d = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
        if (d >= joined)
            break;
        futex(&j->done, FUTEX_WAIT_PRIVATE, d);
    }
    pthread_mutex_unlock(&pool.lock);
}
