// Capture ranges (INJECTION_CAPTURE_RANGE=cudaProfilerApi): only the work
// between cudaProfilerStart and cudaProfilerStop is recorded, every piece of
// it, over several ranges.
//
//   capture_range [N=200] [K=100] [SPIN_US=200]
//
// In order, on one stream:
//   K `outside` kernels, synchronised                     (not recorded)
//   cudaProfilerStart
//     N `inside` kernels, the first S of them spinning SPIN_US on the GPU,
//     one 1 MiB H2D cudaMemcpyAsync, one 1 MiB cudaMemsetAsync
//   cudaProfilerStop, with that work still running         (all recorded)
//   K `outside` kernels, cudaStreamSynchronize             (not recorded)
//   cuProfilerStart (the driver's), N `inside` kernels, cudaDeviceSynchronize,
//   cuProfilerStop                                         (all recorded)
//   K `outside` kernels, then exit without synchronising   (not recorded)
#include "common.h"

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cudaProfiler.h>

__global__ void outside(int *p) {
    if (p && threadIdx.x == 0) atomicAdd(p, 1);
}

__global__ void inside(unsigned long long spin_ns, int *p) {
    if (spin_ns) gpu_spin_ns(spin_ns);
    if (p && threadIdx.x == 0) atomicAdd(p, 1);
}

int main(int argc, char **argv) {
    long long n = arg_int(argc, argv, 1, 200);
    long long k = arg_int(argc, argv, 2, 100);
    long long spin_us = arg_int(argc, argv, 3, 200);
    const long long spinning = n < 20 ? n : 20;
    const size_t bytes = 1 << 20;

    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    int *d;
    unsigned char *host, *buf;
    CHECK(cudaMalloc(&d, sizeof(int)));
    CHECK(cudaMalloc(&buf, bytes));
    CHECK(cudaMallocHost(&host, bytes));
    std::memset(host, 1, bytes);

    for (long long i = 0; i < k; i++) outside<<<1, 32, 0, st>>>(d);
    CHECK_LAUNCH();
    CHECK(cudaStreamSynchronize(st));

    CHECK(cudaProfilerStart());
    for (long long i = 0; i < n; i++)
        inside<<<1, 32, 0, st>>>(i < spinning ? (unsigned long long)spin_us * 1000ull : 0, d);
    CHECK_LAUNCH();
    CHECK(cudaMemcpyAsync(buf, host, bytes, cudaMemcpyHostToDevice, st));
    CHECK(cudaMemsetAsync(buf, 0, bytes, st));
    // The spinning kernels keep the GPU busy past this point.
    CHECK(cudaProfilerStop());

    for (long long i = 0; i < k; i++) outside<<<1, 32, 0, st>>>(d);
    CHECK_LAUNCH();
    CHECK(cudaStreamSynchronize(st));

    if (cuProfilerStart() != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuProfilerStart failed\n");
        return 3;
    }
    for (long long i = 0; i < n; i++) inside<<<1, 32, 0, st>>>(0, d);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    if (cuProfilerStop() != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuProfilerStop failed\n");
        return 3;
    }

    for (long long i = 0; i < k; i++) outside<<<1, 32, 0, st>>>(d);
    CHECK_LAUNCH();

    Expect("capture_range")
        .kv("arg.n", n)
        .kv("arg.k", k)
        .kv("arg.spin_us", spin_us)
        .kv("kernels", 2 * n)
        .kv(key("kernel", "inside").c_str(), 2 * n)
        .kv(key("kernel", "outside").c_str(), 0)
        .kv(key("submit_api", "inside").c_str(), "cudaLaunchKernel")
        .kv("memcpy", 1)
        .kv("memset", 1)
        .kv("copy_bytes.HtoD", (long long)bytes)
        .kv("memset_bytes", (long long)bytes)
        .kv("api.cudaLaunchKernel", 2 * n)
        .kv("api.cudaStreamSynchronize", 0)
        .kv("api.cudaDeviceSynchronize", 1)
        .print();
    return 0;
}
