/* The worker pool that runs a launch's blocks: one thread per core, woken by a futex.
 *
 * Compiled into the same library as guard.c (guard.py), so that every worker's share of a
 * launch runs as a guarded call. The launching thread is worker 0. A launch opens a job
 * (several may be open: a lane's each, and job 0 for grids run at once); workers that wake
 * while it is open join it (a count in the job's `entry` word) and take
 * blocks from the launch's shared counter like worker 0 does. When worker 0 has run out of
 * blocks it closes the job and waits only for the workers that joined: a small launch is
 * not held up by the time a sleeping thread takes to wake, and a worker that wakes late
 * never touches a launch that has returned (the job's entry word carries the launch's
 * number, so a late worker cannot join the next one by mistake either). A share's id (its
 * scratch, its fault record) is the order in which its thread joined, not the thread's own
 * number, so a launch of k workers wakes k - 1 sleepers, whichever they are: a grid of 4
 * blocks on a pool of 16 woke all 15 sleepers, and each had to run (on a busy machine,
 * wait for a CPU) to join and leave before the launch could return (38-68 us per tiny grid
 * on the 2-core dev VM against 8 with 2 workers). Idle workers sleep in futex_wait (no
 * polling, no spinning).
 *
 * Launches are queued: a FIFO of records per *lane* (a CUDA stream's; launch_queue.py), which
 * the lane's leader thread runs in order as worker 0 of the pool, so that a launch returns
 * to the program at once (a record holds the worker entry, its LaunchCtx and the worker
 * count; the memory they point to belongs to the Python side until the record has run).
 * Copies and fills of device memory are records too, so that they keep their place among
 * the launches. Lanes run at the same time: each lane's grids are a job of their own, and
 * an idle worker joins whichever open job has room, so work of streams that CUDA does not
 * order never waits behind another stream's grid (with one FIFO for all streams, a kernel
 * spinning until another stream's kernel set a flag never ended: a leader always runs its
 * own grid, even while every worker is in another's). Where CUDA does order two streams
 * (the legacy stream's implicit synchronisation), a WAIT record makes a lane's leader sleep
 * until the other lane has finished the records handed over before it. The first failed
 * grid of any lane has its fault state kept (queue.failure) for the Python side to decode.
 * A lane's grids run in a scratch set of their own (a share's id is per job); streams beyond
 * MAX_LANES share lanes (backend.py's _new_lane), as streams share a GPU's hardware queues.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
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
#define MAX_LANES 32             /* launch queues (CUDA streams' lanes: launch_queue.py) */
#define MAX_JOBS (MAX_LANES + 1) /* grids open at once: a lane's each, and cuport_pool_run's */
#define OPEN 0x80000000ull
#define LIMIT_SHIFT 16           /* entry: shares that may join, bits 16..30 */
#define JOINED 0xFFFFull         /* entry: shares that joined, bits 0..15 */

struct job {
    pthread_mutex_t lock;        /* one grid at a time on this job */
    void *worker;                /* the compiled worker(ctx, id) */
    void *ctx;                   /* the launch's LaunchCtx */
    uint32_t *error_word;        /* ctx's error field (guard.c writes fault kinds there) */
    uint32_t illegal, misaligned;
    uint32_t guarded;
    uint32_t nworkers;           /* ids 0 .. nworkers-1 may run */
    uint32_t number;             /* the job's launches so far */
    uint64_t entry;              /* launch number << 32 | OPEN | (nworkers - 1) << 16 | joined */
    uint32_t done;               /* joined workers that finished */
    struct fault *faults;        /* per worker */
    uint64_t cpu_ns;             /* the shares' thread CPU time, when pool.timing */
} __attribute__((aligned(64)));

static struct {
    pthread_mutex_t lock;        /* pool start, jobs handed out */
    uint32_t started;            /* worker threads running (ids 1 .. started) */
    uint32_t epoch;              /* bumped by every launch (the futex workers sleep on) */
    uint32_t sleepers;           /* workers in futex_wait */
    uint32_t njobs;              /* jobs handed out (0 .. njobs-1: what workers look at) */
    uint64_t idle;               /* cuport_worker_idle calls (the grid log reads them) */
    uint64_t waited;             /* blocks' BLOCKED reports (cuport_worker_waited) */
    uint32_t timing;             /* time each share's thread CPU (the grid log) */
    struct job jobs[MAX_JOBS];   /* 0: cuport_pool_run's; 1 + i: lane i's */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .njobs = 1};

static long futex(uint32_t *addr, int op, uint32_t val)
{
    return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void run_guarded(struct job *j, uint32_t id);

static void run_share(struct job *j, uint32_t id)
{
    if (!__atomic_load_n(&pool.timing, __ATOMIC_RELAXED)) {
        run_guarded(j, id);
        return;
    }
    uint64_t t0 = thread_cpu_ns();
    run_guarded(j, id);
    __atomic_add_fetch(&j->cpu_ns, thread_cpu_ns() - t0, __ATOMIC_RELAXED);
}

static void run_guarded(struct job *j, uint32_t id)
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

/* A worker's block waits for other blocks (all its warps at spin loops' yield points) and
 * the worker starts no other (compiler.py's worker): what it waits for is another worker's
 * block, and where workers outnumber the free cores that worker may be waiting for this
 * CPU. */
void cuport_worker_idle(void)
{
    __atomic_add_fetch(&pool.idle, 1, __ATOMIC_RELAXED);
    sched_yield();
}

/* A worker's share ends: how often its blocks reported that they wait for other blocks. */
void cuport_worker_waited(uint64_t n)
{
    if (n)
        __atomic_add_fetch(&pool.waited, n, __ATOMIC_RELAXED);
}

/* Join an open job with room and run a share of it: 1 if one ran. `last`: the entry this
 * worker last joined (a share ends once its grid has no block left to take, so joining that
 * launch again would find nothing to do). */
static int join_any(uint64_t *last, struct job **last_job)
{
    uint32_t n = __atomic_load_n(&pool.njobs, __ATOMIC_ACQUIRE);
    for (uint32_t k = 0; k < n; k++) {
        struct job *j = &pool.jobs[k];
        uint64_t e = __atomic_load_n(&j->entry, __ATOMIC_ACQUIRE);
        while ((e & OPEN) && (e & JOINED) < ((e >> LIMIT_SHIFT) & 0x7FFF)
               && !(j == *last_job && (e >> 32) == (*last >> 32))) {
            if (__atomic_compare_exchange_n(&j->entry, &e, e + 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                *last = e;
                *last_job = j;
                /* the share's id is the order of joining (joined, so the fields are this
                 * launch's until it has told `done`) */
                run_share(j, (uint32_t)(e & JOINED) + 1);
                __atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE);
                futex(&j->done, FUTEX_WAKE_PRIVATE, 1);
                return 1;
            }
        }
    }
    return 0;
}

static void *worker_main(void *arg)
{
    (void)arg;
    uint64_t last = 0;
    struct job *last_job = NULL;
    for (;;) {
        uint32_t seen = __atomic_load_n(&pool.epoch, __ATOMIC_SEQ_CST);
        if (join_any(&last, &last_job))
            continue;
        __atomic_add_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pool.epoch, __ATOMIC_SEQ_CST) == seen)
            futex(&pool.epoch, FUTEX_WAIT_PRIVATE, seen);
        __atomic_sub_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
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
        __atomic_add_fetch(&pool.started, 1, __ATOMIC_RELEASE);
    }
    int have = (int)pool.started + 1;
    pthread_mutex_unlock(&pool.lock);
    return have;
}

/* Run worker(ctx, id) as job j for ids 0 .. nworkers-1 (0 on this thread) and return when
 * every share that started has finished: how many did (this thread's included), and where
 * `cpu` is given and pool.timing set, their thread CPU time. `guarded`: through guard.c,
 * faults into faults[id]. Grids of other jobs run meanwhile; idle workers join whichever
 * open job has room. */
static uint32_t pool_run(struct job *j, void *worker, void *ctx, uint32_t nworkers,
                         uint32_t guarded, uint32_t *error_word, uint32_t illegal,
                         uint32_t misaligned, struct fault *faults, uint64_t *cpu)
{
    pthread_mutex_lock(&j->lock);
    uint32_t have = __atomic_load_n(&pool.started, __ATOMIC_ACQUIRE) + 1;
    if (nworkers > have)
        nworkers = have;
    j->worker = worker;
    j->ctx = ctx;
    j->error_word = error_word;
    j->illegal = illegal;
    j->misaligned = misaligned;
    j->guarded = guarded;
    j->faults = faults;
    j->nworkers = nworkers;
    __atomic_store_n(&j->done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&j->cpu_ns, 0, __ATOMIC_RELAXED);
    uint32_t number = ++j->number;
    if (nworkers > 1) {
        __atomic_store_n(&j->entry, ((uint64_t)number << 32) | OPEN
                         | ((uint64_t)(nworkers - 1) << LIMIT_SHIFT), __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&pool.epoch, 1, __ATOMIC_SEQ_CST);
        /* as many as may join (workers awake meanwhile join without a wake) */
        if (__atomic_load_n(&pool.sleepers, __ATOMIC_SEQ_CST))
            futex(&pool.epoch, FUTEX_WAKE_PRIVATE, (uint32_t)nworkers - 1);
    }
    run_share(j, 0);
    uint32_t joined = 0;
    if (nworkers > 1) {
        /* close the job: workers that have not joined yet stay out of it */
        uint64_t e = __atomic_load_n(&j->entry, __ATOMIC_ACQUIRE);
        while (!__atomic_compare_exchange_n(&j->entry, &e, e & ~OPEN, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            ;
        joined = (uint32_t)(e & JOINED);
    }
    for (;;) {
        uint32_t d = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
        if (d >= joined)
            break;
        futex(&j->done, FUTEX_WAIT_PRIVATE, d);
    }
    if (cpu)
        *cpu = __atomic_load_n(&j->cpu_ns, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&j->lock);
    return joined + 1;
}

/* A grid run at once on the calling thread (backend.py's CpuBackend.run), as job 0. */
void cuport_pool_run(void *worker, void *ctx, uint32_t nworkers, uint32_t guarded,
                     uint32_t *error_word, uint32_t illegal, uint32_t misaligned,
                     struct fault *faults)
{
    pool_run(&pool.jobs[0], worker, ctx, nworkers, guarded, error_word, illegal, misaligned,
             faults, NULL);
}

/* ---------------------------------------------------------------- the launch queues */

#define QUEUE_CAP 256            /* records in flight per lane (a power of two; SLOTS) */

enum { REC_KERNEL = 0, REC_COPY = 1, REC_FILL = 2, REC_WAIT = 3 };

struct record {
    uint32_t kind;               /* REC_* */
    uint32_t nworkers;           /* kernel: workers; fill: element width (1, 2, 4); wait: the
                                    lane waited for */
    uint32_t hooked;             /* kernel: call the hook before and after the grid */
    uint32_t pad;
    void *worker;                /* kernel: the compiled worker; copy: the source */
    void *ctx;                   /* kernel: the LaunchCtx; copy, fill: the destination */
    uint64_t count;              /* copy: bytes; fill: elements; wait: that lane's records */
    uint64_t value;              /* fill: the element; kernel: its name (char *) or 0 */
};

/* The first failed grid since the Python side last took it (cuport_queue_take_failure). */
struct failure {
    uint64_t seq;                /* the record's number + 1; 0: none */
    uint32_t error, error_line;  /* LaunchCtx's error fields, copied (its slot may be reused) */
    uint64_t error_block;
    uint32_t lane, pad;          /* the lane whose record it is */
    struct fault fault;          /* the first faulting worker's state (sig 0: no fault) */
};

typedef void (*queue_hook)(uint32_t lane, uint64_t seq, uint32_t phase);

/* A FIFO of records and the leader thread that runs them in order (a CUDA stream's lane). */
struct lane {
    uint64_t head;               /* records handed over (Python reads these two: {head, tail}) */
    uint64_t tail;               /* records finished */
    uint32_t head_gen, tail_gen; /* futex words: bumped with head and tail */
    uint32_t leader_sleeping, waiters;
    uint32_t started, index;
    uint64_t cancel_below;       /* records below this number are failed, not run */
    uint32_t cancel_kind, pad;
    struct job *job;             /* the pool's job its grids run as */
    struct fault *faults;        /* per worker, for its grids */
    pthread_mutex_t push_lock;
    struct record ring[QUEUE_CAP];
};

static struct {
    pthread_mutex_t lock;        /* set-up, lanes opened, cancellation */
    pthread_mutex_t failure_lock;
    uint32_t nlanes;             /* lanes opened: 0 .. nlanes-1 */
    uint32_t failures;           /* failed grids so far (the Python side polls it) */
    uint32_t error_offset, illegal, misaligned;
    uint32_t grid_offset, nblocks_offset;  /* LaunchCtx's grid_x and nblocks (the grid log) */
    queue_hook hook;
    struct failure failure;
    FILE *grid_log;              /* CUPORT_GRID_LOG: a line per grid run (log_grid) */
    struct lane lanes[MAX_LANES];
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .failure_lock = PTHREAD_MUTEX_INITIALIZER};

void cuport_guard_install(void);

static void fill_elements(void *dst, uint64_t value, uint64_t n, uint32_t width)
{
    if (width == 1) {
        memset(dst, (int)(value & 0xFF), n);
    } else if (width == 2) {
        uint16_t *p = dst, v = (uint16_t)value;
        for (uint64_t i = 0; i < n; i++)
            p[i] = v;
    } else {
        uint32_t *p = dst, v = (uint32_t)value;
        for (uint64_t i = 0; i < n; i++)
            p[i] = v;
    }
}

static void note_failure(struct lane *l, struct record *r, uint64_t seq, uint32_t *err)
{
    uint32_t n = r->nworkers;
    struct failure *f = &queue.failure;
    pthread_mutex_lock(&queue.failure_lock);  /* (leaders of other lanes fail meanwhile) */
    if (__atomic_load_n(&f->seq, __ATOMIC_ACQUIRE) == 0) {
        uint32_t *words = (uint32_t *)r->ctx;
        f->error = *err;
        f->error_line = words[queue.error_offset / 4 + 1];
        memcpy(&f->error_block, (char *)r->ctx + queue.error_offset + 8, 8);
        f->lane = l->index;
        f->fault.sig = 0;
        for (uint32_t i = 0; i < n; i++)
            if (l->faults[i].sig) {
                memcpy(&f->fault, &l->faults[i], sizeof f->fault);
                break;
            }
        __atomic_store_n(&f->seq, seq + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&queue.failure_lock);
    for (uint32_t i = 0; i < n; i++)
        l->faults[i].sig = 0;
    __atomic_add_fetch(&queue.failures, 1, __ATOMIC_RELEASE);
}

static uint64_t now_ns(void);

/* CUPORT_GRID_LOG=FILE (where the kernel time of a program goes, bench/grid_log.py): per grid,
 * the record's number, the kernel, its grid and block count, the workers asked for and
 * those that took part, its wall time, the CPU time of the workers' shares, the times a
 * block reported that it waits for other blocks and the times a worker gave its CPU away
 * (cuport_worker_idle), tab-separated (nanoseconds). The last two count the whole pool's:
 * grids of other lanes that ran meanwhile add theirs. */
static void log_grid(struct record *r, uint64_t seq, uint32_t ran, uint64_t wall,
                     uint64_t cpu, uint64_t waited, uint64_t idle)
{
    uint32_t w[3];
    uint64_t nblocks;
    memcpy(w, (const char *)r->ctx + queue.grid_offset, sizeof w);
    memcpy(&nblocks, (const char *)r->ctx + queue.nblocks_offset, 8);
    fprintf(queue.grid_log, "%llu\t%s\t%u,%u,%u\t%llu\t%u\t%u\t%llu\t%llu\t%llu\t%llu\n",
            (unsigned long long)seq, r->value ? (const char *)(uintptr_t)r->value : "?",
            w[0], w[1], w[2], (unsigned long long)nblocks, r->nworkers, ran,
            (unsigned long long)wall, (unsigned long long)cpu, (unsigned long long)waited,
            (unsigned long long)idle);
    fflush(queue.grid_log);
}

/* The leader's idle states (lane.leader_sleeping). Once its FIFO is empty a leader waits
 * SPIN_NS for more, yielding its CPU at every turn (spin_until), then sleeps in futex_wait
 * until a push wakes it: a program that keeps launching hands its next record over within
 * that time and its push needs no futex wake (a system call, and on a busy machine often the
 * launching thread's CPU to the woken leader), while an idle leader neither polls nor spins,
 * and a record pushed to a sleeping one starts at once. */
enum { AWAKE = 0, ASLEEP = 2 };
#define SPIN_NS 50000
#define WAIT_SPIN_NS 20000  /* cuport_queue_wait's, for the last record */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait up to `ns` for *word to differ from `seen`, yielding the CPU meanwhile (anything
 * runnable on this core goes first): 1 if it changed. */
static int spin_until(const uint64_t *word, uint64_t seen, uint64_t ns)
{
    uint64_t deadline = 0;
    for (uint32_t i = 0;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
            return 1;
        if ((i & 7) == 0) {
            uint64_t t = now_ns();
            if (deadline == 0)
                deadline = t + ns;
            else if (t >= deadline)
                return 0;
        }
        sched_yield();
    }
}

/* Until lane l has finished `count` records, or `timeout` (NULL: none) has passed: its
 * records finished so far. */
static uint64_t wait_tail(struct lane *l, uint64_t count, const struct timespec *timeout)
{
    uint64_t t = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE);
    if (t >= count)
        return t;
    /* a short grid is done within microseconds: waiting for it without sleeping spares the
     * leader a futex wake and this thread a wake-up */
    if (count - t == 1 && spin_until(&l->tail, t, WAIT_SPIN_NS)
            && __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE) >= count)
        return __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t g = __atomic_load_n(&l->tail_gen, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&l->waiters, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&l->tail, __ATOMIC_SEQ_CST) < count)
            syscall(SYS_futex, &l->tail_gen, FUTEX_WAIT_PRIVATE, g, timeout, NULL, 0);
        __atomic_sub_fetch(&l->waiters, 1, __ATOMIC_SEQ_CST);
        t = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE);
        if (t >= count || timeout)
            return t;
    }
}

static void run_record(struct lane *l, struct record *r, uint64_t seq)
{
    if (r->kind == REC_COPY) {
        memmove(r->ctx, r->worker, r->count);
        return;
    }
    if (r->kind == REC_FILL) {
        fill_elements(r->ctx, r->value, r->count, r->nworkers);
        return;
    }
    if (r->kind == REC_WAIT) {  /* another lane's work that CUDA orders this lane's after */
        wait_tail(&queue.lanes[r->nworkers], r->count, NULL);
        return;
    }
    uint32_t *err = (uint32_t *)((char *)r->ctx + queue.error_offset);
    if (seq < __atomic_load_n(&l->cancel_below, __ATOMIC_ACQUIRE)) {
        *err = l->cancel_kind;
        note_failure(l, r, seq, err);
        return;
    }
    if (r->hooked)
        queue.hook(l->index, seq, 0);
    cuport_guard_install();
    uint64_t t0 = 0, i0 = 0, w0 = 0, cpu = 0;
    if (queue.grid_log) {
        t0 = now_ns();
        i0 = __atomic_load_n(&pool.idle, __ATOMIC_RELAXED);
        w0 = __atomic_load_n(&pool.waited, __ATOMIC_RELAXED);
    }
    uint32_t ran = pool_run(l->job, r->worker, r->ctx, r->nworkers, 1, err, queue.illegal,
                            queue.misaligned, l->faults, queue.grid_log ? &cpu : NULL);
    if (queue.grid_log)
        log_grid(r, seq, ran, now_ns() - t0, cpu,
                 __atomic_load_n(&pool.waited, __ATOMIC_RELAXED) - w0,
                 __atomic_load_n(&pool.idle, __ATOMIC_RELAXED) - i0);
    if (__atomic_load_n(err, __ATOMIC_ACQUIRE))
        note_failure(l, r, seq, err);
    if (r->hooked)
        queue.hook(l->index, seq, 1);
}

static void *leader_main(void *arg)
{
    struct lane *l = arg;
    for (;;) {
        uint64_t t = l->tail;
        if (__atomic_load_n(&l->head, __ATOMIC_ACQUIRE) == t) {
            if (spin_until(&l->head, t, SPIN_NS))
                continue;
            uint32_t g = __atomic_load_n(&l->head_gen, __ATOMIC_SEQ_CST);
            __atomic_store_n(&l->leader_sleeping, ASLEEP, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&l->head, __ATOMIC_SEQ_CST) == t)
                futex(&l->head_gen, FUTEX_WAIT_PRIVATE, g);
            __atomic_store_n(&l->leader_sleeping, AWAKE, __ATOMIC_SEQ_CST);
            continue;
        }
        run_record(l, &l->ring[t & (QUEUE_CAP - 1)], t);
        __atomic_store_n(&l->tail, t + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&l->tail_gen, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&l->waiters, __ATOMIC_SEQ_CST))
            futex(&l->tail_gen, FUTEX_WAKE_PRIVATE, INT32_MAX);
    }
    return NULL;
}

/* Set up the queues (once): the LaunchCtx error word's offset (and its grid's and block
 * count's, which the grid log reads), the fault kinds, the hook hooked records call. */
void cuport_queue_setup(uint32_t error_offset, uint32_t grid_offset, uint32_t nblocks_offset,
                        uint32_t illegal, uint32_t misaligned, queue_hook hook)
{
    pthread_mutex_lock(&queue.lock);
    queue.error_offset = error_offset;
    queue.grid_offset = grid_offset;
    queue.nblocks_offset = nblocks_offset;
    queue.illegal = illegal;
    queue.misaligned = misaligned;
    queue.hook = hook;
    const char *log = getenv("CUPORT_GRID_LOG");
    if (log && *log && !queue.grid_log) {
        queue.grid_log = fopen(log, "a");
        __atomic_store_n(&pool.timing, queue.grid_log != NULL, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&queue.lock);
}

/* Open lane `index` (< MAX_LANES; once), whose grids record their workers' faults in
 * `faults` (one per worker): the lane, whose first two words are its {head, tail} (u64), or
 * NULL for an index out of range. Its leader thread starts with its first record. */
struct lane *cuport_lane_open(uint32_t index, struct fault *faults)
{
    if (index >= MAX_LANES)
        return NULL;
    pthread_mutex_lock(&queue.lock);
    struct lane *l = &queue.lanes[index];
    if (!l->job) {
        pthread_mutex_init(&l->push_lock, NULL);
        l->index = index;
        l->faults = faults;
        l->job = &pool.jobs[1 + index];
        pthread_mutex_lock(&pool.lock);
        if (pool.njobs < 2 + index)
            __atomic_store_n(&pool.njobs, 2 + index, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&pool.lock);
        if (queue.nlanes < index + 1)
            __atomic_store_n(&queue.nlanes, index + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&queue.lock);
    return l;
}

uint32_t *cuport_queue_failures(void) { return &queue.failures; }
struct failure *cuport_queue_failure(void) { return &queue.failure; }

/* Hand a record over to lane l (copied: the caller's may be reused at once). Returns its
 * number + 1, or 0 when QUEUE_CAP records are unfinished (wait for the oldest and push
 * again) or the leader thread cannot start. */
uint64_t cuport_lane_push(struct lane *l, const struct record *given)
{
    pthread_mutex_lock(&l->push_lock);
    uint64_t h = l->head;
    if (h - __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE) >= QUEUE_CAP) {
        pthread_mutex_unlock(&l->push_lock);
        return 0;
    }
    if (!l->started) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 8u << 20); /* worker 0: device recursion runs here */
        int failed = pthread_create(&t, &a, leader_main, l);
        pthread_attr_destroy(&a);
        if (failed) {
            pthread_mutex_unlock(&l->push_lock);
            return 0;
        }
        pthread_detach(t);
        l->started = 1;
    }
    l->ring[h & (QUEUE_CAP - 1)] = *given;
    __atomic_store_n(&l->head, h + 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&l->head_gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&l->leader_sleeping, __ATOMIC_SEQ_CST) == ASLEEP)
        futex(&l->head_gen, FUTEX_WAKE_PRIVATE, 1);
    pthread_mutex_unlock(&l->push_lock);
    return h + 1;
}

/* Wait until lane l has finished `count` records, or `timeout_ms` have passed, or a signal
 * came (so that the caller, Python, can run its handlers): the records finished so far. */
uint64_t cuport_lane_wait(struct lane *l, uint64_t count, uint32_t timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    return wait_tail(l, count, &ts);
}

/* ^C: the records handed over so far to every lane that have not started fail with `kind`
 * instead of running (the ones running are stopped by guard.c's cuport_cancel). */
void cuport_queue_cancel(uint32_t kind)
{
    pthread_mutex_lock(&queue.lock);
    for (uint32_t i = 0; i < queue.nlanes; i++) {
        struct lane *l = &queue.lanes[i];
        if (!l->job)
            continue;
        pthread_mutex_lock(&l->push_lock);
        l->cancel_kind = kind;
        __atomic_store_n(&l->cancel_below, l->head, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&l->push_lock);
    }
    pthread_mutex_unlock(&queue.lock);
}
