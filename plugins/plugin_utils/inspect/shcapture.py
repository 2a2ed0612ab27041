# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A live node's evidence captured by one POSIX shell command, without Python on the node (``collect_info``
``parse_on: controller``, ``capture_via: shell``; docs/performance.md "Live path").

The Python capture (``gpuops.cluster.capture``) costs a node ~0.3 s of CPU before it runs a tool: the interpreter
starts and compiles ansible-core's module code from the AnsiballZ zip, every run. That is most of what an
``ansible.builtin.ping`` costs, and more than the tools themselves. Here the action plugin runs ``/bin/sh`` on the
node with this script on its stdin (one command over the connection, as a pipelined module is sent; no terminal,
so line ends stay as the tools print them; the become user runs it), the node runs the same tool calls as
``_livecapture`` (each under coreutils ``timeout`` when the node has it, stdin from /dev/null, ``LC_ALL=C``) and
prints their output between markers, and this module turns the output into the capture files ``_livecapture``
would have made: the same names, the same ``capture.json`` records, the InfiniBand listing through the same
allowlist (``_ib_sysfs.snapshot_flat`` then ``flat_text``), and ``node.json`` made by the node collector itself
(``_node.collect``) replaying what the node read and ran (:class:`ReplayIO`).

Everything the node sends is data. The markers carry a random token chosen for this run (128 bits, never on the
node before the command), so a tool's output cannot end its own section or forge another; a section that does
not end (the output was cut) is dropped and recorded as an error in ``capture.json``, so the domain that needed
it is unknown rather than judged on half a file. Every value put into the script is single-quoted (``quote``),
and the options are checked with full matches before (``check_options``). A hostile node knows the token (it got
the script), so the answer is also bounded: ``max_bytes`` (collect_info ``capture_max_bytes``) cuts it on the node
and refuses it on the controller, and it is parsed in one pass (``_shanswer``). The node collector's part of the
script and its replay live in ``_shnode``.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any, Dict, List, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    capture as _capture,
    ib_sysfs as _ib_sysfs,
    node as _node,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.livecapture import COMMANDS, DOMAIN_FILES
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import shnode as _shnode
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.livetree import NAME
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.shanswer import (  # noqa: F401 - re-exported
    DEFAULT_MAX_BYTES,
    TIMED_OUT_RC,
    Output,
    ShellCaptureError,
    check_max_bytes,
    parse_output,
    quote,
    section_result,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.shnode import ReplayIO


#: a journalctl --since value: a time ("2026-12-02 10:00:00"), relative ("-1h", "yesterday") or epoch ("@1733133600")
KERNEL_SINCE = re.compile(r"[-@0-9A-Za-z][0-9A-Za-z :.+-]{0,63}")
SLURM_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
TOKEN = re.compile(r"[0-9a-f]{32}")


def check_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """The capture options (``_livecapture.OPTIONS``' keys) checked and normalised for :func:`build_script`."""
    opts = dict(options)
    try:
        timeout = float(30 if opts.get("timeout") is None else opts["timeout"])
    except (TypeError, ValueError):
        raise ShellCaptureError("timeout must be a number, not %r" % (opts.get("timeout"),)) from None
    if not 0 < timeout <= 86400:
        raise ShellCaptureError("timeout must be between 0 and 86400 s, not %s" % timeout)
    opts["timeout"] = timeout
    since = opts.get("kernel_since")
    if since is not None and not (isinstance(since, str) and KERNEL_SINCE.fullmatch(since)):
        raise ShellCaptureError("kernel_since must be a journalctl time such as '2026-12-02 10:00:00', not %r" % since)
    opts["sysfs_root"] = _shnode.check_path(opts.get("sysfs_root") or "/", "sysfs_root")
    node = opts.get("slurm_node")
    if node is not None and not (isinstance(node, str) and SLURM_NODE.fullmatch(node)):
        raise ShellCaptureError("slurm_node must be a node name, not %r" % (node,))
    level = opts.get("dcgm_level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 4):
        raise ShellCaptureError("dcgm_level must be 1 to 4, not %r" % (level,))
    opts["node_options"] = _shnode.check_node_options(dict(opts.get("node_options") or {}))
    opts["max_bytes"] = check_max_bytes(opts.get("max_bytes"))
    return opts


# The script's helpers. $M is the marker; every section is "$M B name" ... "\n$M E name rc stderr-id".
# run NAME ARGV...: one tool call, its stdout in the section, its stderr kept in $d/eN (sent at the end when not
# empty); rc "nf" when the tool is not on PATH. $TO is "timeout -k 2 SECS" when the node has coreutils timeout.
_PRELUDE = r"""umask 077
export LC_ALL=C LANG=C LANGUAGE=C
d=$(mktemp -d 2>/dev/null) || d=
main() {
M=%(marker)s
i=0
TO=
if command -v timeout >/dev/null 2>&1; then TO="timeout -k 2 %(secs)d"; fi
run() {
  n=$1; shift; i=$((i+1)); e=/dev/null; [ -n "$d" ] && e="$d/e$i"
  printf '%%s B %%s\n' "$M" "$n"
  if command -v "$1" >/dev/null 2>&1; then $TO "$@" </dev/null 2>"$e"; rc=$?; else rc=nf; fi
  printf '\n%%s E %%s %%s %%s\n' "$M" "$n" "$rc" "$i"
}
h=; read -r h 2>/dev/null </proc/sys/kernel/hostname
b=; read -r b 2>/dev/null </proc/sys/kernel/random/boot_id
printf '%%s M hostname %%s\n%%s M boot_id %%s\n%%s M timeout %%s\n' "$M" "$h" "$M" "$b" "$M" "${TO:+yes}"
"""

_END = r"""wait
if [ -n "$d" ]; then
  set -- "$d"/bg.*; [ -f "$1" ] && cat "$@"
  for f in "$d"/e*; do
    [ -s "$f" ] || continue
    printf '%s B stderr:%s\n' "$M" "${f##*/e}"; cat "$f"; printf '\n%s E stderr:%s 0 0\n' "$M" "${f##*/e}"
  done
fi
printf '%s Z\n' "$M"
}"""

# main's output is cut on the node one byte past the cap (head -c: GNU coreutils, busybox), so that a tool that
# prints without end costs the cap, not the link and the controller; the controller refuses an answer over the cap
_TAIL = r"""if head -c 1 </dev/null >/dev/null 2>&1; then main | head -c %(cut)d; else main; fi
if [ -n "$d" ]; then rm -rf "$d"; fi"""


def build_script(token: str, options: Dict[str, Any]) -> str:
    """The node's script for ``options`` (already :func:`check_options`' result) and the run's ``token``."""
    if not TOKEN.fullmatch(token):
        raise ShellCaptureError("the marker token must be 32 hex digits")
    opts = options
    domains = opts.get("domains")
    wanted = None if domains is None else {f for d in domains for f in DOMAIN_FILES.get(d, ())}

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    secs = max(1, int(round(opts["timeout"])))
    lines = [_PRELUDE % {"marker": quote("@@gpuops:" + token), "secs": secs}]
    cmd = dict(COMMANDS)

    def run(name: str, argv: List[str]) -> str:
        return "run %s %s" % (quote(name), " ".join(quote(a) for a in argv))

    root = opts["sysfs_root"].rstrip("/")
    ib = root + "/" + _capture.SYSFS_IB
    if want(_capture.SYSFS_IB_FLAT):
        globs = ["*/%s" % a for a in _ib_sysfs.HCA_ATTRS]
        globs += ["*/ports/*/%s" % a for a in _ib_sysfs.PORT_ATTRS + (_ib_sysfs.GID0,)]
        globs += ["*/ports/*/%s/*" % c for c in _ib_sysfs.COUNTER_DIRS]
        # "path:value" lines of the allowlisted attributes (-D skip: a FIFO or device is never opened, as in
        # read_attr; a glob that matches nothing is a name grep cannot open, silenced); held in a variable so that
        # ibstat stands in only when nothing was listed
        lines.append(
            "s=; if [ -d %s ]; then s=$(cd %s && $TO grep -a -H -s -D skip '' %s </dev/null 2>/dev/null; echo \"@rc=$?\"); fi\n"
            "lrc=${s##*@rc=}; s=${s%%@rc=*}\n"
            'printf \'%%s B listing\\n%%s\\n%%s E listing %%s 0\\n\' "$M" "$s" "$M" "${lrc:-0}"'
            % (quote(ib), quote(ib), " ".join(globs))
        )
        if want("ibstat.txt"):
            lines.append('[ -n "$s" ] || %s' % run("ibstat.txt", cmd["ibstat.txt"]))
    elif want("ibstat.txt"):
        lines.append(run("ibstat.txt", cmd["ibstat.txt"]))
    bmc = [run(name, argv) for name, argv in COMMANDS if argv[0] == "ipmitool" and want(name)]
    if bmc:
        # the BMC's calls (each can take seconds over KCS) run beside the others, one after the other
        lines.append('if [ -n "$d" ]; then ( i=100; %s ) >"$d/bg.bmc" & else %s; fi' % ("; ".join(bmc), "; ".join(bmc)))
    if want("nvidia-smi-q.xml"):
        lines.append(run("nvidia-smi-q.xml", cmd["nvidia-smi-q.xml"]))
        if want("nvidia-smi-q.txt"):  # the text only when the XML failed
            lines.append('[ "$rc" = 0 ] || %s' % run("nvidia-smi-q.txt", cmd["nvidia-smi-q.txt"]))
    for name in (
        "nvidia-smi-nvlink-s.txt",
        "nvidia-smi-nvlink-e.txt",
        "nvidia-imex-ctl-q.txt",
        "nvidia-imex-ctl-N-j.txt",
    ):
        if want(name):
            lines.append(run(name, cmd[name]))
    if want("kernel.log"):
        since = opts.get("kernel_since")
        jargv = ["journalctl", "-k", "-o", "short-iso", "--no-pager"] + (["--since", since] if since else ["-b"])
        # journalctl, else dmesg: the last section of a name is the one kept
        lines.append(
            "if command -v journalctl >/dev/null 2>&1; then %s; else rc=x; fi; "
            'if [ "$rc" != 0 ] && command -v dmesg >/dev/null 2>&1; then %s; fi'
            % (run("kernel.log", jargv), run("kernel.log", ["dmesg", "--time-format=iso"]))
        )
    if want("optics"):
        lines.append(_OPTICS % {"ib": quote(ib)})
    if want("scontrol-show-node.txt"):
        node = opts.get("slurm_node")
        who = quote(node) if node else '"$h"'
        cond = "true" if node else "command -v scontrol >/dev/null 2>&1"
        lines.append("if %s; then run scontrol-show-node.txt scontrol show node %s; fi" % (cond, who))
    if want("node.json"):
        lines.append(_shnode.node_part(opts))
    lines.append("wait")  # the BMC's calls end before the GPU diagnostics load the node
    if want("dcgmi-diag.txt") and opts.get("dcgm_level"):
        lines.append(run("dcgmi-diag.txt", ["dcgmi", "diag", "-r", str(int(opts["dcgm_level"]))]))
    lines.append(_END)
    lines.append(_TAIL % {"cut": int(opts.get("max_bytes") or DEFAULT_MAX_BYTES) + 1})
    # no final newline: should the script ever be the command itself, ansible-core appends " && sleep 0" to it
    # (_low_level_execute_command), which must continue the last line, not start one
    return "\n".join(lines).rstrip("\n")


# the optics evidence as _ib_optics_cmds.capture_commands lists it: mlxlink per InfiniBand HCA, ethtool -m/-S per
# RoCE netdev (at most 4 a HCA); names that are not plain are skipped
_OPTICS = r"""ml=; et=; command -v mlxlink >/dev/null 2>&1 && ml=1; command -v ethtool >/dev/null 2>&1 && et=1
if [ -n "$ml$et" ] && [ -d %(ib)s ]; then
  for hd in %(ib)s/*; do
    hca=${hd##*/}
    case $hca in ''|[!A-Za-z0-9_]*|*[!A-Za-z0-9_.:-]*) continue ;; esac
    ll=; [ -r "$hd/ports/1/link_layer" ] && read -r ll <"$hd/ports/1/link_layer"
    if [ "$ll" = Ethernet ]; then
      [ -n "$et" ] || continue
      k=0
      for nd in "$hd"/device/net/*; do
        ifn=${nd##*/}
        case $ifn in ''|'*'|[!A-Za-z0-9_]*|*[!A-Za-z0-9_.:-]*) continue ;; esac
        k=$((k+1)); [ "$k" -le 4 ] || break
        run "ethtool-m-$ifn.txt" ethtool -m "$ifn"; run "ethtool-S-$ifn.txt" ethtool -S "$ifn"
      done
    elif [ -n "$ml" ]; then
      run "mlxlink-$hca.txt" mlxlink -d "$hca" -m -c
    fi
  done
fi"""


# ----------------------------------------------------------------------------------------------------------------
# The node's answer
# ----------------------------------------------------------------------------------------------------------------


def to_tree(stdout: str, token: str, options: Dict[str, Any]) -> Dict[str, str]:
    """The capture files ``_livecapture.capture_tree`` would have made, from the node's output (``options``:
    :func:`check_options`' result; ``capture.json`` included)."""
    out = parse_output(stdout, token)
    tree: Dict[str, str] = {}
    meta: Dict[str, Any] = {
        "schema": "gpuops.capture/v1",
        "hostname": out.first("hostname"),
        "captured_at": utcnow_iso(),
        "boot_id": out.first("boot_id"),
        "files": {},
        "via": "shell",
    }
    domains = options.get("domains")
    if domains is not None:
        meta["domains"] = [d for d in DOMAIN_FILES if d in domains]
    if out.problems:
        meta["errors"] = list(out.problems)
    argvs = dict(COMMANDS)
    for name, section in out.sections.items():
        if name in ("files", "systemctl", "procs", "fm", "dpkg", "rpm") or name.startswith("probe:"):
            continue  # the node collector's inputs (node.json below)
        if name == "listing":
            _listing(tree, meta, section, out)
            continue
        if not NAME.fullmatch(name) or ".." in name:  # as _livetree.check_tree will require
            meta.setdefault("errors", []).append("a section name that is no capture file name: %r" % name[:80])
            continue
        res = section_result(argvs.get(name, [name.split("-", 1)[0]]), section, out)
        meta["files"][name] = res.to_dict()
        if res.error and res.rc is None and not res.stdout and not res.stderr:
            continue  # not found: recorded, nothing to put
        tree[name] = res.stdout if res.stdout.strip() or not res.stderr else res.stderr
    if not out.complete:
        # the answer was cut: each file of the domains asked for that did not come whole is recorded as not read,
        # so its collector reports missing evidence (the domain unknown), never an empty reading
        for name in sorted({f for d in (domains or DOMAIN_FILES) for f in DOMAIN_FILES.get(d, ())}):
            if name not in tree and name not in meta["files"] and name not in ("optics", "node.json"):
                meta["files"][name] = {"rc": None, "error": "the node's answer was cut before this file came whole"}
    if "files" in out.sections:
        node_options = options.get("node_options") or {}
        io = ReplayIO(out, _shnode.mount_paths(node_options))
        node = _node.collect(
            timeout=options.get("timeout") or 30,
            mounts=node_options.get("mounts"),
            services=node_options.get("services"),
            io=io,
        )
        tree["node.json"] = json.dumps(node, indent=1, sort_keys=True, default=str)
        meta["files"]["node.json"] = {"rc": 0}
    tree["capture.json"] = json.dumps(meta, indent=1, sort_keys=True, default=str)
    return tree


def _listing(tree: Dict[str, str], meta: Dict[str, Any], section: Tuple[str, str, str], out: Output) -> None:
    """The InfiniBand listing as ``_ib_sysfs.sysfs_listing`` writes it: the allowlist applied, sorted lines."""
    body, rc, _err = section
    errors: List[Dict[str, Any]] = []
    if rc.isdigit() and int(rc) in TIMED_OUT_RC and out.timeout_used:
        # as sysfs_listing: a read that timed out gives no listing (a counter cut in the middle is no value)
        body = ""
        errors.append(
            _ib_sysfs.error_record(_ib_sysfs.DOMAIN, "timeout", "reading the sysfs listing timed out", source="sysfs")
        )
    try:
        snap = _ib_sysfs.snapshot_flat(body, source="sysfs", errors=errors) if body.strip() else {}
    except ParseError as exc:
        snap = {}
        errors.append(exc.to_error(_ib_sysfs.DOMAIN, "parse"))
    text = _ib_sysfs.flat_text(snap)
    detail = {
        "hcas": sorted({rel.split("/", 1)[0] for rel in snap}, key=_ib_sysfs.natural_key),
        "files": sum(1 for rel in snap if rel.split("/")[1:] != ["ports"]),
        "file": _capture.SYSFS_IB_FLAT if text else None,
        "collected_at": time.time(),
        "errors": errors,
    }
    meta["files"][_capture.SYSFS_IB_FLAT] = {"rc": 0, "detail": detail}
    if text:
        tree[_capture.SYSFS_IB_FLAT] = text


def new_token() -> str:
    return secrets.token_hex(16)
