// Empty-kernel launch loop: the launch-bound extreme. Each of T threads
// launches N/T empty kernels on its own stream; the launch phase is timed on
// the host (after a warm-up), so process start and CUDA init stay out.
// Prints: RESULT workload=launch_loop threads=T launches=N ns_per_launch=X
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void empty() {}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(2); } } while (0)

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int t = argc > 2 ? atoi(argv[2]) : 1;
    std::vector<cudaStream_t> streams(t);
    for (auto& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, streams[0]>>>();
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> th;
    for (int k = 0; k < t; k++)
        th.emplace_back([&, k] {
            long m = n / t;
            for (long i = 0; i < m; i++) empty<<<1, 1, 0, streams[k]>>>();
        });
    for (auto& x : th) x.join();
    auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    printf("RESULT workload=launch_loop threads=%d launches=%ld kernels=%ld ns_per_launch=%.1f\n",
           t, n, n / t * t + 1000, ns / (double)(n / t * t));
    return 0;
}
