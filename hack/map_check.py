#!/usr/bin/env python3
"""docs/ARCHITECTURE.md against the code, so the map cannot drift (run by `make lint`).

It fails, naming each problem, when:
- a path the map names (`src/...`, `tests/...`, `hack/...`, `manifests/...`, or a bare
  `something.rs` the map places under a directory it names in the same table row or list
  item) does not exist;
- a test the map cites as `file`: `test_name` is not a `fn test_name` in that file (or, for a
  directory, in a file under it);
- a module `src/lib.rs` declares is missing from the map's layer list, or the list orders two of
  them otherwise than `lib.rs` (whose order `hack/cycles.py` checks against the imports);
- a module `src/mirror/mod.rs` declares is not named in that file's own module docs, which the
  map points to for the per-file view.

Usage: hack/map_check.py [repo root]
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
MAP = ROOT / "docs" / "ARCHITECTURE.md"

PATH = re.compile(r"`((?:src|tests|hack|manifests|deploy|benches|examples|charts|fuzz)/[^`\s]*)`")
CITED = re.compile(r"`((?:src|tests)/[^`\s]+)`:\s*((?:`[a-z0-9_]+`(?:,\s*)?)+)")
MOD = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z0-9_]+)\s*;", re.M)


def declared(path):
    """The modules a file declares, in order, leaving out test-only ones."""
    lines = path.read_text().splitlines()
    mods = []
    for i, line in enumerate(lines):
        m = MOD.match(line)
        if not m:
            continue
        above = lines[i - 1].strip() if i else ""
        if above.startswith("#[cfg(") and ("test" in above) and "fuzzing" not in above:
            continue
        mods.append(m.group(1))
    return mods


def defines_test(path, name):
    files = [path] if path.is_file() else sorted(path.rglob("*.rs"))
    pattern = re.compile(r"\bfn\s+" + re.escape(name) + r"\s*\(")
    return any(pattern.search(f.read_text()) for f in files)


def layer_block(text):
    m = re.search(r"## Layers.*?```\n(.*?)```", text, re.S)
    return m.group(1) if m else ""


def main():
    text = MAP.read_text()
    problems = []

    for path in sorted(set(PATH.findall(text))):
        clean = path.rstrip(".,:;)")
        if "*" in clean or "<" in clean:
            continue
        if not (ROOT / clean).exists():
            problems.append(f"names {clean}, which does not exist")

    for path, tests in CITED.findall(text):
        target = ROOT / path
        if not target.exists():
            continue  # reported above
        for name in re.findall(r"`([a-z0-9_]+)`", tests):
            if "_" not in name:
                continue  # a word, not a test
            if not defines_test(target, name):
                problems.append(f"cites {path}: {name}, which is no fn there")

    block = layer_block(text)
    named = re.findall(r"^([a-z_]+)(?:\.rs|/)", block, re.M)
    lib = [m for m in declared(ROOT / "src" / "lib.rs")]
    for module in lib:
        if module not in named:
            problems.append(f"the layer list leaves out {module} (declared in src/lib.rs)")
    order = [m for m in named if m in lib]
    for earlier, later in zip(order, order[1:]):
        if lib.index(earlier) > lib.index(later):
            problems.append(
                f"the layer list puts {earlier} above {later}; src/lib.rs declares them the other way"
            )

    mirror = ROOT / "src" / "mirror" / "mod.rs"
    docs = "\n".join(l for l in mirror.read_text().splitlines() if l.startswith("//!"))
    for module in declared(mirror):
        if f"`{module}`" not in docs and f"[`{module}`]" not in docs:
            problems.append(f"src/mirror/mod.rs declares {module} but its module docs do not name it")

    for problem in problems:
        print(f"docs/ARCHITECTURE.md: {problem}", file=sys.stderr)
    if problems:
        print(f"hack/map_check.py: {len(problems)} problem(s); fix the map or the code", file=sys.stderr)
        return 1
    print("map check: docs/ARCHITECTURE.md matches the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
