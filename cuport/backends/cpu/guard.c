/* Memory faults in kernels become launch errors, not a crash of the program.
 *
 * A kernel's generated code dereferences the program's pointers directly (device memory
 * is host memory), so a wild pointer faults in the host process. cuport_guarded_call runs
 * one worker's share of a launch with a jump point set; the SIGSEGV/SIGBUS handler jumps
 * back to it when the fault happened on a thread inside a guarded call, and otherwise
 * passes the signal on to the handler that was there before (Python's faulthandler, the
 * program's own, or the default action). Each worker thread gets an alternate signal
 * stack once, so that a stack overflow in deep device recursion is caught too.
 *
 * The same jump stops a launch that must end before its kernel does (^C in a Python
 * program: the KeyboardInterrupt can only be raised once the launch has returned):
 * cuport_cancel(kind) makes the launch's error `kind` and sends SIGSEGV with pthread_kill
 * to each thread in a guarded call (a SIGSEGV from tgkill, si_code SI_TKILL, is told apart
 * from a fault). cuport_interruptible(kind) puts a SIGINT handler in front of Python's for
 * the length of a launch made on Python's main thread: it runs Python's (KeyboardInterrupt
 * pending) and cancels. Threads inside a host call (printf, malloc: Python code) are never
 * jumped out of, for a fault either: cuport_host_enter/leave mark them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*cuport_worker)(void *ctx, uint32_t id);

static __thread sigjmp_buf *jump_point;
static __thread void *fault_address;
/* The machine state of the last fault on this thread, for a fault whose address the kernel
 * does not give (x86-64: a general-protection fault, e.g. a non-canonical address beyond
 * 2^47, has si_addr 0): faultaddr.py decodes the instruction and computes it. */
static __thread int fault_code;
#if defined(__x86_64__)
#include <cpuid.h>
#include <ucontext.h>
static __thread uint64_t fault_regs[NGREG];
static __thread unsigned char fault_fp[8192];
static __thread uint32_t fault_fp_size;
#endif
static __thread int has_altstack;
static __thread int in_host;
static volatile uint32_t cancel_kind; /* nonzero while a cancellation is under way */
static volatile int cancel_used;       /* a late SIGSEGV from a canceller is no fault */
/* the threads that ever made a guarded call, and which of them are in one now */
#define MAX_GUARDED 4096
static pthread_t guarded_thread[MAX_GUARDED];
static volatile int guarded_active[MAX_GUARDED];
static int guarded_count;
static __thread int my_slot = -1;
static struct sigaction before_interruptible;
static volatile uint32_t interrupt_kind;
#define CANCELLED 0x100
static struct sigaction previous[2]; /* SIGSEGV, SIGBUS */
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_fault(int sig, siginfo_t *info, void *uc)
{
    sigjmp_buf *j = jump_point;
    if (info && info->si_code == SI_TKILL && info->si_pid == getpid() && sig == SIGSEGV &&
        cancel_used) {
        if (j && !in_host && cancel_kind) {
            jump_point = NULL;
            siglongjmp(*j, CANCELLED);
        }
        return; /* between blocks, in a host call or done: the canceller asks again */
    }
    if (j && !in_host) {
        jump_point = NULL;
        fault_address = info ? info->si_addr : NULL;
        fault_code = info ? info->si_code : 0;
#if defined(__x86_64__)
        ucontext_t *ctx = uc;
        memcpy(fault_regs, ctx->uc_mcontext.gregs, sizeof fault_regs);
        fault_fp_size = 0;
        if (ctx->uc_mcontext.fpregs) {
            const unsigned char *fp = (const unsigned char *)ctx->uc_mcontext.fpregs;
            uint32_t size = 512;
            uint32_t magic, extended;
            memcpy(&magic, fp + 464, 4);      /* fx_sw_bytes.magic1 */
            memcpy(&extended, fp + 468, 4);   /* fx_sw_bytes.extended_size */
            if (magic == 0x46505853u && extended <= sizeof fault_fp)
                size = extended;              /* an XSAVE area follows the legacy one */
            memcpy(fault_fp, fp, size);
            fault_fp_size = size;
        }
#endif
        /* a non-canonical address through rsp or rbp raises a stack-segment fault, which
         * Linux reports as SIGBUS with si_code SI_KERNEL: the same general-protection
         * case as a SIGSEGV without an address (faultaddr.py decodes both) */
        siglongjmp(*j, sig == SIGBUS && fault_code == SI_KERNEL ? SIGSEGV : sig);
    }
    struct sigaction *p = &previous[sig == SIGBUS];
    if (p->sa_flags & SA_SIGINFO) {
        p->sa_sigaction(sig, info, uc);
    } else if (p->sa_handler == SIG_IGN) {
        return;
    } else if (p->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL); /* returning re-runs the faulting instruction: default action */
    } else {
        p->sa_handler(sig);
    }
}

/* (Re)install the handler if another one replaced it since; cheap when it is in place. */
void cuport_guard_install(void)
{
    pthread_mutex_lock(&install_lock);
    for (int i = 0; i < 2; i++) {
        int sig = i ? SIGBUS : SIGSEGV;
        struct sigaction now, mine;
        sigaction(sig, NULL, &now);
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault)
            continue;
        memset(&mine, 0, sizeof mine);
        mine.sa_sigaction = on_fault;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&mine.sa_mask);
        sigaction(sig, &mine, &previous[i]);
    }
    pthread_mutex_unlock(&install_lock);
}

/* Run fn(ctx, id). Returns 0, or the signal number of a fault (its address in *where);
 * on a fault, *error (the launch's error word) gets `kind` unless an error is there. */
int cuport_guarded_call(cuport_worker fn, void *ctx, uint32_t id, uint32_t *error,
                        uint32_t segv_kind, uint32_t bus_kind, void **where)
{
    if (!has_altstack) {
        stack_t ss;
        ss.ss_size = 1 << 16;
        ss.ss_sp = malloc(ss.ss_size);
        ss.ss_flags = 0;
        if (ss.ss_sp && sigaltstack(&ss, NULL) == 0)
            has_altstack = 1;
    }
    if (my_slot < 0) {
        int slot = __atomic_fetch_add(&guarded_count, 1, __ATOMIC_SEQ_CST);
        if (slot < MAX_GUARDED) {
            guarded_thread[slot] = pthread_self();
            my_slot = slot;
        }
    }
    if (my_slot >= 0)
        __atomic_store_n(&guarded_active[my_slot], 1, __ATOMIC_SEQ_CST);
    sigjmp_buf here;
    int sig = sigsetjmp(here, 1);
    if (sig) {
        jump_point = NULL;
        if (my_slot >= 0)
            __atomic_store_n(&guarded_active[my_slot], 0, __ATOMIC_SEQ_CST);
        uint32_t kind = sig == CANCELLED ? cancel_kind : sig == SIGBUS ? bus_kind : segv_kind;
        *where = sig == CANCELLED ? NULL : fault_address;
        uint32_t expected = 0;
        __atomic_compare_exchange_n(error, &expected, kind, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return sig;
    }
    jump_point = &here;
    fn(ctx, id);
    jump_point = NULL;
    if (my_slot >= 0)
        __atomic_store_n(&guarded_active[my_slot], 0, __ATOMIC_SEQ_CST);
    return 0;
}

/* Nonzero kind: the guarded calls running now end with the launch error `kind` (each is
 * sent SIGSEGV); returns how many were running (call again until 0). 0 ends the
 * cancellation. Async-signal-safe. */
int cuport_cancel(uint32_t kind)
{
    cancel_used = 1;
    __atomic_store_n(&cancel_kind, kind, __ATOMIC_SEQ_CST);
    int running = 0;
    if (!kind)
        return 0;
    int n = __atomic_load_n(&guarded_count, __ATOMIC_SEQ_CST);
    for (int i = 0; i < n && i < MAX_GUARDED; i++)
        if (__atomic_load_n(&guarded_active[i], __ATOMIC_SEQ_CST)) {
            running++;
            pthread_kill(guarded_thread[i], SIGSEGV);
        }
    return running;
}

static void on_interrupt(int sig, siginfo_t *info, void *uc)
{
    struct sigaction *p = &before_interruptible;
    if (p->sa_flags & SA_SIGINFO)
        p->sa_sigaction(sig, info, uc);
    else if (p->sa_handler != SIG_IGN && p->sa_handler != SIG_DFL)
        p->sa_handler(sig);
    uint32_t kind = interrupt_kind;
    if (kind)
        cuport_cancel(kind);
}

/* kind nonzero: until cuport_interruptible(0), SIGINT runs the handler there was (Python's,
 * which makes KeyboardInterrupt pending) and cancels the guarded calls with `kind`. 0: the
 * handler there was is put back and any cancellation ends. */
void cuport_interruptible(uint32_t kind)
{
    if (kind) {
        struct sigaction now, mine;
        interrupt_kind = kind;
        sigaction(SIGINT, NULL, &now);
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_interrupt)
            return; /* in place already */
        memset(&mine, 0, sizeof mine);
        mine.sa_sigaction = on_interrupt;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&mine.sa_mask);
        before_interruptible = now;
        sigaction(SIGINT, &mine, NULL);
    } else {
        struct sigaction now;
        sigaction(SIGINT, NULL, &now);
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_interrupt)
            sigaction(SIGINT, &before_interruptible, NULL);
        interrupt_kind = 0;
        cuport_cancel(0);
    }
}

/* Around calls from kernels into Python (hostcalls.py): never jumped out of. */
void cuport_host_enter(void) { in_host++; }
void cuport_host_leave(void) { in_host--; }

/* The last fault of this thread: its si_code; with regs (NGREG words, ucontext's gregs)
 * and the XSAVE image (at most cap bytes; its size in *fp_size) on x86-64. */
int cuport_fault_state(uint64_t *regs, uint32_t nregs, void *fp, uint32_t cap, uint32_t *fp_size)
{
#if defined(__x86_64__)
    memcpy(regs, fault_regs, (nregs < NGREG ? nregs : NGREG) * sizeof(uint64_t));
    uint32_t n = fault_fp_size < cap ? fault_fp_size : cap;
    memcpy(fp, fault_fp, n);
    *fp_size = n;
#else
    (void)regs; (void)nregs; (void)fp; (void)cap;
    *fp_size = 0;
#endif
    return fault_code;
}

/* Offset of XSAVE state component i in the standard (non-compacted) format, or -1. */
int cuport_xsave_offset(unsigned component)
{
#if defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(0xD, component, &eax, &ebx, &ecx, &edx) || eax == 0)
        return -1;
    return (int)ebx;
#else
    (void)component;
    return -1;
#endif
}
