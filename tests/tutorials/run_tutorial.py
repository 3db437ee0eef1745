#!/usr/bin/env python3
"""ctest tutorial_*: runs the commands of a tutorial in docs/tutorials/ as a reader would.

    run_tutorial.py TUTORIAL.md BIN_DIR [--keep DIR] [--timeout S] [--skip-unless CMD]

What runs, in the order of the page:
  - every fenced block whose info string is `sh` (```sh);
  - every HTML comment that starts with `<!-- test` (the rest of the comment is shell): checks of the
    page's "you should see" claims, hidden when the page is rendered, e.g.
        <!-- test
        grep -q "fired 'lead_brakes'" pilot.log
        -->
What does not run:
  - ```sh skip-test: commands for a person or for other PCs (a viewer window, a wheel, a student PC
    on the LAN), shown but never run; the page must make its point with the runnable blocks too;
  - any other fence (```toml, ```text, ```python, ...): what the reader sees or reads.

All of it goes, one block after the other, into one `bash -euo pipefail` script run in a fresh
temporary folder (HOME is left alone) with BIN_DIR first on PATH, so `platoon` is the built one, as
the tutorials tell the reader to set up. One script, as one terminal: a `cd`, a variable, a job started
with `&` and a later `wait` carry over from block to block. A command that fails ends the run: the
runner prints the end of the earlier blocks' output, then the failing block (with its line in the
page) and all of its output, keeps the folder and exits 1. A run that takes longer than --timeout seconds (default 80) is killed, its
process group with it, and reported with the block it was in.

Exit 0 when every block ran; 1 when one failed or the run timed out; 2 on a usage error; 77 (ctest:
skipped) when a --skip-unless command fails, e.g. --skip-unless "/usr/bin/python3 -c 'import pandas'"
for a page whose analysis needs pandas.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARK = "@@tutorial-block"


def extract(path):
    """The page's runnable blocks in order: (kind, first line number, text)."""
    blocks = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)(```+|~~~+)\s*(\S*)\s*(.*)$", line)
        if fence:
            indent, ticks, lang, rest = fence.groups()
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*" + re.escape(ticks) + r"\s*$", lines[i]):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
                i += 1
            if i >= len(lines):
                sys.exit(f"run_tutorial: {path}:{start}: a fence that is never closed")
            words = rest.split()
            if lang == "sh" and "skip-test" not in words:
                blocks.append(("sh", start + 1, "\n".join(body)))
            i += 1
            continue
        if line.strip().startswith("<!-- test"):
            start = i + 1
            body = [line.strip()[len("<!-- test"):]]
            while "-->" not in body[-1]:
                i += 1
                if i >= len(lines):
                    sys.exit(f"run_tutorial: {path}:{start}: a <!-- test comment that is never closed")
                body.append(lines[i])
            body[-1] = body[-1][: body[-1].index("-->")]
            blocks.append(("test", start, "\n".join(body).strip("\n")))
        i += 1
    return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tutorial")
    ap.add_argument("bin_dir")
    ap.add_argument("--keep", help="run in this folder (emptied first) and keep it, instead of a temporary one")
    ap.add_argument("--timeout", type=float, default=80.0, help="seconds for the whole page (default 80)")
    ap.add_argument("--skip-unless", action="append", default=[], metavar="CMD",
                    help="a shell command that must succeed for the page to run (else exit 77: skipped)")
    args = ap.parse_args()
    for cmd in args.skip_unless:
        if subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            print(f"SKIPPED: {cmd!r} failed (scripts/install-deps.sh installs what the tutorials need)")
            return 77

    tutorial = os.path.abspath(args.tutorial)
    bin_dir = os.path.abspath(args.bin_dir)
    if not os.access(os.path.join(bin_dir, "platoon"), os.X_OK):
        print(f"run_tutorial: {bin_dir}/platoon is not there: build it first", file=sys.stderr)
        return 2
    blocks = extract(tutorial)
    if not any(kind == "sh" for kind, _, _ in blocks):
        print(f"run_tutorial: {tutorial} has no ```sh block", file=sys.stderr)
        return 2

    if args.keep:
        work = os.path.abspath(args.keep)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix="platoon-tutorial-")

    # One script: a marker line before each block, so the output can be split by block.
    script = ["set -euo pipefail"]
    for n, (kind, line, text) in enumerate(blocks):
        script.append(f"echo '{MARK} {n}'")
        script.append(text)
    script.append(f"echo '{MARK} end'")
    script_path = os.path.join(work, ".tutorial.sh")
    with open(script_path, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")

    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.pop("CDPATH", None)
    name = os.path.basename(tutorial)
    print(f"run_tutorial: {name}: {sum(k == 'sh' for k, _, _ in blocks)} sh block(s), "
          f"{sum(k == 'test' for k, _, _ in blocks)} check(s), in {work}", flush=True)

    started = time.monotonic()
    proc = subprocess.Popen(["bash", script_path], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=args.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    # Whatever a block left running (a session started with & and never waited for) goes with the
    # script: SIGTERM, as Ctrl-C would, then SIGKILL after the launcher's stop grace.
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            time.sleep(0.1)
            proc.poll()  # reaps the script itself once it is gone, so only what it left counts
            os.killpg(proc.pid, 0)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if timed_out:
        out, _ = proc.communicate()
    elapsed = time.monotonic() - started
    text = out.decode("utf-8", errors="replace")

    # Split the output by block.
    outputs = {}
    current = None
    ended = False
    for line in text.split("\n"):
        if line.startswith(MARK + " "):
            tag = line[len(MARK) + 1:].strip()
            if tag == "end":
                ended = True
                current = None
            else:
                current = int(tag)
                outputs[current] = []
            continue
        if current is not None:
            outputs[current].append(line)

    if not timed_out and proc.returncode == 0 and ended:
        print(text)
        print(f"run_tutorial: {name}: every block ran, {elapsed:.1f} s")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return 0

    last = max(outputs) if outputs else 0
    kind, line, block = blocks[last]
    earlier = [l for n in sorted(outputs) if n != last for l in outputs[n]]
    if len(earlier) > 100:
        print(f"... ({len(earlier) - 100} earlier lines left out)")
    print("\n".join(earlier[-100:]))
    why = (f"timed out after {args.timeout:.0f} s" if timed_out
           else f"exited with status {proc.returncode}")
    what = "```sh block" if kind == "sh" else "<!-- test check"
    print(f"\nrun_tutorial: {name}: FAILED ({why}, {elapsed:.1f} s) in the {what} at line {line}:")
    print("    " + block.replace("\n", "\n    "))
    print("its output:")
    print("    " + "\n    ".join(outputs.get(last, [])))
    print(f"run_tutorial: the folder it ran in is kept: {work}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
