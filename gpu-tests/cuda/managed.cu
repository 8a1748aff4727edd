// Unified (managed) memory: prefetches of a known size each way, then
// migrations by page faults, with INJECTION_TRACE=...,uvm.
//
//   managed [S=67108864]      (S: bytes, rounded up to 2 MiB)
//
// 1. p = cudaMallocManaged(S), written on the host (its pages are the CPU's);
// 2. cudaMemPrefetchAsync(p, S, GPU 0) and sync: S bytes host to device,
//    cause "user";
// 3. a kernel reads p (resident: no fault);
// 4. cudaMemPrefetchAsync(p, S, host) and sync: S bytes device to host,
//    cause "user";
// 5. q = cudaMallocManaged(S), written on the host; a kernel writes q on
//    the GPU (GPU page faults, migrations host to device), then the host
//    reads q back (CPU page faults, migrations device to host).
#include "common.h"

__global__ void sum(const unsigned *p, size_t n, unsigned *out) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, p[i]);
}

__global__ void touch(unsigned *q, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) q[i] = q[i] * 3 + 1;
}

int main(int argc, char **argv) {
    long long s = arg_int(argc, argv, 1, 64 << 20);
    const size_t two_mib = 2 << 20;
    size_t S = ((size_t)s + two_mib - 1) / two_mib * two_mib;
    size_t n = S / sizeof(unsigned);
    CHECK(cudaFree(0));
    int concurrent = 0;
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
    if (!concurrent) {
        std::fprintf(stderr, "device 0 has no concurrent managed access: no GPU page faults\n");
        return 3;
    }
    unsigned *p, *q, *out;
    CHECK(cudaMallocManaged(&p, S));
    // Device memory, so that the only managed bytes that move are p's and q's.
    CHECK(cudaMalloc(&out, sizeof(unsigned)));
    CHECK(cudaMemset(out, 0, sizeof(unsigned)));
    for (size_t i = 0; i < n; i++) p[i] = 1;

    cudaMemLocation gpu = {};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = 0;
    cudaMemLocation host = {};
    host.type = cudaMemLocationTypeHost;
    host.id = 0;
    CHECK(cudaMemPrefetchAsync(p, S, gpu, 0, 0));
    CHECK(cudaDeviceSynchronize());
    unsigned blocks = (unsigned)((n + 255) / 256);
    sum<<<blocks, 256>>>(p, n, out);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemPrefetchAsync(p, S, host, 0, 0));
    CHECK(cudaDeviceSynchronize());
    unsigned got = 0;
    CHECK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    if (got != (unsigned)n) {
        std::fprintf(stderr, "sum %u, expected %zu\n", got, n);
        return 3;
    }

    CHECK(cudaMallocManaged(&q, S));
    for (size_t i = 0; i < n; i++) q[i] = (unsigned)i;
    touch<<<blocks, 256>>>(q, n);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    unsigned long long check = 0;
    for (size_t i = 0; i < n; i += 1024) check += q[i];
    if (check == 0) return 3;

    CHECK(cudaFree(q));
    CHECK(cudaFree(out));
    CHECK(cudaFree(p));
    Expect("managed")
        .kv("arg.bytes", (long long)S)
        .kv("kernels", 2)
        .kv("kernel.sum", 1)
        .kv("kernel.touch", 1)
        .kv("uvm_bytes.user.HtoD", (long long)S)
        .kv("uvm_bytes.user.DtoH", (long long)S)
        .kv("min_uvm.HtoD", 2)
        .kv("min_uvm.gpu_page_fault", 1)
        .kv("min_uvm.cpu_page_fault", 1)
        .kv("busy_exact", 1)
        .print();
    return 0;
}
