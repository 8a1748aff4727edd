// Does detaching CUPTI (cuptiFinalize) take away what an idle, attached
// CUPTI costs each API call, and does CUPTI attached again record kernels?
// An injection (CUDA_INJECTION64_PATH) written from cupti_activity.h's
// description of cuptiFinalize: detach at the exit callsite of a driver or
// runtime API call; any CUPTI call afterwards attaches again.
//
//   PROBE_MODE=attached  subscriber (resource domain), timestamp callback,
//                        buffers registered, no activity kind: gpu-trace
//                        paused, CUPTI's part (the harness's cfg_idle)
//   PROBE_MODE=detached  the same, detached at the first driver API exit
//   PROBE_MODE=cycle     PROBE_CYCLES windows of PROBE_ON_MS, PROBE_OFF_MS
//                        apart: attach (kernel records, launch callbacks),
//                        then detach at the next API exit; one line a
//                        window on stderr: launches seen, kernel records
//                        delivered by the detach's end, attach and detach
//                        times, the process's RSS
//   PROBE_FLUSH=0        detach without cuptiActivityFlushAll(1) first
#include <cupti.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static const size_t kBufSize = 8 << 20;
static std::atomic<unsigned long long> g_kernels{0}, g_launches{0}, g_incomplete{0}, g_long{0};
static bool g_flush = true;
static std::atomic<int> g_detach{0};  // 1: asked, 2: done
static std::atomic<long long> g_finalize_ns{0};
static CUpti_SubscriberHandle g_sub;
static bool g_count_launches = false;

static long rss_kb() {
    long pages = 0, resident = 0;
    FILE* f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long long now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t CUPTIAPI boottime() {
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max) {
    *buf = (uint8_t*)aligned_alloc(8, kBufSize);
    *size = kBufSize;
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
    CUpti_Activity* r = nullptr;
    unsigned long long k = 0;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            k++;
            auto* kr = (CUpti_ActivityKernel10*)r;
            if (kr->start == 0 || kr->end <= kr->start) g_incomplete++;
            else if (kr->end - kr->start > 100000000ull) g_long++;
        }
    g_kernels += k;
    free(buf);
}

static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
    if (d != CUPTI_CB_DOMAIN_DRIVER_API && d != CUPTI_CB_DOMAIN_RUNTIME_API) return;
    auto* cb = (const CUpti_CallbackData*)data;
    if (cb->callbackSite != CUPTI_API_EXIT) return;
    if (g_count_launches && d == CUPTI_CB_DOMAIN_DRIVER_API &&
        (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx))
        g_launches.fetch_add(1, std::memory_order_relaxed);
    int want = 1;
    if (g_detach.load(std::memory_order_acquire) == 1 && g_detach.compare_exchange_strong(want, 3)) {
        long long t0 = now_ns();
        if (g_flush) cuptiActivityFlushAll(1);
        CUptiResult r = cuptiFinalize();
        g_finalize_ns = now_ns() - t0;
        if (r != CUPTI_SUCCESS) {
            const char* s = "";
            cuptiGetResultString(r, &s);
            fprintf(stderr, "probe: cuptiFinalize failed: %s\n", s);
        }
        g_detach.store(2, std::memory_order_release);
    }
}

static bool attach(bool kernels) {
    if (cuptiSubscribe(&g_sub, (CUpti_CallbackFunc)on_callback, nullptr) != CUPTI_SUCCESS) return false;
    cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE);
    cuptiActivityRegisterTimestampCallback(boottime);
    cuptiActivityRegisterCallbacks(requested, completed);
    if (kernels) {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
    }
    return true;
}

// Asks for a detach at the next API exit; waits up to 5 s.
static bool detach(bool kernels) {
    if (kernels) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    // No CUPTI call of this thread may overlap the finalize: the domain is
    // on before the flag is set (an earlier version of this probe crashed so).
    cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
    g_detach = 1;
    for (int i = 0; i < 5000 && g_detach.load() != 2; i++) usleep(1000);
    return g_detach.load() == 2;
}

static void* cycle(void*) {
    int cycles = getenv("PROBE_CYCLES") ? atoi(getenv("PROBE_CYCLES")) : 20;
    int on_ms = getenv("PROBE_ON_MS") ? atoi(getenv("PROBE_ON_MS")) : 100;
    int off_ms = getenv("PROBE_OFF_MS") ? atoi(getenv("PROBE_OFF_MS")) : 200;
    g_count_launches = true;
    for (int i = 0; i < 10000 && g_detach.load() != 2; i++) usleep(1000);
    if (g_detach.load() != 2) {
        fprintf(stderr, "probe: the first detach did not happen\n");
        return nullptr;
    }
    g_detach = 0;
    for (int c = 0; c < cycles; c++) {
        usleep(off_ms * 1000);
        unsigned long long l0 = g_launches, k0 = g_kernels, i0 = g_incomplete, g0 = g_long;
        long long t0 = now_ns();
        if (!attach(true)) {
            fprintf(stderr, "probe: window %d: attach failed\n", c);
            return nullptr;
        }
        long long t_attach = now_ns() - t0;
        usleep(on_ms * 1000);
        long long t1 = now_ns();
        bool ok = detach(true);
        long long t_detach = now_ns() - t1;
        fprintf(stderr,
                "probe: window %d: launches %llu, kernel records %llu (%llu incomplete, %llu long), attach %.3f ms, detach %s %.3f ms (finalize %.3f ms), rss %ld kB\n",
                c, g_launches - l0, g_kernels - k0, g_incomplete - i0, g_long - g0, t_attach / 1e6, ok ? "done" : "NOT DONE", t_detach / 1e6,
                g_finalize_ns / 1e6, rss_kb());
        fflush(stderr);
        if (!ok) return nullptr;
        g_detach = 0;
    }
    fprintf(stderr, "probe: cycles done: %llu launches in windows, %llu kernel records, %llu of them incomplete, %llu longer than 100 ms\n",
            g_launches.load(), g_kernels.load(), g_incomplete.load(), g_long.load());
    return nullptr;
}

extern "C" int InitializeInjection() {
    const char* m = getenv("PROBE_MODE");
    if (!m) m = "attached";
    g_flush = !getenv("PROBE_FLUSH") || strcmp(getenv("PROBE_FLUSH"), "0") != 0;
    if (!strcmp(m, "cycle")) {
        // Attached once at start-up (as gpu-trace is), then detached.
        attach(false);
        cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
        g_detach = 1;
        pthread_t t;
        pthread_create(&t, nullptr, cycle, nullptr);
        pthread_detach(t);
        return 1;
    }
    attach(false);
    if (!strcmp(m, "detached")) {
        cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
        g_detach = 1;
    }
    return 1;
}
