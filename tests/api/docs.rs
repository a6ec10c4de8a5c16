//! The docs stay true to the tree: every relative link of README.md and docs/ resolves to
//! a file, and every key of config/base.toml is described in docs/configuration.md.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files
}

/// The targets of `](target)` links in `text`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_owned());
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let files = markdown_files();
    assert!(files.len() > 10, "the docs were found: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            let target = link.split('#').next().unwrap_or_default();
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|p| target.starts_with(p));
            if target.is_empty() || external {
                continue;
            }
            let resolved = file.parent().unwrap().join(target);
            if !resolved.exists() {
                broken.push(format!(
                    "{}: {link}",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// Every leaf key of a TOML document, dotted (`server.port`, `ai.kinds.image.cost`).
fn keys(value: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                if v.is_object() && !v.as_object().unwrap().is_empty() {
                    keys(v, &path, out);
                } else {
                    out.push(path);
                }
            }
        }
        _ => out.push(prefix.to_owned()),
    }
}

#[test]
fn every_configuration_key_is_documented() {
    let base = std::fs::read_to_string(root().join("config/base.toml")).unwrap();
    let doc: serde_json::Value = config::Config::builder()
        .add_source(config::File::from_str(&base, config::FileFormat::Toml))
        .build()
        .unwrap()
        .try_deserialize()
        .unwrap();
    let mut all = Vec::new();
    keys(&doc, "", &mut all);
    assert!(all.len() > 100, "the keys were read: {}", all.len());
    let documented = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let missing: Vec<&String> = all
        .iter()
        .filter(|k| !documented.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "keys of config/base.toml not in docs/configuration.md: {missing:?}"
    );
}

/// Every Rust file of the crate and its tests, whitespace collapsed: what a snippet must
/// be a quote of.
fn compiled_sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        walk(&root().join(dir), &mut files);
    }
    files
        .into_iter()
        .map(|f| {
            let text = collapsed(&std::fs::read_to_string(&f).unwrap());
            (f, text)
        })
        .collect()
}

fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The ```` ```rust ```` blocks of a markdown text, with the line each starts on.
fn rust_snippets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut open {
            None if line.trim_start() == "```rust" => open = Some((n + 1, String::new())),
            Some(_) if line.trim_start() == "```" => out.extend(open.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

/// The Rust snippets of the architecture page cannot drift: each is a quote (whitespace
/// aside) of code the build compiles, in `src/`, `tests/` or `benches/`, so a snippet
/// that no longer compiles (or shows a registry the code no longer has) fails here.
#[test]
fn architecture_snippets_are_quotes_of_compiled_code() {
    let page = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let snippets = rust_snippets(&page);
    assert!(
        snippets.len() >= 5,
        "the snippets were read: {}",
        snippets.len()
    );
    let sources = compiled_sources();
    let drifted: Vec<String> = snippets
        .iter()
        .filter(|(_, body)| {
            let quote = collapsed(body);
            !sources.iter().any(|(_, text)| text.contains(&quote))
        })
        .map(|(line, body)| format!("docs/architecture.md:{line}:\n{body}"))
        .collect();
    assert!(
        drifted.is_empty(),
        "snippets of docs/architecture.md that are no code of the tree (quote the code \
         as it is):\n{}",
        drifted.join("\n")
    );
}
