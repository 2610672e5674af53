// emu.h: just enough of CUDA's device environment to compile lgflow's
// kernels as host C++ and run them, one block at a time, with every CUDA
// thread of a block a ucontext fiber on the calling OS thread. It backs the
// fake libcuda/libcublas of fake.inc, used by emulate_test.go (package cuda)
// to run the conformance suite without a GPU. Not a general CUDA emulator:
// __syncthreads and the warp shuffles are the only cooperative operations
// supported, and blocks run sequentially.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

struct dim3 {
    unsigned x, y, z;
};

static dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }

template <typename T>
static inline T atomicAdd(T* p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}

// ---- fibers ----

enum { F_READY, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

struct Fiber {
    ucontext_t ctx;
    char* stack;
    int state;
};

static const size_t kStack = 256 * 1024;
static std::vector<Fiber> g_fibers;
static ucontext_t g_sched;
static int g_cur;
static int g_nthreads;
static const std::function<void(void**)>* g_invoke;
static void** g_params;
static unsigned char g_slots[1024][8];

static void fiber_main() {
    (*g_invoke)(g_params);
    g_fibers[g_cur].state = F_DONE;
    swapcontext(&g_fibers[g_cur].ctx, &g_sched);
}

static void fiber_wait(int state) {
    int me = g_cur;
    g_fibers[me].state = state;
    swapcontext(&g_fibers[me].ctx, &g_sched);
}

static inline void __syncthreads() { fiber_wait(F_WAIT_BLOCK); }

template <typename T>
static inline T __shfl_xor_sync(unsigned, T v, int o) {
    static_assert(sizeof(T) <= 8, "shuffle of a large type");
    int t = g_cur;
    memcpy(g_slots[t], &v, sizeof(T));
    fiber_wait(F_WAIT_WARP);
    T r;
    memcpy(&r, g_slots[t ^ o], sizeof(T));
    fiber_wait(F_WAIT_WARP);
    return r;
}

static void set_thread(int t) {
    threadIdx.x = t % blockDim.x;
    threadIdx.y = (t / blockDim.x) % blockDim.y;
    threadIdx.z = t / (blockDim.x * blockDim.y);
}

// run_block runs every thread of block blockIdx to completion; it returns
// false on a deadlock (threads waiting at barriers that can never open).
static bool run_block(const std::function<void(void**)>& invoke, void** params) {
    int n = g_nthreads;
    if ((int)g_fibers.size() < n) {
        size_t old = g_fibers.size();
        g_fibers.resize(n);
        for (size_t i = old; i < (size_t)n; i++) g_fibers[i].stack = (char*)malloc(kStack);
    }
    g_invoke = &invoke;
    g_params = params;
    for (int t = 0; t < n; t++) {
        Fiber& f = g_fibers[t];
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = kStack;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_main, 0);
        f.state = F_READY;
    }
    for (;;) {
        for (int t = 0; t < n; t++) {
            if (g_fibers[t].state != F_READY) continue;
            g_cur = t;
            set_thread(t);
            swapcontext(&g_sched, &g_fibers[t].ctx);
        }
        int done = 0, block = 0;
        bool released = false;
        for (int w = 0; w < (n + 31) / 32; w++) {
            int live = 0, waiting = 0;
            for (int t = w * 32; t < n && t < w * 32 + 32; t++) {
                if (g_fibers[t].state != F_DONE) live++;
                if (g_fibers[t].state == F_WAIT_WARP) waiting++;
            }
            if (waiting > 0 && waiting == live) {
                for (int t = w * 32; t < n && t < w * 32 + 32; t++)
                    if (g_fibers[t].state == F_WAIT_WARP) g_fibers[t].state = F_READY;
                released = true;
            }
        }
        if (released) continue;
        for (int t = 0; t < n; t++) {
            if (g_fibers[t].state == F_DONE) done++;
            if (g_fibers[t].state == F_WAIT_BLOCK) block++;
        }
        if (done == n) return true;
        if (block > 0 && block + done == n) {
            for (int t = 0; t < n; t++)
                if (g_fibers[t].state == F_WAIT_BLOCK) g_fibers[t].state = F_READY;
            continue;
        }
        return false;
    }
}
