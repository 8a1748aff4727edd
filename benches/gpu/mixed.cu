// Small kernels mixed with small copies: an inference-like loop.
// Each iteration: H2D copy (pinned, async), 3 small kernels, D2H copy, stream
// synchronize. Prints: RESULT workload=mixed iters=N ns_per_iter=X
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void scale(float* x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(2); } } while (0)

int main(int argc, char** argv) {
    long iters = argc > 1 ? atol(argv[1]) : 20000;
    const int n = 4096;
    float *h, *d;
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    for (int i = 0; i < n; i++) h[i] = (float)i;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    auto step = [&] {
        CHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, s));
        for (int k = 0; k < 3; k++) scale<<<(n + 255) / 256, 256, 0, s>>>(d, n, 0.5f);
        CHECK(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
    };
    for (int i = 0; i < 200; i++) step();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; i++) step();
    auto t1 = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    printf("RESULT workload=mixed iters=%ld kernels=%ld ns_per_iter=%.1f\n", iters, 3 * (iters + 200), ns / iters);
    return 0;
}
