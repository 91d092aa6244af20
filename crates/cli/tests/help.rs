//! The help texts read as one piece: each command's help mentions only options that command has
//! (an option named after another command's name, as in `query --graph`, is checked against that
//! command), every argument is described, and `query`'s and `match`'s many options come under
//! headings.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::ok;

/// The commands `gpsense --help` lists (clap's own `help` aside).
fn commands() -> Vec<String> {
    let (top, _) = ok(&["--help"]);
    top.split("Commands:\n")
        .nth(1)
        .expect("a command list")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options a help text lists: lines opening with `-x, --name` or `--name`.
fn listed(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = match l.strip_prefix('-').and_then(|r| r.get(1..)) {
                Some(rest) if !l.starts_with("--") => rest.trim_start_matches(", "),
                _ => l,
            };
            l.strip_prefix("--").map(option_name)
        })
        .collect()
}

/// The name at the start of `text` (letters, digits, dashes).
fn option_name(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// Every `--name` in a help text, with the word before it (`query` in "`query --graph`").
fn mentioned(help: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, _) in help.match_indices("--") {
        let before = &help[..i];
        // `--` inside a word (`a--b`) or a lone `--` is no option.
        if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let name = option_name(&help[i + 2..]);
        if name.is_empty() {
            continue;
        }
        let word = before
            .trim_end_matches([' ', '`', '\''])
            .rsplit([' ', '`', '(', '\n'])
            .next()
            .unwrap_or("")
            .to_owned();
        found.push((word, name));
    }
    found
}

#[test]
fn each_help_mentions_only_options_its_command_has() {
    let names = commands();
    assert!(names.len() >= 9, "{names:?}");
    let helps: BTreeMap<String, String> = names
        .iter()
        .map(|c| (c.clone(), ok(&[c, "--help"]).0))
        .collect();
    let options: BTreeMap<&str, BTreeSet<String>> =
        helps.iter().map(|(c, h)| (c.as_str(), listed(h))).collect();
    let mut wrong = Vec::new();
    for (command, help) in &helps {
        for (word, option) in mentioned(help) {
            // "`query --graph`" in another command's help names query's option.
            let owner = if options.contains_key(word.as_str()) {
                word.as_str()
            } else {
                command.as_str()
            };
            if !options[owner].contains(&option) {
                wrong.push(format!(
                    "`{command} --help` mentions --{option}, which {owner} lacks"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_argument_is_described() {
    for command in commands() {
        let (help, _) = ok(&[&command, "--help"]);
        let lines: Vec<&str> = help.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !(line.starts_with("  <") || line.starts_with("  [")) {
                continue;
            }
            // `  <NAME>  description`, or (long texts) the description on the next line.
            let beside = line.trim_start().split_once("  ").map(|(_, d)| d.trim());
            let below = lines.get(i + 1).filter(|l| l.starts_with("          "));
            let described = match beside {
                Some(d) => !d.is_empty(),
                None => below.is_some_and(|d| !d.trim().is_empty()),
            };
            assert!(described, "`{command} --help`: {line:?} has no description");
        }
    }
}

#[test]
fn query_and_match_group_their_options_under_headings() {
    for command in ["query", "match"] {
        let (help, _) = ok(&[command, "--help"]);
        for heading in [
            "Input:",
            "Output:",
            "Engine:",
            "Limits:",
            "Distributed (timely dataflow):",
        ] {
            assert!(
                help.contains(&format!("\n{heading}\n")),
                "{command}: {heading}\n{help}"
            );
        }
        // Only -q and --help stay under the plain heading.
        let plain = help
            .split("Options:\n")
            .nth(1)
            .and_then(|o| o.split("\n\n").next());
        assert_eq!(plain.map(|o| o.lines().count()), Some(2), "{help}");
    }
}

/// `-v` is offered where it prints something, each time saying what.
#[test]
fn verbose_is_offered_where_it_says_something() {
    for command in commands() {
        let (help, _) = ok(&[&command, "--help"]);
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with("-v, --verbose"));
        let expected = ["query", "match", "serve"].contains(&command.as_str());
        assert_eq!(line.is_some(), expected, "{command}: {help}");
    }
}

/// `trust` and `serve`, the other commands with many options, group them too: nothing but the
/// common flags stays under the plain heading.
#[test]
fn trust_and_serve_group_their_options_under_headings() {
    for (command, headings) in [
        (
            "trust",
            &["Input:", "Search:", "Output:", "Limits:", "Engine:"][..],
        ),
        (
            "serve",
            &[
                "Input:",
                "Server:",
                "Admission (slots and queue):",
                "Limits:",
                "Connections:",
                "Engine:",
            ][..],
        ),
    ] {
        let (help, _) = ok(&[command, "--help"]);
        for heading in headings {
            assert!(
                help.contains(&format!("\n{heading}\n")),
                "{command}: {heading}\n{help}"
            );
        }
        let plain = help
            .split("Options:\n")
            .nth(1)
            .and_then(|o| o.split("\n\n").next())
            .unwrap_or_default();
        assert!(
            plain
                .lines()
                .filter(|l| l.trim_start().starts_with('-'))
                .all(|l| ["-q", "-v", "-h"]
                    .iter()
                    .any(|f| l.trim_start().starts_with(f))),
            "{command}: {plain}"
        );
    }
}
