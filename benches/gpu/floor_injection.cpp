// The bare-CUPTI floor: the least any CUPTI-based tracer can cost. Enables
// kernel and memcpy activity records, counts them in the completion callback
// and drops them. Loaded with CUDA_INJECTION64_PATH like any injection.
#include <cupti.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>

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

extern "C" int InitializeInjection() {
    cuptiActivityRegisterCallbacks(requested, completed);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    atexit(at_exit);
    return 1;
}
