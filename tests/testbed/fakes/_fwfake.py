"""Shared code of the test bed's fake firmware tools (mlxfwmanager, nvfwupd).

They run inside a test-bed node (installed as /usr/local/bin wrappers by tests/integration/test_upgrade.py) and
read/write the node's simulator state ($GPUOPS_TB/nodes/<host>/state.json). Faults: a file
`<node dir>/fault-<tool>` holding `fail` (the flash fails, exit 1), `hang` (the tool never returns) or `stale`
(the tool reports success but the version does not change).
"""

import json
import os
import re
import sys
import time


def node_dir():
    env = {}
    try:
        with open("/etc/gpuops-sim.env", encoding="utf-8") as fh:
            for line in fh:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    env[k] = v
    except OSError:
        pass
    return os.environ.get("GPUOPS_SIM_ND") or env.get("ND") or "."


def fault(tool):
    try:
        with open(os.path.join(node_dir(), "fault-" + tool), encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def load():
    with open(os.path.join(node_dir(), "state.json"), encoding="utf-8") as fh:
        return json.load(fh)


def save(state):
    path = os.path.join(node_dir(), "state.json")
    tmp = path + ".fwfake.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def version_from_image(path, sep_re=r"[._]"):
    """``fw-ConnectX7-rel-28_41_1000-MCX75310AAS-NEA_Ax.bin`` -> 28.41.1000; ``nvfw_HGX_96.00.99.00.01.fwpkg``."""
    name = os.path.basename(path or "")
    name = re.sub(r"\.(bin|fwpkg|img|tar|zip|gz|tgz)$", "", name)
    m = re.search(r"(\d{2})[._](\d{2,3})[._](\d{4})", name)
    if m:
        return ".".join(m.groups())
    m = re.search(r"(\d+(?:\.[0-9A-Fa-f]+){2,})", name)
    return m.group(1) if m else None


def hang_or_fail(tool, message):
    mode = fault(tool)
    if mode == "hang":
        sys.stdout.flush()
        time.sleep(3600)
    if mode == "fail":
        print(message)
        sys.exit(1)
    return mode
