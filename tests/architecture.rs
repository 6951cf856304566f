//! The shape of the code itself: the import graph of every library crate's files, drawn from
//! their `use` lines and paths, has no circles.
//!
//! Cargo already forbids circles between crates; inside a crate nothing does, and a helper in
//! the wrong room (a percent function in the DataLoader detector, imported by a dozen files
//! that the detector itself imports) makes one. The graph: a file points at the file that
//! defines what it names (`use crate::a::B`, `super::C`, `a::f()` for a child module `a`),
//! re-exports followed to where the item lives. A module's own `mod x;` and `pub use` lines
//! are declarations, not edges: a facade that names its children's items does not depend on
//! them, and they may read what the facade itself defines only if it calls none of them. Set
//! `TRACELENS_IMPORT_GRAPH=dot` to print the graph in Graphviz form.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path inside the crate and its tokens.
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    tokens: Vec<Token>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of Rust source with comments, strings, chars and lifetimes removed: enough to
/// read paths and braces, nothing more.
fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'#' | b'"')) && is_raw_string(b, i) {
            // r"…", r#"…"#, r##"…"##
            let mut j = i + 1;
            let mut hashes = 0;
            while b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"'
                    && b[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // A byte string b"…" or raw identifier r#x is read as its parts: harmless here.
            out.push(Token::Ident(src[start..i].to_string()));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                if b[i] == b'.' && b.get(i + 1) == Some(&b'.') {
                    break;
                }
                i += 1;
            }
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_ascii_whitespace() {
                out.push(Token::Punct(c as char));
            }
            i += 1;
        }
    }
    out
}

fn is_raw_string(b: &[u8], i: usize) -> bool {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return false;
    }
    let mut j = i + 1;
    while j < b.len() && b[j] == b'#' {
        j += 1;
    }
    b.get(j) == Some(&b'"')
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The tokens without the items marked `#[cfg(test)]` (a test module, a test-only `use` or
/// helper): tests sit above everything they test, so their imports are not the code's.
fn without_test_items(tokens: &[Token]) -> Vec<Token> {
    let marker = |k: usize| {
        let want = ["#", "[", "cfg", "(", "test", ")", "]"];
        want.iter()
            .enumerate()
            .all(|(i, w)| match tokens.get(k + i) {
                Some(Token::Ident(s)) => s == w,
                Some(Token::Punct(c)) => w.len() == 1 && w.starts_with(*c),
                _ => false,
            })
    };
    let mut out = Vec::with_capacity(tokens.len());
    let mut k = 0;
    while k < tokens.len() {
        if !marker(k) {
            out.push(tokens[k].clone());
            k += 1;
            continue;
        }
        // Skip the item: up to its `;`, or through its balanced `{ … }`.
        k += 7;
        let mut depth = 0usize;
        while k < tokens.len() {
            match tokens[k] {
                Token::Punct(';') if depth == 0 => {
                    k += 1;
                    break;
                }
                Token::Punct('{') => depth += 1,
                Token::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        k += 1;
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
    }
    out
}

/// The inline modules (`mod name { … }`) open at a token, followed through the braces.
#[derive(Default)]
struct InlineScopes {
    open: Vec<(String, usize)>,
    depth: usize,
}

impl InlineScopes {
    /// Follows token `k`; returns the name of an inline module that opens there.
    fn step<'t>(&mut self, t: &'t [Token], k: usize) -> Option<&'t str> {
        match &t[k] {
            Token::Punct('{') => self.depth += 1,
            Token::Punct('}') => {
                self.depth = self.depth.saturating_sub(1);
                if self.open.last().is_some_and(|&(_, d)| d == self.depth) {
                    self.open.pop();
                }
            }
            Token::Ident(kw) if kw == "mod" => {
                if let (Some(name), Some(Token::Punct('{'))) = (ident(t.get(k + 1)), t.get(k + 2)) {
                    self.open.push((name.to_string(), self.depth));
                    return Some(name);
                }
            }
            _ => {}
        }
        None
    }

    /// `module` and the inline modules open now.
    fn path(&self, module: &[String]) -> Vec<String> {
        let mut m = module.to_vec();
        m.extend(self.open.iter().map(|(n, _)| n.clone()));
        m
    }
}

/// The files of one crate's module tree, from its root through `mod x;` lines.
fn crate_files(root: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut todo = vec![(root.to_path_buf(), Vec::<String>::new())];
    while let Some((path, module)) = todo.pop() {
        let src =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let tokens = tokenize(&src);
        let dir = child_dir(&path);
        // `mod x;` at any depth of inline modules: the inline path decides the folder.
        let mut scopes = InlineScopes::default();
        for k in 0..tokens.len() {
            scopes.step(&tokens, k);
            let (Token::Ident(kw), Some(name), Some(Token::Punct(';'))) =
                (&tokens[k], ident(tokens.get(k + 1)), tokens.get(k + 2))
            else {
                continue;
            };
            if kw != "mod" {
                continue;
            }
            let mut sub_dir = dir.clone();
            for (m, _) in &scopes.open {
                sub_dir.push(m);
            }
            let flat = sub_dir.join(format!("{name}.rs"));
            let nested = sub_dir.join(name).join("mod.rs");
            let file = if flat.exists() { flat } else { nested };
            let mut m = scopes.path(&module);
            m.push(name.to_string());
            todo.push((file, m));
        }
        files.push(SourceFile {
            path,
            module,
            tokens,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The folder a file's child modules live in: `a/mod.rs` and `lib.rs` → their folder,
/// `a.rs` → `a/`.
fn child_dir(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap().to_string_lossy();
    let parent = path.parent().unwrap();
    if name == "mod.rs" || name == "lib.rs" || name == "main.rs" {
        parent.to_path_buf()
    } else {
        parent.join(path.file_stem().unwrap())
    }
}

/// What the crate's modules are and hold: module path → file (inline modules map to the
/// file they sit in), and each file's re-exports.
struct CrateIndex {
    modules: BTreeMap<Vec<String>, usize>,
    /// file → (name it exports under → the path it re-exports), and glob re-exports.
    reexports: Vec<BTreeMap<String, Vec<String>>>,
    globs: Vec<Vec<Vec<String>>>,
}

/// One `use` tree expanded to its paths, each with the name it binds (`None` for a glob).
fn expand_use(tokens: &[Token], prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    // tokens: one use tree, without the trailing `;`.
    let mut path = prefix.to_vec();
    let mut k = 0;
    while k < tokens.len() {
        match &tokens[k] {
            Token::Ident(s) if s == "as" => {
                let alias = ident(tokens.get(k + 1)).map(str::to_string);
                out.push((path.clone(), alias));
                return;
            }
            Token::Ident(s) => path.push(s.clone()),
            Token::PathSep => {}
            Token::Punct('*') => {
                out.push((path.clone(), None));
                return;
            }
            Token::Punct('{') => {
                // Split the group at top-level commas.
                let mut depth = 0;
                let mut start = k + 1;
                let mut j = k + 1;
                while j < tokens.len() {
                    match tokens[j] {
                        Token::Punct('{') => depth += 1,
                        Token::Punct('}') if depth == 0 => {
                            if start < j {
                                expand_use(&tokens[start..j], &path, out);
                            }
                            break;
                        }
                        Token::Punct('}') => depth -= 1,
                        Token::Punct(',') if depth == 0 => {
                            if start < j {
                                expand_use(&tokens[start..j], &path, out);
                            }
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return;
            }
            _ => {}
        }
        k += 1;
    }
    let bound = if path.last().is_some_and(|s| s == "self") {
        path.pop();
        path.last().cloned()
    } else {
        path.last().cloned()
    };
    out.push((path, bound));
}

/// A reference made in a file: the path as written, and the module it was written in.
struct Reference {
    path: Vec<String>,
    scope: Vec<String>,
    /// A `pub use`: what the file exports under `bound`.
    export: Option<Option<String>>,
}

/// Every path a file names: `use` trees expanded, and `a::b` paths in code.
fn references(file: &SourceFile) -> Vec<Reference> {
    let t = &file.tokens;
    let mut out = Vec::new();
    let mut scopes = InlineScopes::default();
    let mut k = 0;
    while k < t.len() {
        scopes.step(t, k);
        match &t[k] {
            Token::Ident(kw) if kw == "use" => {
                let public = k > 0
                    && (matches!(&t[k - 1], Token::Ident(p) if p == "pub")
                        || matches!(t[k - 1], Token::Punct(')')));
                let end = (k..t.len())
                    .find(|&j| t[j] == Token::Punct(';'))
                    .unwrap_or(t.len());
                let mut paths = Vec::new();
                expand_use(&t[k + 1..end], &[], &mut paths);
                for (path, bound) in paths {
                    out.push(Reference {
                        path,
                        scope: scopes.path(&file.module),
                        export: public.then_some(bound),
                    });
                }
                k = end + 1;
                continue;
            }
            Token::Ident(first) if t.get(k + 1) == Some(&Token::PathSep) => {
                let preceded_by_sep = k > 0 && t[k - 1] == Token::PathSep;
                if !preceded_by_sep {
                    let mut path = vec![first.clone()];
                    let mut j = k + 1;
                    while t.get(j) == Some(&Token::PathSep) {
                        match ident(t.get(j + 1)) {
                            Some(s) => path.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    out.push(Reference {
                        path,
                        scope: scopes.path(&file.module),
                        export: None,
                    });
                    k = j;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// The absolute module path a written path means, or `None` when it leaves the crate (another
/// crate, `std`, a type's associated item).
fn absolute(path: &[String], scope: &[String], index: &CrateIndex) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String>;
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            base = Vec::new();
            rest = &path[1..];
        }
        "self" => {
            base = scope.to_vec();
            rest = &path[1..];
        }
        "super" => {
            base = scope.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => {
            // A child module of the scope (2018 paths), else nothing of ours.
            let mut child = scope.to_vec();
            child.push(first.clone());
            if !index.modules.contains_key(&child) {
                return None;
            }
            base = scope.to_vec();
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file that defines what an absolute path names, following re-exports.
fn defining_file(
    files: &[SourceFile],
    abs: &[String],
    index: &CrateIndex,
    hops: usize,
) -> Option<usize> {
    let (mut n, file) = (0..=abs.len())
        .rev()
        .find_map(|n| index.modules.get(&abs[..n]).map(|&f| (n, f)))?;
    if n == abs.len() || hops > 8 {
        return Some(file);
    }
    // The item `abs[n]` in `file`: defined there, or re-exported from elsewhere.
    let item = &abs[n];
    if let Some(target) = index.reexports[file].get(item) {
        let mut next = target.clone();
        n += 1;
        next.extend(abs[n..].iter().cloned());
        return defining_file(files, &next, index, hops + 1).or(Some(file));
    }
    for glob in &index.globs[file] {
        let mut next = glob.clone();
        next.extend(abs[n..].iter().cloned());
        if let Some(f) = defining_file(files, &next, index, hops + 1) {
            if f != file && defines(files, index, f, item) {
                return Some(f);
            }
        }
    }
    Some(file)
}

/// Whether a file defines `item` (fn, struct, enum, trait, type, const, static, mod) or
/// re-exports it by name.
fn defines(files: &[SourceFile], index: &CrateIndex, file: usize, item: &str) -> bool {
    const ITEMS: [&str; 9] = [
        "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
    ];
    index.reexports[file].contains_key(item)
        || files[file].tokens.windows(2).any(|w| {
            matches!((&w[0], &w[1]), (Token::Ident(kw), Token::Ident(name)) if name == item && ITEMS.contains(&kw.as_str()))
        })
}

/// The import graph of one crate: file → files it names.
fn import_graph(root: &Path) -> (Vec<SourceFile>, Vec<BTreeSet<usize>>) {
    let (files, edges, _) = import_graph_named(root);
    (files, edges)
}

/// Each edge's first path, `a::b::C`: what to move to break a circle.
type EdgeNames = BTreeMap<(usize, usize), String>;

/// [`import_graph`], with the path that made each edge.
fn import_graph_named(root: &Path) -> (Vec<SourceFile>, Vec<BTreeSet<usize>>, EdgeNames) {
    let files = crate_files(root);
    let mut index = CrateIndex {
        modules: BTreeMap::new(),
        reexports: vec![BTreeMap::new(); files.len()],
        globs: vec![Vec::new(); files.len()],
    };
    for (f, file) in files.iter().enumerate() {
        index.modules.insert(file.module.clone(), f);
    }
    // Inline modules belong to the file they are written in.
    for (f, file) in files.iter().enumerate() {
        let mut scopes = InlineScopes::default();
        for k in 0..file.tokens.len() {
            if scopes.step(&file.tokens, k).is_some() {
                index.modules.entry(scopes.path(&file.module)).or_insert(f);
            }
        }
    }
    let refs: Vec<Vec<Reference>> = files
        .iter()
        .map(|file| {
            references(&SourceFile {
                path: file.path.clone(),
                module: file.module.clone(),
                tokens: without_test_items(&file.tokens),
            })
        })
        .collect();
    for (f, file_refs) in refs.iter().enumerate() {
        for r in file_refs {
            let Some(export) = &r.export else { continue };
            let Some(abs) = absolute(&r.path, &r.scope, &index) else {
                continue;
            };
            match export {
                Some(name) => {
                    index.reexports[f].insert(name.clone(), abs);
                }
                None => index.globs[f].push(abs),
            }
        }
    }
    let mut edges = vec![BTreeSet::new(); files.len()];
    let mut names = EdgeNames::new();
    for (f, file_refs) in refs.iter().enumerate() {
        // A re-export is a declaration, as `mod x;` is: followed, never an edge.
        for r in file_refs.iter().filter(|r| r.export.is_none()) {
            let Some(abs) = absolute(&r.path, &r.scope, &index) else {
                continue;
            };
            if let Some(to) = defining_file(&files, &abs, &index, 0) {
                if to != f {
                    edges[f].insert(to);
                    names.entry((f, to)).or_insert_with(|| abs.join("::"));
                }
            }
        }
    }
    (files, edges, names)
}

/// The strongly connected components with more than one file (Tarjan's algorithm).
fn circles(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                s.found.push(component);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.found
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every library crate's root file.
fn crate_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(workspace_root().join("crates"))
        .unwrap()
        .filter_map(|e| {
            let lib = e.ok()?.path().join("src/lib.rs");
            lib.exists().then_some(lib)
        })
        .collect();
    roots.sort();
    roots
}

fn describe(
    files: &[SourceFile],
    edges: &[BTreeSet<usize>],
    names: &EdgeNames,
    circle: &[usize],
) -> String {
    let root = workspace_root();
    let name = |f: usize| {
        files[f]
            .path
            .strip_prefix(&root)
            .unwrap_or(&files[f].path)
            .display()
            .to_string()
    };
    let inside: BTreeSet<usize> = circle.iter().copied().collect();
    let mut lines = Vec::new();
    for &f in circle {
        let to: Vec<String> = edges[f]
            .iter()
            .filter(|t| inside.contains(t))
            .map(|&t| match names.get(&(f, t)) {
                Some(what) => format!("{} ({what})", name(t)),
                None => name(t),
            })
            .collect();
        lines.push(format!("  {} -> {}", name(f), to.join(", ")));
    }
    lines.join("\n")
}

#[test]
fn the_files_of_every_crate_import_each_other_without_a_circle() {
    let dot = std::env::var("TRACELENS_IMPORT_GRAPH").is_ok_and(|v| v == "dot");
    let mut problems = Vec::new();
    let mut files_seen = 0;
    for root in crate_roots() {
        let (files, edges, names) = import_graph_named(&root);
        files_seen += files.len();
        if dot {
            let base = workspace_root();
            let name = |f: usize| {
                files[f]
                    .path
                    .strip_prefix(&base)
                    .unwrap()
                    .display()
                    .to_string()
            };
            println!("digraph \"{}\" {{", name(0));
            for (f, to) in edges.iter().enumerate() {
                for &t in to {
                    println!("  \"{}\" -> \"{}\";", name(f), name(t));
                }
            }
            println!("}}");
        }
        for circle in circles(&edges) {
            problems.push(describe(&files, &edges, &names, &circle));
        }
    }
    assert!(files_seen > 100, "only {files_seen} files found");
    assert!(
        problems.is_empty(),
        "{} circle(s) in the file import graph:\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// The reader itself: it must find a circle where one is, and none where the imports run one
/// way (so the test above cannot pass by seeing nothing).
#[test]
fn the_graph_reader_sees_a_planted_circle_and_a_clean_tree() {
    let dir = std::env::temp_dir().join(format!("tracelens-imports-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "src/lib.rs",
        "//! x\npub mod a;\npub mod b;\nmod c;\npub use c::{Thing as Other, more::*};\n",
    );
    write(
        "src/a.rs",
        "use crate::b::{self, helper};\npub fn f() { b::g(); }\n",
    );
    write(
        "src/b.rs",
        "pub fn g() {}\npub fn helper() { let s = \"crate::a::f\"; }\n",
    );
    write(
        "src/c/mod.rs",
        "pub mod more;\npub struct Thing;\n#[cfg(test)]\nmod tests { use super::*; }\n",
    );
    write(
        "src/c/more.rs",
        "use super::Thing; // crate::a\npub fn m() -> Thing { Thing }\n",
    );
    let (files, edges) = import_graph(&dir.join("src/lib.rs"));
    let names: Vec<String> = files
        .iter()
        .map(|f| f.path.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert_eq!(edges[at("src/a.rs")], BTreeSet::from([at("src/b.rs")]));
    assert!(
        edges[at("src/b.rs")].is_empty(),
        "strings and comments are not imports"
    );
    assert_eq!(
        edges[at("src/c/more.rs")],
        BTreeSet::from([at("src/c/mod.rs")])
    );
    assert!(
        edges[at("src/c/mod.rs")].is_empty(),
        "a `mod` line and an inline test module are not edges"
    );
    assert!(circles(&edges).is_empty());

    // b now reaches back into a through the crate root's re-export: a circle.
    write(
        "src/lib.rs",
        "//! x\npub mod a;\npub mod b;\nmod c;\npub use a::f;\n",
    );
    write(
        "src/b.rs",
        "pub fn g() { crate::f(); }\npub fn helper() {}\n",
    );
    let (files, edges, names) = import_graph_named(&dir.join("src/lib.rs"));
    let found = circles(&edges);
    assert_eq!(
        found.len(),
        1,
        "{}",
        found
            .iter()
            .map(|c| describe(&files, &edges, &names, c))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(found[0].len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The analysis crate's stages, in the order each may read the ones before it (its folders
/// under `src/`); files at the crate root (`api.rs`, `num.rs`) are shared by every stage and
/// read none.
const ANALYSIS_STAGES: [&str; 5] = ["measure", "attribute", "predict", "views", "diagnose"];

#[test]
fn the_analysis_stages_read_only_the_stages_before_them() {
    let src = workspace_root().join("crates/tracelens-analysis/src");
    let (files, edges, names) = import_graph_named(&src.join("lib.rs"));
    let rel = |f: usize| {
        files[f]
            .path
            .strip_prefix(&src)
            .unwrap()
            .display()
            .to_string()
    };
    let stage = |f: usize| -> Option<usize> {
        let path = rel(f);
        let top = path.split('/').next().unwrap_or("");
        ANALYSIS_STAGES
            .iter()
            .position(|s| *s == top)
            .filter(|_| path.contains('/'))
    };
    let mut problems = Vec::new();
    let mut between_stages = 0;
    for (f, to) in edges.iter().enumerate() {
        for &t in to {
            match (stage(f), stage(t)) {
                (None, Some(_)) if rel(f) != "lib.rs" => problems.push(format!(
                    "{} is shared by every stage but reads {} ({})",
                    rel(f),
                    rel(t),
                    names[&(f, t)]
                )),
                (Some(a), Some(b)) if a != b => {
                    between_stages += 1;
                    if a < b {
                        problems.push(format!(
                            "{} reads {} ({}), a later stage (order: {})",
                            rel(f),
                            rel(t),
                            names[&(f, t)],
                            ANALYSIS_STAGES.join(" → ")
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        between_stages > 50,
        "only {between_stages} imports between stages"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Files of the analysis crate that may match names outside `vocabulary/`: the FLOP cost
/// model's formulas are keyed by the op they price (`aten::addmm` → 2·m·n·k), one table in
/// one file.
const NAME_TABLES_OUTSIDE_VOCABULARY: [&str; 1] = ["views/flops.rs"];

/// The marker a line above a string match puts when it matches text of our own, not a name
/// from a trace.
const NOT_A_NAME: &str = "// text, not a trace name";

/// Every `.rs` file under `dir`, recursively.
fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lines of non-test code in `src` that match a string literal against a name
/// (`.contains("…")`, `.starts_with("…")`, …) without the [`NOT_A_NAME`] marker above them.
fn name_matches(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut previous = "";
    for (n, line) in src.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let matches = [
            ".contains(\"",
            ".starts_with(\"",
            ".ends_with(\"",
            ".strip_prefix(\"",
            ".strip_suffix(\"",
            " == \"",
        ]
        .iter()
        .any(|m| line.contains(m))
            || line.contains("matches!(") && line.contains('"');
        if matches && previous.trim() != NOT_A_NAME {
            out.push((n + 1, line.trim().to_string()));
        }
        previous = line;
    }
    out
}

#[test]
fn what_names_mean_is_known_only_in_the_vocabulary() {
    let src = workspace_root().join("crates/tracelens-analysis/src");
    let mut problems = Vec::new();
    let mut vocabulary_matches = 0;
    for file in rust_files_under(&src) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let found = name_matches(&std::fs::read_to_string(&file).unwrap());
        if rel.starts_with("vocabulary/") {
            vocabulary_matches += found.len();
        } else if !NAME_TABLES_OUTSIDE_VOCABULARY.contains(&rel.as_str()) {
            problems.extend(found.into_iter().map(|(n, l)| format!("{rel}:{n}: {l}")));
        }
    }
    assert!(
        vocabulary_matches > 20,
        "the vocabulary matches only {vocabulary_matches} names: is the scan reading it?"
    );
    assert!(
        problems.is_empty(),
        "name matching outside crates/tracelens-analysis/src/vocabulary/ (ask the vocabulary, \
         or mark our own text with `{NOT_A_NAME}` on the line above):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_name_scan_sees_a_match_and_honours_the_marker() {
    let src = "fn f(n: &str) -> bool {\n    n.starts_with(\"aten::\")\n}\nfn g(t: &str) -> bool {\n    // text, not a trace name\n    t.contains(\"batch size\")\n}\n#[cfg(test)]\nmod tests { fn h(n: &str) -> bool { n.contains(\"x\") } }\n";
    assert_eq!(
        name_matches(src),
        vec![(2, "n.starts_with(\"aten::\")".to_string())]
    );
}
