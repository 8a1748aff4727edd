// Recording switched on and off many times inside one process, for the
// exactness and leak checks of recording windows:
//
//   toggles profiler N IN OUT   N windows by cudaProfilerStart/Stop
//                               (INJECTION_CAPTURE_RANGE=cudaProfilerApi)
//   toggles nvtx N IN OUT       N windows by NVTX ranges named "win"
//                               (INJECTION_CAPTURE_RANGE=nvtx:win)
//   toggles socket N IN OUT GAP_MS
//                               N windows by `$GPU_TRACE start|stop PID`
//                               (under gpu-trace record --paused), each
//                               followed by GAP_MS of k_outside launches
//                               every 5 ms: the driver calls at which a
//                               paused process detaches CUPTI
//
// Each window launches IN k_inside kernels, the last of which spins for
// 2 ms, so that it is still running when the window closes (a window is
// complete: the work submitted inside it is recorded even when it ends
// later); between windows, OUT k_outside kernels, none of which may be in
// the trace. Prints the process's RSS, open files and threads after
// window 10 and after the last, then the EXPECT line (and on stderr the RSS
// after every 50th window).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

extern "C" __global__ void k_inside(int *p, long long spin) {
    long long t0 = clock64();
    if (spin) while (clock64() - t0 < spin) {}
    p[threadIdx.x] += 1;
}

extern "C" __global__ void k_outside(int *p) { p[threadIdx.x] += 2; }

static long rss_kb() {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    while (d && readdir(d)) n++;
    if (d) closedir(d);
    return n - 2;
}

static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// `$GPU_TRACE start|stop <this pid>`; whether it said so.
static bool control(const char *cmd) {
    const char *gt = getenv("GPU_TRACE");
    char line[4096];
    snprintf(line, sizeof line, "'%s' %s %d >/dev/null 2>&1", gt ? gt : "gpu-trace", cmd, (int)getpid());
    return system(line) == 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: toggles profiler|nvtx N IN OUT | socket N IN OUT GAP_MS\n");
        return 2;
    }
    bool nvtx = !strcmp(argv[1], "nvtx"), socket = !strcmp(argv[1], "socket");
    int n = atoi(argv[2]), in = atoi(argv[3]), out = atoi(argv[4]);
    double gap = argc > 5 ? atof(argv[5]) : 0;
    long outside = 0, failed = 0;
    int *p;
    cudaMalloc(&p, 64 * sizeof(int));
    cudaMemset(p, 0, 64 * sizeof(int));
    cudaDeviceSynchronize();
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    long long spin = (long long)clock_khz * 2;  // about 2 ms
    long rss10 = 0, fds10 = 0, thr10 = 0;
    for (int w = 0; w < n; w++) {
        if (socket) failed += !control("start");
        else if (nvtx) nvtxRangePushA("win");
        else cudaProfilerStart();
        for (int i = 0; i < in; i++) k_inside<<<1, 32>>>(p, i == in - 1 ? spin : 0);
        if (socket) failed += !control("stop");
        else if (nvtx) nvtxRangePop();
        else cudaProfilerStop();
        for (int i = 0; i < out; i++) k_outside<<<1, 32>>>(p);
        outside += out;
        cudaDeviceSynchronize();
        for (double t0 = now_ms(); now_ms() - t0 < gap; outside++) {
            k_outside<<<1, 32>>>(p);
            cudaDeviceSynchronize();
            usleep(5000);
        }
        if (w == 9) { rss10 = rss_kb(); fds10 = entries("/proc/self/fd"); thr10 = entries("/proc/self/task"); }
        if ((w + 1) % 50 == 0) fprintf(stderr, "RSS after window %d: %ld kB\n", w + 1, rss_kb());
    }
    cudaDeviceSynchronize();
    printf("LEAK rss_kb_after_10=%ld rss_kb_after_%d=%ld fds=%ld/%d threads=%ld/%d\n", rss10, n, rss_kb(),
           fds10, entries("/proc/self/fd"), thr10, entries("/proc/self/task"));
    int h[64];
    cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost);
    cudaError_t e = cudaGetLastError();
    printf("EXPECT case=toggles windows=%d k_inside=%d k_outside_untraced=%ld control_failed=%ld ok=%d\n", n, n * in,
           outside, failed, e == cudaSuccess && h[0] == n * in + 2 * outside);
    return e == cudaSuccess ? 0 : 1;
}
