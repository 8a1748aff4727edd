// The bare-CUPTI floor: the least any CUPTI-based tracer can cost. Enables
// kernel and memcpy activity records, counts them in the completion callback
// and drops them. Loaded with CUDA_INJECTION64_PATH like any injection.
//
// Knobs (for attributing gpu-trace's cost to CUPTI features it switches on):
//   FLOOR_KINDS=none|all   no activity kinds, or gpu-trace's four (kernel,
//                          memcpy, peer memcpy, memset); default kernel+memcpy
//   FLOOR_TIMESTAMP=1      CUPTI timestamps from a CLOCK_BOOTTIME callback
//   FLOOR_SUBSCRIBE=1      a callback subscriber with the resource domain on
//   FLOOR_CALLBACKS=runtime|driver|both
//                          an empty callback on the kernel-launch functions of
//                          the runtime (cudaLaunchKernel), the driver
//                          (cuLaunchKernel[Ex][_ptsz]) or both; with
//                          FLOOR_VERBOSE=1 the exit line counts the callbacks
//                          of each domain (do driver callbacks fire inside
//                          runtime launches?) and checks which domain's
//                          correlation ids the kernel records carry
//   FLOOR_API_ACTIVITY=runtime|driver|both
//                          CUPTI's own API activity records (no callback) for
//                          the same launch functions: the alternative to
//                          callbacks for API slices
#include <cupti.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>

static std::atomic<unsigned long long> g_records{0};
static const size_t kBufSize = 8 << 20;

static void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max) {
    *buf = (uint8_t*)aligned_alloc(8, kBufSize);
    *size = kBufSize;
    *max = 0;
}

// Sums of correlation ids (exit sites of launch callbacks; kernel records):
// equal sums say which domain's ids the kernels carry.
static std::atomic<unsigned long long> g_corr_kernels{0}, g_corr_runtime{0}, g_corr_driver{0};
static std::atomic<unsigned long long> g_kernels{0}, g_api_records{0};

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
    CUpti_Activity* r = nullptr;
    unsigned long long n = 0, k = 0, corr = 0, api = 0;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        n++;
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            k++;
            corr += ((CUpti_ActivityKernel10*)r)->correlationId;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
            api++;
        }
    }
    g_records += n;
    g_kernels += k;
    g_corr_kernels += corr;
    g_api_records += api;
    free(buf);
}

static std::atomic<unsigned long long> g_cb_runtime{0}, g_cb_driver{0};

static void at_exit() {
    cuptiActivityFlushAll(1);
    if (getenv("FLOOR_VERBOSE"))
        fprintf(stderr,
                "floor: %llu records (%llu kernels, %llu API), callbacks runtime=%llu driver=%llu; "
                "correlation sums kernels=%llu runtime=%llu driver=%llu\n",
                g_records.load(), g_kernels.load(), g_api_records.load(), g_cb_runtime.load(),
                g_cb_driver.load(), g_corr_kernels.load(), g_corr_runtime.load(), g_corr_driver.load());
}

static uint64_t CUPTIAPI boottime() {
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool g_count_corr = false;

static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain d, CUpti_CallbackId, const void* data) {
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API) g_cb_runtime.fetch_add(1, std::memory_order_relaxed);
    if (d == CUPTI_CB_DOMAIN_DRIVER_API) g_cb_driver.fetch_add(1, std::memory_order_relaxed);
    if (g_count_corr && (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API)) {
        auto* cb = (const CUpti_CallbackData*)data;
        if (cb->callbackSite == CUPTI_API_EXIT)
            (d == CUPTI_CB_DOMAIN_RUNTIME_API ? g_corr_runtime : g_corr_driver) += cb->correlationId;
    }
}

static const CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};

static bool flag(const char* name) {
    const char* v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

extern "C" int InitializeInjection() {
    const char* cbs = getenv("FLOOR_CALLBACKS");
    g_count_corr = getenv("FLOOR_VERBOSE") != nullptr;
    if (flag("FLOOR_SUBSCRIBE") || cbs) {
        CUpti_SubscriberHandle sub;
        if (cuptiSubscribe(&sub, on_callback, nullptr) == CUPTI_SUCCESS) {
            if (flag("FLOOR_SUBSCRIBE")) cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
            bool rt = cbs && (!strcmp(cbs, "runtime") || !strcmp(cbs, "both"));
            bool drv = cbs && (!strcmp(cbs, "driver") || !strcmp(cbs, "both"));
            if (rt)
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
            if (drv)
                for (CUpti_CallbackId id : kDriverLaunches) cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
        }
    }
    if (flag("FLOOR_TIMESTAMP")) cuptiActivityRegisterTimestampCallback(boottime);
    cuptiActivityRegisterCallbacks(requested, completed);
    const char* kinds = getenv("FLOOR_KINDS");
    if (kinds && strcmp(kinds, "none") == 0) {
        // registered, nothing enabled
    } else {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
        if (kinds && strcmp(kinds, "all") == 0) {
            cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
            cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
        }
    }
    if (const char* act = getenv("FLOOR_API_ACTIVITY")) {
        if (!strcmp(act, "runtime") || !strcmp(act, "both"))
            cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1);
        if (!strcmp(act, "driver") || !strcmp(act, "both"))
            for (CUpti_CallbackId id : kDriverLaunches) cuptiActivityEnableDriverApi(id, 1);
    }
    atexit(at_exit);
    return 1;
}
