// Kernels in several contexts: first K kernels on every visible device's
// primary context (cudaSetDevice loop), then two more contexts on device 0
// created with cuCtxCreate, launching K kernels each, interleaved (the
// runtime launches into whichever context is current).
//
//   multi_context [K=10]
#define GPU_TESTS_DRIVER
#include "common.h"

__global__ void device_loop_kernel(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}
__global__ void ctx_a_kernel(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}
__global__ void ctx_b_kernel(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}

int main(int argc, char **argv) {
    long long k = arg_int(argc, argv, 1, 10);
    if (k < 1) k = 1;

    // Primary context of every device.
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    for (int d = 0; d < ndev; d++) {
        CHECK(cudaSetDevice(d));
        int *buf;
        CHECK(cudaMalloc(&buf, sizeof(int)));
        for (long long i = 0; i < k; i++) device_loop_kernel<<<1, 32>>>(buf);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(buf));
    }

    // Two created contexts on device 0.
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUctxCreateParams params = {};
    CUcontext ctx[2];
    int *buf[2];
    for (int c = 0; c < 2; c++) {
        CU_CHECK(cuCtxCreate(&ctx[c], &params, 0, dev));  // becomes current
        CHECK(cudaMalloc(&buf[c], sizeof(int)));
    }
    for (long long i = 0; i < k; i++) {
        CU_CHECK(cuCtxSetCurrent(ctx[0]));
        ctx_a_kernel<<<1, 32>>>(buf[0]);
        CHECK_LAUNCH();
        CU_CHECK(cuCtxSetCurrent(ctx[1]));
        ctx_b_kernel<<<1, 32>>>(buf[1]);
        CHECK_LAUNCH();
    }
    for (int c = 0; c < 2; c++) {
        CU_CHECK(cuCtxSetCurrent(ctx[c]));
        CU_CHECK(cuCtxSynchronize());
        int ran = 0;
        CHECK(cudaMemcpy(&ran, buf[c], sizeof(int), cudaMemcpyDeviceToHost));
        if (ran != k) {
            std::fprintf(stderr, "context %d ran %d kernels, expected %lld\n", c, ran, k);
            return 3;
        }
        CHECK(cudaFree(buf[c]));
    }
    CU_CHECK(cuCtxSetCurrent(nullptr));
    for (int c = 0; c < 2; c++) CU_CHECK(cuCtxDestroy(ctx[c]));

    Expect e("multi_context");
    e.kv("arg.k", k)
        .kv("arg.devices", ndev)
        .kv("kernels", k * (ndev + 2))
        .kv("kernel.device_loop_kernel", k * ndev)
        .kv("kernel.ctx_a_kernel", k)
        .kv("kernel.ctx_b_kernel", k)
        .kv("gpus.device_loop_kernel", ndev)
        .kv("gpus.ctx_a_kernel", 1)
        .kv("gpus.ctx_b_kernel", 1)
        .kv("context.ctx_a_kernel", "a")
        .kv("context.ctx_b_kernel", "b")
        .kv("contexts", ndev + 2)
        .kv("memcpy", 2)
        .kv("copy.DtoH", 2)
        .kv("memset", 0);
    if (ndev == 1) e.kv("context.device_loop_kernel", "primary");
    e.print();
    return 0;
}
