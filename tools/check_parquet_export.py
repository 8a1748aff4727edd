#!/usr/bin/env python3
"""Reads `gpu-trace export --format parquet` back with DuckDB and checks
its row counts and sums against `gpu-trace stats --format json` of the
same traces, exactly.

Usage: check_parquet_export.py GPU_TRACE TRACE... (DuckDB importable).
"""
import json
import subprocess
import sys
import tempfile

import duckdb


def main() -> int:
    gpu_trace, traces = sys.argv[1], sys.argv[2:]
    stats = json.loads(
        subprocess.run(
            [gpu_trace, "stats", "--format", "json", *traces],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [gpu_trace, "export", "--format", "parquet", "-o", out, *traces],
            check=True,
        )
        db = duckdb.connect()

        def one(sql: str):
            return db.sql(sql.replace("$", out)).fetchall()[0]

        want = {
            "kernels": (
                sum(k["count"] for k in stats["kernels"]),
                sum(k["total_ns"] for k in stats["kernels"]),
            ),
            "api_calls": (
                sum(a["count"] for a in stats["api"]),
                sum(a["total_ns"] for a in stats["api"]),
            ),
            "ranges": (
                sum(r["count"] for r in stats["nvtx"]),
                sum(r["total_ns"] for r in stats["nvtx"]),
            ),
            "memops": (
                sum(m["count"] for m in stats["memops"]),
                sum(m["total_ns"] for m in stats["memops"]),
            ),
        }
        failed = 0
        for table, (count, total) in want.items():
            got = one(
                f"select count(*), coalesce(sum(dur_ns), 0) from read_parquet('$/{table}/*.parquet')"
            )
            ok = got == (count, total)
            failed += not ok
            print(f"{table}: {got[0]} rows, {got[1]} ns; stats: {count}, {total} ns: {'ok' if ok else 'DIFFERENT'}")
        # Bytes of memory operations, and per-kernel counter values.
        got = one("select coalesce(sum(bytes), 0) from read_parquet('$/memops/*.parquet')")[0]
        bytes_ = sum(m["bytes"] for m in stats["memops"])
        print(f"memops bytes: {got}; stats: {bytes_}: {'ok' if got == bytes_ else 'DIFFERENT'}")
        failed += got != bytes_
        got = one("select count(*) from read_parquet('$/counters/*.parquet')")[0]
        values = sum(c["kernels"] for c in stats["counters"])
        print(f"counters: {got} values; stats: {values}: {'ok' if got == values else 'DIFFERENT'}")
        failed += got != values
        # Per kernel name across all traces, the whole-job query.
        rows = db.sql(
            f"select name, count(*), sum(dur_ns) from read_parquet('{out}/kernels/*.parquet') "
            "group by name order by name"
        ).fetchall()
        by_name = sorted((k["name"], k["count"], k["total_ns"]) for k in stats["kernels"])
        ok = [tuple(r) for r in rows] == by_name
        print(f"kernel time by name: {len(rows)} names: {'ok' if ok else 'DIFFERENT'}")
        failed += not ok
        # Every row says where it comes from; the schema says its version.
        files = {r[0] for r in db.sql(f"select distinct trace_file from read_parquet('{out}/*/*.parquet', union_by_name = true)").fetchall()}
        ok = files == set(traces)
        print(f"trace_file: {len(files)} files: {'ok' if ok else 'DIFFERENT'}")
        failed += not ok
        nulls = one("select count(*) from read_parquet('$/kernels/*.parquet') where pid is null")[0]
        print(f"kernels without a pid: {nulls}: {'ok' if nulls == 0 else 'DIFFERENT'}")
        failed += nulls != 0
        version = one("select value from parquet_kv_metadata('$/kernels/*.parquet') where key = 'gpu_trace.schema_version'")[0]
        print(f"schema version: {version!r}")
        failed += version != b"1"
        print(f"{10 - failed} passed, {failed} failed")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
