// N empty kernel launches from T host threads, each thread on its own
// created stream; then sync and exit.
//
//   empty_kernels [N=2000] [T=1] [EXIT_CODE=0]
//
// EXIT_CODE lets the suite check that tracing leaves a non-zero exit
// status untouched. Thread i launches N/T kernels, plus one if i < N%T.
#include "common.h"

#include <thread>
#include <vector>

__global__ void empty() {}

static void worker(long long count) {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (long long i = 0; i < count; i++) empty<<<1, 32, 0, s>>>();
    CHECK_LAUNCH();
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
    long long n = arg_int(argc, argv, 1, 2000);
    long long t = arg_int(argc, argv, 2, 1);
    int exit_code = (int)arg_int(argc, argv, 3, 0);
    if (t < 1) t = 1;
    CHECK(cudaFree(0));  // create the context before the threads race for it

    std::vector<long long> per(t);
    std::string per_list;
    long long launching = 0;  // threads with at least one kernel
    for (long long i = 0; i < t; i++) {
        per[i] = n / t + (i < n % t ? 1 : 0);
        if (per[i] == 0) continue;
        per_list += (launching++ ? "," : "") + std::to_string(per[i]);
    }
    std::vector<std::thread> threads;
    for (long long i = 0; i < t; i++) threads.emplace_back(worker, per[i]);
    for (auto &th : threads) th.join();
    CHECK(cudaDeviceSynchronize());

    Expect("empty_kernels")
        .kv("arg.n", n)
        .kv("arg.t", t)
        .kv("kernels", n)
        .kv(key("kernel", "empty").c_str(), n)
        .kv(key("grid", "empty").c_str(), "1,1,1")
        .kv(key("block", "empty").c_str(), "32,1,1")
        .kv(key("submit_api", "empty").c_str(), "cudaLaunchKernel")
        .kv("threads", launching)
        .kv("per_thread", per_list)
        .kv("stream_per_thread", 1)
        .kv("streams", launching)
        .kv("memcpy", 0)
        .kv("memset", 0)
        .print();
    return exit_code;
}
