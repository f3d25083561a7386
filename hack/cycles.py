#!/usr/bin/env python3
"""Fails when source files import each other, directly or around a circle.

Why: a file that can be read first is a file a newcomer can understand first. skiff's layers
point one way (see docs/ARCHITECTURE.md); this check keeps them so. `make lint` runs it.

What counts as an import: every path in the code that names another file's module, in `use`
lines and inline (`super::request::send`, `crate::kube::Error`), outside comments and strings.
A name a `mod.rs` re-exports (`pub use client::Client;`) counts as an import of the file that
defines it, not of the `mod.rs`: the module map is not a dependency. `mod x;` declarations are
structure, not imports, and test modules (`#[cfg(test)] mod tests { … }`) are left out: tests
use whatever they test. An inherent `impl T { … }` in another file than `T`'s definition ties
both ways: the file uses `T`, and `T`'s methods live in it.

Usage: hack/cycles.py [SRC_DIR]   (default: src next to this script's parent)
"""

import re
import sys
from pathlib import Path

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\}\s*;", re.S)
PUB_USE = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", re.M)


def strip(text):
    """The code without comments, string literals and test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return without_test_modules(text)


TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def without_test_modules(text):
    while True:
        m = TEST_MODULE.search(text)
        if not m:
            return text
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


DEFINITION = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait)\s+([A-Z]\w*)", re.M)
INHERENT_IMPL = re.compile(r"^\s*impl(?:<[^>{]*>)?\s+([A-Z]\w*)(?:<[^>{]*>)?\s*\{", re.M)


class Tree:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        for path in src.rglob("*.rs"):
            rel = path.relative_to(src).with_suffix("")
            parts = list(rel.parts)
            if parts in (["lib"], ["main"]):
                parts = []
            elif parts[-1] == "mod":
                parts = parts[:-1]
            self.files[tuple(parts)] = path
        self.reexports = {}  # (module, name) -> module path of the definer
        for module, path in self.files.items():
            for spec in PUB_USE.findall(strip(path.read_text())):
                for target in expand(spec.strip()):
                    name = target[-1]
                    resolved = self.absolute(module, target[:-1], path)
                    if resolved is not None:
                        self.reexports[(module, name)] = resolved

    def is_dir_module(self, module):
        path = self.files[module]
        return path.name in ("mod.rs", "lib.rs", "main.rs")

    def absolute(self, module, segments, path):
        """The module path `segments` names from inside `module` (a file)."""
        segments = list(segments)
        # A file `a/b.rs` is module (a, b); `super` from it is (a). For `a/b/mod.rs` it is the
        # same. Inline child modules (`mod tests { … }`) are in the same file: no import.
        base = list(module)
        if not segments:
            return tuple(base)
        head = segments[0]
        if head == "crate":
            base, segments = [], segments[1:]
        while segments and segments[0] in ("super", "self"):
            if segments[0] == "super" and base:
                base = base[:-1]
            segments = segments[1:]
        return tuple(base + segments)

    def file_of(self, module_path):
        """The file defining the longest prefix of `module_path`, following re-exports."""
        parts = list(module_path)
        while parts:
            key = tuple(parts)
            if key in self.files:
                rest = module_path[len(parts):]
                if rest and (key, rest[0]) in self.reexports:
                    target = self.reexports[(key, rest[0])]
                    if target != key:
                        return self.file_of(target + (rest[0],))
                return key
            parts.pop()
        return ()


def expand(spec):
    """`a::{b, c::d}` → [[a, b], [a, c, d]]; `a::b as c` → [[a, b]]."""
    spec = re.sub(r"\s+as\s+\w+", "", spec)
    spec = re.sub(r"\s+", "", spec)
    if "{" not in spec:
        return [spec.split("::")] if spec and spec != "*" else []
    head, inner = spec.split("{", 1)
    inner = inner.rsplit("}", 1)[0]
    prefix = [p for p in head.split("::") if p]
    out = []
    depth, item = 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            if item and item != "*":
                for sub in expand(item):
                    out.append(prefix + sub)
            elif item == "*":
                out.append(prefix)
            item = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        item += ch
    return out


def imports(tree, module, path):
    code = strip(path.read_text())
    found = set()
    paths = [m.group(1) + m.group(2) for m in PATH.finditer(code)]
    for group in USE_GROUP.finditer(code):
        for item in expand(group.group(1) + "::{" + group.group(2) + "}"):
            paths.append("::".join(item))
    for text in paths:
        segments = [s for s in text.split("::") if s]
        target = tree.file_of(tree.absolute(module, segments, path))
        if target != module and target in tree.files and not is_ancestor_map(tree, target, module):
            found.add(target)
    return found


def is_ancestor_map(tree, target, module):
    """A `mod.rs`/`lib.rs` above `module`: using what it re-exports was resolved already."""
    return tree.is_dir_module(target) and module[: len(target)] == target


def cycles(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def impl_edges(tree, graph):
    """Inherent impls of a type defined in another file: that file and the definer depend on
    each other (names are matched within the same directory module, where such impls live)."""
    defined = {}
    for module, path in tree.files.items():
        for name in DEFINITION.findall(strip(path.read_text())):
            defined.setdefault((module[:-1], name), module)
    for module, path in tree.files.items():
        for name in INHERENT_IMPL.findall(strip(path.read_text())):
            owner = defined.get((module[:-1], name))
            if owner is not None and owner != module:
                graph[module].add(owner)
                graph[owner].add(module)


def main():
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "src"
    tree = Tree(src)
    graph = {m: imports(tree, m, p) for m, p in tree.files.items()}
    impl_edges(tree, graph)
    found = cycles(graph)
    name = lambda m: str(tree.files[m].relative_to(src.parent))
    if not found:
        print(f"cycles: none among {len(graph)} source files")
        return 0
    print(f"cycles: {len(found)} group(s) of source files import each other:", file=sys.stderr)
    for comp in found:
        members = set(comp)
        print("  " + ", ".join(name(m) for m in comp), file=sys.stderr)
        for m in comp:
            for w in sorted(graph[m] & members):
                print(f"    {name(m)} -> {name(w)}", file=sys.stderr)
    print("Move what both need into a file of its own that neither imports back "
          "(see docs/ARCHITECTURE.md, Layers).", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
