//! The layering rule, checked on the source: the crate's top-level modules (`api`,
//! `broker`, `live`, `domains`, …) import each other without a cycle. Each module may
//! use those below it; nothing below may reach back up (a domain is never imported by
//! the platform, `api` never by the modules it serves). So no import cycle spans two
//! top-level modules. `app` and `cli` sit on top; `lib.rs` and `main.rs` only declare.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// module → module it imports → where (file:line), for the error message.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules named after `crate::` on one line of code.
fn crate_refs(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{db, shutdown, telemetry::x}`
            let inner = group.split('}').next().unwrap_or_default();
            for part in inner.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != "self" {
                    found.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue; // doc links name modules without importing them
            }
            for target in crate_refs(code) {
                if target != module {
                    graph
                        .entry(module.clone())
                        .or_default()
                        .entry(target)
                        .or_insert_with(|| format!("{}:{}", rel.display(), n + 1));
                }
            }
        }
    }
    graph
}

/// A cycle of modules, if there is one (depth-first search with a path stack).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|m| m.keys()) {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut done, &mut Vec::new()))
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let graph = graph();
    assert!(graph.contains_key("app"), "the scan found the sources");
    if let Some(cycle) = find_cycle(&graph) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| format!("  {} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
            .collect();
        panic!(
            "import cycle between top-level modules:\n{}",
            steps.join("\n")
        );
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g = Graph::new();
    let edge = |g: &mut Graph, a: &str, b: &str| {
        g.entry(a.into())
            .or_default()
            .insert(b.into(), "x.rs:1".into());
    };
    edge(&mut g, "api", "users");
    edge(&mut g, "live", "api");
    assert_eq!(find_cycle(&g), None);
    edge(&mut g, "users", "live");
    assert!(find_cycle(&g).is_some());
    assert_eq!(
        crate_refs("use crate::{db, shutdown, telemetry::x}; crate::app::run"),
        vec!["db", "shutdown", "telemetry", "app"]
    );
}

#[test]
fn no_module_but_the_composition_root_names_the_app() {
    let graph = graph();
    let users: Vec<&String> = graph
        .iter()
        .filter(|(m, deps)| !["cli"].contains(&m.as_str()) && deps.contains_key("app"))
        .map(|(m, _)| m)
        .collect();
    assert!(users.is_empty(), "modules importing app: {users:?}");
}

/// A platform module names no domain: only the registry (`domains`), the composition
/// root (`app`) and the command line (`cli`) import `domains`.
#[test]
fn a_platform_module_names_no_domain() {
    let graph = graph();
    let naming: Vec<String> = graph
        .iter()
        .filter(|(m, _)| !["domains", "app", "cli"].contains(&m.as_str()))
        .filter_map(|(m, deps)| deps.get("domains").map(|at| format!("{m} ({at})")))
        .collect();
    assert!(
        naming.is_empty(),
        "platform modules naming a domain: {naming:?}"
    );
}

/// The domain-to-domain edges allowed: (from, to, the parts of `to` it may name, why).
/// Anything else a domain needs of another goes through the event seam (`crate::events`:
/// the owner records, the other listens) or a platform module below both.
const DOMAIN_EDGES: &[(&str, &str, &[&str], &str)] = &[
    (
        "payments",
        "flash_sale",
        &["messages", "notify", "settings", "status", "store"],
        "a payment pays a flash-sale order in its own transaction: the order's state, its \
         transition and event, the currency both bill in",
    ),
    (
        "search_sync",
        "ai_tasks",
        &["events"],
        "its materials listener hears tasks' outputs: the event type and detail their owner \
         declares",
    ),
];

/// The paths that start at `rest` (after a `domains::` or a `super::`): one, or each of a
/// `{…}` group's, each cut to its first two segments.
fn heads(rest: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let two = |p: &str| p.split("::").take(2).map(ident).collect::<Vec<_>>();
    match rest.strip_prefix('{') {
        Some(group) => group
            .split('}')
            .next()
            .unwrap_or_default()
            .split(',')
            .map(two)
            .collect(),
        None => vec![two(rest)],
    }
}

/// The domains and their parts named on one line of `src/domains/<from>/…`, whose module
/// path is `module` (`["domains", "payments", "store", "apply"]`): `domains::x::part`
/// however it is reached (`crate::`, a `use crate::domains`, a `{…}` group, `super::`).
fn domain_refs(line: &str, module: &[String], domains: &[String]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut named = |path: Vec<String>| {
        if let [d, name, rest @ ..] = path.as_slice()
            && d == "domains"
            && domains.contains(name)
        {
            found.push((name.clone(), rest.first().cloned().unwrap_or_default()));
        }
    };
    // Every `domains::` (after `crate::`, or with a `use crate::domains` in scope).
    let mut rest = line;
    while let Some(at) = rest.find("domains::") {
        let glued = rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "domains::".len()..];
        if !glued {
            for head in heads(rest) {
                named(std::iter::once("domains".to_owned()).chain(head).collect());
            }
        }
    }
    // `super::super::x::part` climbs from this file's module.
    let mut rest = line;
    while let Some(at) = rest.find("super::") {
        rest = &rest[at..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups <= module.len() {
            for head in heads(rest) {
                named(
                    module[..module.len() - ups]
                        .iter()
                        .cloned()
                        .chain(head)
                        .collect(),
                );
            }
        }
    }
    found
}

/// Domains name each other only along the allowed edges; every other reference names its
/// file and line.
#[test]
fn domains_name_each_other_only_along_the_allowed_edges() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domains");
    let domains: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        domains.contains(&"webhooks".to_owned()),
        "the scan found the domains"
    );
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap();
        let mut module: Vec<String> = std::iter::once("domains".to_owned())
            .chain(
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned()),
            )
            .collect();
        let last = module.pop().unwrap_or_default();
        let Some(from) = module.get(1).cloned() else {
            continue; // the registry itself
        };
        if last != "mod.rs" {
            module.push(last.trim_end_matches(".rs").to_owned());
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for (to, part) in domain_refs(code, &module, &domains) {
                let allowed = to == from
                    || DOMAIN_EDGES.iter().any(|(f, t, parts, _)| {
                        *f == from && *t == to && parts.contains(&part.as_str())
                    });
                if !allowed {
                    let at = format!("src/domains/{}:{}", rel.display(), n + 1);
                    wrong.push(format!("{at}: {from} -> {to}::{part}"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "domain edges not allowed (record an event instead, or add the edge with why to \
         DOMAIN_EDGES):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn domain_references_are_found_however_they_are_written() {
    let domains = ["flash_sale".to_owned(), "payments".to_owned()];
    let module: Vec<String> = ["domains", "payments", "store"].map(String::from).to_vec();
    let refs = |line| domain_refs(line, &module, &domains);
    let pair = |d: &str, p: &str| (d.to_owned(), p.to_owned());
    assert_eq!(
        refs("use crate::domains::flash_sale::store::{self, Paid};"),
        [pair("flash_sale", "store")]
    );
    assert_eq!(
        refs("use crate::domains::{flash_sale::status, payments};"),
        [pair("flash_sale", "status"), pair("payments", "")]
    );
    assert_eq!(
        refs("super::super::flash_sale::notify::x()"),
        [pair("flash_sale", "notify")]
    );
    // Its own parts count (and are allowed); the registry's items are no domain.
    assert_eq!(
        refs("use super::entity; use crate::domains::{Cli, Domain};"),
        [pair("payments", "entity")]
    );
    assert_eq!(refs("my_domains::flash_sale::x"), []);
}

/// The compose file stays hardened (it cannot run here: no Docker engine): only the API
/// port published (the management UI on loopback), no credential written in it, the
/// image not running as root.
#[test]
fn the_compose_stack_publishes_only_the_api_and_holds_no_credentials() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let compose = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap();
    let ports: Vec<&str> = compose
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ports:"))
        .collect();
    assert_eq!(
        ports,
        [
            "ports: [\"127.0.0.1:15672:15672\"]",
            "ports: [\"8080:8080\"]"
        ],
        "published ports"
    );
    for literal in [
        "conveyor:conveyor@",
        "PASSWORD: conveyor",
        "PASSWORD: root",
        "-proot",
    ] {
        assert!(
            !compose.contains(literal),
            "a credential in docker-compose.yml: {literal}"
        );
    }
    assert!(
        compose.contains("internal: true"),
        "the dependencies' network is internal"
    );
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(
        dockerfile
            .lines()
            .any(|l| l.starts_with("USER ") && !l.contains("root")),
        "the image runs as a non-root user"
    );
}
