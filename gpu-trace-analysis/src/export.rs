//! Traces as Parquet tables, for engines that scale past one machine's
//! memory (DuckDB, Spark, Dask, pandas read them as they are).
//!
//! [`export`] writes each trace's events into one file per table under a
//! directory, `DIR/<table>/<trace>.parquet`, so that each table is a
//! dataset of one file per trace (rank): `kernels`, `memops`,
//! `api_calls`, `ranges`, `counters`, `telemetry` and `windows`. Every
//! row starts with the columns that place it in the job: `trace_file`,
//! `host`, `rank`, `pid` and `device_uuid`. The schema's version,
//! [`SCHEMA_VERSION`], is in each file's key-value metadata as
//! `gpu_trace.schema_version`; the guide lists every column.
//!
//! A trace is read twice, each time as it streams by: once for what
//! places its rows (devices, processes, threads, recording windows), then
//! for its events, written in row groups of [`ROW_GROUP`] rows: memory
//! holds a row group per table, not the trace.

use crate::read::{track_owner, window_spans};
use gpu_trace_model::rank::Rank;
use gpu_trace_reader::{
    CounterValue, GpuEvent, Parts, ReadOptions, Slice, Stage, Str, Trace, Visitor,
};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The version of the tables' schema: raised when a column changes
/// meaning or goes; new columns may come without it.
pub const SCHEMA_VERSION: u32 = 1;

/// Rows written at a time, per table.
pub const ROW_GROUP: usize = 1 << 17;

/// The columns every table starts with.
const COMMON: &str = "
  required binary trace_file (STRING);
  optional binary host (STRING);
  optional int32 rank;
  optional int64 pid;
  optional binary device_uuid (STRING);";

/// The tables: name and the columns after [`COMMON`].
pub const TABLES: [(&str, &str); 7] = [
    (
        "kernels",
        "required int64 gpu; required binary stream (STRING); required binary name (STRING); \
         required binary mangled (STRING); required int64 start_ns; required int64 dur_ns; \
         required int64 event_id;",
    ),
    (
        "memops",
        "required int64 gpu; required binary stream (STRING); required binary kind (STRING); \
         required int64 start_ns; required int64 dur_ns; optional int64 bytes; \
         required int64 event_id;",
    ),
    (
        "api_calls",
        "optional int64 tid; required binary name (STRING); required int64 start_ns; \
         required int64 dur_ns; required int32 depth; required int32 submissions;",
    ),
    (
        "ranges",
        "optional int64 tid; required binary name (STRING); required int64 start_ns; \
         required int64 dur_ns; required int32 depth;",
    ),
    (
        "counters",
        "required int64 gpu; required binary metric (STRING); required int64 kernel_start_ns; \
         required double value;",
    ),
    (
        "telemetry",
        "required int64 gpu; required binary metric (STRING); optional binary unit (STRING); \
         required int64 ts_ns; required double value;",
    ),
    (
        "windows",
        "required int32 window; required int64 start_ns; required int64 end_ns;",
    ),
];

/// What went wrong in an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The trace could not be read.
    #[error(transparent)]
    Read(#[from] gpu_trace_reader::ReadError),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// One column's values of the row group being gathered.
enum Buf {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    Str(Vec<ByteArray>),
}

struct Column {
    buf: Buf,
    /// Definition levels, for an optional column.
    defs: Option<Vec<i16>>,
}

/// A value for a column.
#[derive(Clone)]
enum V {
    I(i64),
    F(f64),
    S(ByteArray),
    Null,
}

/// One table's file being written.
struct Table {
    path: PathBuf,
    writer: SerializedFileWriter<File>,
    cols: Vec<Column>,
    rows: usize,
    /// Rows written, in all.
    written: u64,
}

fn write_err(path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> ExportError {
    ExportError::Write {
        path: path.to_owned(),
        source: Box::new(e),
    }
}

impl Table {
    fn create(dir: &Path, table: &str, columns: &str, file: &str) -> Result<Table, ExportError> {
        let sub = dir.join(table);
        std::fs::create_dir_all(&sub).map_err(|e| write_err(&sub, e))?;
        let path = sub.join(format!("{file}.parquet"));
        let message = format!("message {table} {{{COMMON}\n  {columns}\n}}");
        let schema = Arc::new(parse_message_type(&message).map_err(|e| write_err(&path, e))?);
        let cols = schema
            .get_fields()
            .iter()
            .map(|f| {
                let optional = !f.is_primitive()
                    || f.get_basic_info().repetition() == parquet::basic::Repetition::OPTIONAL;
                let buf = match f.get_physical_type() {
                    parquet::basic::Type::INT64 => Buf::I64(Vec::new()),
                    parquet::basic::Type::INT32 => Buf::I32(Vec::new()),
                    parquet::basic::Type::DOUBLE => Buf::F64(Vec::new()),
                    _ => Buf::Str(Vec::new()),
                };
                Column {
                    buf,
                    defs: optional.then(Vec::new),
                }
            })
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("gpu-trace {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![KeyValue::new(
                "gpu_trace.schema_version".to_owned(),
                SCHEMA_VERSION.to_string(),
            )]))
            .build();
        let f = File::create(&path).map_err(|e| write_err(&path, e))?;
        let writer = SerializedFileWriter::new(f, schema, Arc::new(props))
            .map_err(|e| write_err(&path, e))?;
        Ok(Table {
            path,
            writer,
            cols,
            rows: 0,
            written: 0,
        })
    }

    fn push(&mut self, values: &[V]) -> Result<(), ExportError> {
        debug_assert_eq!(values.len(), self.cols.len());
        for (c, v) in self.cols.iter_mut().zip(values) {
            let present = !matches!(v, V::Null);
            if let Some(d) = &mut c.defs {
                d.push(i16::from(present));
            }
            match (&mut c.buf, v) {
                (_, V::Null) => {}
                (Buf::I64(b), V::I(x)) => b.push(*x),
                (Buf::I32(b), V::I(x)) => b.push(*x as i32),
                (Buf::F64(b), V::F(x)) => b.push(*x),
                (Buf::Str(b), V::S(x)) => b.push(x.clone()),
                // The tables' own code gives each column its type.
                _ => unreachable!("a value of the wrong type"),
            }
        }
        self.rows += 1;
        if self.rows >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let path = self.path.clone();
        let e = |x| write_err(&path, x);
        let mut rg = self.writer.next_row_group().map_err(e)?;
        for c in &mut self.cols {
            let Some(mut w) = rg.next_column().map_err(e)? else {
                break;
            };
            let defs = c.defs.as_deref();
            match &mut c.buf {
                Buf::I64(b) => w.typed::<Int64Type>().write_batch(b, defs, None),
                Buf::I32(b) => w.typed::<Int32Type>().write_batch(b, defs, None),
                Buf::F64(b) => w.typed::<DoubleType>().write_batch(b, defs, None),
                Buf::Str(b) => w.typed::<ByteArrayType>().write_batch(b, defs, None),
            }
            .map_err(e)?;
            w.close().map_err(e)?;
            match &mut c.buf {
                Buf::I64(b) => b.clear(),
                Buf::I32(b) => b.clear(),
                Buf::F64(b) => b.clear(),
                Buf::Str(b) => b.clear(),
            }
            if let Some(d) = &mut c.defs {
                d.clear();
            }
        }
        rg.close().map_err(e)?;
        self.written += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    fn close(mut self) -> Result<u64, ExportError> {
        self.flush()?;
        let path = self.path.clone();
        self.writer.close().map_err(|e| write_err(&path, e))?;
        Ok(self.written)
    }
}

/// Rows written per table of one trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// (table, rows), in [`TABLES`]' order.
    pub rows: Vec<(&'static str, u64)>,
}

/// What places a trace's rows, from a first pass over it.
struct Places {
    file: ByteArray,
    rank: FxHashMap<i64, i64>,
    uuid: FxHashMap<i64, ByteArray>,
    meta: Trace,
}

/// Nothing but the trace's own description is kept.
struct Describe;

impl Visitor for Describe {
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The second pass: rows as the events come.
struct Rows<'a> {
    places: &'a Places,
    tables: Vec<Table>,
    strings: FxHashMap<usize, (Str, ByteArray)>,
    /// Per (gpu, counter): whether its next sample is a kernel's value.
    next_is_value: FxHashMap<(i64, String), bool>,
    end: u64,
    err: Option<ExportError>,
}

const KERNELS: usize = 0;
const MEMOPS: usize = 1;
const API: usize = 2;
const RANGES: usize = 3;
const COUNTERS: usize = 4;
const TELEMETRY: usize = 5;
const WINDOWS: usize = 6;

impl Rows<'_> {
    fn s(&mut self, s: &Str) -> V {
        let key = s.as_str().as_ptr() as usize;
        let e = self
            .strings
            .entry(key)
            .or_insert_with(|| (s.clone(), ByteArray::from(s.as_str().as_bytes().to_vec())));
        V::S(e.1.clone())
    }

    fn common(&self, pid: Option<i64>, gpu: Option<i64>) -> [V; 5] {
        let p = self.places;
        [
            V::S(p.file.clone()),
            V::Null,
            pid.and_then(|x| p.rank.get(&x))
                .map_or(V::Null, |&r| V::I(r)),
            pid.map_or(V::Null, V::I),
            gpu.and_then(|g| p.uuid.get(&g))
                .map_or(V::Null, |u| V::S(u.clone())),
        ]
    }

    fn row(&mut self, table: usize, lead: [V; 5], rest: &[V]) {
        if self.err.is_some() {
            return;
        }
        let mut all: Vec<V> = Vec::with_capacity(5 + rest.len());
        all.extend(lead);
        all.extend_from_slice(rest);
        if let Err(e) = self.tables[table].push(&all) {
            self.err = Some(e);
        }
    }
}

impl Visitor for Rows<'_> {
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }

    fn gpu_event(&mut self, e: &GpuEvent) {
        let pid = e.context.map(|c| c.pid);
        let gpu = e.gpu_id.unwrap_or(0);
        self.end = self.end.max(e.ts.saturating_add(e.dur));
        let lead = self.common(pid, Some(gpu));
        let stream = self.s(&e.queue);
        match e.stage {
            Stage::Kernel => {
                let (name, mangled) = match &e.kernel {
                    Some(k) if !k.demangled.is_empty() => (
                        V::S(ByteArray::from(k.demangled.as_bytes().to_vec())),
                        V::S(ByteArray::from(k.name.as_bytes().to_vec())),
                    ),
                    _ => {
                        let n = self.s(&e.name);
                        (n.clone(), n)
                    }
                };
                self.row(
                    KERNELS,
                    lead,
                    &[
                        V::I(gpu),
                        stream,
                        name,
                        mangled,
                        V::I(e.ts as i64),
                        V::I(e.dur as i64),
                        V::I(e.event_id as i64),
                    ],
                );
            }
            Stage::Memcpy | Stage::Memset => {
                let kind = self.s(&e.name);
                self.row(
                    MEMOPS,
                    lead,
                    &[
                        V::I(gpu),
                        stream,
                        kind,
                        V::I(e.ts as i64),
                        V::I(e.dur as i64),
                        e.bytes().map_or(V::Null, |b| V::I(b as i64)),
                        V::I(e.event_id as i64),
                    ],
                );
            }
            Stage::Other(_) => {}
        }
    }

    fn slice(&mut self, s: &Slice, _begin: u32) {
        self.end = self.end.max(s.ts.saturating_add(s.dur));
        let (pid, tid) = track_owner(&self.places.meta, s.track);
        let pid = (pid != crate::UNKNOWN_PID).then_some(pid);
        let lead = self.common(pid, None);
        let name = self.s(&s.name);
        let tid = tid.map_or(V::Null, V::I);
        match s.gpu_api {
            Some(_) => self.row(
                API,
                lead,
                &[
                    tid,
                    name,
                    V::I(s.ts as i64),
                    V::I(s.dur as i64),
                    V::I(i64::from(s.depth)),
                    V::I(s.submissions.len() as i64),
                ],
            ),
            None => self.row(
                RANGES,
                lead,
                &[
                    tid,
                    name,
                    V::I(s.ts as i64),
                    V::I(s.dur as i64),
                    V::I(i64::from(s.depth)),
                ],
            ),
        }
    }

    fn counter(&mut self, c: &CounterValue) {
        let lead = self.common(None, Some(c.gpu_id));
        let metric = self.s(&c.name);
        let per_kernel = c.groups.is_empty()
            || c.groups
                .contains(&gpu_trace_reader::wire::counters::GROUP_COMPUTE);
        if !per_kernel {
            if gpu_trace_model::schema::busy::ENGINE_COUNTERS.contains(&c.name.as_str()) {
                return;
            }
            let unit = crate::telemetry::unit_text(&c.units);
            let unit = if unit.is_empty() {
                V::Null
            } else {
                V::S(ByteArray::from(unit.into_bytes()))
            };
            self.row(
                TELEMETRY,
                lead,
                &[
                    V::I(c.gpu_id),
                    metric,
                    unit,
                    V::I(c.ts as i64),
                    V::F(c.value),
                ],
            );
            return;
        }
        // A kernel's value at its start, then a return to zero at its end.
        let next = self
            .next_is_value
            .entry((c.gpu_id, c.name.to_string()))
            .or_insert(true);
        let is_value = *next;
        *next = !is_value;
        if is_value {
            self.row(
                COUNTERS,
                lead,
                &[V::I(c.gpu_id), metric, V::I(c.ts as i64), V::F(c.value)],
            );
        }
    }
}

/// A name for a trace's files: its file name without `.pftrace`.
pub fn file_stem(trace: &Path) -> String {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_owned());
    name.strip_suffix(".pftrace").unwrap_or(&name).to_owned()
}

/// Writes the trace at `trace` into `dir`'s tables as files named `file`
/// (`DIR/<table>/<file>.parquet`). Returns the rows of each table.
///
/// # Errors
/// The trace cannot be read, or a file cannot be written.
pub fn export(
    trace: &Path,
    dir: &Path,
    file: &str,
    o: &ReadOptions,
) -> Result<Exported, ExportError> {
    let meta = Trace::visit_with(trace, o, &mut Describe)?;
    let rank: FxHashMap<i64, i64> = meta
        .processes
        .iter()
        .filter_map(|p| {
            Rank::from_labels(p.labels.iter().map(String::as_str))
                .map(|r| (p.pid, i64::from(r.rank)))
        })
        .collect();
    let uuid: FxHashMap<i64, ByteArray> = meta
        .devices
        .iter()
        .filter(|d| !d.uuid.is_empty())
        .map(|d| (d.gpu_id as i64, ByteArray::from(hex(&d.uuid).into_bytes())))
        .collect();
    let places = Places {
        file: ByteArray::from(trace.display().to_string().into_bytes()),
        rank,
        uuid,
        meta,
    };
    let mut tables = Vec::with_capacity(TABLES.len());
    for (name, columns) in TABLES {
        tables.push(Table::create(dir, name, columns, file)?);
    }
    let mut rows = Rows {
        places: &places,
        tables,
        strings: FxHashMap::default(),
        next_is_value: FxHashMap::default(),
        end: 0,
        err: None,
    };
    let quiet = ReadOptions {
        progress: None,
        ..o.clone()
    };
    Trace::visit_with(trace, &quiet, &mut rows)?;
    if let Some(e) = rows.err.take() {
        return Err(e);
    }
    let end = places
        .meta
        .logs
        .iter()
        .map(|l| l.ts)
        .chain([rows.end])
        .max()
        .unwrap_or(0);
    for (i, (start, stop)) in window_spans(&places.meta.logs, end)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let lead = rows.common(None, None);
        rows.row(
            WINDOWS,
            lead,
            &[V::I(i as i64 + 1), V::I(start as i64), V::I(stop as i64)],
        );
    }
    if let Some(e) = rows.err.take() {
        return Err(e);
    }
    let mut out = Exported::default();
    for (t, (name, _)) in rows.tables.into_iter().zip(TABLES) {
        out.rows.push((name, t.close()?));
    }
    Ok(out)
}
