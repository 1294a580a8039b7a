//! curl's `-K/--config FILE`: the file's lines become arguments at the place
//! of the `-K`, read as curl reads them. One option per line, its leading
//! `--` optional; the value after spaces, `=` or `:` (only spaces after a
//! dashed option), in double quotes with `\"`, `\\`, `\t`, `\n`, `\r`, `\v`
//! escapes, or bare up to the first space; `#` starts a comment line.

use std::ffi::OsString;

/// How deep a config file may name another.
const MAX_DEPTH: usize = 8;

/// The options of `command` that take a value, by long name and short letter.
struct Valued {
    long: Vec<String>,
    short: Vec<char>,
}

impl Valued {
    fn of(command: &clap::Command) -> Valued {
        let mut valued = Valued {
            long: Vec::new(),
            short: Vec::new(),
        };
        for arg in command.get_arguments() {
            if arg.is_positional() || !arg.get_action().takes_values() {
                continue;
            }
            valued.short.extend(arg.get_short());
            for long in arg
                .get_long()
                .into_iter()
                .chain(arg.get_all_aliases().into_iter().flatten())
            {
                valued.long.push(long.to_string());
            }
        }
        valued
    }

    /// Whether `option` (`--name` or `-x`) takes a value.
    fn takes_value(&self, option: &str) -> bool {
        match option.strip_prefix("--") {
            Some(long) => self.long.iter().any(|l| l == long),
            None => option
                .strip_prefix('-')
                .and_then(|s| s.chars().last())
                .is_some_and(|c| self.short.contains(&c)),
        }
    }
}

/// `args` (program name first) with every `-K FILE` replaced by the
/// arguments its file holds. Arguments after a subcommand or `--` are
/// left as they are.
pub fn expand(args: Vec<OsString>, command: &clap::Command) -> Result<Vec<OsString>, String> {
    let valued = Valued::of(command);
    let subcommands: Vec<&str> = command.get_subcommands().map(|s| s.get_name()).collect();
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    out.extend(args.next());
    expand_into(&mut out, args, &valued, &subcommands, 0)?;
    Ok(out)
}

fn expand_into(
    out: &mut Vec<OsString>,
    mut args: impl Iterator<Item = OsString>,
    valued: &Valued,
    subcommands: &[&str],
    depth: usize,
) -> Result<(), String> {
    let mut positional = false;
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str().map(str::to_string) else {
            out.push(arg);
            continue;
        };
        if text == "--" || (!positional && subcommands.contains(&text.as_str())) {
            out.push(arg);
            out.extend(args);
            return Ok(());
        }
        let file = if text == "--config" || text == "-K" {
            Some(args.next().ok_or("-K/--config needs a FILE")?)
        } else if let Some(file) = text.strip_prefix("--config=") {
            Some(file.into())
        } else if text.starts_with("--") {
            out.push(arg);
            if !text.contains('=') && valued.takes_value(&text) {
                out.extend(args.next());
            }
            continue;
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) {
            // A cluster of short flags ends at the first that takes a value,
            // the rest of it being that value.
            let end = cluster
                .char_indices()
                .find(|&(_, c)| c == 'K' || valued.short.contains(&c));
            match end {
                Some((i, 'K')) => {
                    if i > 0 {
                        out.push(format!("-{}", &cluster[..i]).into());
                    }
                    let rest = &cluster[i + 1..];
                    Some(if rest.is_empty() {
                        args.next().ok_or("-K/--config needs a FILE")?
                    } else {
                        rest.into()
                    })
                }
                Some((i, c)) => {
                    out.push(arg);
                    if i + c.len_utf8() == cluster.len() {
                        out.extend(args.next());
                    }
                    continue;
                }
                None => {
                    out.push(arg);
                    continue;
                }
            }
        } else {
            positional = true;
            out.push(arg);
            continue;
        };
        let file = file.unwrap_or_default();
        if depth >= MAX_DEPTH {
            return Err(format!(
                "-K {}: config files name each other more than {MAX_DEPTH} deep",
                file.to_string_lossy()
            ));
        }
        if file == "-" {
            return Err("-K - (a config on stdin) is not supported; name a file".into());
        }
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read -K {}: {e}", file.to_string_lossy()))?;
        let lines = parse(&text, valued)
            .map_err(|(line, why)| format!("-K {} line {line}: {why}", file.to_string_lossy()))?;
        expand_into(
            out,
            lines.into_iter().map(OsString::from),
            valued,
            subcommands,
            depth + 1,
        )?;
    }
    Ok(())
}

/// A config file's text as arguments; an error names its line (never its
/// value, which may be a credential).
fn parse(text: &str, valued: &Valued) -> Result<Vec<String>, (usize, String)> {
    let mut args = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('/') {
            continue;
        }
        let dashed = line.starts_with('-');
        let separator = |c: char| !dashed && (c == '=' || c == ':');
        let end = line
            .find(|c: char| c.is_whitespace() || separator(c))
            .unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || separator(c));
        let option = if dashed {
            name.to_string()
        } else {
            format!("--{name}")
        };
        let value = match rest.strip_prefix('"') {
            Some(quoted) => Some(unquote(quoted).ok_or((number + 1, "an unclosed quote".into()))?),
            None => rest.split_whitespace().next().map(str::to_string),
        };
        let takes_value = valued.takes_value(&option) || option == "--config" || option == "-K";
        args.push(option.clone());
        if takes_value {
            args.push(value.ok_or((number + 1, format!("{option} needs a value")))?);
        }
    }
    Ok(args)
}

/// The text of a quoted value up to its closing quote, escapes resolved.
fn unquote(text: &str) -> Option<String> {
    let mut value = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => value.push(match chars.next()? {
                't' => '\t',
                'n' => '\n',
                'r' => '\r',
                'v' => '\u{b}',
                other => other,
            }),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn lines_as_curl_reads_them() {
        let valued = Valued::of(&crate::cli::command());
        let text = "# a comment\n\
            url = \"http://h/a b\"\n\
            header: \"X-A: 1 \\\"two\\\"\"\n\
            --silent\n\
            fail\n\
            -x http://proxy:3128\n\
            \n\
            user-agent=\"agent/1\"\n";
        assert_eq!(
            parse(text, &valued).unwrap(),
            [
                "--url",
                "http://h/a b",
                "--header",
                "X-A: 1 \"two\"",
                "--silent",
                "--fail",
                "-x",
                "http://proxy:3128",
                "--user-agent",
                "agent/1",
            ]
        );
        let err = parse("header = \"unclosed\n", &valued).unwrap_err();
        assert_eq!(err.0, 1);
        assert!(parse("header\n", &valued).is_err());
    }

    #[test]
    fn a_config_file_takes_the_place_of_its_flag() {
        let dir = std::env::temp_dir().join(format!("abide-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("curlrc");
        std::fs::write(&file, "silent\nheader = \"X: 1\"\n").unwrap();
        let path = file.to_str().unwrap();
        let command = crate::cli::command();
        let got = expand(args(&["abide", "-fK", path, "-H", "-K", "u"]), &command).unwrap();
        assert_eq!(
            got,
            args(&[
                "abide", "-f", "--silent", "--header", "X: 1", "-H", "-K", "u"
            ])
        );
        let got = expand(
            args(&["abide", "--config", path, "mcp", "-K", "x"]),
            &command,
        )
        .unwrap();
        assert_eq!(
            got,
            args(&["abide", "--silent", "--header", "X: 1", "mcp", "-K", "x"])
        );
        std::fs::write(&file, format!("config = \"{path}\"\n")).unwrap();
        assert!(expand(args(&["abide", "-K", path]), &command).is_err());
        assert!(expand(args(&["abide", "-K", "/nonexistent/rc"]), &command).is_err());
    }
}
