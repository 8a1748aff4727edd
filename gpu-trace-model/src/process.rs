//! The process as traces and file names name it.

/// The program's name for file names: the script for `python train.py`,
/// the module for `python -m pkg.mod`, else the executable's file name.
pub fn program_name() -> String {
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_else(|_| std::env::args().collect());
    program_name_from(&args)
}

/// The name [`program_name`] gives a process whose command line is `args`
/// (what `%n` becomes), for a launcher that knows the command it runs.
pub fn program_name_of(args: &[String]) -> String {
    program_name_from(args)
}

fn base(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn program_name_from(args: &[String]) -> String {
    let Some(exe) = args.first() else {
        return "gpu-trace".to_owned();
    };
    let exe_base = base(exe);
    if exe_base.starts_with("python") {
        let mut it = args[1..].iter();
        while let Some(a) = it.next() {
            if a == "-m" {
                if let Some(m) = it.next() {
                    return sanitize(m);
                }
            } else if a == "-c" {
                return sanitize(exe_base);
            } else if !a.starts_with('-') {
                let b = base(a);
                return sanitize(b.strip_suffix(".py").unwrap_or(b));
            }
        }
    }
    sanitize(exe_base)
}

fn sanitize(s: &str) -> String {
    let out = file_name_part(s);
    if out.is_empty() {
        "gpu-trace".to_owned()
    } else {
        out
    }
}

/// `s` made safe to put in a file name: letters, digits, `.`, `_` and `-`
/// kept, anything else (a `/` above all) `_`, and a name of dots alone
/// (`.` or `..`, which would name a folder) made of `_`. What `%n`, `%h`
/// and `%q{VAR}` insert: a value cannot reach outside the folder the
/// pattern names.
pub fn file_name_part(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.is_empty() && out.chars().all(|c| c == '.') {
        "_".repeat(out.len())
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn program_names() {
        assert_eq!(
            program_name_from(&args(&["/usr/bin/python3", "train.py"])),
            "train"
        );
        assert_eq!(
            program_name_from(&args(&["python3.12", "-u", "/x/y/bench.py", "--lr", "1"])),
            "bench"
        );
        assert_eq!(
            program_name_from(&args(&["python", "-m", "torch.distributed.run"])),
            "torch.distributed.run"
        );
        assert_eq!(program_name_from(&args(&["./my app"])), "my_app");
        assert_eq!(program_name_from(&[]), "gpu-trace");
    }
}
