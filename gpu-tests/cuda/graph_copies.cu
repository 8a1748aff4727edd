// Copies and memsets captured into a CUDA graph, in the global capture
// mode: on a non-blocking stream, capture an HtoD copy (pinned host to
// device, B bytes), a memset (B bytes), a kernel and a DtoH copy; end the
// capture, instantiate the graph and launch it M times. Outside any
// capture: one plain HtoD copy of B bytes, and a zero-byte cudaMemcpyAsync
// and a zero-byte cudaMemsetAsync, which do no GPU work.
//
//   graph_copies [B=1048576] [M=20]
//
// The calls made during the capture and the zero-byte calls run nothing:
// the trace must not show them submitting GPU work that never comes (no
// submission arrow to an event the trace lacks). Each graph launch runs
// four nodes: two copies, a memset and a kernel.
#include "common.h"

__global__ void graph_copy_kernel(int *dst, const int *src, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) dst[i] += src[i];
}

int main(int argc, char **argv) {
    long long b = arg_int(argc, argv, 1, 1 << 20);
    int m = (int)arg_int(argc, argv, 2, 20);
    if (b < 4) b = 4;
    b -= b % 4;  // whole ints for the kernel
    if (m < 1) m = 1;
    const int value = 0x5a;
    const size_t bytes = (size_t)b, n = bytes / sizeof(int);
    const unsigned block = 256, grid = (unsigned)((n + block - 1) / block);

    // Separate pinned buffers in and out, so that every launch computes the
    // same result.
    int *host, *host_out, *d_src, *d_dst;
    CHECK(cudaMallocHost(&host, bytes));
    CHECK(cudaMallocHost(&host_out, bytes));
    std::memset(host, 1, bytes);
    CHECK(cudaMalloc(&d_src, bytes));
    CHECK(cudaMalloc(&d_dst, bytes));
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    // Outside any capture: one real copy, then two calls that move nothing.
    CHECK(cudaMemcpyAsync(d_src, host, bytes, cudaMemcpyHostToDevice, st));
    CHECK(cudaMemcpyAsync(d_dst, host, 0, cudaMemcpyHostToDevice, st));
    CHECK(cudaMemsetAsync(d_dst, 0, 0, st));
    CHECK(cudaStreamSynchronize(st));

    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(d_src, host, bytes, cudaMemcpyHostToDevice, st));
    CHECK(cudaMemsetAsync(d_dst, value, bytes, st));
    graph_copy_kernel<<<grid, block, 0, st>>>(d_dst, d_src, n);
    CHECK_LAUNCH();
    CHECK(cudaMemcpyAsync(host_out, d_dst, bytes, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    if (nodes != 4) {
        std::fprintf(stderr, "the captured graph has %zu nodes, expected 4\n", nodes);
        return 3;
    }

    for (int r = 0; r < m; r++) CHECK(cudaGraphLaunch(ge, st));
    CHECK(cudaStreamSynchronize(st));
    // Every int is 0x5a5a5a5a + 0x01010101 after any launch.
    const int want = 0x5a5a5a5a + 0x01010101;
    if (host_out[0] != want || host_out[n - 1] != want) {
        std::fprintf(stderr, "wrong result: %#x %#x, expected %#x\n", host_out[0], host_out[n - 1],
                     want);
        return 3;
    }

    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(st));
    CHECK(cudaFree(d_src));
    CHECK(cudaFree(d_dst));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFreeHost(host_out));

    const long long mm = m;
    Expect("graph_copies")
        .kv("arg.bytes", b)
        .kv("arg.m", m)
        .kv("kernels", mm)
        .kv("graph_kernels", mm)
        .kv(key("kernel", "graph_copy_kernel").c_str(), mm)
        .kv(key("graph_nodes", "graph_copy_kernel").c_str(), 1)
        .kvf(key("grid", "graph_copy_kernel").c_str(), "%u,1,1", grid)
        .kvf(key("block", "graph_copy_kernel").c_str(), "%u,1,1", block)
        .kv("memcpy", 2 * mm + 1)
        .kv("copy.HtoD", mm + 1)
        .kv("copy.DtoH", mm)
        .kv("copy_bytes.HtoD", (mm + 1) * b)
        .kv("copy_bytes.DtoH", mm * b)
        .kvf("copy_kinds", "HtoD:pinned:device:%lld,DtoH:device:pinned:%lld", mm + 1, mm)
        .kv("memset", mm)
        .kv("memset_bytes", mm * b)
        .kvf("memset_values", "%d:%lld", value, mm)
        .kv("api.cudaGraphLaunch", mm)
        .kv("arrows.cudaGraphLaunch", mm)
        .kv("arrows.cudaMemcpyAsync", 1)
        .kv("arrows.cudaMemsetAsync", 0)
        .kv("arrows.cudaLaunchKernel", 0)
        .print();
    return 0;
}
