// CUDA graphs: one built from explicit kernel nodes, one by stream capture,
// each with N kernel nodes in a chain, instantiated once and launched M
// times; plus P plain kernels launched outside any graph.
//
//   graph [N=8] [M=20] [P=5]
//
// Launches made during capture run nothing; the trace must not show them
// as submitting GPU work that never comes.
#include "common.h"

#include <vector>

__global__ void graph_explicit_node(int i, int *out) {
    if (threadIdx.x == 0) out[i] += i;
}
__global__ void graph_capture_node(int i, int *out) {
    if (threadIdx.x == 0) out[i] += 2 * i;
}
__global__ void plain_kernel(int i, int *out) {
    if (threadIdx.x == 0) out[i] -= 1;
}

int main(int argc, char **argv) {
    int n = (int)arg_int(argc, argv, 1, 8);
    int m = (int)arg_int(argc, argv, 2, 20);
    int p = (int)arg_int(argc, argv, 3, 5);
    if (n < 1) n = 1;

    int *out;
    CHECK(cudaMalloc(&out, sizeof(int) * (size_t)(n > p ? n : p)));
    CHECK(cudaMemset(out, 0, sizeof(int) * (size_t)(n > p ? n : p)));
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    // Explicit nodes: a chain.
    cudaGraph_t g1;
    CHECK(cudaGraphCreate(&g1, 0));
    std::vector<cudaGraphNode_t> nodes(n);
    for (int i = 0; i < n; i++) {
        int idx = i;
        void *params[] = {&idx, &out};
        cudaKernelNodeParams kp = {};
        kp.func = (void *)graph_explicit_node;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(32);
        kp.sharedMemBytes = 0;
        kp.kernelParams = params;
        kp.extra = nullptr;
        CHECK(cudaGraphAddKernelNode(&nodes[i], g1, i ? &nodes[i - 1] : nullptr, i ? 1 : 0, &kp));
    }
    cudaGraphExec_t e1;
    CHECK(cudaGraphInstantiate(&e1, g1, 0));

    // Stream capture of n launches.
    cudaGraph_t g2;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; i++) graph_capture_node<<<1, 32, 0, st>>>(i, out);
    CHECK_LAUNCH();
    CHECK(cudaStreamEndCapture(st, &g2));
    cudaGraphExec_t e2;
    CHECK(cudaGraphInstantiate(&e2, g2, 0));

    for (int i = 0; i < p; i++) plain_kernel<<<1, 32, 0, st>>>(i, out);
    CHECK_LAUNCH();
    for (int r = 0; r < m; r++) {
        CHECK(cudaGraphLaunch(e1, st));
        CHECK(cudaGraphLaunch(e2, st));
    }
    CHECK(cudaStreamSynchronize(st));

    CHECK(cudaGraphExecDestroy(e1));
    CHECK(cudaGraphExecDestroy(e2));
    CHECK(cudaGraphDestroy(g1));
    CHECK(cudaGraphDestroy(g2));
    CHECK(cudaStreamDestroy(st));
    CHECK(cudaFree(out));

    long long nm = (long long)n * m;
    Expect("graph")
        .kv("arg.n", n)
        .kv("arg.m", m)
        .kv("arg.p", p)
        .kv("kernels", 2 * nm + p)
        .kv("graph_kernels", 2 * nm)
        .kv(key("kernel", "graph_explicit_node").c_str(), nm)
        .kv(key("kernel", "graph_capture_node").c_str(), nm)
        .kv(key("kernel", "plain_kernel").c_str(), p)
        .kv(key("graph_nodes", "graph_explicit_node").c_str(), n)
        .kv(key("graph_nodes", "graph_capture_node").c_str(), n)
        .kv(key("submit_api", "plain_kernel").c_str(), "cudaLaunchKernel")
        .kv("graph_launches", 2LL * m)
        .kv("api.cudaGraphLaunch", 2LL * m)
        .kv("memset", 1)
        .kv("memcpy", 0)
        .print();
    return 0;
}
