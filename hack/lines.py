#!/usr/bin/env python3
"""Prints the size of skiff's code as issue 40 measures it: for `src` and `src/mirror`, the sum
of each `.rs` file's lines before its tests, and the files over 400 lines by that count.

Why: moving tests into a file of their own must not count as making the code smaller, so a
file's tests are left out wherever they are: the lines from its `#[cfg(test)]` that opens
`mod tests;` or `mod tests {` on are not counted (other `#[cfg(test)]` items, such as a helper or
an import, are code and count), and `tests.rs` files are left out, as is every file of a module
declared for tests only (`#[cfg(test)] mod fixtures;`): all of it is tests.

Usage: hack/lines.py [CHECKOUT]   (default: the checkout this script is in)
"""

import re
import sys
from pathlib import Path

LIMIT = 400
# `#[cfg(test)]`, then other attributes if any, then `mod tests;` or `mod tests {`.
TESTS = re.compile(r"^[ \t]*#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+tests\s*[;{]", re.M)


def code_lines(path):
    """The file's lines before its `#[cfg(test)] mod tests`, or all of them."""
    text = path.read_text()
    tests = TESTS.search(text)
    return text.count("\n", 0, tests.start() if tests else len(text))


# `#[cfg(test)]` on a module declared in its own file: `mod fixtures;`.
TEST_ONLY = re.compile(r"^[ \t]*#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def test_only(src):
    """The files and folders of the modules declared for tests only."""
    paths = set()
    for path in src.rglob("*.rs"):
        folder = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.with_suffix("")
        for name in TEST_ONLY.findall(path.read_text()):
            if name != "tests":
                paths.update({folder / f"{name}.rs", folder / name})
    return paths


def counts(directory, src):
    """Each `.rs` file under `directory` but tests → its lines before its tests."""
    skipped = test_only(src)
    return {
        path: code_lines(path)
        for path in sorted(directory.rglob("*.rs"))
        if path.name != "tests.rs" and not any(path == s or s in path.parents for s in skipped)
    }


def main(args):
    checkout = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    if not (checkout / "src").is_dir():
        print(f"lines: {checkout} has no src/; give a skiff checkout", file=sys.stderr)
        return 2
    everything = counts(checkout / "src", checkout / "src")
    for directory in ("src", "src/mirror"):
        files = {p: n for p, n in everything.items() if p.is_relative_to(checkout / directory)}
        print(f"{directory}: {sum(files.values()):,} lines in {len(files)} files "
              "(before each file's tests; tests.rs files left out)")
    over = sorted(((n, p) for p, n in everything.items() if n > LIMIT), key=lambda x: (-x[0], x[1]))
    print(f"files over {LIMIT} lines: {len(over)}")
    for n, path in over:
        print(f"  {path.relative_to(checkout)} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
