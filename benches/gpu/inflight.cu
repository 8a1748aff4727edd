// Kernels still running when a window closes: a 200 ms kernel on one
// stream, and short kernels launched about every 0.1 ms on another (so that
// API calls keep coming), for SECONDS. Prints how many of each it launched.
//   inflight SECONDS
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

__global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
__global__ void tiny() {}

int main(int argc, char** argv) {
    double secs = argc > 1 ? atof(argv[1]) : 8;
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    auto t0 = std::chrono::steady_clock::now();
    long longs = 0, shorts = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
        spin<<<1, 1, 0, a>>>(200000000ull);
        longs++;
        while (cudaStreamQuery(a) == cudaErrorNotReady) {
            tiny<<<1, 1, 0, b>>>();
            shorts++;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
    cudaDeviceSynchronize();
    printf("RESULT workload=inflight long=%ld short=%ld kernels=%ld\n", longs, shorts, longs + shorts);
    return 0;
}
