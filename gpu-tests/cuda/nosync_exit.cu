// K kernels that each spin for SPIN_US microseconds, then main returns
// without any synchronisation: the tool must still get every kernel.
//
//   nosync_exit [K=20] [SPIN_US=1000]
//
// The kernels spin on the GPU's global nanosecond timer, so their length
// does not depend on the clock rate.
#include "common.h"

__global__ void spin_kernel(unsigned long long ns, int *out) {
    gpu_spin_ns(ns);
    if (threadIdx.x == 0 && out) atomicAdd(out, 1);
}

int main(int argc, char **argv) {
    long long k = arg_int(argc, argv, 1, 20);
    long long spin_us = arg_int(argc, argv, 2, 1000);
    int *out;
    CHECK(cudaMalloc(&out, sizeof(int)));
    unsigned long long ns = (unsigned long long)spin_us * 1000ull;
    for (long long i = 0; i < k; i++) spin_kernel<<<1, 32>>>(ns, out);
    CHECK_LAUNCH();
    // The line comes before the kernels finish: nothing here waits.
    Expect("nosync_exit")
        .kv("arg.k", k)
        .kv("arg.spin_us", spin_us)
        .kv("kernels", k)
        .kv(key("kernel", "spin_kernel").c_str(), k)
        .kv(key("min_dur_ns", "spin_kernel").c_str(), (long long)ns)
        .kv(key("submit_api", "spin_kernel").c_str(), "cudaLaunchKernel")
        .kv("memcpy", 0)
        .kv("memset", 0)
        .print();
    return 0;  // no cudaDeviceSynchronize, no cudaFree
}
