// Shared helpers of the GPU test programs: checked CUDA calls, argument
// parsing, and the EXPECT line.
//
// Every program prints exactly what its trace must show as
//   EXPECT case=NAME key=value key=value ...
// on stdout (see gpu-tests/README.md for the keys). Errors go to stderr and
// exit with status 3, so that a failing program is never mistaken for a
// passing one.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t err_ = (call);                                                     \
        if (err_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__,    \
                         #call, cudaGetErrorName(err_), cudaGetErrorString(err_));     \
            std::exit(3);                                                              \
        }                                                                              \
    } while (0)

// Checks the launch just made (configuration errors) without a second
// traced API call per launch in hot loops: call it after the loop.
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

#ifdef GPU_TESTS_DRIVER
#include <cuda.h>
#define CU_CHECK(call)                                                                 \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char *name_ = "?", *str_ = "?";                                      \
            cuGetErrorName(r_, &name_);                                                \
            cuGetErrorString(r_, &str_);                                               \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__,    \
                         #call, name_, str_);                                          \
            std::exit(3);                                                              \
        }                                                                              \
    } while (0)
#endif

// Positional argument `i` as a positive integer, or `def` when absent.
static inline long long arg_int(int argc, char **argv, int i, long long def) {
    if (i >= argc) return def;
    char *end = nullptr;
    long long v = std::strtoll(argv[i], &end, 0);
    if (!end || *end != '\0' || v < 0) {
        std::fprintf(stderr, "argument %d (%s) must be a non-negative integer\n", i, argv[i]);
        std::exit(2);
    }
    return v;
}

// Accumulates one EXPECT line.
struct Expect {
    std::string line;
    explicit Expect(const char *kase) { line = std::string("EXPECT case=") + kase; }
    Expect &kv(const char *key, long long v) {
        char b[64];
        std::snprintf(b, sizeof b, "%lld", v);
        return kv(key, b);
    }
    Expect &kv(const char *key, const std::string &v) {
        line += ' ';
        line += key;
        line += '=';
        line += v;
        return *this;
    }
    Expect &kvf(const char *key, const char *fmt, ...) {
        char b[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(b, sizeof b, fmt, ap);
        va_end(ap);
        return kv(key, std::string(b));
    }
    void print() const {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    }
};

// Spins the calling thread for `ns` nanoseconds of the GPU's global timer
// (independent of the SM clock).
__device__ __forceinline__ unsigned long long gpu_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void gpu_spin_ns(unsigned long long ns) {
    unsigned long long start = gpu_globaltimer();
    while (gpu_globaltimer() - start < ns) __nanosleep(500);
}

// "k.name" keys.
static inline std::string key(const char *head, const char *name) {
    return std::string(head) + "." + name;
}
