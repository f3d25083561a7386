#!/usr/bin/env python3
"""Checks hack/cycles.py on small source trees (run by `make lint`).

Why: `make lint` trusts cycles.py to fail on a module that uses one declared above it and on
files that import each other; a check that had lost either would pass every tree. Each case
runs the script as `make lint` does, on a tree written here, and reads its exit code and output.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "cycles.py"

# top uses middle and bottom; middle uses bottom; its test, and the test-only module, use what
# is above them, which tests may. `deep` lists `a` above `b`, which `a` uses.
ORDERED = {
    "lib.rs": "pub mod top;\npub mod middle;\n#[cfg(test)]\nmod testing;\npub mod bottom;\npub mod deep;\n",
    "top.rs": "use crate::middle::Thing;\nuse crate::bottom;\n",
    "middle.rs": "//! Why.\nuse crate::bottom::Base;\n// use crate::top::Nothing;\npub struct Thing;\n"
    "#[cfg(test)]\nmod tests;\n",
    "middle/tests.rs": "use crate::top;\n",
    "testing.rs": "use crate::top;\n",
    "bottom.rs": "pub struct Base;\n",
    "deep/mod.rs": "mod a;\nmod b;\n",
    "deep/a.rs": "use super::b::Leaf;\n",
    "deep/b.rs": "pub struct Leaf;\n",
}


def tree(directory, files):
    """Writes `files` (path under src → text) into directory/src."""
    src = Path(directory) / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def run(src, *dirs):
    args = [str(src / d) for d in dirs]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def cases():
    """(name, files changed from ORDERED, directories checked under src, exit code, texts the
    output must hold, or must not when they start with "!")."""
    return [
        ("an ordered tree passes", {}, ["", "deep"], 0,
         ["cycles: none", "order: src/lib.rs lists its 4 modules top-down",
          "order: src/deep/mod.rs lists its 2 modules top-down"]),
        ("a module declared below one it uses fails",
         {"lib.rs": "pub mod top;\npub mod bottom;\npub mod middle;\npub mod deep;\n"}, [""], 1,
         ["`middle` uses `bottom`, which src/lib.rs declares above it",
          "src/middle.rs imports src/bottom.rs (crate::bottom::Base)",
          "fix: move `middle` above `bottom` in src/lib.rs, or `middle` must not use `bottom`",
          "an order that holds: top, middle, bottom, deep"]),
        ("a directory's mod.rs is checked when the directory is given",
         {"deep/mod.rs": "mod b;\nmod a;\n"}, ["", "deep"], 1,
         ["order: src/lib.rs lists its 4 modules top-down",
          "src/deep/a.rs imports src/deep/b.rs (super::b::Leaf)",
          "move `a` above `b` in src/deep/mod.rs"]),
        ("a directory's mod.rs is not checked when it is not given",
         {"deep/mod.rs": "mod b;\nmod a;\n"}, [""], 0, ["order: src/lib.rs lists"]),
        ("modules that use each other have no order",
         {"bottom.rs": "pub struct Base;\nmod below;\n", "bottom/below.rs": "use crate::middle::Thing;\n"},
         [""], 1,
         ["`bottom` uses `middle`, which src/lib.rs declares above it",
          "src/bottom/below.rs imports src/middle.rs (crate::middle::Thing)",
          "fix: `middle` uses `bottom` too, so no order holds both: `bottom` must not use `middle`",
          "!an order that holds"]),
        ("files that import each other fail",
         {"bottom.rs": "pub struct Base;\nuse crate::top::Other;\n"}, [""], 1,
         ["cycles: 1 group(s)", "src/bottom.rs -> src/top.rs (crate::top::Other)"]),
        ("a directory that is no module is refused", {}, ["", "nowhere"], 2,
         ["src/nowhere is not a module directory"]),
    ]


def main():
    problems = []
    for name, changes, dirs, code, texts in cases():
        with tempfile.TemporaryDirectory() as directory:
            src = tree(directory, {**ORDERED, **changes})
            got, output = run(src, *dirs)
        if got != code:
            problems.append(f"{name}: exit {got}, not {code}:\n{output}")
        problems += [f"{name}: no {text!r} in:\n{output}" for text in texts
                     if not text.startswith("!") and text not in output]
        problems += [f"{name}: {text[1:]!r} in:\n{output}" for text in texts
                     if text.startswith("!") and text[1:] in output]
    for problem in problems:
        print(f"cycles check: {problem}", file=sys.stderr)
    if not problems:
        print(f"cycles check: {len(cases())} trees, each order and cycle reported as it should be")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
