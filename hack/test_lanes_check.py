#!/usr/bin/env python3
"""Checks hack/test-lanes.py's scheduling on stand-in programs (run by `make lint`).

Why: `make test` trusts the lanes to report every failure, to run every suite of a program in
APART as a process of its own, and to keep the QUIET jobs apart; a runner that lost any of these
would pass CI with a failing, a skipped or a disturbed suite.
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
    return write(directory, name, f"job={name}\n", exit_code)


def suites_stand_in(directory, name, suites):
    """A program of `suites` (one test each) that lists its tests as libtest does and logs each
    run as `name/<suite of the first test named after --exact>`."""
    listing = "".join(f"echo {suite}::works: test\n" for suite in suites)
    head = f'if [ "$1" = --list ]; then\n{listing}exit 0\nfi\njob={name}/${{2%%::*}}\n'
    return write(directory, name, head, 0)


def write(directory, name, head, exit_code):
    path = os.path.join(directory, name)
    log = os.path.join(directory, "log")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\n{head}echo start $job >> {log}\nsleep 0.3\necho end $job >> {log}\nexit {exit_code}\n")
    os.chmod(path, 0o755)
    return (name, f"tests/{name}/main.rs", [path])


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
    apart = sorted(lanes_module.APART)[0]
    quiet_suites = [job.split("/", 1)[1] for job in sorted(lanes_module.QUIET) if job.startswith(f"{apart}/")][:2]
    quiet_program = sorted(job for job in lanes_module.QUIET if "/" not in job)[0]
    quiet = {quiet_program, *(f"{apart}/{suite}" for suite in quiet_suites)}
    with tempfile.TemporaryDirectory() as directory:
        programs = [
            stand_in(directory, "plain_ok", 0),
            suites_stand_in(directory, apart, [*quiet_suites, "plain_suite"]),
            stand_in(directory, "plain_failing", 101),
            stand_in(directory, quiet_program, 0),
        ]
        jobs = [job for program in programs for job in lanes_module.split(program)]
        failed = run(jobs)
        with open(os.path.join(directory, "log")) as f:
            events = [line.split() for line in f]
    problems = []
    if failed != ["tests/plain_failing/main.rs (exit 101)"]:
        problems.append(f"failures reported as {failed}, not the one failing program")
    expected = {"plain_ok", "plain_failing", f"{apart}/plain_suite", *quiet}
    if sorted(name for event, name in events if event == "start") != sorted(expected):
        problems.append(f"not every program and suite ran once, alone: {events}")
    running = set()
    for event, name in events:
        if event == "start":
            running.add(name)
            if len(running & quiet) > 1:
                problems.append(f"{' and '.join(sorted(running & quiet))} ran beside each other")
        else:
            running.discard(name)
    for problem in problems:
        print(f"test-lanes check: {problem}", file=sys.stderr)
    if not problems:
        print("test-lanes check: failures reported, suites apart, QUIET jobs one at a time")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
