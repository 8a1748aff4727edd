/* A device-side diagnostic, LD_PRELOADed into a program that dies of a
 * signal on the GPU machine (which has no gdb): on SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE or SIGABRT it writes the signal, the faulting address, the thread
 * and each frame as library+offset to stderr, then dies of the signal as
 * before. Offsets into libgpu_trace_cuda.so resolve here with addr2line on
 * the unstripped library. Not part of the product.
 *
 *   gcc -O1 -g -shared -fPIC -o crash_backtrace.so crash_backtrace.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void say(const char *s, int n) { (void)!write(2, s, (size_t)n); }

static void on_fault(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char line[512];
    char name[32] = "";
    int n = snprintf(line, sizeof line, "CRASH-BACKTRACE: signal %d (code %d) at %p, thread %ld\n",
                     sig, si->si_code, si->si_addr, (long)syscall(SYS_gettid));
    say(line, n);
    void *frames[64];
    int k = backtrace(frames, 64);
    for (int i = 0; i < k; i++) {
        Dl_info d;
        if (dladdr(frames[i], &d) && d.dli_fname) {
            n = snprintf(line, sizeof line, "  #%d %s+0x%lx %s\n", i, d.dli_fname,
                         (unsigned long)((char *)frames[i] - (char *)d.dli_fbase),
                         d.dli_sname ? d.dli_sname : "");
        } else {
            n = snprintf(line, sizeof line, "  #%d %p\n", i, frames[i]);
        }
        say(line, n);
    }
    (void)name;
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}
