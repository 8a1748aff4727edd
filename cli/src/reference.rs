//! The command-line reference page (`docs/src/reference/cli.md`), generated
//! from the clap definition, so that it cannot drift from `--help`.
//! Regenerate it with `GPU_TRACE_BLESS=1 cargo test -p gpu-trace reference`.

use clap::{Arg, ArgAction, Command};

/// The page: every command, its usage and each of its options.
pub(crate) fn markdown(top: &Command) -> String {
    let mut out = String::from(
        "# Command line\n\n\
         <!-- Generated from the clap definition in cli/src by \
         `GPU_TRACE_BLESS=1 cargo test -p gpu-trace reference`; do not edit. -->\n\n",
    );
    let mut top = top.clone();
    top.build();
    command(&top, "gpu-trace", &mut out);
    for sub in top.get_subcommands().filter(|c| shown(c)) {
        command(sub, &format!("gpu-trace {}", sub.get_name()), &mut out);
    }
    out
}

fn command(cmd: &Command, path: &str, out: &mut String) {
    let level = if path.contains(' ') { "##" } else { "" };
    if !level.is_empty() {
        out.push_str(&format!("{level} {path}\n\n"));
    }
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string())
        .unwrap_or_default();
    if !about.is_empty() {
        out.push_str(&prose(&about));
        out.push_str("\n\n");
    }
    let mut usage = cmd.clone().bin_name(path).render_usage().to_string();
    if let Some(rest) = usage.strip_prefix("Usage: ") {
        usage = rest.to_owned();
    }
    out.push_str(&format!("```text\n{}\n```\n\n", usage.trim_end()));
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        for a in args {
            argument(a, out);
        }
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        out.push_str(&format!(
            "```text\n{}\n```\n\n",
            after.to_string().trim_end()
        ));
    }
    if !path.contains(' ') {
        let subs: Vec<&Command> = cmd.get_subcommands().filter(|c| shown(c)).collect();
        if !subs.is_empty() {
            out.push_str("| command | what it does |\n|---|---|\n");
            for s in subs {
                let about = s
                    .get_about()
                    .map(|a| a.to_string().replace('\n', " "))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "| [`{}`](#gpu-trace-{}) | {} |\n",
                    s.get_name(),
                    s.get_name(),
                    prose(&about)
                ));
            }
            out.push('\n');
        }
    }
}

/// Commands the page shows: not hidden, and not clap's own `help`.
fn shown(c: &Command) -> bool {
    !c.is_hide_set() && c.get_name() != "help"
}

/// Help text as Markdown prose: angle brackets (`<PATTERN>`, `<pid>`) would
/// be read as HTML tags.
fn prose(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

fn argument(a: &Arg, out: &mut String) {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|_| {
            !matches!(
                a.get_action(),
                ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
            )
        });
    let mut names: Vec<String> = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let mut head = if names.is_empty() {
        value.clone().unwrap_or_else(|| format!("<{}>", a.get_id()))
    } else {
        names.join(", ")
    };
    if !names.is_empty()
        && let Some(v) = &value
    {
        head.push(' ');
        head.push_str(v);
    }
    out.push_str(&format!("### `{head}`\n\n"));
    let help = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    if !help.is_empty() {
        out.push_str(&prose(help.trim_end()));
        out.push_str("\n\n");
    }
    let mut facts: Vec<String> = Vec::new();
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && !matches!(a.get_action(), ArgAction::SetTrue) {
        facts.push(format!("Default: `{}`.", defaults.join(",")));
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && !matches!(a.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        facts.push(format!("Values: {}.", values.join(", ")));
    }
    if let Some(env) = a.get_env() {
        facts.push(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    if !facts.is_empty() {
        out.push_str(&facts.join(" "));
        out.push_str("\n\n");
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_cli_reference_is_current() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/reference/cli.md");
        let want = super::markdown(&crate::Cli::command());
        if std::env::var_os("GPU_TRACE_BLESS").is_some() {
            std::fs::write(&path, &want).expect("the reference page written");
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} differs from what the clap definition generates; regenerate it with \
             `GPU_TRACE_BLESS=1 cargo test -p gpu-trace reference`",
            path.display()
        );
    }
}
