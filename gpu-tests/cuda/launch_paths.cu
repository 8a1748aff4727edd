// One kernel launched through each launch path, each a distinct kernel, so
// that the trace can be checked per path. Built twice: plain, and with
// --default-stream per-thread (launch_paths_ptsz), which makes the runtime
// and driver calls the _ptsz entry points. Everything runs on the default
// stream (legacy, or per-thread in the second build).
//
//   launch_paths [REPEAT=1]
//
// Paths: <<<>>>, cudaLaunchKernel, cudaLaunchKernelExC (priority
// attribute), cudaLaunchCooperativeKernel, cuLaunchKernel, cuLaunchKernelEx
// (cluster dimension 1x1x1 attribute), cuLaunchCooperativeKernel. The
// CUfunctions come from cudaGetFuncBySymbol.
#define GPU_TESTS_DRIVER
#include "common.h"

#define PATH_KERNEL(name)                                 \
    __global__ void name(int *out, int v) {               \
        if (threadIdx.x == 0 && blockIdx.x == 0) *out += v; \
    }
PATH_KERNEL(path_triple_chevron)
PATH_KERNEL(path_cudaLaunchKernel)
PATH_KERNEL(path_cudaLaunchKernelExC)
PATH_KERNEL(path_cudaLaunchCooperativeKernel)
PATH_KERNEL(path_cuLaunchKernel)
PATH_KERNEL(path_cuLaunchKernelEx)
PATH_KERNEL(path_cuLaunchCooperativeKernel)

static CUfunction func_of(const void *sym) {
    cudaFunction_t f;
    CHECK(cudaGetFuncBySymbol(&f, sym));
    return (CUfunction)f;
}

int main(int argc, char **argv) {
    int repeat = (int)arg_int(argc, argv, 1, 1);
    CHECK(cudaFree(0));
    int dev = 0, coop = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) {
        std::fprintf(stderr, "device %d cannot launch cooperative kernels\n", dev);
        return 3;
    }
    int lo = 0, hi = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));

    int *out;
    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMemset(out, 0, sizeof(int)));
    int v = 1;
    void *args[] = {&out, &v};
    const cudaStream_t s = 0;  // default stream: legacy, or per-thread (ptsz build)

    CUfunction f_drv = func_of((const void *)path_cuLaunchKernel);
    CUfunction f_drv_ex = func_of((const void *)path_cuLaunchKernelEx);
    CUfunction f_drv_coop = func_of((const void *)path_cuLaunchCooperativeKernel);

    for (int i = 0; i < repeat; i++) {
        path_triple_chevron<<<1, 32, 0, s>>>(out, v);
        CHECK_LAUNCH();

        CHECK(cudaLaunchKernel((const void *)path_cudaLaunchKernel, dim3(1), dim3(32), args, 0, s));

        cudaLaunchAttribute rattr[1];
        rattr[0].id = cudaLaunchAttributePriority;
        rattr[0].val.priority = hi;
        cudaLaunchConfig_t rcfg = {};
        rcfg.gridDim = dim3(1);
        rcfg.blockDim = dim3(32);
        rcfg.dynamicSmemBytes = 0;
        rcfg.stream = s;
        rcfg.attrs = rattr;
        rcfg.numAttrs = 1;
        CHECK(cudaLaunchKernelExC(&rcfg, (const void *)path_cudaLaunchKernelExC, args));

        CHECK(cudaLaunchCooperativeKernel((const void *)path_cudaLaunchCooperativeKernel, dim3(1),
                                          dim3(32), args, 0, s));

        CU_CHECK(cuLaunchKernel(f_drv, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, nullptr));

        CUlaunchAttribute dattr[1];
        dattr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        dattr[0].value.clusterDim.x = 1;
        dattr[0].value.clusterDim.y = 1;
        dattr[0].value.clusterDim.z = 1;
        CUlaunchConfig dcfg = {};
        dcfg.gridDimX = dcfg.gridDimY = dcfg.gridDimZ = 1;
        dcfg.blockDimX = 32;
        dcfg.blockDimY = dcfg.blockDimZ = 1;
        dcfg.sharedMemBytes = 0;
        dcfg.hStream = (CUstream)s;
        dcfg.attrs = dattr;
        dcfg.numAttrs = 1;
        CU_CHECK(cuLaunchKernelEx(&dcfg, f_drv_ex, args, nullptr));

        CU_CHECK(cuLaunchCooperativeKernel(f_drv_coop, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args));
    }
    CHECK(cudaDeviceSynchronize());
    int result = 0;
    CHECK(cudaMemcpy(&result, out, sizeof(int), cudaMemcpyDeviceToHost));
    if (result != 7 * repeat) {
        std::fprintf(stderr, "kernels ran %d times, expected %d\n", result, 7 * repeat);
        return 3;
    }
    CHECK(cudaFree(out));

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    const char *kase_variant = "ptsz";
#else
    const char *kase_variant = "legacy";
#endif
    Expect e("launch_paths");
    e.kv("arg.repeat", repeat).kv("arg.default_stream", kase_variant).kv("kernels", 7LL * repeat);
    const char *paths[][2] = {
        {"path_triple_chevron", "cudaLaunchKernel"},
        {"path_cudaLaunchKernel", "cudaLaunchKernel"},
        {"path_cudaLaunchKernelExC", "cudaLaunchKernelExC"},
        {"path_cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel"},
        {"path_cuLaunchKernel", "cuLaunchKernel"},
        {"path_cuLaunchKernelEx", "cuLaunchKernelEx"},
        {"path_cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel"},
    };
    for (auto &p : paths) {
        e.kv(key("kernel", p[0]).c_str(), repeat);
        e.kv(key("submit_api", p[0]).c_str(), p[1]);
        e.kv(key("grid", p[0]).c_str(), "1,1,1");
        e.kv(key("block", p[0]).c_str(), "32,1,1");
    }
    e.kv("memset", 1).kv("memcpy", 1).print();
    return 0;
}
