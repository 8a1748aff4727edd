//! The `EXPECT` lines a test program prints on stdout.
//!
//! Each line is `EXPECT key=value key=value ...`: tokens split on white
//! space, each split at its first `=`. A line holding `record=KIND` is one
//! record of a list (one per kernel configuration, say); every other line
//! adds its keys to the main map, a later value replacing an earlier one,
//! so that the last run's line wins when outputs were appended.

use std::collections::BTreeMap;

/// One record line: its kind and its keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// The `record=` value.
    pub kind: String,
    /// Every key of the line, `record` included.
    pub fields: BTreeMap<String, String>,
}

impl Record {
    /// A field as text.
    pub fn get(&self, key: &str) -> Result<&str, String> {
        self.fields
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| format!("record={} lacks {key}=", self.kind))
    }

    /// A field as an unsigned integer.
    pub fn u64(&self, key: &str) -> Result<u64, String> {
        let v = self.get(key)?;
        parse_u64(v).ok_or_else(|| format!("record={}: {key}={v} is not a number", self.kind))
    }

    /// A field as a float.
    pub fn f64(&self, key: &str) -> Result<f64, String> {
        let v = self.get(key)?;
        v.parse()
            .map_err(|_| format!("record={}: {key}={v} is not a number", self.kind))
    }
}

/// Everything a program's output promised.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expect {
    /// Keys of the non-record lines, in key order.
    pub main: BTreeMap<String, String>,
    /// Record lines in output order.
    pub records: Vec<Record>,
    /// Number of `EXPECT` lines seen.
    pub lines: usize,
}

/// Parses an unsigned integer, accepting `_` separators and `0x` hex.
pub fn parse_u64(v: &str) -> Option<u64> {
    let v = v.replace('_', "");
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

impl Expect {
    /// Collects the `EXPECT` lines of a program's output; other lines are
    /// ignored.
    pub fn parse(text: &str) -> Result<Expect, String> {
        let mut e = Expect::default();
        for (no, line) in text.lines().enumerate() {
            let Some(rest) = line.trim().strip_prefix("EXPECT") else {
                continue;
            };
            if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
                continue;
            }
            e.lines += 1;
            let mut fields = BTreeMap::new();
            for tok in rest.split_whitespace() {
                let (k, v) = tok
                    .split_once('=')
                    .ok_or_else(|| format!("line {}: token {tok:?} has no '='", no + 1))?;
                if k.is_empty() {
                    return Err(format!("line {}: token {tok:?} has an empty key", no + 1));
                }
                fields.insert(k.to_owned(), v.to_owned());
            }
            match fields.get("record").cloned() {
                Some(kind) => e.records.push(Record { kind, fields }),
                None => e.main.extend(fields),
            }
        }
        if e.lines == 0 {
            return Err("no EXPECT line in the program's output".into());
        }
        Ok(e)
    }

    /// A main key as text.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.main.get(key).map(String::as_str)
    }

    /// Main keys starting with `prefix`, with the prefix removed.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.main
            .iter()
            .filter_map(move |(k, v)| Some((k.strip_prefix(prefix)?, v.as_str())))
    }

    /// Records of one kind.
    pub fn records_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Record> {
        self.records.iter().filter(move |r| r.kind == kind)
    }
}

/// `a:b:c:N,...` → list of (`[a, b, c]`, N).
pub fn parse_tally(v: &str, parts: usize) -> Result<Vec<(Vec<String>, u64)>, String> {
    let mut out = Vec::new();
    for item in v.split(',').filter(|s| !s.is_empty()) {
        let f: Vec<&str> = item.split(':').collect();
        if f.len() != parts + 1 {
            return Err(format!(
                "{item:?}: expected {} ':'-separated fields",
                parts + 1
            ));
        }
        let n = parse_u64(f[parts]).ok_or_else(|| format!("{item:?}: count is not a number"))?;
        out.push((f[..parts].iter().map(|s| s.to_string()).collect(), n));
    }
    Ok(out)
}

/// `x,y,z` → `[x, y, z]`.
pub fn parse_dim3(v: &str) -> Result<[u32; 3], String> {
    let f: Vec<u32> = v
        .split(',')
        .map(|s| s.parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{v:?} is not x,y,z"))?;
    f.try_into().map_err(|_| format!("{v:?} is not x,y,z"))
}

/// `a,b,c` → numbers.
pub fn parse_list(v: &str) -> Result<Vec<u64>, String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| parse_u64(s).ok_or_else(|| format!("{s:?} in {v:?} is not a number")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_merge_and_records_stay_apart() {
        let text = "hello\nEXPECT case=x kernels=3\nnoise EXPECT a=1\nEXPECT record=occ kernel=k block=256\nEXPECT kernels=4 range.a=2@1\nEXPECTED=no\n";
        let e = Expect::parse(text).unwrap();
        assert_eq!(e.lines, 3);
        assert_eq!(e.get("kernels"), Some("4"), "the later line wins");
        assert_eq!(e.get("case"), Some("x"));
        assert_eq!(e.get("a"), None, "EXPECT must start the line");
        assert_eq!(e.records.len(), 1);
        assert_eq!(e.records[0].u64("block").unwrap(), 256);
        assert!(e.records[0].u64("regs").is_err());
        let ranges: Vec<_> = e.with_prefix("range.").collect();
        assert_eq!(ranges, vec![("a", "2@1")]);
    }

    #[test]
    fn bad_input_is_named() {
        assert!(Expect::parse("nothing here").is_err());
        assert!(
            Expect::parse("EXPECT kernels")
                .unwrap_err()
                .contains("kernels")
        );
        assert!(Expect::parse("EXPECT =3").is_err());
    }

    #[test]
    fn values() {
        assert_eq!(parse_u64("100_000"), Some(100_000));
        assert_eq!(parse_u64("0x5a"), Some(90));
        assert_eq!(parse_dim3("1,2,3").unwrap(), [1, 2, 3]);
        assert!(parse_dim3("1,2").is_err());
        assert_eq!(parse_list("3,4,").unwrap(), vec![3, 4]);
        let t = parse_tally("HtoD:pinned:device:3,DtoH:device:pageable:2", 3).unwrap();
        assert_eq!(t[1].0, vec!["DtoH", "device", "pageable"]);
        assert_eq!(t[1].1, 2);
        assert!(parse_tally("HtoD:3", 3).is_err());
    }
}
