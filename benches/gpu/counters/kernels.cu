// Deterministic kernels for checking per-kernel counters against ncu.
//
//   kernels check            copy, fma and fixed, 3 launches each
//   kernels many N           N launches of a tiny kernel (cost per profiled kernel)
//   kernels threads T N      T threads, N tiny launches each, on their own streams
//   kernels graph            a captured graph of 4 kernels, launched twice
//
// Prints "EXPECT" lines with what the program knows (launch counts).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

// Memory bound: reads and writes n floats once.
__global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) out[i] = in[i];
}

// Compute bound: iters dependent FMAs per thread, one store.
__global__ void fma_kernel(float* out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.5f;
    for (int k = 0; k < iters; ++k) { a = fmaf(a, b, c); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// A fixed instruction count: one warp, a fixed loop the compiler keeps.
__global__ void fixed_kernel(int* out, int n) {
    int acc = threadIdx.x;
    #pragma unroll 1
    for (int k = 0; k < n; ++k) { acc = acc * 3 + k; }
    out[threadIdx.x] = acc;
}

__global__ void tiny_kernel(int* out) { if (threadIdx.x == 0) out[blockIdx.x] += 1; }

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "check";
    if (!strcmp(mode, "check")) {
        size_t n = 64u << 20;  // 64 Mi floats: 256 MiB each way
        float *in, *out, *fo; int* io;
        CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&out, n * 4));
        CK(cudaMalloc(&fo, 132 * 4 * 256 * 4)); CK(cudaMalloc(&io, 32 * 4));
        CK(cudaMemset(in, 0, n * 4));
        for (int r = 0; r < 3; ++r) {
            copy_kernel<<<132 * 8, 256>>>(in, out, n);
            fma_kernel<<<132 * 4, 256>>>(fo, 1 << 14);
            fixed_kernel<<<1, 32>>>(io, 1000);
        }
        CK(cudaDeviceSynchronize());
        printf("EXPECT case=counters_check kernels=9 copy=3 fma=3 fixed=3\n");
    } else if (!strcmp(mode, "many")) {
        int n = argc > 2 ? atoi(argv[2]) : 200;
        int* o; CK(cudaMalloc(&o, 64 * 4)); CK(cudaMemset(o, 0, 64 * 4));
        for (int i = 0; i < n; ++i) tiny_kernel<<<64, 32>>>(o);
        CK(cudaDeviceSynchronize());
        printf("EXPECT case=counters_many kernels=%d\n", n);
    } else if (!strcmp(mode, "threads")) {
        int t = argc > 2 ? atoi(argv[2]) : 4, n = argc > 3 ? atoi(argv[3]) : 50;
        CK(cudaFree(0));
        std::vector<std::thread> th;
        for (int k = 0; k < t; ++k) th.emplace_back([n] {
            cudaStream_t s; CK(cudaStreamCreate(&s));
            int* o; CK(cudaMalloc(&o, 64 * 4)); CK(cudaMemsetAsync(o, 0, 64 * 4, s));
            for (int i = 0; i < n; ++i) tiny_kernel<<<64, 32, 0, s>>>(o);
            CK(cudaStreamSynchronize(s));
        });
        for (auto& x : th) x.join();
        printf("EXPECT case=counters_threads kernels=%d\n", t * n);
    } else if (!strcmp(mode, "graph")) {
        int* o; CK(cudaMalloc(&o, 64 * 4)); CK(cudaMemset(o, 0, 64 * 4));
        cudaStream_t s; CK(cudaStreamCreate(&s));
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 4; ++i) tiny_kernel<<<64, 32, 0, s>>>(o);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, s)); CK(cudaGraphLaunch(ge, s));
        tiny_kernel<<<64, 32, 0, s>>>(o);
        CK(cudaStreamSynchronize(s));
        printf("EXPECT case=counters_graph kernels=9 graph_kernels=8 direct=1\n");
    }
    return 0;
}
