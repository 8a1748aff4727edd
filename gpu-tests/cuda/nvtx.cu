// NVTX3 (header-only) ranges, marks and a named domain, with kernels
// launched inside the ranges.
//
//   nvtx [R=10]
//
// main thread:
//   mark "before_cuda" (A)             before any CUDA call
//   push  "outer"                      (A)         depth 0
//     kernel
//     push "inner_w_é"                 (W)         depth 1
//       kernel
//       push "inner_ex"                (Ex, color) depth 2
//         kernel
//       pop
//     pop
//     mark "mark_a" (A), mark "mark_ex" (Ex)
//     R x { push "loop"; kernel; pop }             depth 1
//     domain "gpu_tests" push of the registered string "registered_range"
//       kernel                                     depth 1
//     domain pop
//     domain mark "domain_mark"
//   pop
//   start "cross_thread" (A)  ......... ended by the worker thread
// worker thread:
//   push "worker" { push "worker_inner" { kernel } }
//   end "cross_thread"
//   domain start "domain_startend" (Ex) ... ended by the main thread
#include "common.h"

#include <nvtx3/nvToolsExt.h>

#include <thread>

__global__ void nvtx_kernel(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}

static int *g_out;

static void kernel() { nvtx_kernel<<<1, 32>>>(g_out); }

static nvtxEventAttributes_t attrs_ascii(const char *msg, uint32_t color) {
    nvtxEventAttributes_t a = {};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = color;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

int main(int argc, char **argv) {
    long long loops = arg_int(argc, argv, 1, 10);
    // NVTX before CUDA is initialised: NVTX loads its injection now.
    nvtxMarkA("before_cuda");
    CHECK(cudaMalloc(&g_out, sizeof(int)));
    CHECK(cudaMemset(g_out, 0, sizeof(int)));

    nvtxDomainHandle_t dom = nvtxDomainCreateA("gpu_tests");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered_range");

    nvtxRangePushA("outer");
    kernel();
    nvtxRangePushW(L"inner_w_\u00e9");
    kernel();
    nvtxEventAttributes_t ex = attrs_ascii("inner_ex", 0xFF00A0FF);
    nvtxRangePushEx(&ex);
    kernel();
    nvtxRangePop();
    nvtxRangePop();
    nvtxMarkA("mark_a");
    nvtxEventAttributes_t mex = attrs_ascii("mark_ex", 0xFFFF0000);
    nvtxMarkEx(&mex);
    for (long long i = 0; i < loops; i++) {
        nvtxRangePushA("loop");
        kernel();
        nvtxRangePop();
    }
    nvtxEventAttributes_t ra = {};
    ra.version = NVTX_VERSION;
    ra.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    ra.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    ra.message.registered = reg;
    nvtxDomainRangePushEx(dom, &ra);
    kernel();
    nvtxDomainRangePop(dom);
    nvtxEventAttributes_t dm = attrs_ascii("domain_mark", 0xFF00FF00);
    nvtxDomainMarkEx(dom, &dm);
    nvtxRangePop();
    CHECK_LAUNCH();

    nvtxRangeId_t cross = nvtxRangeStartA("cross_thread");
    nvtxRangeId_t dstart = 0;
    std::thread worker([&] {
        nvtxRangePushA("worker");
        nvtxRangePushA("worker_inner");
        kernel();
        CHECK_LAUNCH();
        nvtxRangePop();
        nvtxRangePop();
        CHECK(cudaStreamSynchronize(0));
        nvtxRangeEnd(cross);
        nvtxEventAttributes_t ds = attrs_ascii("domain_startend", 0xFF0000FF);
        dstart = nvtxDomainRangeStartEx(dom, &ds);
    });
    worker.join();
    nvtxDomainRangeEnd(dom, dstart);
    CHECK(cudaDeviceSynchronize());

    int ran = 0;
    CHECK(cudaMemcpy(&ran, g_out, sizeof(int), cudaMemcpyDeviceToHost));
    long long kernels = loops + 5;
    if (ran != kernels) {
        std::fprintf(stderr, "nvtx_kernel ran %d times, expected %lld\n", ran, kernels);
        return 3;
    }
    CHECK(cudaFree(g_out));
    nvtxDomainDestroy(dom);

    const char *w = "inner_w_\u00e9";
    Expect e("nvtx");
    e.kv("arg.r", loops)
        .kv("kernels", kernels)
        .kv(key("kernel", "nvtx_kernel").c_str(), kernels)
        .kv(key("submit_api", "nvtx_kernel").c_str(), "cudaLaunchKernel")
        .kv("range.outer", "1@0")
        .kv(key("range", w).c_str(), "1@1")
        .kv("range.inner_ex", "1@2")
        .kvf("range.loop", "%lld@1", loops)
        .kv("range.registered_range", "1@1")
        .kv("range.worker", "1@0")
        .kv("range.worker_inner", "1@1")
        .kv("startend.cross_thread", 1)
        .kv("startend.domain_startend", 1)
        .kv("mark.before_cuda", 1)
        .kv("mark.mark_a", 1)
        .kv("mark.mark_ex", 1)
        .kv("mark.domain_mark", 1)
        .kv("domain.registered_range", "gpu_tests")
        .kv("domain.domain_mark", "gpu_tests")
        .kv("domain.domain_startend", "gpu_tests");
    for (const char *n : {"before_cuda", "outer", w, "inner_ex", "loop", "registered_range",
                          "mark_a", "mark_ex", "domain_mark"})
        e.kv(key("thread", n).c_str(), "main");
    e.kv("thread.worker", "worker").kv("thread.worker_inner", "worker");
    e.kv("kernels_in.outer", loops + 4)
        .kv(key("kernels_in", w).c_str(), 2)
        .kv("kernels_in.inner_ex", 1)
        .kv("kernels_in.loop", loops)
        .kv("kernels_in.registered_range", 1)
        .kv("kernels_in.worker", 1)
        .kv("kernels_in.worker_inner", 1)
        .kv("memset", 1)
        .kv("memcpy", 1)
        .print();
    return 0;
}
