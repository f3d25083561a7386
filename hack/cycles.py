#!/usr/bin/env python3
"""Fails when source files import each other, directly or around a circle, or when a module
uses one declared above it.

Why: a file that can be read first is a file a newcomer can understand first. skiff's layers
point one way (see docs/ARCHITECTURE.md); this check keeps them so. `make lint` runs it.

The order: `src/lib.rs`, and the `mod.rs` (or `x.rs` beside `x/`) of each directory given, list
their `mod x;` declarations top-down, and a module uses only those listed after it: a file
under module `x` may import the modules declared after `x` at the same level, and its own
children, never one declared above it. rustfmt keeps the declared order (`reorder_modules =
false` in rustfmt.toml).

What counts as an import: every path in the code that names another file's module, in `use`
lines and inline (`super::request::send`, `crate::kube::Error`), outside comments and strings.
A name a `mod.rs` re-exports (`pub use client::Client;`) counts as an import of the file that
defines it, not of the `mod.rs`: the module map is not a dependency. `mod x;` declarations are
structure, not imports, and test modules (`#[cfg(test)] mod tests { … }`) are left out: tests
use whatever they test; the order check leaves out test files (`#[cfg(test)] mod tests;`) too. An inherent `impl T { … }` in another file than `T`'s definition ties
both ways: the file uses `T`, and `T`'s methods live in it.

Usage: hack/cycles.py [DIR...]   (default: src next to this script's parent)

The cycles are checked among every file of the crate whose `lib.rs` is in the first DIR or
above it; the order of each DIR's declarations is checked (`src` for lib.rs, `src/mirror` for
src/mirror/mod.rs).
"""

import re
import sys
from pathlib import Path

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\}\s*;", re.S)
PUB_USE = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", re.M)


def strip(text):
    """The code without comments, string literals and test modules."""
    return without_test_modules(without_comments(text))


def without_comments(text):
    """The code without comments and string literals."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


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
        for path in sorted(src.rglob("*.rs")):
            rel = path.relative_to(src).with_suffix("")
            parts = list(rel.parts)
            if parts == ["main"]:
                continue  # the binary: a crate of its own, which reaches this one as `skiff::`
            if parts == ["lib"]:
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
        return path.name in ("mod.rs", "lib.rs")

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
    """The files `module` imports, each with the first path that imports it."""
    code = strip(path.read_text())
    found = {}
    paths = [m.group(1) + m.group(2) for m in PATH.finditer(code)]
    for group in USE_GROUP.finditer(code):
        for item in expand(group.group(1) + "::{" + group.group(2) + "}"):
            paths.append("::".join(item))
    for text in paths:
        segments = [s for s in text.split("::") if s]
        target = tree.file_of(tree.absolute(module, segments, path))
        if target != module and target in tree.files and not is_ancestor_map(tree, target, module):
            found.setdefault(target, text)
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
    each other (names are matched within the same directory module, where such impls live; a
    file's impl of a type it defines itself is its own, whatever other files name theirs)."""
    defined = {}
    for module, path in tree.files.items():
        for name in DEFINITION.findall(strip(path.read_text())):
            defined.setdefault((module[:-1], name), set()).add(module)
    for module, path in tree.files.items():
        for name in INHERENT_IMPL.findall(strip(path.read_text())):
            owners = defined.get((module[:-1], name), set())
            if module in owners:
                continue
            for owner in sorted(owners):
                graph[module].setdefault(owner, f"impl {name}")
                graph[owner].setdefault(module, f"impl {name} (in {tree.files[module].name})")


MOD_DECLARATION = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")


def declarations(path):
    """The `mod x;` a file declares, in order, each as (name, whether it is `#[cfg(test)]`)."""
    code = without_test_modules(without_comments(path.read_text()))
    return [(m.group(2), "#[cfg(test)]" in re.sub(r"\s", "", m.group(1)))
            for m in MOD_DECLARATION.finditer(code)]


def test_modules(tree):
    """The modules declared `#[cfg(test)] mod x;`: they and what is under them are tests."""
    return {module + (name,) for module, path in tree.files.items()
            for name, test in declarations(path) if test}


def is_test(module, tests):
    return any(module[:n] in tests for n in range(1, len(module) + 1))


def order_violations(tree, graph, parent):
    """Imports between the children of `parent` that run up its list of declarations: for each
    pair (user, used), the (file, file used, import) that make it."""
    declared = [name for name, test in declarations(tree.files[parent]) if not test]
    rank = {name: i for i, name in enumerate(declared)}
    tests = test_modules(tree)
    depth = len(parent)
    found = {}
    for module, targets in graph.items():
        if module[:depth] != parent or len(module) <= depth or is_test(module, tests):
            continue
        user = module[depth]
        for target, text in targets.items():
            if target[:depth] != parent or len(target) <= depth or is_test(target, tests):
                continue
            used = target[depth]
            if used != user and user in rank and used in rank and rank[used] < rank[user]:
                found.setdefault((user, used), []).append((module, target, text))
    return declared, found


def uses(tree, graph, parent, declared):
    """Which children of `parent` use which: child name -> set of child names."""
    depth, out = len(parent), {name: set() for name in declared}
    tests = test_modules(tree)
    for module, targets in graph.items():
        if module[:depth] != parent or len(module) <= depth or is_test(module, tests):
            continue
        for target in targets:
            if target[:depth] == parent and len(target) > depth and not is_test(target, tests):
                if target[depth] != module[depth] and module[depth] in out and target[depth] in out:
                    out[module[depth]].add(target[depth])
    return out


def reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        if v == goal:
            return True
        if v not in seen:
            seen.add(v)
            todo.extend(graph[v])
    return False


def valid_order(declared, used_by):
    """The declared order changed as little as possible so each module comes before those it
    uses (the earliest-declared module no other remaining one uses goes next), or None when
    modules use each other around a circle."""
    left, out = list(declared), []
    while left:
        free = [v for v in left if not any(v in used_by[u] for u in left if u != v)]
        if not free:
            return None
        out.append(free[0])
        left.remove(free[0])
    return out


def check_order(tree, graph, parent, name):
    """Prints the order violations under `parent`; returns how many pairs of modules it found."""
    declared, found = order_violations(tree, graph, parent)
    listing = name(parent)
    if not found:
        print(f"order: {listing} lists its {len(declared)} modules top-down")
        return 0
    used_by = uses(tree, graph, parent, declared)
    print(f"order: {listing}: {len(found)} module(s) use one declared above them "
          "(a module uses only those listed after it):", file=sys.stderr)
    for user, used in sorted(found, key=lambda pair: (declared.index(pair[0]), declared.index(pair[1]))):
        print(f"  `{user}` uses `{used}`, which {listing} declares above it:", file=sys.stderr)
        for module, target, text in found[(user, used)]:
            print(f"    {name(module)} imports {name(target)} ({text})", file=sys.stderr)
        if reaches(used_by, used, user):
            print(f"    fix: `{used}` uses `{user}` too, so no order holds both: `{user}` must not "
                  f"use `{used}` (or `{used}` must not use `{user}`)", file=sys.stderr)
        else:
            print(f"    fix: move `{user}` above `{used}` in {listing}, or `{user}` must not use "
                  f"`{used}`", file=sys.stderr)
    order = valid_order(declared, used_by)
    if order is not None:
        print(f"  an order that holds: {', '.join(order)}", file=sys.stderr)
    return len(found)


def module_of(tree, root, directory):
    """The module a directory is (src → lib.rs, src/mirror → src/mirror/mod.rs), or None."""
    try:
        parts = tuple(directory.resolve().relative_to(root.resolve()).parts)
    except ValueError:
        return None
    return parts if parts in tree.files else None


def crate_root(directory):
    for candidate in [directory, *directory.resolve().parents]:
        if (candidate / "lib.rs").is_file():
            return candidate
    return None


def main(args):
    dirs = [Path(a) for a in args] or [Path(__file__).resolve().parent.parent / "src"]
    src = crate_root(dirs[0])
    if src is None:
        print(f"cycles: no lib.rs in {dirs[0]} or above it; give the crate's source directory "
              "(e.g. src)", file=sys.stderr)
        return 2
    tree = Tree(src)
    parents = [module_of(tree, src, d) for d in dirs]
    for d, parent in zip(dirs, parents):
        if parent is None:
            print(f"cycles: {d} is not a module directory of {src} (no {d}/mod.rs, {d}.rs or "
                  "lib.rs declares its modules)", file=sys.stderr)
            return 2
    graph = {m: imports(tree, m, p) for m, p in tree.files.items()}
    impl_edges(tree, graph)
    name = lambda m: str(tree.files[m].relative_to(src.resolve().parent if src.is_absolute() else src.parent))
    failed = report_cycles(graph, name)
    for parent in parents:
        failed |= check_order(tree, graph, parent, name) > 0
    return 1 if failed else 0


def report_cycles(graph, name):
    """Prints the cycles; returns whether there are any."""
    found = cycles(graph)
    if not found:
        print(f"cycles: none among {len(graph)} source files")
        return False
    print(f"cycles: {len(found)} group(s) of source files import each other:", file=sys.stderr)
    for comp in found:
        members = set(comp)
        print("  " + ", ".join(name(m) for m in comp), file=sys.stderr)
        for m in comp:
            for w in sorted(graph[m].keys() & members):
                print(f"    {name(m)} -> {name(w)} ({graph[m][w]})", file=sys.stderr)
    print("Move what both need into a file of its own that neither imports back "
          "(see docs/ARCHITECTURE.md, Layers).", file=sys.stderr)
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
