// Device memory in use, step by step: one allocation of each kind the
// driver counts, then their frees, on device 0.
//
//   alloc [S=8388608]
//
// In this order (each line one step of the GPU 0 memory curve, with
// INJECTION_TRACE=...,memory):
//   cudaMalloc(S)                      cuMemAlloc_v2
//   cudaMalloc(2S)                     cuMemAlloc_v2
//   cudaMallocAsync(S/2, stream)       cuMemAllocAsync      (counted at the call)
//   cudaMallocManaged(S)               cuMemAllocManaged
//   cudaMallocPitch(1000 x 64)         cuMemAllocPitch_v2   (pitch x 64 bytes)
//   cuMemCreate(V)                     V = S rounded up to the allocation granularity
//   a kernel that writes the first buffer (no step)
//   cudaFree(first), cudaFreeAsync(async) + sync, cuMemRelease,
//   cudaFree(managed), cudaFree(pitched), cudaFree(second)
// The curve ends at 0.
#define GPU_TESTS_DRIVER
#include "common.h"

#include <vector>

__global__ void fill(unsigned char *p, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = 1;
}

int main(int argc, char **argv) {
    long long s = arg_int(argc, argv, 1, 8 << 20);
    if (s < 2) s = 2;
    size_t S = (size_t)s;
    CHECK(cudaFree(0));
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    std::vector<long long> steps;
    long long total = 0;
    auto step = [&](long long d) {
        total += d;
        steps.push_back(total);
    };

    unsigned char *a, *b, *c, *m, *p;
    CHECK(cudaMalloc(&a, S));
    step((long long)S);
    CHECK(cudaMalloc(&b, 2 * S));
    step(2 * (long long)S);
    CHECK(cudaMallocAsync(&c, S / 2, st));
    step((long long)(S / 2));
    CHECK(cudaMallocManaged(&m, S));
    step((long long)S);
    size_t pitch = 0;
    const size_t rows = 64;
    CHECK(cudaMallocPitch(&p, &pitch, 1000, rows));
    step((long long)(pitch * rows));

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t v = (S + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h;
    CU_CHECK(cuMemCreate(&h, v, &prop, 0));
    step((long long)v);

    fill<<<(unsigned)((S + 255) / 256), 256>>>(a, S);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());

    CHECK(cudaFree(a));
    step(-(long long)S);
    CHECK(cudaFreeAsync(c, st));
    step(-(long long)(S / 2));
    CHECK(cudaStreamSynchronize(st));
    CU_CHECK(cuMemRelease(h));
    step(-(long long)v);
    CHECK(cudaFree(m));
    step(-(long long)S);
    CHECK(cudaFree(p));
    step(-(long long)(pitch * rows));
    CHECK(cudaFree(b));
    step(-2 * (long long)S);
    CHECK(cudaStreamDestroy(st));

    std::string list;
    for (size_t i = 0; i < steps.size(); i++) {
        if (i) list += ',';
        list += std::to_string(steps[i]);
    }
    Expect("alloc")
        .kv("arg.bytes", (long long)S)
        .kv("kernels", 1)
        .kv("kernel.fill", 1)
        .kv("memory_steps", list)
        .kv("busy_exact", 1)
        .print();
    return 0;
}
