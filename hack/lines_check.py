#!/usr/bin/env python3
"""Checks hack/lines.py's counting on a small checkout (run by `make lint`).

Why: the figures issue 40 sets goals in are only worth comparing if moving tests out of a file
changes none of them, a helper or import marked `#[cfg(test)]` still counts as code, and a
module declared for tests only (`#[cfg(test)] mod fixtures;`) does not.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "lines.py"

CODE = "fn a() {}\n" * 3
FILES = {
    # 3 lines, a test-only import (counted), 3 lines, then its tests (not counted): 8 lines.
    "src/lib.rs": CODE + "#[cfg(test)]\nuse std::fmt;\n" + CODE + "#[cfg(test)]\nmod tests {\n" + CODE + "}\n",
    # Tests in a file of their own: 3 + 1 lines, the tests.rs left out.
    "src/mirror/plan.rs": CODE + "\n#[cfg(test)]\n#[allow(dead_code)]\nmod tests;\n",
    "src/mirror/plan/tests.rs": CODE * 200,
    # A module for tests only: none of its lines count, nor its folder's.
    "src/mirror/mod.rs": "#[cfg(test)]\nmod fixtures;\n",
    "src/mirror/fixtures.rs": CODE * 200,
    "src/mirror/fixtures/more.rs": CODE,
    # No tests: every line, 401 of them, over the limit.
    "src/mirror/big.rs": "fn a() {}\n" * 401,
}
EXPECTED = (
    "src: 415 lines in 4 files (before each file's tests; tests.rs files left out)\n"
    "src/mirror: 407 lines in 3 files (before each file's tests; tests.rs files left out)\n"
    "files over 400 lines: 1\n"
    "  src/mirror/big.rs 401\n"
)


def main():
    with tempfile.TemporaryDirectory() as directory:
        for rel, text in FILES.items():
            path = Path(directory) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        result = subprocess.run([sys.executable, str(SCRIPT), directory], capture_output=True, text=True)
    if result.returncode != 0 or result.stdout != EXPECTED:
        print(f"lines check: expected (exit 0):\n{EXPECTED}got (exit {result.returncode}):\n"
              f"{result.stdout}{result.stderr}", file=sys.stderr)
        return 1
    print("lines check: tests left out wherever they are, test-only items counted, test-only modules not, files over 400 listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
