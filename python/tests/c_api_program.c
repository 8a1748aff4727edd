/* A C program for the end-to-end test (e2e.py compiles it against the
 * installed package's gpu_trace.h and runs it under `gpu-trace record`): it
 * drives cupti-sim's fake CUDA driver (GPU_TRACE_CUPTI_PATH) step by step and
 * records, through the header's gpu_trace_load(), only its `inside` kernels:
 * 3 of them, in a window named "c window"; the `outside` ones are not. */
#include <gpu_trace.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define LAUNCH(k, n)                                                              \
    "[{\"repeat\":{\"times\":" #n ",\"ops\":[{\"launch\":{\"kernel\":\"" k "\","   \
    "\"grid\":[4,1,1],\"block\":[64,1,1],\"stream\":1}}]}},{\"stream_sync\":{\"stream\":1}}]"

int main(void) {
    struct gpu_trace_api gt;
    void *fake;
    int (*start)(const char *);
    int (*ops)(const char *);

    if (gpu_trace_load(&gt)) {
        fprintf(stderr, "c_api_program: gpu_trace_load found a library before cuInit\n");
        return 1;
    }
    fake = dlopen(getenv("GPU_TRACE_CUPTI_PATH"), RTLD_NOW | RTLD_GLOBAL);
    if (!fake) {
        fprintf(stderr, "c_api_program: %s\n", dlerror());
        return 1;
    }
    *(void **)&start = dlsym(fake, "cupti_sim_start");
    *(void **)&ops = dlsym(fake, "cupti_sim_ops");
    /* cuInit: the driver loads gpu-trace. */
    if (start("{\"kernels\":[{\"name\":\"inside\",\"symbol\":\"_Z6insidev\",\"duration_us\":10},"
              "{\"name\":\"outside\",\"symbol\":\"_Z7outsidev\",\"duration_us\":10}],"
              "\"threads\":[]}") != 0)
        return 1;
    if (!gpu_trace_load(&gt)) {
        fprintf(stderr, "c_api_program: gpu_trace_load found no library after cuInit\n");
        return 1;
    }
    if (gt.api_version() < GPU_TRACE_API_VERSION || gt.stop() != GPU_TRACE_OK ||
        gt.is_active() != 0)
        return 1;
    if (ops(LAUNCH("outside", 2)) != 0) return 1;
    if (gt.window_begin("c window") != GPU_TRACE_OK || gt.is_active() != 1) return 1;
    if (gt.range_push("c range") != GPU_TRACE_OK) return 1;
    if (ops(LAUNCH("inside", 3)) != 0) return 1;
    if (gt.range_pop() != GPU_TRACE_OK) return 1;
    if (gt.window_end() != GPU_TRACE_OK || gt.window_end() != GPU_TRACE_INVALID) return 1;
    if (ops(LAUNCH("outside", 1)) != 0) return 1;
    printf("c_api_program: gpu-trace %s\n", gt.version());
    return 0;
}
