#!/usr/bin/env python3
"""Checks hack/test-lanes.py's scheduling on stand-in programs (run by `make lint`).

Why: `make test` trusts the lanes to report every failure and to keep the QUIET programs apart;
a runner that lost either would pass CI with a failing or a disturbed suite.
"""

import importlib.util
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("test_lanes", os.path.join(HERE, "test-lanes.py"))
lanes_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lanes_module)


def stand_in(directory, name, exit_code):
    """A program that logs its start and end to `directory`/log, sleeps, and exits `exit_code`."""
    path = os.path.join(directory, name)
    log = os.path.join(directory, "log")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\necho start {name} >> {log}\nsleep 0.3\necho end {name} >> {log}\nexit {exit_code}\n")
    os.chmod(path, 0o755)
    return (name, f"tests/{name}.rs", path)


def run(programs):
    """Runs `programs` in two lanes; returns the failures the lanes reported."""
    lanes = lanes_module.Lanes(programs, [])
    threads = [threading.Thread(target=lanes.lane) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return lanes.failed


def main():
    quiet = sorted(lanes_module.QUIET)[:2]
    with tempfile.TemporaryDirectory() as directory:
        programs = [
            stand_in(directory, "plain_ok", 0),
            stand_in(directory, quiet[0], 0),
            stand_in(directory, "plain_failing", 101),
            stand_in(directory, quiet[1], 0),
        ]
        failed = run(programs)
        with open(os.path.join(directory, "log")) as f:
            events = [line.split() for line in f]
    problems = []
    if failed != ["tests/plain_failing.rs (exit 101)"]:
        problems.append(f"failures reported as {failed}, not the one failing program")
    if len(events) != 2 * len(programs):
        problems.append(f"not every program ran: {events}")
    running = set()
    for event, name in events:
        if event == "start":
            running.add(name)
            if len(running & set(quiet)) > 1:
                problems.append(f"{' and '.join(sorted(running & set(quiet)))} ran beside each other")
        else:
            running.discard(name)
    for problem in problems:
        print(f"test-lanes check: {problem}", file=sys.stderr)
    if not problems:
        print("test-lanes check: failures reported, QUIET programs one at a time")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
