"""python3 -m simnode --state FILE <tool> [args...]   (PYTHONPATH=tools)

Tools: nvidia-smi, ibstat, ipmitool, dcgmi, all_reduce_perf, journalctl, dmesg, scontrol: print what the real
tool prints and exit with its exit code. Extra commands:
  init HOSTNAME [--seed S]      write a healthy default state to FILE
  fault NAME [key=value ...]    apply a catalogue fault to FILE (a previous reading goes to FILE.previous.json)
  sysfs ROOT                    write/refresh ROOT/sys/... (the real IB sysfs layout with its symlinks)
  capture OUTDIR                write a capture directory
  faults                        list the fault catalogue
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time

from simnode import faults as F
from simnode.capture import capture
from simnode.cli import TOOLS, run_tool
from simnode.render_misc import write_sysfs
from simnode.state import default_state, load, locked, save


def _usage(msg: str = "") -> int:
    sys.stderr.write((msg + "\n" if msg else "") + (__doc__ or ""))
    return 2


def _split_state(argv: list):
    """(state path from --state FILE / --state=FILE / $SIMNODE_STATE, the rest of argv)."""
    if argv[:1] == ["--state"] and len(argv) > 1:
        return argv[1], argv[2:]
    if argv and argv[0].startswith("--state="):
        return argv[0].split("=", 1)[1], argv[1:]
    return os.environ.get("SIMNODE_STATE"), argv


def _cmd_faults(path, args) -> int:
    for name, f in sorted(F.FAULTS.items()):
        sys.stdout.write("%-32s %s%s\n" % (name, "[benign] " if f.benign else "", f.doc))
    return 0


def _cmd_init(path, args) -> int:
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
    save(default_state(args[0], seed=seed), path)
    return 0


def _cmd_fault(path, args) -> int:
    params = dict(a.split("=", 1) for a in args[1:] if "=" in a)
    with locked(path):
        state = load(path)
        res = F.apply(state, args[0], random.Random(len(state.get("faults", []))), **params)
        save(state, path)
        if res["previous"] is not None:
            save(res["previous"], path + ".previous.json")
    sys.stdout.write(json.dumps(res["expect"], indent=1) + "\n")
    return 0


def _live_state(path):
    state = load(path)
    if state.get("clock") == "live":
        state["now"] = time.time()  # a test-bed node: its time moves (journalctl --since, timestamps)
    return state


def _cmd_sysfs(path, args) -> int:
    write_sysfs(_live_state(path), args[0], links=True)
    return 0


def _cmd_capture(path, args) -> int:
    capture(_live_state(path), args[0])
    return 0


def _sleep(path, res):
    """Sleep res.sleep seconds (a hanging tool); with res.release, wake up early once the state releases it."""
    if res.release is None:
        time.sleep(res.sleep)
        return res
    deadline = time.monotonic() + res.sleep
    while time.monotonic() < deadline:
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        try:
            if res.release(load(path)):
                return res
        except (OSError, ValueError):
            continue  # the state is being rewritten: look again
    return res


def _cmd_tool(path, cmd, args) -> int:
    res = run_tool(_live_state(path), cmd, args)
    if res.changed:
        with locked(path):
            fresh = load(path)
            res = run_tool(fresh, cmd, args)  # re-run on the locked, current state
            save(fresh, path)
    if res.sleep:
        res = _sleep(path, res)
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    sys.stdout.flush()
    return res.rc


#: Extra commands: name -> (handler, usage when an argument is missing or None when none is needed).
_COMMANDS = {
    "init": (_cmd_init, "simnode init HOSTNAME"),
    "fault": (_cmd_fault, "simnode fault NAME [key=value ...]"),
    "sysfs": (_cmd_sysfs, "simnode sysfs ROOT"),
    "capture": (_cmd_capture, "simnode capture OUTDIR"),
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    path, argv = _split_state(argv)
    if not argv:
        return _usage()
    cmd, args = argv[0], argv[1:]
    if cmd == "faults":
        return _cmd_faults(path, args)
    if not path:
        return _usage("simnode: --state FILE (or $SIMNODE_STATE) is required")
    if cmd in _COMMANDS:
        handler, usage = _COMMANDS[cmd]
        return handler(path, args) if args else _usage(usage)
    if cmd not in TOOLS:
        return _usage("simnode: unknown tool %r" % cmd)
    return _cmd_tool(path, cmd, args)


if __name__ == "__main__":
    sys.exit(main())
