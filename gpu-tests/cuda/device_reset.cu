// K1 kernels and a device-to-host copy (which waits for them), then
// cudaDeviceReset() without any explicit synchronisation, then K2 more
// kernels in the fresh primary context, a sync, and exit.
//
//   device_reset [K1=10] [K2=10]
#include "common.h"

__global__ void before_reset(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}
__global__ void after_reset(int *out) {
    if (threadIdx.x == 0) atomicAdd(out, 1);
}

int main(int argc, char **argv) {
    long long k1 = arg_int(argc, argv, 1, 10);
    long long k2 = arg_int(argc, argv, 2, 10);
    const size_t bytes = 1 << 20;

    int *out;
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMemset(out, 0, bytes));
    for (long long i = 0; i < k1; i++) before_reset<<<1, 32>>>(out);
    CHECK_LAUNCH();
    void *host = std::malloc(bytes);
    if (!host) return 3;
    // Synchronous D2H on the legacy stream: runs after the kernels and
    // returns when done, so the reset below finds no pending work.
    CHECK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
    if (*(int *)host != (int)k1) {
        std::fprintf(stderr, "before_reset ran %d times, expected %lld\n", *(int *)host, k1);
        return 3;
    }
    CHECK(cudaDeviceReset());

    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMemset(out, 0, sizeof(int)));
    for (long long i = 0; i < k2; i++) after_reset<<<1, 32>>>(out);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(out));
    std::free(host);

    Expect("device_reset")
        .kv("arg.k1", k1)
        .kv("arg.k2", k2)
        .kv("kernels", k1 + k2)
        .kv(key("kernel", "before_reset").c_str(), k1)
        .kv(key("kernel", "after_reset").c_str(), k2)
        .kv(key("context", "before_reset").c_str(), "first")
        .kv(key("context", "after_reset").c_str(), "second")
        .kv("contexts", 2)
        .kv("memcpy", 1)
        .kv("copy.DtoH", 1)
        .kv("copy_bytes.DtoH", (long long)bytes)
        .kv("memset", 2)
        .kv("memset_bytes", (long long)(bytes + sizeof(int)))
        .print();
    return 0;
}
