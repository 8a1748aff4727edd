"""The gpu_trace package without gpu-trace's injection (python -m unittest):
every call is a no-op that warns once and never raises; the schedule picks
the steps torch.profiler's would; load() reads the export's tables."""

import os
import subprocess
import sys
import textwrap
import unittest
from unittest import mock

import gpu_trace
from gpu_trace import _load, _native


def untraced_env():
    env = dict(os.environ)
    for v in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "ROCP_TOOL_LIBRARIES"):
        env.pop(v, None)
    return env


class Untraced(unittest.TestCase):
    def test_every_call_is_a_no_op_that_warns_once_and_loads_nothing(self):
        # A fresh interpreter: the package finds its libraries once per process.
        code = textwrap.dedent("""
            import warnings
            warnings.simplefilter("always")
            import gpu_trace
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                assert gpu_trace.start() is None
                gpu_trace.stop()
                with gpu_trace.window("step 1"):
                    with gpu_trace.range("forward"):
                        pass
                s = gpu_trace.schedule(wait=1, active=1)
                for _ in range(3):
                    s.step()
                with s:
                    pass
                assert gpu_trace.is_active() is False
                assert gpu_trace.is_traced() is False
                assert gpu_trace.injection_version() is None
            mine = [x for x in w if issubclass(x.category, gpu_trace.GpuTraceWarning)]
            assert len(mine) == 1, [str(x.message) for x in w]
            msg = str(mine[0].message)
            assert msg.startswith("gpu-trace: this process is not traced"), msg
            assert mine[0].filename == "<string>", mine[0].filename
            maps = open("/proc/self/maps").read()
            assert "libgpu_trace" not in maps
            print("ok")
        """)
        r = subprocess.run([sys.executable, "-c", code], env=untraced_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "ok")

    def test_another_tools_injection_is_neither_loaded_nor_called(self):
        # CUDA_INJECTION64_PATH names a library of another tool that is not
        # loaded (here libgomp, which nothing of this test loads): it stays
        # unloaded; only gpu-trace's own libraries are ever loaded.
        import ctypes.util
        other = ctypes.util.find_library("gomp")
        if other is None:
            self.skipTest("no libgomp to stand for another tool's library")
        code = textwrap.dedent("""
            import gpu_trace, warnings
            warnings.simplefilter("ignore")
            gpu_trace.start()
            with gpu_trace.window("w"):
                pass
            assert not gpu_trace.is_traced()
            assert "libgomp" not in open("/proc/self/maps").read()
            print("ok")
        """)
        env = untraced_env()
        env["CUDA_INJECTION64_PATH"] = other
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "ok")


class Recorder:
    """Stands in for the C API: records the calls, returns OK."""

    def __init__(self):
        self.calls = []

    def __call__(self, what, name=None):
        self.calls.append((what, name) if name is not None else (what,))
        return _native.OK


class ScheduleTest(unittest.TestCase):
    def run_schedule(self, steps, **kw):
        rec = Recorder()
        with mock.patch.object(_native, "call", rec):
            s = gpu_trace.schedule(**kw)
            recorded = []
            for i in range(steps):
                recorded.append(s.records(i))
                s.step()
        return rec.calls, [i for i, r in enumerate(recorded) if r]

    def test_wait_warmup_active_repeat_as_torch_profiler(self):
        calls, steps = self.run_schedule(12, wait=1, warmup=1, active=2, repeat=2)
        self.assertEqual(steps, [2, 3, 6, 7])
        self.assertEqual(calls, [
            ("stop",),
            ("window_begin", "steps 2-3"), ("window_end",),
            ("window_begin", "steps 6-7"), ("window_end",),
        ])

    def test_repeat_0_goes_on_and_skip_first_skips(self):
        _, steps = self.run_schedule(10, wait=2, active=1, skip_first=3)
        self.assertEqual(steps, [5, 8])

    def test_active_from_step_0_takes_recording_over_then_opens_its_window(self):
        calls, steps = self.run_schedule(3, active=2, repeat=1)
        self.assertEqual(steps, [0, 1])
        self.assertEqual(calls, [("stop",), ("window_begin", "steps 0-1"), ("window_end",)])

    def test_closing_ends_the_window_and_later_steps_record_nothing(self):
        rec = Recorder()
        with mock.patch.object(_native, "call", rec):
            with gpu_trace.schedule(active=1) as s:
                s.step()
            s.step()
            s.step()
        self.assertEqual(rec.calls, [
            ("stop",), ("window_begin", "step 0"), ("window_end",),
            ("window_begin", "step 1"), ("window_end",),
        ])

    def test_bad_arguments_are_refused(self):
        with self.assertRaises(ValueError):
            gpu_trace.schedule(active=0)
        with self.assertRaises(ValueError):
            gpu_trace.schedule(wait=-1)


class WindowAndRangeTest(unittest.TestCase):
    def test_a_window_ends_only_what_it_began(self):
        rec = Recorder()
        rec_off = lambda what, name=None: _native.OFF  # noqa: E731
        with mock.patch.object(_native, "call", rec):
            with gpu_trace.window("a"):
                with gpu_trace.range("r"):
                    pass
        self.assertEqual(rec.calls, [("window_begin", "a"), ("range_push", "r"),
                                     ("range_pop",), ("window_end",)])
        with mock.patch.object(_native, "call", rec_off):
            with gpu_trace.window("a"):  # begin failed: no end
                pass

    def test_decorators(self):
        rec = Recorder()

        @gpu_trace.range("f")
        def f():
            return 1

        with mock.patch.object(_native, "call", rec):
            self.assertEqual(f(), 1)
            self.assertEqual(f(), 1)
        self.assertEqual(rec.calls, [("range_push", "f"), ("range_pop",)] * 2)


    def test_one_range_object_on_several_threads_pops_what_each_pushed(self):
        import threading
        calls = []
        b_inside, a_done = threading.Event(), threading.Event()

        def call(what, name=None):
            me = threading.current_thread().name
            calls.append((me, what))
            # Thread b's push fails (gpu-trace off there, say): it pops nothing.
            return _native.OFF if (me == "b" and what == "range_push") else _native.OK

        r = gpu_trace.range("shared")

        # a enters, b enters, a leaves while b is inside, then b leaves.
        def a():
            with r:
                b_inside.wait(5)
            a_done.set()

        def b():
            with r:
                b_inside.set()
                a_done.wait(5)

        with mock.patch.object(_native, "call", call):
            ts = [threading.Thread(target=f, name=f.__name__) for f in (a, b)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(sorted(c for c in calls if c[1] == "range_pop"), [("a", "range_pop")])
        self.assertEqual(len(calls), 3, calls)


class LoadTest(unittest.TestCase):
    def test_records_convert_each_column_and_keep_names_that_look_missing(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "kernels.csv")
            cols = list(_load.SCHEMA["kernels"])
            with open(p, "w") as f:
                f.write(",".join(cols) + "\n")
                f.write('12,0,stream 7,100,20,NA,_Z2NAv,4,1,1,64,1,1,9\n')
                f.write(',,q,1,2,"a, b",,,,,,,,10\n')
            rows = _load._records(p, _load.SCHEMA["kernels"])
        self.assertEqual(rows[0]["name"], "NA")
        self.assertEqual(rows[0]["pid"], 12)
        self.assertEqual(rows[0]["grid_x"], 4)
        self.assertEqual(rows[1]["pid"], None)
        self.assertEqual(rows[1]["name"], "a, b")

    def test_a_missing_file_is_a_file_not_found_error(self):
        with self.assertRaises(FileNotFoundError):
            gpu_trace.load("/nonexistent/x.pftrace", pandas=False)


if __name__ == "__main__":
    unittest.main()
