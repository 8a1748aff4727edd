/*
 * gpu_trace.h: a traced program's own control of gpu-trace's recording.
 *
 * gpu-trace's injection libraries (libgpu_trace_cuda.so, loaded by the CUDA
 * driver through CUDA_INJECTION64_PATH; libgpu_trace_hip.so, loaded by
 * rocprofiler-sdk through ROCP_TOOL_LIBRARIES) export these functions. A
 * program does not link against them: it finds the library already in the
 * process, as gpu_trace_load() below does, so that the same binary runs
 * untraced without gpu-trace installed.
 *
 * Recording windows: while one is open, the session records what it is set
 * to (GPU work, API calls, ranges, counters); outside, nothing. The program's
 * windows are the windows `gpu-trace start|stop` and the time options
 * (--paused, --delay, --window/--every) open and close: one recording per
 * process, switched by whichever asks. Each window is a line of the trace's
 * log, `recording window N opened (NAME)`, and `gpu-trace stats` counts it.
 *
 * Before the tool starts (CUDA starts it in cuInit, HIP when its runtime
 * loads) a call is kept, the latest winning, and decides how recording
 * starts: gpu_trace_start or an open window opens it at once (under the
 * window's name), gpu_trace_stop or a window already ended starts the run
 * paused. Such calls return GPU_TRACE_PENDING. To call before CUDA starts, a
 * program loads the library itself (dlopen of the path the environment names:
 * the driver later loads the same file and gets this same instance);
 * gpu_trace_load() below only finds a library already loaded.
 *
 * Every function returns at once, is safe from any thread, never aborts,
 * and does nothing harmful when gpu-trace is off.
 */
#ifndef GPU_TRACE_H
#define GPU_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API (gpu_trace_api_version() of the library). */
#define GPU_TRACE_API_VERSION 1

/* What the control functions return. */
#define GPU_TRACE_OK 0       /* done */
#define GPU_TRACE_PENDING 1  /* the tool has not started yet: kept and applied
                                when it starts (ranges: not recorded) */
#define GPU_TRACE_OFF (-1)   /* gpu-trace is off in this process: it could
                                not start, or would not (see its stderr) */
#define GPU_TRACE_FIXED (-2) /* recording cannot be switched here: it records
                                the whole run (INJECTION_CONTROL=off without a
                                time option), or tracing has ended */
#define GPU_TRACE_INVALID (-3) /* a null name, or a window end without its
                                  begin */

/* The library's version, e.g. "0.1.0" (a static string). */
const char *gpu_trace_version(void);

/* GPU_TRACE_API_VERSION of the library: a newer one only adds functions. */
int gpu_trace_api_version(void);

/* Opens a recording window (named "gpu_trace_start" in the trace's log),
 * unless one is open. */
int gpu_trace_start(void);

/* Closes the recording window, if one is open; the work already submitted
 * is still written. */
int gpu_trace_stop(void);

/* Opens a recording window named `name`, unless one is open: then this one
 * nests in it, and its end closes nothing. Call gpu_trace_window_end once
 * for each begin that returned GPU_TRACE_OK or GPU_TRACE_PENDING. */
int gpu_trace_window_begin(const char *name);

/* Ends the innermost window begun; closes recording if its begin opened it.
 * GPU_TRACE_INVALID when no window was begun. */
int gpu_trace_window_end(void);

/* 1 while a window is open (or the run records whole), 0 while recording is
 * off (and before the tool starts), GPU_TRACE_OFF when gpu-trace is off. */
int gpu_trace_is_active(void);

/* Pushes a range named `name` on the calling thread, as nvtxRangePushA (CUDA)
 * or roctxRangePushA (HIP) does, through the same handlers: it is recorded
 * while ranges are (NVTX/roctx tracing, inside a window), and an NVTX
 * capture range (INJECTION_CAPTURE_RANGE=nvtx:NAME) sees it. No NVTX or roctx
 * library is needed. */
int gpu_trace_range_push(const char *name);

/* Pops the calling thread's innermost range, as nvtxRangePop. */
int gpu_trace_range_pop(void);

#ifndef GPU_TRACE_NO_LOADER
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* The functions of the library found in this process. */
struct gpu_trace_api {
    const char *(*version)(void);
    int (*api_version)(void);
    int (*start)(void);
    int (*stop)(void);
    int (*window_begin)(const char *name);
    int (*window_end)(void);
    int (*is_active)(void);
    int (*range_push)(const char *name);
    int (*range_pop)(void);
};

/* Fills `api` from the gpu-trace library loaded in this process: the one
 * that CUDA_INJECTION64_PATH or ROCP_TOOL_LIBRARIES names, found with
 * RTLD_NOLOAD (it is never loaded here). Returns 1 when found, 0 otherwise
 * (`api` is then all null): the process is not traced, or its runtime has
 * not loaded the library yet (CUDA loads it in cuInit: call this after the
 * first CUDA call; a program that wants to call before that, so that its
 * request is kept until the tool starts, dlopens the path the environment
 * names itself, as the Python package does). The handle is never closed. */
static inline int gpu_trace_load(struct gpu_trace_api *api) {
    const char *lists[2];
    int l;
    lists[0] = getenv("CUDA_INJECTION64_PATH");
    lists[1] = getenv("ROCP_TOOL_LIBRARIES");
    memset(api, 0, sizeof *api);
    for (l = 0; l < 2; l++) {
        const char *p = lists[l];
        while (p && *p) {
            char path[4096];
            const char *end = strchr(p, ':');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            void *h = NULL;
            if (n > 0 && n < sizeof path) {
                memcpy(path, p, n);
                path[n] = '\0';
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
            }
            p = end ? end + 1 : NULL;
            if (!h) continue;
            if (!dlsym(h, "gpu_trace_start")) {
                dlclose(h);
                continue;
            }
            *(void **)&api->version = dlsym(h, "gpu_trace_version");
            *(void **)&api->api_version = dlsym(h, "gpu_trace_api_version");
            *(void **)&api->start = dlsym(h, "gpu_trace_start");
            *(void **)&api->stop = dlsym(h, "gpu_trace_stop");
            *(void **)&api->window_begin = dlsym(h, "gpu_trace_window_begin");
            *(void **)&api->window_end = dlsym(h, "gpu_trace_window_end");
            *(void **)&api->is_active = dlsym(h, "gpu_trace_is_active");
            *(void **)&api->range_push = dlsym(h, "gpu_trace_range_push");
            *(void **)&api->range_pop = dlsym(h, "gpu_trace_range_pop");
            return 1;
        }
    }
    return 0;
}
#endif /* GPU_TRACE_NO_LOADER */

#ifdef __cplusplus
}
#endif

#endif /* GPU_TRACE_H */
