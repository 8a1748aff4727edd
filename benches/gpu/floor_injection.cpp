// The bare-CUPTI floor: the least any CUPTI-based tracer can cost. Enables
// kernel and memcpy activity records, counts them in the completion callback
// and drops them. Loaded with CUDA_INJECTION64_PATH like any injection.
//
// Knobs (for attributing gpu-trace's cost to CUPTI features it switches on):
//   FLOOR_KINDS=none|all   no activity kinds, or gpu-trace's four (kernel,
//                          memcpy, peer memcpy, memset); default kernel+memcpy
//   FLOOR_TIMESTAMP=1      CUPTI timestamps from a CLOCK_BOOTTIME callback
//   FLOOR_SUBSCRIBE=1      a callback subscriber with the resource domain on
#include <cupti.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

static std::atomic<unsigned long long> g_records{0};
static const size_t kBufSize = 8 << 20;

static void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max) {
    *buf = (uint8_t*)aligned_alloc(8, kBufSize);
    *size = kBufSize;
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
    CUpti_Activity* r = nullptr;
    unsigned long long n = 0;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) n++;
    g_records += n;
    free(buf);
}

static void at_exit() {
    cuptiActivityFlushAll(1);
    if (getenv("FLOOR_VERBOSE")) fprintf(stderr, "floor: %llu records\n", g_records.load());
}

static uint64_t CUPTIAPI boottime() {
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

static bool flag(const char* name) {
    const char* v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

extern "C" int InitializeInjection() {
    if (flag("FLOOR_SUBSCRIBE")) {
        CUpti_SubscriberHandle sub;
        if (cuptiSubscribe(&sub, on_callback, nullptr) == CUPTI_SUCCESS)
            cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
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
    atexit(at_exit);
    return 1;
}
