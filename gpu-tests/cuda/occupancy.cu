// Kernels whose theoretical occupancy is limited by different resources:
// registers, static and dynamic shared memory, block size and the
// per-SM block limit. For each, the driver's answer
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor) is printed as a record:
//
//   EXPECT record=occ kernel=NAME block=B dyn_smem=D regs=R static_smem=S
//          blocks_per_sm=N active_warps=W max_warps=M occupancy_pct=P
//
// with P = 100 * N * ceil(B / warpSize) / (maxThreadsPerSM / warpSize).
// The checker compares the trace's launch__occupancy_limit_* (their
// minimum) and sm__maximum_warps_per_active_cycle_pct kernel args.
//
//   occupancy [LAUNCHES=2]
#include "common.h"

#include <vector>

__global__ void __launch_bounds__(1024) occ_small_regs(float *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = (float)threadIdx.x;
}

// Many live values: with __launch_bounds__(256, 1) the compiler may use up
// to 255 registers per thread, so registers limit the blocks per SM.
__global__ void __launch_bounds__(256, 1) occ_many_regs(float *out) {
    float r[96];
#pragma unroll
    for (int j = 0; j < 96; j++) r[j] = out[(threadIdx.x * 7 + j * 131) & 1023];
#pragma unroll
    for (int it = 0; it < 6; it++) {
#pragma unroll
        for (int j = 0; j < 96; j++) r[j] = r[j] * r[(j + it + 1) % 96] + 0.5f;
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 96; j++) s += r[j] * (float)(j + 1);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void occ_static_smem(float *out) {
    __shared__ float buf[10240];  // 40 KiB
    for (int i = threadIdx.x; i < 10240; i += blockDim.x) buf[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x * 33) % 10240];
}

__global__ void occ_dyn_smem_32k(float *out) {
    extern __shared__ float dyn[];
    int n = 32768 / sizeof(float);
    for (int i = threadIdx.x; i < n; i += blockDim.x) dyn[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = dyn[(threadIdx.x * 17) % n];
}

__global__ void occ_dyn_smem_100k(float *out) {
    extern __shared__ float dyn[];
    int n = 102400 / sizeof(float);
    for (int i = threadIdx.x; i < n; i += blockDim.x) dyn[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = dyn[(threadIdx.x * 17) % n];
}

__global__ void occ_block_32(float *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.f; }

__global__ void occ_block_96(float *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 2.f; }

struct Case {
    const char *name;
    const void *func;
    int block;
    size_t dyn;
};

int main(int argc, char **argv) {
    int launches = (int)arg_int(argc, argv, 1, 2);
    if (launches < 1) launches = 1;
    CHECK(cudaFree(0));
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    int sms = 0, max_threads = 0, warp = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev));
    CHECK(cudaFuncSetAttribute((const void *)occ_dyn_smem_100k,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, 102400));

    std::vector<Case> cases = {
        {"occ_small_regs", (const void *)occ_small_regs, 1024, 0},
        {"occ_many_regs", (const void *)occ_many_regs, 256, 0},
        {"occ_static_smem", (const void *)occ_static_smem, 256, 0},
        {"occ_dyn_smem_32k", (const void *)occ_dyn_smem_32k, 128, 32768},
        {"occ_dyn_smem_100k", (const void *)occ_dyn_smem_100k, 128, 102400},
        {"occ_block_32", (const void *)occ_block_32, 32, 0},
        {"occ_block_96", (const void *)occ_block_96, 96, 0},
    };
    float *out;
    CHECK(cudaMalloc(&out, sizeof(float) * (size_t)sms * 1024));
    CHECK(cudaMemset(out, 0, sizeof(float) * (size_t)sms * 1024));

    std::vector<std::string> records;
    Expect e("occupancy");
    e.kv("arg.launches", launches).kv("kernels", (long long)cases.size() * launches);
    for (const Case &c : cases) {
        cudaFuncAttributes fa;
        CHECK(cudaFuncGetAttributes(&fa, c.func));
        int blocks = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, c.func, c.block, c.dyn));
        int wpb = (c.block + warp - 1) / warp;
        int max_warps = max_threads / warp;
        int active = blocks * wpb;
        double pct = 100.0 * active / max_warps;
        char b[512];
        std::snprintf(b, sizeof b,
                      "EXPECT record=occ kernel=%s block=%d dyn_smem=%zu regs=%d static_smem=%zu "
                      "blocks_per_sm=%d active_warps=%d max_warps=%d occupancy_pct=%.4f",
                      c.name, c.block, c.dyn, fa.numRegs, fa.sharedSizeBytes, blocks, active,
                      max_warps, pct);
        records.push_back(b);

        void *args[] = {&out};
        for (int i = 0; i < launches; i++)
            CHECK(cudaLaunchKernel(c.func, dim3(sms), dim3(c.block), args, c.dyn, 0));
        e.kv(key("kernel", c.name).c_str(), launches);
        e.kvf(key("block", c.name).c_str(), "%d,1,1", c.block);
        e.kvf(key("grid", c.name).c_str(), "%d,1,1", sms);
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(out));
    e.kv("records", (long long)records.size()).kv("memset", 1).kv("memcpy", 0).print();
    for (const std::string &r : records) std::printf("%s\n", r.c_str());
    std::fflush(stdout);
    return 0;
}
