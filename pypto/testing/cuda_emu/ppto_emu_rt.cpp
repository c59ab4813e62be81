// ppto_emu_rt.cpp: the CUDA emulator's scheduler, compiled once into a library that is loaded
// (RTLD_GLOBAL) before the kernel modules, which call it through the functions ppto_emu.h declares.
//
// Each CUDA thread of a block is a fiber with its own stack; fibers switch only at block barriers
// and warp-level syncs. Between two switch points the ready fibers run in rounds, in forward,
// reverse or random order. When no fiber can run and some have not exited, the block is stuck: the
// launch fails with a message that says who waits where.
#include "ppto_emu.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>

#if !defined(__x86_64__) && !defined(PPTO_EMU_UCONTEXT)
#define PPTO_EMU_UCONTEXT 1
#endif
#ifdef PPTO_EMU_UCONTEXT
#include <ucontext.h>
#endif

extern "C" __attribute__((visibility("default"))) ppto_emu_public ppto_emu_pub;
ppto_emu_public ppto_emu_pub;

#ifndef PPTO_EMU_UCONTEXT
extern "C" __attribute__((visibility("hidden"))) void ppto_emu_switch(void** save, void* to);
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save,
// then loads `to` as the stack pointer and pops the registers saved there.
asm(R"(
    .text
    .p2align 4
    .globl ppto_emu_switch
    .hidden ppto_emu_switch
    .type ppto_emu_switch, @function
ppto_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ppto_emu_switch, .-ppto_emu_switch
)");
#endif

namespace {

enum : unsigned char { READY = 0, WAIT_BLOCK = 1, WAIT_WARP = 2, DONE = 3 };
constexpr size_t STACK = 128 * 1024;  // per fiber, plus a guard page below

struct Fiber {
    void* sp;
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t uc;
#endif
    uint3 tid;
    unsigned int linear;
    unsigned char state;
    int op;
    int pred;
    int src;
    unsigned int mask;
    unsigned long long val, out;
    const char* what;
    char* stack;  // lowest usable byte
};

struct Sched {
    const char* kernel = "";
    ppto_emu_body_t body = nullptr;
    void** args = nullptr;
    unsigned int n = 0, nwarps = 0;
    int order = 0;
    unsigned long long rng = 0;
    unsigned char* dyn_map = nullptr;  // dynamic shared memory ends at a guard page
    size_t dyn_cap = 0;
    unsigned long long* perm = nullptr;  // random block order
    unsigned long long perm_cap = 0;
    Fiber* fibers = nullptr;
    unsigned int nfibers_alloc = 0;
    Fiber* cur = nullptr;
    void* main_sp = nullptr;
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t main_uc;
#endif
    unsigned int* round = nullptr;  // this round's ready fibers, in run order
    unsigned int round_len = 0, round_pos = 0;
    unsigned char* next = nullptr;  // flags: ready for the next round
    unsigned int next_count = 0;
    unsigned int bar_arrived = 0, bar_pred = 0, bar_result = 0, exited = 0;
    unsigned int warp_arrived[32];
    unsigned int warp_exists[32];
    bool failed = false;
    std::string error;
};
Sched S;

unsigned long long next_rand() {  // splitmix64
    unsigned long long z = (S.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <class T>
void shuffle(T* a, unsigned long long len) {
    for (unsigned long long i = len; i > 1; --i) {
        unsigned long long j = next_rand() % i;
        T t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

inline void make_ready(unsigned int i) {
    S.fibers[i].state = READY;
    if (!S.next[i]) {
        S.next[i] = 1;
        S.next_count++;
    }
}

inline Fiber* pop_ready() {
    if (S.round_pos == S.round_len) {
        if (S.next_count == 0) return nullptr;
        unsigned int len = 0;
        if (S.order == 1) {
            for (unsigned int i = S.n; i-- > 0;)
                if (S.next[i]) S.next[i] = 0, S.round[len++] = i;
        } else {
            for (unsigned int i = 0; i < S.n; ++i)
                if (S.next[i]) S.next[i] = 0, S.round[len++] = i;
            if (S.order == 2) shuffle(S.round, len);
        }
        S.next_count = 0;
        S.round_len = len;
        S.round_pos = 0;
    }
    return &S.fibers[S.round[S.round_pos++]];
}

// Switch from fiber `from` (nullptr: the launcher) to fiber `to` (nullptr: the launcher).
// `dead`: `from` never resumes.
inline void jump(Fiber* from, Fiber* to, bool dead = false) {
    if (to) {
        S.cur = to;
        ppto_emu_pub.tid = to->tid;
        ppto_emu_pub.linear = to->linear;
    }
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t* target = to ? &to->uc : &S.main_uc;
    if (dead)
        setcontext(target);
    else
        swapcontext(from ? &from->uc : &S.main_uc, target);
#else
    static void* dummy;
    ppto_emu_switch(dead ? &dummy : from ? &from->sp : &S.main_sp, to ? to->sp : S.main_sp);
#endif
    asm volatile("" ::: "memory");
}

// The current fiber stops here (it was made to wait, or it is done); run the next ready one.
inline void yield() {
    Fiber* self = S.cur;
    Fiber* nx = pop_ready();
    if (nx == self) {
        self->state = READY;
        return;
    }
    jump(self, nx, self->state == DONE);
}

std::string fmt_idx(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

std::string hex(unsigned int m) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%08x", m);
    return buf;
}

std::string where() {
    return "kernel '" + std::string(S.kernel) + "' block " + fmt_idx(ppto_emu_pub.bidx) +
           " thread " + fmt_idx(S.cur->tid);
}

[[noreturn]] void fail(std::string msg) {
    S.failed = true;
    S.error = std::move(msg);
    jump(S.cur, nullptr, true);
    __builtin_unreachable();
}

void fiber_main() {
    S.body(S.args);
    S.cur->state = DONE;
    S.exited++;
    yield();
    __builtin_unreachable();
}

unsigned long long op_result(int op, unsigned int base, unsigned int mask, unsigned int lane) {
    Fiber* F = S.fibers + base;
    switch (op) {
        case ppto_emu::OP_SHFL: {
            int src = F[lane].src;
            return (mask >> src) & 1u ? F[src].val : ~0ull;  // not participating: poison
        }
        case ppto_emu::OP_VOTE: {
            unsigned int ballot = 0;
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u && F[l].pred) ballot |= 1u << l;
            return ballot;
        }
        case ppto_emu::OP_SYNC:
            return 0;
        default:
            break;
    }
    unsigned long long r = 0;
    bool first = true;
    for (unsigned int l = 0; l < 32; ++l) {
        if (!((mask >> l) & 1u)) continue;
        unsigned long long v = F[l].val;
        if (first) {
            r = v;
            first = false;
            continue;
        }
        switch (op) {
            case ppto_emu::OP_ADD:
                r = (unsigned int)(r + v);
                break;
            case ppto_emu::OP_MIN_I:
                r = (int)r < (int)v ? r : v;
                break;
            case ppto_emu::OP_MAX_I:
                r = (int)r > (int)v ? r : v;
                break;
            case ppto_emu::OP_MIN_U:
                r = (unsigned int)r < (unsigned int)v ? r : v;
                break;
            case ppto_emu::OP_MAX_U:
                r = (unsigned int)r > (unsigned int)v ? r : v;
                break;
            case ppto_emu::OP_AND:
                r &= v;
                break;
            case ppto_emu::OP_OR:
                r |= v;
                break;
            case ppto_emu::OP_XOR:
                r ^= v;
                break;
        }
    }
    return r;
}

char* alloc_stack() {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void* p =
        mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, page, PROT_NONE);  // guard page: a stack overflow faults
    return (char*)p + page;
}

bool ensure_fibers(unsigned int n) {
    if (n <= S.nfibers_alloc) return true;
    Fiber* nf = (Fiber*)realloc((void*)S.fibers, n * sizeof(Fiber));
    if (!nf) return false;
    S.fibers = nf;
    for (unsigned int i = S.nfibers_alloc; i < n; ++i) {
        S.fibers[i].stack = alloc_stack();
        if (!S.fibers[i].stack) return false;
        S.nfibers_alloc = i + 1;
    }
    free(S.round);
    free(S.next);
    S.round = (unsigned int*)malloc(n * sizeof(unsigned int));
    S.next = (unsigned char*)calloc(n, 1);
    return S.round && S.next;
}

void init_fiber(Fiber& f, unsigned int i) {
    // stagger the stack tops so that the fibers' hot stack lines do not share cache sets
    char* top = f.stack + STACK - (i % 16) * 256;
#ifdef PPTO_EMU_UCONTEXT
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = f.stack;
    f.uc.uc_stack.ss_size = (size_t)(top - f.stack);
    f.uc.uc_link = nullptr;
    makecontext(&f.uc, (void (*)())fiber_main, 0);
#else
    void** sp = (void**)((uintptr_t)top & ~(uintptr_t)15);
    *--sp = nullptr;                        // fiber_main's return address: it never returns
    *--sp = (void*)&fiber_main;             // where `ret` in ppto_emu_switch goes
    for (int r = 0; r < 6; ++r) *--sp = 0;  // rbp rbx r12 r13 r14 r15
    f.sp = sp;
#endif
}

std::string deadlock_message() {
    unsigned int at_bar = 0, at_warp = 0;
    const char* warp_what = "";
    for (unsigned int i = 0; i < S.n; ++i) {
        at_bar += S.fibers[i].state == WAIT_BLOCK;
        if (S.fibers[i].state == WAIT_WARP) at_warp++, warp_what = S.fibers[i].what;
    }
    std::string head = "kernel '" + std::string(S.kernel) + "' block " +
                       fmt_idx(ppto_emu_pub.bidx) + ": ";
    if (at_bar) {
        std::string m = "barrier divergence in " + head + std::to_string(at_bar) + " of " +
                        std::to_string(S.n) + " threads reached __syncthreads(); ";
        if (!at_warp) return m + "the others exited";
        return m + std::to_string(at_warp) + " wait at a warp-level sync (" + warp_what +
               ") and " + std::to_string(S.exited) + " exited";
    }
    for (unsigned int w = 0; w < S.nwarps; ++w) {
        unsigned int waiting = 0, mask = 0;
        const char* what = "";
        for (unsigned int l = 0; l < 32 && w * 32 + l < S.n; ++l) {
            Fiber& f = S.fibers[w * 32 + l];
            if (f.state == WAIT_WARP) waiting |= 1u << l, mask = f.mask, what = f.what;
        }
        if (!waiting) continue;
        unsigned int missing = mask & ~waiting, exited = 0;
        for (unsigned int l = 0; l < 32; ++l)
            if ((missing >> l) & 1u && S.fibers[w * 32 + l].state == DONE) exited++;
        return "warp divergence in " + head + "warp " + std::to_string(w) + ": " +
               std::to_string(__builtin_popcount(waiting)) + " lanes (" + hex(waiting) +
               ") wait at " + what + " with mask " + hex(mask) + "; " +
               std::to_string(__builtin_popcount(missing)) + " lanes of the mask never arrive (" +
               std::to_string(exited) + " exited, the others wait elsewhere)";
    }
    return "deadlock in " + head + "no thread can run";
}

std::string launch_error(const char* name, const std::string& what) {
    return "invalid launch of kernel '" + std::string(name) + "': " + what;
}

}  // namespace

#define PPTO_RT extern "C" __attribute__((visibility("default")))

PPTO_RT unsigned int ppto_emu_block_barrier(int pred) {
    Fiber* f = S.cur;
    f->state = WAIT_BLOCK;
    S.bar_arrived++;
    S.bar_pred += pred != 0;
    if (S.bar_arrived == S.n) {
        S.bar_result = S.bar_pred;
        S.bar_arrived = S.bar_pred = 0;
        for (unsigned int i = 0; i < S.n; ++i) make_ready(i);
    }
    yield();
    return S.bar_result;
}

// A warp-level rendezvous of the lanes named in `mask`: returns this lane's result of `op`.
PPTO_RT unsigned long long ppto_emu_warp_sync(unsigned int mask, int op, unsigned long long val,
                                              int src, int pred, const char* what) {
    Fiber* f = S.cur;
    unsigned int w = f->linear >> 5, lane = f->linear & 31u, base = w << 5;
    mask &= S.warp_exists[w];
    if (!((mask >> lane) & 1u))
        fail(std::string(what) + " in " + where() + ": the mask " + hex(mask) +
             " does not name the calling lane " + std::to_string(lane));
    f->state = WAIT_WARP;
    f->op = op;
    f->val = val;
    f->src = src;
    f->pred = pred;
    f->mask = mask;
    f->what = what;
    unsigned int arrived = (S.warp_arrived[w] |= 1u << lane);
    if ((arrived & mask) == mask) {
        bool same = true;
        for (unsigned int l = 0; l < 32; ++l)
            if ((mask >> l) & 1u && S.fibers[base + l].mask != mask) same = false;
        if (same) {
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u)
                    S.fibers[base + l].out = op_result(S.fibers[base + l].op, base, mask, l);
            S.warp_arrived[w] &= ~mask;
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u) make_ready(base + l);
        }
    }
    yield();
    return f->out;
}

PPTO_RT unsigned int ppto_emu_activemask() {
    unsigned int base = S.cur->linear & ~31u, m = 0;
    for (unsigned int l = 0; l < 32 && base + l < S.n; ++l)
        if (S.fibers[base + l].state != DONE) m |= 1u << l;
    return m;
}

PPTO_RT void ppto_emu_fail(const char* what, const char* detail) {
    fail(std::string(what) + " in " + where() + ": " + detail);
}

PPTO_RT int ppto_emu_run_grid(const char* name, ppto_emu_body_t body, unsigned int gx,
                              unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                              unsigned int bz, unsigned long long smem, void** args, int order,
                              unsigned long long seed) {
    S.failed = false;
    S.error.clear();
    S.kernel = name;
    S.body = body;
    unsigned long long nthreads = (unsigned long long)bx * by * bz;
    if (!gx || !gy || !gz || !bx || !by || !bz) {
        S.error = launch_error(name, "grid and block sizes must be >= 1");
        return 1;
    }
    if (nthreads > 1024 || bz > 64 || gy > 65535 || gz > 65535) {
        S.error = launch_error(name, "block " + std::to_string(bx) + "x" + std::to_string(by) +
                                         "x" + std::to_string(bz) + ", grid " +
                                         std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                                         std::to_string(gz) +
                                         " (at most 1024 threads a block, block z <= 64, grid y "
                                         "and z <= 65535)");
        return 1;
    }
    if (smem > 232448) {
        S.error = launch_error(name, std::to_string(smem) +
                                         " bytes of dynamic shared memory (sm_90: at most 232448)");
        return 1;
    }
    unsigned int n = (unsigned int)nthreads;
    if (!ensure_fibers(n)) {
        S.error = "out of memory for " + std::to_string(n) + " fiber stacks";
        return 1;
    }
    size_t smem16 = (smem + 15) & ~(size_t)15;
    if (!S.dyn_map || smem16 > S.dyn_cap) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = (smem16 + page - 1) / page * page;
        if (cap == 0) cap = page;
        if (S.dyn_map) munmap(S.dyn_map, S.dyn_cap + page);
        void* p =
            mmap(nullptr, cap + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            S.dyn_map = nullptr;
            S.error = "out of memory for " + std::to_string(smem) + " bytes of shared memory";
            return 1;
        }
        S.dyn_map = (unsigned char*)p;
        S.dyn_cap = cap;
        mprotect(S.dyn_map + cap, page, PROT_NONE);
    }
    ppto_emu_pub.dyn_smem = S.dyn_map + S.dyn_cap - smem16;
    S.n = n;
    S.nwarps = (n + 31) / 32;
    S.args = args;
    S.order = order;
    S.rng = seed;
    ppto_emu_pub.bdim = dim3(bx, by, bz);
    ppto_emu_pub.gdim = dim3(gx, gy, gz);
    ppto_emu_pub.nthreads = n;
    for (unsigned int w = 0; w < S.nwarps; ++w)
        S.warp_exists[w] = n - w * 32 >= 32 ? 0xffffffffu : (1u << (n - w * 32)) - 1u;
    for (unsigned int i = 0; i < n; ++i) {
        Fiber& f = S.fibers[i];
        f.linear = i;
        f.tid = uint3{i % bx, (i / bx) % by, i / (bx * by)};
    }
    unsigned long long nblocks = (unsigned long long)gx * gy * gz;
    if (order == 2) {  // a random permutation of the blocks
        if (S.perm_cap < nblocks) {
            free(S.perm);
            S.perm = (unsigned long long*)malloc(nblocks * sizeof *S.perm);
            S.perm_cap = S.perm ? nblocks : 0;
            if (!S.perm) {
                S.error = "out of memory for a random order of the blocks";
                return 1;
            }
        }
        for (unsigned long long i = 0; i < nblocks; ++i) S.perm[i] = i;
        shuffle(S.perm, nblocks);
    }
    for (unsigned long long k = 0; k < nblocks; ++k) {
        unsigned long long b = order == 1 ? nblocks - 1 - k : order == 2 ? S.perm[k] : k;
        ppto_emu_pub.bidx = uint3{(unsigned int)(b % gx), (unsigned int)((b / gx) % gy),
                                  (unsigned int)(b / ((unsigned long long)gx * gy))};
        if (smem) memset(ppto_emu_pub.dyn_smem, 0xff, smem);
        for (unsigned int i = 0; i < n; ++i) {
            init_fiber(S.fibers[i], i);
            S.fibers[i].state = READY;
            S.fibers[i].mask = 0;
            S.next[i] = 1;
        }
        for (unsigned int w = 0; w < S.nwarps; ++w) S.warp_arrived[w] = 0;
        S.next_count = n;
        S.round_len = S.round_pos = 0;
        S.bar_arrived = S.bar_pred = 0;
        S.exited = 0;
        jump(nullptr, pop_ready());
        if (S.failed) return 1;
        if (S.exited != n) {
            S.error = deadlock_message();
            return 1;
        }
    }
    return 0;
}

PPTO_RT const char* ppto_last_error() { return S.error.c_str(); }

// Maps the fiber stacks for blocks of n threads ahead of time (in the parent of the forked
// children that run isolated launches, so that each child does not map them anew).
PPTO_RT int ppto_reserve(unsigned int n) { return ensure_fibers(n) ? 0 : 1; }

typedef int (*ppto_launcher_t)(unsigned int, unsigned int, unsigned int, unsigned int,
                               unsigned int, unsigned int, unsigned long long, void**, int,
                               unsigned long long);

namespace {
int reap(pid_t pid, int* status, double timeout) {  // 0 reaped, 2 timed out, 3 interrupted
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long nap = 20000;  // ns, doubled up to 2 ms
    for (;;) {
        pid_t r = waitpid(pid, status, timeout > 0 ? WNOHANG : 0);
        if (r == pid) return 0;
        if (r < 0 && errno != EINTR) return 4;
        int why = 0;
        if (r < 0) {
            why = 3;  // a signal for the caller, e.g. Ctrl-C
        } else if (timeout > 0) {
            struct timespec t1, ts = {0, nap};
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            if (dt > timeout)
                why = 2;
            else if (nanosleep(&ts, nullptr) != 0 && errno == EINTR)
                why = 3;
            if (nap < 2000000) nap *= 2;
        }
        if (why) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
            }
            return why;
        }
    }
}
}  // namespace

// Runs a launcher in a forked child. The child copies the `nregions` memory regions (the
// writable arrays) into a shared mapping once the kernel has finished; the parent copies them
// back. Returns 0 (done), 1 (emulation error; message in err), -N (killed by signal N),
// 2 (timed out, killed), 3 (interrupted), 4 (system error; message in err).
PPTO_RT int ppto_run_isolated(void* launcher, unsigned int gx, unsigned int gy, unsigned int gz,
                              unsigned int bx, unsigned int by, unsigned int bz,
                              unsigned long long smem, void** args, int order,
                              unsigned long long seed, void** regions,
                              const unsigned long long* sizes, int nregions, double timeout,
                              char* err, unsigned long long errlen) {
    const size_t head = 4096;
    size_t total = head;
    for (int i = 0; i < nregions; ++i) total += sizes[i];
    void* shm = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        snprintf(err, errlen, "mmap of %zu bytes failed", total);
        return 4;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        munmap(shm, total);
        snprintf(err, errlen, "fork failed: %s", strerror(errno));
        return 4;
    }
    if (pid == 0) {
        // the parent's crash handlers (Python's faulthandler) must not run here: die of the signal
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) signal(sig, SIG_DFL);
        int rc = ((ppto_launcher_t)launcher)(gx, gy, gz, bx, by, bz, smem, args, order, seed);
        if (rc == 0) {
            char* dst = (char*)shm + head;
            for (int i = 0; i < nregions; ++i) {
                memcpy(dst, regions[i], sizes[i]);
                dst += sizes[i];
            }
        } else {
            snprintf((char*)shm, head, "%s", S.error.c_str());
        }
        fflush(stdout);
        fflush(stderr);
        _exit(rc == 0 ? 0 : 3);
    }
    int status = 0, result;
    int why = reap(pid, &status, timeout);
    if (why) {
        if (why == 4) snprintf(err, errlen, "waitpid failed: %s", strerror(errno));
        munmap(shm, total);
        return why;
    }
    if (WIFSIGNALED(status)) {
        result = -WTERMSIG(status);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        const char* src = (const char*)shm + head;
        for (int i = 0; i < nregions; ++i) {
            memcpy(regions[i], src, sizes[i]);
            src += sizes[i];
        }
        result = 0;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        snprintf(err, errlen, "%s", (const char*)shm);
        result = 1;
    } else {
        snprintf(err, errlen, "the emulation process exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        result = 4;
    }
    munmap(shm, total);
    return result;
}
