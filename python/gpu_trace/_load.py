"""Reading a trace into tables, through the ``gpu-trace`` executable's
reader (``gpu-trace export``): no second parser of the trace format."""

import csv
import os
import subprocess
import tempfile

from ._exe import find_gpu_trace_bin

# The tables ``gpu-trace export`` writes and their columns' types (the
# contract with cli/src/export_csv.rs). int: an integer, or None where the trace
# has no value; ids: a list of ints; float; str.
SCHEMA = {
    "kernels": {
        "pid": int, "gpu": int, "queue": str, "start_ns": int, "dur_ns": int,
        "name": str, "mangled": str, "grid_x": int, "grid_y": int, "grid_z": int,
        "block_x": int, "block_y": int, "block_z": int, "event_id": int,
    },
    "memory": {
        "pid": int, "gpu": int, "queue": str, "start_ns": int, "dur_ns": int,
        "kind": str, "name": str, "bytes": int, "event_id": int,
    },
    "api": {
        "pid": int, "tid": int, "start_ns": int, "dur_ns": int, "name": str,
        "depth": int, "event_ids": list,
    },
    "ranges": {
        "pid": int, "tid": int, "start_ns": int, "dur_ns": int, "name": str, "depth": int,
    },
    "counters": {"gpu": int, "ts_ns": int, "name": str, "value": float, "kind": str},
}


class Trace:
    """A trace's tables: ``kernels``, ``memory`` (copies and sets), ``api``
    (runtime/driver calls), ``ranges`` (NVTX/roctx) and ``counters``
    (per-kernel values and device telemetry). Each is a pandas DataFrame,
    or a list of dicts (one per row) without pandas. Times are ns of the
    trace's clock (CLOCK_BOOTTIME)."""

    def __init__(self, path, tables):
        self.path = path
        self.kernels = tables["kernels"]
        self.memory = tables["memory"]
        self.api = tables["api"]
        self.ranges = tables["ranges"]
        self.counters = tables["counters"]

    def __repr__(self):
        return "<gpu_trace.Trace %s: %d kernels, %d memory operations, %d API calls, " \
               "%d ranges, %d counter values>" % (
                   self.path, len(self.kernels), len(self.memory), len(self.api),
                   len(self.ranges), len(self.counters))


def _export(path, out_dir):
    exe = find_gpu_trace_bin()
    r = subprocess.run([exe, "export", "--format", "csv", "-o", out_dir, "--",
                        os.fspath(path)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        msg = r.stderr.strip() or "gpu-trace export exited with %d" % r.returncode
        if not os.path.exists(path):
            raise FileNotFoundError(msg)
        raise ValueError(msg)


def _records(csv_path, schema):
    def conv(kind, v):
        if kind is str:
            return v
        if kind is list:
            return [int(x) for x in v.split()]
        if v == "":
            return None
        return kind(v)

    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = csv.DictReader(f)
        return [{k: conv(schema[k], v) for k, v in row.items()} for row in rows]


def _frame(pd, csv_path, schema):
    dtype, ints = {}, []
    for k, kind in schema.items():
        if kind is str:
            dtype[k] = "string"
        elif kind is float:
            dtype[k] = "float64"
        elif kind is int:
            dtype[k] = "Int64"  # nullable: a value the trace lacks is <NA>
            ints.append(k)
        else:
            dtype[k] = "string"
    # Kernel names such as "NA" stay names: only empty integer fields are missing.
    df = pd.read_csv(csv_path, dtype=dtype, keep_default_na=False,
                     na_values={k: [""] for k in ints})
    for k, kind in schema.items():
        if kind is list:
            df[k] = [[int(x) for x in v.split()] for v in df[k]]
    return df


def load(path, *, pandas=None):
    """Reads the trace at ``path``: a :class:`Trace` of its kernels, memory
    operations, API calls, ranges and counters.

    ``pandas``: True for DataFrames (an ImportError without pandas), False
    for lists of dicts, None (default) for DataFrames when pandas can be
    imported. Raises FileNotFoundError for a missing file, ValueError for
    one that is not a trace."""
    pd = None
    if pandas is not False:
        try:
            import pandas as pd
        except ImportError:
            if pandas:
                raise
    with tempfile.TemporaryDirectory(prefix="gpu-trace-load-") as d:
        _export(path, d)
        tables = {}
        for table, schema in SCHEMA.items():
            p = os.path.join(d, table + ".csv")
            tables[table] = _frame(pd, p, schema) if pd is not None else _records(p, schema)
    return Trace(os.fspath(path), tables)
