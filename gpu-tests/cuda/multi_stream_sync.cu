// Several streams with kernels and every kind of host synchronisation, so
// that wait arrows can be checked: each sync call must point at the work it
// waited for, which ended before the call returned.
//
//   multi_stream_sync [S=4] [K=8] [R=3] [SPIN_US=20]
//
// Per round:
//   K kernels on each stream: work_a on stream 0, work_b (3x longer) on
//   stream 1, work_c on the others
//   cudaEventRecord(ev[s], stream s)           for s = 1..S-1
//   cudaStreamSynchronize(stream 0)            waits for work_a
//   cudaEventSynchronize(ev[1])                waits for work_b
//   cudaStreamWaitEvent(stream 0, ev[2])       a GPU-side wait
//   one more work_a on stream 0 (after ev[2])
//   cudaDeviceSynchronize()                    waits for anything
// S is at least 3 and at most 8.
#include "common.h"

#include <vector>

__global__ void work_a(unsigned long long ns) { gpu_spin_ns(ns); }
__global__ void work_b(unsigned long long ns) { gpu_spin_ns(ns); }
__global__ void work_c(unsigned long long ns) { gpu_spin_ns(ns); }

int main(int argc, char **argv) {
    long long s = arg_int(argc, argv, 1, 4);
    long long k = arg_int(argc, argv, 2, 8);
    long long rounds = arg_int(argc, argv, 3, 3);
    long long spin_us = arg_int(argc, argv, 4, 20);
    if (s < 3) s = 3;
    if (s > 8) s = 8;
    if (k < 1) k = 1;
    unsigned long long ns = (unsigned long long)spin_us * 1000ull;

    CHECK(cudaFree(0));
    std::vector<cudaStream_t> st(s);
    std::vector<cudaEvent_t> ev(s);
    for (long long i = 0; i < s; i++) {
        CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    }
    for (long long r = 0; r < rounds; r++) {
        for (long long i = 0; i < s; i++)
            for (long long j = 0; j < k; j++) {
                if (i == 0)
                    work_a<<<1, 32, 0, st[i]>>>(ns);
                else if (i == 1)
                    work_b<<<1, 32, 0, st[i]>>>(3 * ns);
                else
                    work_c<<<1, 32, 0, st[i]>>>(ns);
            }
        CHECK_LAUNCH();
        for (long long i = 1; i < s; i++) CHECK(cudaEventRecord(ev[i], st[i]));
        CHECK(cudaStreamSynchronize(st[0]));
        CHECK(cudaEventSynchronize(ev[1]));
        CHECK(cudaStreamWaitEvent(st[0], ev[2], 0));
        work_a<<<1, 32, 0, st[0]>>>(ns);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());
    }
    for (long long i = 0; i < s; i++) {
        CHECK(cudaEventDestroy(ev[i]));
        CHECK(cudaStreamDestroy(st[i]));
    }

    Expect("multi_stream_sync")
        .kv("arg.s", s)
        .kv("arg.k", k)
        .kv("arg.r", rounds)
        .kv("arg.spin_us", spin_us)
        .kv("kernels", rounds * (s * k + 1))
        .kv("kernel.work_a", rounds * (k + 1))
        .kv("kernel.work_b", rounds * k)
        .kv("kernel.work_c", rounds * k * (s - 2))
        .kv("streams", s)
        .kv("api.cudaStreamSynchronize", rounds)
        .kv("api.cudaEventSynchronize", rounds)
        .kv("api.cudaDeviceSynchronize", rounds)
        .kv("api_opt.cudaEventRecord", rounds * (s - 1))
        .kv("api_opt.cudaStreamWaitEvent", rounds)
        .kv("waits.cudaStreamSynchronize", "work_a")
        .kv("waits.cudaEventSynchronize", "work_b")
        .kv("waits.cudaDeviceSynchronize", "any")
        .kv("min_dur_ns.work_b", (long long)(3 * ns))
        .kv("memcpy", 0)
        .kv("memset", 0)
        .print();
    return 0;
}
