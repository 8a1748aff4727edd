// Tiny CUDA workload for cupti/examples/gpu_smoke.rs: one H2D copy, one
// memset and one kernel, each of a known size, then a device sync.
// Built by run.sh: nvcc -arch=sm_90 -shared -Xcompiler -fPIC (static cudart).
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define SMOKE_COPY_BYTES (1u << 20)   // must match COPY_BYTES in gpu_smoke.rs
#define SMOKE_SET_BYTES (1u << 19)    // must match SET_BYTES
#define SMOKE_SET_VALUE 0x5a          // must match SET_VALUE

static unsigned char *d_src = NULL;
static unsigned char *d_dst = NULL;

// extern "C": the activity record carries this exact, unmangled name.
extern "C" __global__ void gpu_trace_smoke_kernel(const unsigned char *src, unsigned char *dst, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = (unsigned char)(src[i] ^ dst[i]);
}

static int launch(void) {
    unsigned threads = 256, blocks = (SMOKE_SET_BYTES + threads - 1) / threads;
    gpu_trace_smoke_kernel<<<blocks, threads>>>(d_src, d_dst, SMOKE_SET_BYTES);
    return (int)cudaGetLastError();
}

// Creates the context (and CUPTI's CONTEXT_CREATED callback).
extern "C" int smoke_init(void) {
    cudaError_t e = cudaFree(0);
    if (e != cudaSuccess) return (int)e;
    e = cudaMalloc((void **)&d_src, SMOKE_COPY_BYTES);
    if (e != cudaSuccess) return (int)e;
    return (int)cudaMalloc((void **)&d_dst, SMOKE_COPY_BYTES);
}

// One cudaMemcpy H2D, one cudaMemset, one kernel, one sync.
extern "C" int smoke_run(void) {
    unsigned char *h = (unsigned char *)malloc(SMOKE_COPY_BYTES);
    if (!h) return -1;
    for (unsigned i = 0; i < SMOKE_COPY_BYTES; i++) h[i] = (unsigned char)(i * 7);
    cudaError_t e = cudaMemcpy(d_src, h, SMOKE_COPY_BYTES, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) return (int)e;
    e = cudaMemset(d_dst, SMOKE_SET_VALUE, SMOKE_SET_BYTES);
    if (e != cudaSuccess) return (int)e;
    int l = launch();
    if (l) return l;
    return (int)cudaDeviceSynchronize();
}

// One more launch of the same kernel (profiled by the range profiler).
extern "C" int smoke_kernel_once(void) {
    int l = launch();
    if (l) return l;
    return (int)cudaDeviceSynchronize();
}

extern "C" void smoke_free(void) {
    cudaFree(d_src);
    cudaFree(d_dst);
    d_src = d_dst = NULL;
}
