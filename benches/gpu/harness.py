#!/usr/bin/env python3
"""GPU overhead harness: gpu-trace against the baselines, interleaved.

Runs on a machine with an NVIDIA GPU, nvcc and CUPTI (no Rust needed): the
gpu-trace artifacts are built elsewhere and passed with --bin. For every
repetition it runs every workload under every mode in turn, so that drift
(clocks, other tenants) hits all modes alike, then reports per workload and
mode the median and minimum, the ratio to the untraced baseline, the added
cost relative to the bare-CUPTI floor, trace bytes per kernel and peak RSS.

    python3 benches/gpu/harness.py --bin target/release --reps 5 --out harness-results/

Modes:
  baseline        no injection
  baseline_b      no injection either: the null control of a pair (--concurrent)
  floor           bare CUPTI: kernel + memcpy activity, records counted and dropped
  nvidia_sample   NVIDIA's cupti_trace_injection sample (stdout discarded)
  cfg_idle        the floor library set up as gt_idle sets CUPTI up (subscriber,
                  timestamp callback, no activity kinds): CUPTI's own idle cost
  cfg_gpu         the floor library set up as gt_gpu sets CUPTI up (subscriber,
                  timestamp callback, gpu-trace's four kinds)
  cfg_cb_runtime  cfg_gpu plus an empty callback on cudaLaunchKernel
  cfg_cb_driver   cfg_gpu plus an empty callback on cuLaunchKernel[Ex][_ptsz]
  cfg_cb_both     both: what CUPTI's callback dispatch alone costs gt_full
  cfg_sub         the floor with gpu-trace's four kinds and a subscriber only
  cfg_ts          the floor with gpu-trace's four kinds and the timestamp callback only
  cfg_act_runtime cfg_gpu plus CUPTI's API activity records (no callback) for
  cfg_act_driver  the same launch functions as cfg_cb_*
  cfg_act_both
  gt_idle         gpu-trace loaded, no session asks for anything (system mode, no traced)
  gt_gpu          gpu-trace, renderstages only (INJECTION_TRACE=gpu)
  gt_full         gpu-trace, renderstages + API slices + NVTX
  gt_paused       gpu-trace as in gt_full, but with a capture range that never opens:
                  the tool loaded and idle (its cost outside the ranges of *_ab)
  gt_python       gt_full plus each launch's Python call stack (INJECTION_TRACE=...,python)
  gt_api          gpu-trace, renderstages + API slices (no NVTX)
  gt_nvtx         gpu-trace, renderstages + NVTX (no API slices)
  gt_*_rt         ... with API slices from the runtime layer (INJECTION_API_LAYER=runtime)
  *_ab            (PyTorch workloads) the mode with INJECTION_CAPTURE_RANGE=cudaProfilerApi
                  and torch_mlp.py --ab W: untraced and traced windows alternate in
                  one process; reported as the traced ÷ untraced step time.
                  baseline_ab is the null control (no tool: both windows alike)
  gt_counters     gpu-trace, renderstages + per-kernel counters on every kernel, with
                  three one-pass metrics (COUNTER_METRICS): user replay, batched sessions
  gt_counters_kr  the same with INJECTION_COUNTERS_REPLAY=kernel (CUPTI's kernel replay)
  gt_counters_none  counters on with a name filter that matches no kernel: what the
                  filter costs the kernels it leaves out
  gt_counters_1in1000  counters on for one launch in 1,000 (skip half, then count
                  launches/1000): the other 999 against gt_gpu
  gt_paused_ctl   gpu-trace as in gt_full, started paused (INJECTION_PAUSED=1): the tool
                  loaded with its control socket, no window ever opens
  gt_paused_attached  the same with INJECTION_DETACH=off: CUPTI stays attached while
                  paused (the idle cost that detaching takes away)
  gt_full_notel   gt_full without GPU telemetry (INJECTION_TELEMETRY_PERIOD=off): the
                  sampler's cost is gt_full against it
  gt_duty         gpu-trace as in gt_full in a duty cycle (--duty WINDOW/EVERY, default
                  1s/20s: INJECTION_WINDOW, INJECTION_EVERY)
  gt_duty_attached  the same with INJECTION_DETACH=off (CUPTI attached between windows)
  torch_cuda      torch.profiler, CUDA activity only (PyTorch workloads only)
  torch_cpu_cuda  torch.profiler, CPU + CUDA (PyTorch workloads only)
"""

import argparse
import concurrent.futures
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import duty_excess
from duty_excess import seconds, t95

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA = os.environ.get("CUDA_ROOT", "/usr/local/cuda")
COUNTER_METRICS = "sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum"
CUPTI_INC = f"{CUDA}/extras/CUPTI/include"
CUPTI_LIBS = [f"{CUDA}/extras/CUPTI/lib64", f"{CUDA}/targets/x86_64-linux/lib"]
NVCC = shutil.which("nvcc") or f"{CUDA}/bin/nvcc"


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, text=True, capture_output=True, **kw)


def build(work, want_sample=True):
    out = {}
    jobs = {
        "launch_loop": f"{NVCC} -arch=sm_90 -O2 -o {work}/launch_loop {HERE}/launch_loop.cu",
        "mixed": f"{NVCC} -arch=sm_90 -O2 -o {work}/mixed {HERE}/mixed.cu",
        "floor": (
            f"{NVCC} -O2 -shared -Xcompiler -fPIC -o {work}/libfloor.so {HERE}/floor_injection.cpp "
            f"-I{CUPTI_INC} " + " ".join(f"-L{d} -Xlinker -rpath,{d}" for d in CUPTI_LIBS) + " -lcupti"
        ),
    }
    procs = {k: subprocess.Popen(v, shell=True, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for k, v in jobs.items()}
    for k, p in procs.items():
        log = p.communicate()[0]
        if p.returncode != 0:
            print(f"build {k} failed:\n{log[-3000:]}")
            sys.exit(1)
    out["launch_loop"] = f"{work}/launch_loop"
    out["mixed"] = f"{work}/mixed"
    out["floor"] = f"{work}/libfloor.so"
    # NVIDIA's sample, built from the installed CUPTI samples.
    src = f"{CUDA}/extras/CUPTI/samples"
    dst = f"{work}/cupti_samples"
    if want_sample and os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True)
        r = sh(f"make -C {dst}/cupti_trace_injection CUDA_INSTALL_PATH={CUDA} -j8")
        libs = [f for f in os.listdir(f"{dst}/cupti_trace_injection") if f.endswith(".so")]
        if r.returncode == 0 and libs:
            out["nvidia_sample"] = f"{dst}/cupti_trace_injection/{libs[0]}"
        else:
            print(f"NVIDIA sample not built (mode skipped):\n{(r.stdout + r.stderr)[-2000:]}")
    return out


def run(cmd, env, log=None):
    """Runs cmd; returns (returncode, stdout text, stderr text, maxrss KiB, wall s).
    With `log` (a path prefix): LOG.err gets each stderr line after the
    CLOCK_BOOTTIME ns it was read at, and LOG.cpu every 250 ms each
    thread's CPU ticks (`ns tid comm utime stime`), to tell when and on
    which thread a run spent its time."""
    with tempfile.TemporaryFile("w+") as o, tempfile.TemporaryFile("w+") as e:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stdout=o, stderr=subprocess.PIPE if log else e, text=True)
        threads = []
        if log:
            def read_err():
                with open(f"{log}.err", "w") as f:
                    for line in p.stderr:
                        e.write(line)
                        f.write(f"{time.clock_gettime_ns(time.CLOCK_BOOTTIME)} {line}")

            def sample_cpu():
                with open(f"{log}.cpu", "w") as f:
                    while p.returncode is None:
                        ns = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
                        try:
                            for tid in os.listdir(f"/proc/{p.pid}/task"):
                                with open(f"/proc/{p.pid}/task/{tid}/stat") as st:
                                    x = st.read()
                                comm = x[x.index("(") + 1:x.rindex(")")].replace(" ", "_")
                                fields = x[x.rindex(")") + 2:].split()
                                f.write(f"{ns} {tid} {comm} {fields[11]} {fields[12]}\n")
                        except (OSError, ValueError):
                            pass
                        time.sleep(0.25)

            threads = [threading.Thread(target=read_err), threading.Thread(target=sample_cpu)]
            for t in threads:
                t.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        for t in threads:
            t.join()
        o.seek(0)
        e.seek(0)
        return p.returncode, o.read(), e.read(), ru.ru_maxrss, wall


def parse_result(text):
    # Other output (the NVIDIA sample's records) may share the line.
    for line in text.splitlines():
        i = line.find("RESULT workload=")
        if i >= 0:
            return dict(kv.split("=", 1) for kv in line[i:].split()[1:] if "=" in kv)
    return None


def interval(rs):
    """Geometric mean of ratios `rs` and its 95% t interval (None below 2)."""
    if len(rs) < 2:
        return None
    logs = [math.log(x) for x in rs]
    m, sd = statistics.mean(logs), statistics.stdev(logs)
    h = t95(len(rs) - 1) * sd / math.sqrt(len(rs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release", help="directory with libgpu_trace_cuda.so and gpu-trace")
    ap.add_argument("--old-bin", default="", help="directory with an earlier libgpu_trace_cuda.so: modes ending in _old run it, side by side")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "harness-results"))
    ap.add_argument("--workloads", default="launch_1t,launch_4t,mixed,torch")
    ap.add_argument("--launches", type=int, default=0, help="launches of launch_1t/launch_4t (default 200,000, 20,000 with --quick)")
    ap.add_argument("--taskset", default="", help="run every workload under taskset -c LIST")
    ap.add_argument("--torch-steps", type=int, default=0, help="steps of the PyTorch loop (default 300, 80 with --quick)")
    ap.add_argument("--gpt2-steps", type=int, default=0, help="steps of the GPT-2 training loop (gpt2_train.py; default 300, 60 with --quick)")
    ap.add_argument("--ab-window", type=int, default=25, help="steps per window of the *_ab modes")
    ap.add_argument("--torch-stat", choices=["mean", "p50"], default="mean",
                    help="PyTorch step time: mean over the timed steps, or the median step")
    ap.add_argument("--no-rotate", action="store_true",
                    help="run the modes in the same order every repetition (default: each repetition starts one mode later)")
    ap.add_argument("--build-only", metavar="DIR", help="build the test programs and the floor library into DIR, then stop")
    ap.add_argument("--duty", default="1s/20s", help="window/period of gt_duty")
    ap.add_argument("--duty-delay", default="", help="gt_duty's first window opens this long after the tool starts (INJECTION_DELAY)")
    ap.add_argument("--step-logs", action="store_true",
                    help="PyTorch workloads log every step (kept under OUT/steps); gt_duty runs and their paired "
                         "tool-free runs then get each window's excess inside the process (duty_excess.py)")
    ap.add_argument("--concurrent", metavar="CPUS/CPUS",
                    help="run the two --modes of each repetition at the same time, under taskset -c with these CPU "
                         "lists (swapped every repetition): a pair then shares the host's slow stretches")
    ap.add_argument("--modes", default="baseline,floor,cfg_idle,cfg_gpu,nvidia_sample,gt_idle,gt_gpu,gt_full,torch_cuda,torch_cpu_cuda")
    a = ap.parse_args()
    if a.concurrent and (len(a.concurrent.split("/")) != 2 or len(a.modes.split(",")) != 2):
        sys.exit(f"--concurrent {a.concurrent!r} --modes {a.modes!r}: expected two CPU lists (e.g. 2-5/6-9) and two modes")
    if a.build_only:
        os.makedirs(a.build_only, exist_ok=True)
        for k, v in build(a.build_only, want_sample=False).items():
            print(f"{k}={v}")
        return
    os.makedirs(a.out, exist_ok=True)
    lib = os.path.abspath(f"{a.bin}/libgpu_trace_cuda.so")
    old_lib = os.path.abspath(f"{a.old_bin}/libgpu_trace_cuda.so") if a.old_bin else ""
    if any(m.endswith("_old") for m in a.modes.split(",")) and not os.path.exists(old_lib):
        sys.exit("modes ending in _old need --old-bin DIR with libgpu_trace_cuda.so")
    cli = os.path.abspath(f"{a.bin}/gpu-trace")
    work = tempfile.mkdtemp(prefix="gt-harness-")
    arts = build(work, want_sample="nvidia_sample" in a.modes.split(","))

    n_launch = a.launches or (20000 if a.quick else 200000)
    torch_key, torch_unit = ("ms_p50", "ms/step, median step") if a.torch_stat == "p50" else ("ms_per_step", "ms/step")
    workloads = {
        "launch_1t": ([arts["launch_loop"], str(n_launch), "1"], "ns_per_launch", "ns/launch"),
        "launch_4t": ([arts["launch_loop"], str(n_launch), "4"], "ns_per_launch", "ns/launch (aggregate)"),
        "mixed": ([arts["mixed"], "2000" if a.quick else "20000"], "ns_per_iter", "ns/iteration"),
        "torch": ([sys.executable, f"{HERE}/torch_mlp.py", "--steps", str(a.torch_steps or (80 if a.quick else 300))], torch_key, torch_unit),
        "torch_dense": ([sys.executable, f"{HERE}/torch_mlp.py", "--dense", "--steps", str(a.torch_steps or (80 if a.quick else 300))], torch_key, torch_unit),
        "gpt2": ([sys.executable, f"{HERE}/gpt2_train.py", "--steps", str(a.gpt2_steps or (60 if a.quick else 300))], torch_key, torch_unit),
    }
    wanted_wl = [w for w in a.workloads.split(",") if w in workloads]
    modes = [m for m in a.modes.split(",")]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("INJECTION_", "CUDA_INJECTION64", "NVTX_INJECTION64", "FLOOR_"))}

    def mode_env(mode, tracedir, tag):
        env = dict(base_env)
        out = f"{tracedir}/{tag}.pftrace"
        if mode.endswith("_ab"):
            mode = mode[: -len("_ab")]
            env["INJECTION_CAPTURE_RANGE"] = "cudaProfilerApi"
        if mode == "floor":
            env["CUDA_INJECTION64_PATH"] = arts["floor"]
        elif mode.startswith("cfg_"):
            env["CUDA_INJECTION64_PATH"] = arts["floor"]
            if mode != "cfg_ts":
                env["FLOOR_SUBSCRIBE"] = "1"
            if mode != "cfg_sub":
                env["FLOOR_TIMESTAMP"] = "1"
            env["FLOOR_KINDS"] = "none" if mode == "cfg_idle" else "all"
            if mode.startswith("cfg_cb_"):
                env["FLOOR_CALLBACKS"] = mode[len("cfg_cb_"):]
            if mode.startswith("cfg_act_"):
                env["FLOOR_API_ACTIVITY"] = mode[len("cfg_act_"):]
        elif mode == "nvidia_sample":
            env["CUDA_INJECTION64_PATH"] = arts["nvidia_sample"]
        elif mode.startswith("gt_"):
            env["CUDA_INJECTION64_PATH"] = lib
            if mode.endswith("_old"):
                env["CUDA_INJECTION64_PATH"] = old_lib
                mode = mode[: -len("_old")]
            if "_rt" in mode:
                env["INJECTION_API_LAYER"] = "runtime"
            mode = mode.replace("_rt", "")
            env["INJECTION_OUTPUT"] = out
            if mode == "gt_idle":
                env["INJECTION_MODE"] = "system"
                env["PERFETTO_PRODUCER_SOCK_NAME"] = f"{tracedir}/no-traced.sock"
            elif mode == "gt_gpu":
                env["INJECTION_TRACE"] = "gpu"
            elif mode == "gt_python":
                env["INJECTION_TRACE"] = "gpu,api,nvtx,python"
                env["NVTX_INJECTION64_PATH"] = env["CUDA_INJECTION64_PATH"]
            elif mode in ("gt_full", "gt_paused", "gt_paused_ctl", "gt_paused_attached", "gt_duty", "gt_duty_attached",
                          "gt_full_notel"):
                env["INJECTION_TRACE"] = "gpu,api,nvtx"
                env["NVTX_INJECTION64_PATH"] = env["CUDA_INJECTION64_PATH"]
                if mode == "gt_paused":
                    env["INJECTION_CAPTURE_RANGE"] = "cudaProfilerApi"
                elif mode in ("gt_paused_ctl", "gt_paused_attached"):
                    env["INJECTION_PAUSED"] = "1"
                    if mode == "gt_paused_attached":
                        env["INJECTION_DETACH"] = "off"
                    # Its few lines say each detach and attach (counted below).
                    env["INJECTION_VERBOSE"] = "1"
                elif mode == "gt_full_notel":
                    env["INJECTION_TELEMETRY_PERIOD"] = "off"
                elif mode in ("gt_duty", "gt_duty_attached"):
                    env["INJECTION_WINDOW"], env["INJECTION_EVERY"] = a.duty.split("/")
                    if mode == "gt_duty_attached":
                        env["INJECTION_DETACH"] = "off"
                    if a.duty_delay:
                        env["INJECTION_DELAY"] = a.duty_delay
                    env["INJECTION_VERBOSE"] = "1"
            elif mode == "gt_api":
                env["INJECTION_TRACE"] = "gpu,api"
            elif mode.startswith("gt_counters"):
                env["INJECTION_TRACE"] = "gpu,counters"
                env["INJECTION_METRICS"] = COUNTER_METRICS
                if mode == "gt_counters_kr":
                    env["INJECTION_COUNTERS_REPLAY"] = "kernel"
                elif mode == "gt_counters_none":
                    env["INJECTION_KERNEL_FILTER"] = "no_kernel_is_named_this"
                elif mode == "gt_counters_1in1000":
                    env["INJECTION_KERNEL_SKIP"] = str(n_launch // 2)
                    env["INJECTION_KERNEL_COUNT"] = str(max(1, n_launch // 1000))
            elif mode == "gt_nvtx":
                env["INJECTION_TRACE"] = "gpu,nvtx"
                env["NVTX_INJECTION64_PATH"] = env["CUDA_INJECTION64_PATH"]
        return env, out

    def run_one(wl, mode, rep, taskset):
        """One run of workload wl under mode: (its result row, a line to
        print), or None for a mode the workload skips."""
        cmd, key, _ = workloads[wl]
        if mode == "nvidia_sample" and "nvidia_sample" not in arts:
            return None
        if (mode.startswith("torch_") or mode.endswith("_ab")) and not wl.startswith("torch"):
            return None
        tag = f"{wl}-{mode}-{rep}"
        env, trace = mode_env(mode, tracedir, tag)
        c = (["taskset", "-c", taskset] if taskset else []) + list(cmd)
        if mode.startswith("torch_"):
            c += ["--profiler", mode[len("torch_"):], "--profiler-out", f"{tracedir}/{tag}.json"]
        if mode.endswith("_ab"):
            c += ["--ab", str(a.ab_window)]
        steplog = f"{stepdir}/{tag}.steps" if a.step_logs and wl in ("torch", "torch_dense", "gpt2") else None
        if steplog:
            c += ["--step-log", steplog]
        # The NVIDIA sample prints every record to stdout; the
        # temporary file takes them along with our RESULT line.
        log = None
        if a.step_logs and env.get("INJECTION_VERBOSE"):
            os.makedirs(f"{a.out}/logs", exist_ok=True)
            log = f"{a.out}/logs/{tag}"
        rc, so, se, rss, wall = run(c, env, log)
        res = parse_result(so)
        row = {"rc": rc, "rss_kib": rss, "wall_s": wall, "rep": rep}
        if res is None or rc != 0:
            row["error"] = (se or "")[-500:]
            print(f"[{tag}] FAILED rc={rc}: {row['error']}", flush=True)
        else:
            row["value"] = float(res[key])
            for k2 in ("ms_per_step", "ms_p50", "ab_on_ms", "ab_off_ms", "ab_ratio"):
                if k2 in res:
                    row[k2] = float(res[k2])
            row["kernels_expected"] = int(res["kernels"]) if "kernels" in res else None
            if "profiler_bytes" in res:
                row["trace_bytes"] = int(res["profiler_bytes"])
                row["trace_kernels"] = int(res["profiler_kernels"])
        if env.get("INJECTION_VERBOSE"):
            # CUPTI detached between windows, and attached again.
            row["detaches"] = se.count("CUPTI detached (time")
            row["attaches"] = se.count("CUPTI attached again")
        if mode.startswith("gt_") and os.path.exists(trace):
            row["trace_bytes"] = os.path.getsize(trace)
            st = sh(f"{cli} stats --json {trace}")
            if log:
                with open(f"{log}.stats.json", "w") as f:
                    f.write(st.stdout)
            try:
                j = json.loads(st.stdout)
                row["trace_kernels"] = sum(k["count"] for k in j["kernels"])
                row["trace_api_calls"] = sum(k["count"] for k in j["api"])
                row["dropped"] = j["dropped"]
                wins = [f["windows"] for f in j.get("files", []) if f.get("windows")]
                if wins:
                    row["windows"] = sum(w["count"] for w in wins)
                    row["recorded_s"] = sum(w["recorded_ns"] for w in wins) / 1e9
                    row["window_spans"] = duty_excess.windows_of_stats(j)
            except Exception as ex:  # noqa: BLE001
                row["stats_error"] = f"{ex}: {st.stderr[-300:]}"
            os.unlink(trace)
        if steplog and os.path.exists(steplog):
            row["step_log"] = os.path.relpath(steplog, a.out)
            if row.get("window_spans"):
                ex = duty_excess.excess(duty_excess.load_steps(steplog), row["window_spans"])
                row["excess_s"] = [w["excess_s"] for w in ex]
                row["quiet_s_per_step"] = [w["s_per_step"] for w in ex]
        if log:
            row["log"] = os.path.relpath(log, a.out)
        det = f" detaches={row['detaches']} attaches={row['attaches']}" if "detaches" in row else ""
        if "excess_s" in row:
            det += " excess_ms=" + ",".join(f"{x * 1e3:+.0f}" for x in row["excess_s"])
        return row, f"[{tag}] {row.get('value')} rss={rss // 1024}MB trace={row.get('trace_bytes')} kernels={row.get('trace_kernels')}{det}"

    results = {}  # (wl, mode) -> list of dicts
    tracedir = f"{work}/traces"
    os.makedirs(tracedir)
    stepdir = f"{a.out}/steps"
    if a.step_logs:
        os.makedirs(stepdir, exist_ok=True)
    # A time limit (SIGTERM) ends the runs early but still writes the
    # summary of those that finished.
    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    try:
        for rep in range(a.reps):
            for wl in wanted_wl:
                def keep(mode, got):
                    if got is not None:
                        results.setdefault((wl, mode), []).append(got[0])
                        print(got[1], flush=True)

                if a.concurrent:
                    # The two modes at once, each on its own CPUs (swapped
                    # every repetition), so that the host's slow stretches
                    # hit both runs of a pair alike.
                    order = modes if rep % 2 == 0 else modes[::-1]
                    with concurrent.futures.ThreadPoolExecutor(2) as ex:
                        done = [ex.submit(run_one, wl, m, rep, c) for m, c in zip(order, a.concurrent.split("/"))]
                    for m, f in zip(order, done):
                        keep(m, f.result())
                else:
                    shift = 0 if a.no_rotate else rep % len(modes)
                    for m in modes[shift:] + modes[:shift]:
                        keep(m, run_one(wl, m, rep, a.taskset))
    except KeyboardInterrupt:
        print("interrupted: summarising the runs that finished", flush=True)

    # The tool-free runs' null control: the same arithmetic at the paired
    # duty run's windows, placed at the same offsets into the loop.
    if a.step_logs:
        for (wl, mode), rows in results.items():
            if mode != "baseline":
                continue
            duty_by_rep = {r["rep"]: r for r in results.get((wl, "gt_duty"), []) if r.get("window_spans") and r.get("step_log")}
            for r in rows:
                d = duty_by_rep.get(r["rep"])
                if not r.get("step_log") or d is None:
                    continue
                steps = duty_excess.load_steps(f"{a.out}/{r['step_log']}")
                dsteps = duty_excess.load_steps(f"{a.out}/{d['step_log']}")
                ex = duty_excess.excess(steps, duty_excess.shifted(d["window_spans"], steps[0] - dsteps[0]))
                r["excess_s"] = [w["excess_s"] for w in ex]
                r["quiet_s_per_step"] = [w["s_per_step"] for w in ex]
                if ex and d.get("quiet_s_per_step"):
                    d["level_ratio"] = statistics.mean(d["quiet_s_per_step"]) / statistics.mean(r["quiet_s_per_step"])

    # Summary.
    lines = []
    summary = {}
    for wl in wanted_wl:
        _, key, unit = workloads[wl]
        vals = {m: [r["value"] for r in results.get((wl, m), []) if "value" in r] for m in modes}
        if not vals.get("baseline"):
            continue
        base = statistics.median(vals["baseline"])
        floor = statistics.median(vals["floor"]) if vals.get("floor") else None
        lines.append(f"\n### {wl} ({unit}; median of {a.reps} interleaved runs)\n")
        lines.append("| mode | median | min | × baseline | paired × baseline (range) | added | added ÷ floor's | paired added ÷ floor's | trace B/kernel | kernels in trace | peak RSS MB |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        # Per repetition, the mode against the baseline run next to it:
        # drift between repetitions cancels out.
        base_by_rep = {r["rep"]: r["value"] for r in results.get((wl, "baseline"), []) if "value" in r}
        floor_by_rep = {r["rep"]: r["value"] for r in results.get((wl, "floor"), []) if "value" in r}
        for m in modes:
            v = vals.get(m)
            if not v:
                continue
            med, mn = statistics.median(v), min(v)
            rows = results[(wl, m)]
            tb = [r["trace_bytes"] / r["trace_kernels"] for r in rows if r.get("trace_bytes") and r.get("trace_kernels")]
            tk = [r["trace_kernels"] for r in rows if "trace_kernels" in r]
            exp = [r["kernels_expected"] for r in rows if r.get("kernels_expected")]
            rss = statistics.median(r["rss_kib"] for r in rows) / 1024
            added = med - base
            paired = sorted(r["value"] / base_by_rep[r["rep"]] for r in rows if "value" in r and r["rep"] in base_by_rep)
            ratio_floor = (added / (floor - base)) if floor is not None and floor > base and m != "baseline" else None
            # Per repetition: this mode's added cost over the floor's, both
            # against the same repetition's baseline.
            pf = sorted(
                (r["value"] - base_by_rep[r["rep"]]) / (floor_by_rep[r["rep"]] - base_by_rep[r["rep"]])
                for r in rows
                if "value" in r and m not in ("baseline", "floor") and r["rep"] in base_by_rep
                and r["rep"] in floor_by_rep and floor_by_rep[r["rep"]] > base_by_rep[r["rep"]]
            )
            summary[f"{wl}/{m}"] = {
                "median": med, "min": mn, "ratio": med / base, "added": added,
                "added_over_floor": ratio_floor,
                "paired_ratio_median": statistics.median(paired) if paired else None,
                "paired_ratios": paired,
                "paired_added_over_floor_median": statistics.median(pf) if pf else None,
                "trace_bytes_per_kernel": statistics.median(tb) if tb else None,
                "kernels_in_trace": tk, "kernels_expected": exp[:1], "rss_mb": rss,
            }
            lines.append(
                f"| {m} | {med:.4g} | {mn:.4g} | {med / base:.3f} | "
                f"{'' if not paired else f'{statistics.median(paired):.3f} ({paired[0]:.2f}–{paired[-1]:.2f})'} | {added:+.4g} | "
                f"{'' if ratio_floor is None else f'{ratio_floor:.2f}'} | "
                f"{'' if not pf else f'{statistics.median(pf):.2f}'} | "
                f"{'' if not tb else f'{statistics.median(tb):.0f}'} | "
                f"{'' if not tk else f'{min(tk)}–{max(tk)}' + (f' (expected {exp[0]})' if exp else '')} | {rss:.0f} |"
            )
        # The recording windows' cost targets, with each mode's paired ratios as a
        # mean of logs and its 95% interval (t): paused within the noise of
        # the tool-free runs; a duty cycle at most 1% plus its traced share
        # of the full-tracing cost.
        bv = vals.get("baseline", [])
        if {"gt_duty", "gt_paused_ctl", "gt_paused_attached", "baseline_b"} & set(modes):
            lines.append(f"\n#### {wl}: windows targets (paired ratios: geometric mean and 95% interval)\n")
            if len(bv) > 1:
                lines.append(f"- tool-free runs: {len(bv)}, spread {min(bv):.4g}–{max(bv):.4g} ({unit}), coefficient of variation {statistics.stdev(bv) / statistics.mean(bv):.1%}")
            ci = {}
            for m in ("baseline_b", "gt_paused_ctl", "gt_paused_attached", "gt_duty", "gt_full"):
                rows = results.get((wl, m), [])
                rs = [r["value"] / base_by_rep[r["rep"]] for r in rows if "value" in r and r["rep"] in base_by_rep]
                ci[m] = interval(rs)
                if ci[m]:
                    g, lo, hi = ci[m]
                    lines.append(f"- {m}: {g:.3f} ({lo:.3f}–{hi:.3f}) over {len(rs)} pairs")
                    summary[f"{wl}/{m}"]["paired_geomean_ci95"] = [g, lo, hi]
            duty = [r for r in results.get((wl, "gt_duty"), []) if r.get("recorded_s") and r.get("wall_s")]
            if duty and ci.get("gt_full"):
                # The target is for a long job: the cycle's own share
                # (window ÷ period). A run also records its first window
                # during start-up, outside the timed loop.
                w_s, every_s = (seconds(x) for x in a.duty.split("/"))
                f = w_s / every_s
                bound = 1.01 + f * (ci["gt_full"][0] - 1)
                run_f = statistics.median(r["recorded_s"] / r["wall_s"] for r in duty)
                win = statistics.median(r["windows"] for r in duty)
                lines.append(f"- gt_duty: {win:g} windows a run (median), {run_f:.1%} of its wall time recorded (start-up included); target for {a.duty} ({f:.1%} traced): at most {bound:.3f} (1% + {f:.1%} × full's {ci['gt_full'][0] - 1:+.1%})")
                summary[f"{wl}/gt_duty"]["recorded_share_of_wall"] = run_f
                summary[f"{wl}/gt_duty"]["traced_fraction"] = f
                summary[f"{wl}/gt_duty"]["target"] = bound
        # In-process A/B: traced ÷ untraced windows of the same run.
        ab_modes = [m for m in modes if m.endswith("_ab") and any("ab_ratio" in r for r in results.get((wl, m), []))]
        if ab_modes:
            lines.append(f"\n#### {wl}: in one process, traced ÷ untraced windows of {a.ab_window} steps (median step of each)\n")
            lines.append("| mode | runs | median ratio | min | max | untraced ms | traced ms | each run |")
            lines.append("|---|---|---|---|---|---|---|---|")
            for m in ab_modes:
                rows = [r for r in results[(wl, m)] if "ab_ratio" in r]
                rs = sorted(r["ab_ratio"] for r in rows)
                summary[f"{wl}/{m}/ab"] = {"ratios": rs, "median": statistics.median(rs)}
                lines.append(
                    f"| {m} | {len(rs)} | {statistics.median(rs):.3f} | {rs[0]:.3f} | {rs[-1]:.3f} | "
                    f"{statistics.median(r['ab_off_ms'] for r in rows):.4g} | {statistics.median(r['ab_on_ms'] for r in rows):.4g} | "
                    f"{' '.join(f'{x:.3f}' for x in rs)} |"
                )
    if a.step_logs:
        with open(f"{a.out}/partial.json", "w") as f:
            json.dump({"raw": {f"{k[0]}/{k[1]}": v for k, v in results.items()}}, f)
        lines.append("\n#### In one process: each window's excess over the quiet level before it (duty_excess.py)\n")
        lines.append(duty_excess.pool([f"{a.out}/partial.json"], seconds(a.duty.split("/")[1])))
        os.unlink(f"{a.out}/partial.json")
    gpu = sh("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader").stdout.strip()
    # The commit, where the tree is a git checkout (a copy without .git says so).
    commit = sh(f"git -C {HERE} rev-parse --short HEAD").stdout.strip() or "unknown (no git checkout)"
    header = f"GPU: {gpu}; date: {time.strftime('%Y-%m-%d')}; commit: {commit}; command: {' '.join(sys.argv)}"
    text = header + "\n" + "\n".join(lines)
    print(text)
    with open(f"{a.out}/results.md", "w") as f:
        f.write(text + "\n")
    with open(f"{a.out}/results.json", "w") as f:
        json.dump({"header": header, "summary": summary,
                   "raw": {f"{k[0]}/{k[1]}": v for k, v in results.items()}}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
