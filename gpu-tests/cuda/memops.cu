// A known mix of copies and memsets, in R sizes.
//
//   memops [S=1048576] [R=3]
//
// For each size sz_r = max(1, S >> r) + r (r = 0..R-1), in this order:
//   cudaMemcpy        H2D pageable -> device
//   cudaMemcpyAsync   H2D pinned   -> device
//   cudaMemcpy        D2H device   -> pageable
//   cudaMemcpyAsync   D2H device   -> pinned
//   cudaMemcpy        D2D
//   cudaMemcpyAsync   D2D
//   cudaMemset        value 0x5a
//   cudaMemsetAsync   value 0
//   cudaMemcpy2D      H2D pinned -> pitched device, width 256, height sz/256
//                     (+1): width*height bytes
#include "common.h"

#include <vector>

int main(int argc, char **argv) {
    long long s = arg_int(argc, argv, 1, 1 << 20);
    long long rounds = arg_int(argc, argv, 2, 3);
    if (s < 1) s = 1;

    std::vector<size_t> sizes;
    size_t max_sz = 0;
    for (long long r = 0; r < rounds; r++) {
        size_t sz = (size_t)((s >> r) > 0 ? (s >> r) : 1) + (size_t)r;
        sizes.push_back(sz);
        if (sz > max_sz) max_sz = sz;
    }
    const size_t width = 256;
    size_t max_height = max_sz / width + 1;

    CHECK(cudaFree(0));
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    unsigned char *pageable = (unsigned char *)std::malloc(max_sz);
    if (!pageable) {
        std::fprintf(stderr, "malloc failed\n");
        return 3;
    }
    std::memset(pageable, 7, max_sz);
    unsigned char *pinned, *d_a, *d_b, *d_pitch;
    size_t pitch = 0;
    size_t pinned_sz = max_sz > width * max_height ? max_sz : width * max_height;
    CHECK(cudaMallocHost(&pinned, pinned_sz));
    std::memset(pinned, 9, pinned_sz);
    CHECK(cudaMalloc(&d_a, max_sz));
    CHECK(cudaMalloc(&d_b, max_sz));
    CHECK(cudaMallocPitch(&d_pitch, &pitch, width, max_height));

    unsigned long long htod = 0, dtoh = 0, dtod = 0, set = 0;
    std::string htod_bytes_list;
    for (size_t sz : sizes) {
        size_t height = sz / width + 1;
        CHECK(cudaMemcpy(d_a, pageable, sz, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpyAsync(d_b, pinned, sz, cudaMemcpyHostToDevice, st));
        CHECK(cudaMemcpy(pageable, d_a, sz, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpyAsync(pinned, d_b, sz, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        CHECK(cudaMemcpy(d_b, d_a, sz, cudaMemcpyDeviceToDevice));
        CHECK(cudaMemcpyAsync(d_a, d_b, sz, cudaMemcpyDeviceToDevice, st));
        CHECK(cudaMemset(d_a, 0x5a, sz));
        CHECK(cudaMemsetAsync(d_b, 0, sz, st));
        CHECK(cudaMemcpy2D(d_pitch, pitch, pinned, width, width, height, cudaMemcpyHostToDevice));
        htod += 2 * sz + width * height;
        dtoh += 2 * sz;
        dtod += 2 * sz;
        set += 2 * sz;
    }
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d_pitch));
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaStreamDestroy(st));
    std::free(pageable);

    long long r = rounds;
    Expect("memops")
        .kv("arg.s", s)
        .kv("arg.r", r)
        .kv("kernels", 0)
        .kv("memcpy", 7 * r)
        .kv("memset", 2 * r)
        .kv("copy.HtoD", 3 * r)
        .kv("copy.DtoH", 2 * r)
        .kv("copy.DtoD", 2 * r)
        .kv("copy_bytes.HtoD", (long long)htod)
        .kv("copy_bytes.DtoH", (long long)dtoh)
        .kv("copy_bytes.DtoD", (long long)dtod)
        .kvf("copy_kinds",
             "HtoD:pageable:device:%lld,HtoD:pinned:device:%lld,DtoH:device:pageable:%lld,"
             "DtoH:device:pinned:%lld,DtoD:device:device:%lld",
             r, 2 * r, r, r, 2 * r)
        .kv("memset_bytes", (long long)set)
        .kvf("memset_values", "90:%lld,0:%lld", r, r)
        .kv("api.cudaMemcpy", 3 * r)
        .kv("api.cudaMemcpyAsync", 3 * r)
        .kv("api.cudaMemcpy2D", r)
        .kv("api.cudaMemset", r)
        .kv("api.cudaMemsetAsync", r)
        .print();
    return 0;
}
