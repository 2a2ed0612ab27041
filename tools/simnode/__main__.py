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


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    path = None
    if argv[:1] == ["--state"] and len(argv) > 1:
        path, argv = argv[1], argv[2:]
    elif argv and argv[0].startswith("--state="):
        path, argv = argv[0].split("=", 1)[1], argv[1:]
    path = path or os.environ.get("SIMNODE_STATE")
    if not argv:
        return _usage()
    cmd, args = argv[0], argv[1:]
    if cmd == "faults":
        for name, f in sorted(F.FAULTS.items()):
            sys.stdout.write("%-32s %s%s\n" % (name, "[benign] " if f.benign else "", f.doc))
        return 0
    if not path:
        return _usage("simnode: --state FILE (or $SIMNODE_STATE) is required")
    if cmd == "init":
        if not args:
            return _usage("simnode init HOSTNAME")
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
        save(default_state(args[0], seed=seed), path)
        return 0
    if cmd == "fault":
        if not args:
            return _usage("simnode fault NAME [key=value ...]")
        params = dict(a.split("=", 1) for a in args[1:] if "=" in a)
        with locked(path):
            state = load(path)
            res = F.apply(state, args[0], random.Random(len(state.get("faults", []))), **params)
            save(state, path)
            if res["previous"] is not None:
                save(res["previous"], path + ".previous.json")
        sys.stdout.write(json.dumps(res["expect"], indent=1) + "\n")
        return 0
    state = load(path)
    if state.get("clock") == "live":
        state["now"] = time.time()  # a test-bed node: its time moves (journalctl --since, timestamps)
    if cmd == "sysfs":
        if not args:
            return _usage("simnode sysfs ROOT")
        write_sysfs(state, args[0], links=True)
        return 0
    if cmd == "capture":
        if not args:
            return _usage("simnode capture OUTDIR")
        capture(state, args[0])
        return 0
    if cmd not in TOOLS:
        return _usage("simnode: unknown tool %r" % cmd)
    res = run_tool(state, cmd, args)
    if res.changed:
        with locked(path):
            fresh = load(path)
            res = run_tool(fresh, cmd, args)  # re-run on the locked, current state
            save(fresh, path)
    if res.sleep:
        time.sleep(res.sleep)
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    sys.stdout.flush()
    return res.rc


if __name__ == "__main__":
    sys.exit(main())
