#!/usr/bin/env python3
"""Runs every test program of `cargo test --all-targets`, two at a time, for `make test`.

Why: cargo runs test programs one after another. Most of skiff's test time is the e2e suites
waiting on a real API server, so on two cores a second lane nearly halves it. Each program keeps
its own process, as under `cargo test`; only whole programs overlap. The e2e program (one module
a suite) runs as one process a suite, each with its own control plane: the jobs here are
programs, and suites of the programs in APART.

Some programs measure timing (leader handover, renew gaps, probe latency) or load the machine
(floods): those are in QUIET and never run beside each other, only beside the rest, which run
at a lower CPU priority. They are also the longest, so they start first, one after another in
one lane, while the other lane runs the rest.

Each program's output is printed whole when it ends, headed as cargo heads it; one still running
is named every five minutes. The exit status is 1 when any program failed, and the failed ones
are listed at the end.

Usage: hack/test-lanes.py [--jobs N] [-- ARGS passed to every test program]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

# Programs whose suites (top-level modules) each run in a process of their own, as `e2e/<suite>`.
APART = {"e2e"}
# Jobs that assert timing, or load the CPU enough to upset one that does.
QUIET = {
    "e2e/contest",
    "e2e/faults",
    "e2e/throttled",
    "e2e/hostile_ports",
    "e2e/hostile_proxy",
    "wiring",
}
# The others run at this lower CPU priority, so a QUIET program beside them gets the CPU first.
NICE = 10
# How often a program still running is named, in seconds.
STILL_RUNNING = 300


def build():
    """Builds every target in test mode; returns its jobs: [(name, source path, command)]."""
    command = [os.environ.get("CARGO", "cargo"), "test", "--all-targets", "--no-run", "--message-format=json-render-diagnostics"]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"test-lanes: {' '.join(command)} failed (exit {done.returncode})")
    programs = []
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        target = message["target"]
        source = os.path.relpath(target["src_path"])
        programs.append((target["name"], source, [message["executable"]]))
    return [job for program in programs for job in split(program)]


def split(program):
    """One job a suite for a program in APART (its tests named exactly), else the program."""
    name, source, command = program
    if name not in APART:
        return [program]
    listing = subprocess.run([*command, "--list", "--format", "terse"], stdout=subprocess.PIPE, text=True)
    if listing.returncode != 0:
        sys.exit(f"test-lanes: {source} --list failed (exit {listing.returncode})")
    suites = {}
    for line in listing.stdout.splitlines():
        test, _, kind = line.rpartition(": ")
        if kind == "test":
            suites.setdefault(test.split("::")[0], []).append(test)
    directory = os.path.dirname(source)
    return [(f"{name}/{suite}", os.path.join(directory, f"{suite}.rs"), [*command, "--exact", *tests])
            for suite, tests in suites.items()]


class Lanes:
    """Hands programs to the lanes, never two QUIET ones at once; prints and records results."""

    def __init__(self, programs, args):
        self.queue = sorted(programs, key=lambda p: p[0] not in QUIET)
        self.args = args
        self.lock = threading.Condition()
        self.quiet_running = False
        self.failed = []

    def next_program(self):
        with self.lock:
            while self.queue:
                for i, program in enumerate(self.queue):
                    if not (program[0] in QUIET and self.quiet_running):
                        del self.queue[i]
                        if program[0] in QUIET:
                            self.quiet_running = True
                        return program
                self.lock.wait()
            return None

    def finished(self, program, code, output, seconds):
        with self.lock:
            if program[0] in QUIET:
                self.quiet_running = False
            if code != 0:
                self.failed.append(f"{program[1]} (exit {code})")
            sys.stdout.write(f"     Running {program[1]} ({program[2][0]}), {seconds:.1f} s\n{output}\n")
            sys.stdout.flush()
            self.lock.notify_all()

    def lane(self):
        while (program := self.next_program()) is not None:
            started = time.monotonic()
            with tempfile.TemporaryFile(mode="w+") as out:
                child = subprocess.Popen(
                    [*program[2], *self.args], stdout=out, stderr=subprocess.STDOUT,
                    preexec_fn=None if program[0] in QUIET else lambda: os.nice(NICE))
                code = wait_telling(child, program[1], started)
                out.seek(0)
                output = out.read()
            self.finished(program, code, output, time.monotonic() - started)


def wait_telling(child, name, started):
    """Waits for `child`; says every STILL_RUNNING seconds that it has not ended, so a program
    that hangs is named while it hangs (its output comes only at its end)."""
    while True:
        try:
            return child.wait(timeout=STILL_RUNNING)
        except subprocess.TimeoutExpired:
            print(f"test-lanes: {name} still running after {time.monotonic() - started:.0f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("TEST_JOBS", "2")),
                        help="programs run at once (TEST_JOBS, default 2)")
    parser.add_argument("args", nargs="*", help="passed to every test program")
    options = parser.parse_args()
    if options.jobs < 1:
        sys.exit("test-lanes: --jobs must be 1 or more")
    started = time.monotonic()
    jobs = build()
    lanes = Lanes(jobs, options.args)
    threads = [threading.Thread(target=lanes.lane) for _ in range(options.jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    if lanes.failed:
        print(f"test-lanes: {len(lanes.failed)} of {len(jobs)} test processes failed:", *lanes.failed, sep="\n  ")
        sys.exit(1)
    print(f"test-lanes: {len(jobs)} test processes passed in {seconds:.0f} s, {options.jobs} at a time")


if __name__ == "__main__":
    main()
