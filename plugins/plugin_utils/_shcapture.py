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
and the options are checked with full matches before (``check_options``).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _capture, _ib_sysfs, _node
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._livecapture import COMMANDS, DOMAIN_FILES
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import CommandResult
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils._livetree import NAME

#: ``timeout`` exits 124 when the limit passed (125-127: it could not run the tool); 137 = killed after ``-k``
TIMED_OUT_RC = (124, 137)
#: the node's tools looked up with ``command -v`` for the node collector's replay
NODE_TOOLS = ("systemctl", "stat", "nv-fabricmanager", "dpkg-query", "rpm")
#: a journalctl --since value: a time ("2026-12-02 10:00:00"), relative ("-1h", "yesterday") or epoch ("@1733133600")
KERNEL_SINCE = re.compile(r"[-@0-9A-Za-z][0-9A-Za-z :.+-]{0,63}")
SLURM_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
TOKEN = re.compile(r"[0-9a-f]{32}")
_MAX_PATH = 4096


class ShellCaptureError(ValueError):
    """An option that cannot go into the node's script (the message says which and why)."""


def quote(text: str) -> str:
    """``text`` as one single-quoted shell word (a ``'`` inside becomes ``'\\''``). NUL cannot be passed."""
    if "\0" in text:
        raise ShellCaptureError("a NUL byte cannot be passed to the node's shell")
    return "'" + text.replace("'", "'\\''") + "'"


def _path(value: Any, what: str) -> str:
    if (
        not isinstance(value, str)
        or not value.startswith("/")
        or len(value) > _MAX_PATH
        or "\n" in value
        or "\0" in value
    ):
        raise ShellCaptureError("%s must be an absolute path on one line, not %r" % (what, str(value)[:80]))
    return value


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
    opts["sysfs_root"] = _path(opts.get("sysfs_root") or "/", "sysfs_root")
    node = opts.get("slurm_node")
    if node is not None and not (isinstance(node, str) and SLURM_NODE.fullmatch(node)):
        raise ShellCaptureError("slurm_node must be a node name, not %r" % (node,))
    level = opts.get("dcgm_level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 4):
        raise ShellCaptureError("dcgm_level must be 1 to 4, not %r" % (level,))
    node_options = dict(opts.get("node_options") or {})
    for item in node_options.get("mounts") or []:
        _path(_node._entry_path(item)[0], "a mount")
    opts["node_options"] = node_options
    return opts


def _mount_paths(node_options: Dict[str, Any]) -> List[str]:
    paths = (_node._entry_path(item)[0] for item in node_options.get("mounts") or [])
    return list(dict.fromkeys(p for p in paths if p))


def _service_specs(node_options: Dict[str, Any]) -> List[Any]:
    """(name, spec) of each service ``_node.check_services`` checks, in its order."""
    services = node_options.get("services")
    items = _node.DEFAULT_SERVICES if services is None else services
    return [s for s in (_node._service_spec(i) for i in items) if s is not None]


# The script's helpers. $M is the marker; every section is "$M B name" ... "\n$M E name rc stderr-id".
# run NAME ARGV...: one tool call, its stdout in the section, its stderr kept in $d/eN (sent at the end when not
# empty); rc "nf" when the tool is not on PATH. $TO is "timeout -k 2 SECS" when the node has coreutils timeout.
_PRELUDE = r"""umask 077
export LC_ALL=C LANG=C LANGUAGE=C
M=%(marker)s
i=0
d=$(mktemp -d 2>/dev/null) || d=
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
  rm -rf "$d"
fi
printf '%s Z\n' "$M"
"""


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
    for name in ("nvidia-smi-nvlink-s.txt", "nvidia-smi-nvlink-e.txt"):
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
        lines.append(_node_part(opts))
    lines.append("wait")  # the BMC's calls end before the GPU diagnostics load the node
    if want("dcgmi-diag.txt") and opts.get("dcgm_level"):
        lines.append(run("dcgmi-diag.txt", ["dcgmi", "diag", "-r", str(int(opts["dcgm_level"]))]))
    lines.append(_END)
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


def _node_part(opts: Dict[str, Any]) -> str:
    """What ``_node.collect`` reads and runs on a live node, for :class:`ReplayIO`."""
    node_options = opts["node_options"]
    out = [
        'for t in %s; do command -v "$t" >/dev/null 2>&1 && printf \'%%s M which %%s\\n\' "$M" "$t"; done'
        % " ".join(NODE_TOOLS),
        "[ -d /run/systemd/system ] && printf '%s M isdir /run/systemd/system\\n' \"$M\"",
        # every file the collector reads, and each process's name, in one process: "path:line"
        "run files grep -a -H -s -D skip '' %s /proc/[0-9]*/comm" % " ".join(quote(p) for p in _node.READ_PATHS),
    ]
    specs = _service_specs(node_options)
    units = list(dict.fromkeys(u for _name, spec in specs for u in spec["units"]))  # as check_services asks
    if units:
        out.append(
            "if [ -d /run/systemd/system ]; then run systemctl systemctl is-active -- %s; fi"
            % " ".join(quote(u) for u in units)
        )
    for k, path in enumerate(_mount_paths(node_options)):
        # in parallel: N hung mounts cost one timeout, as in _node._probe_all
        probe = "run probe:%d stat -f -c %s -- %s" % (k, quote(_node.STATFS_FORMAT), quote(path))
        out.append('if [ -n "$d" ]; then ( i=%d; %s ) >"$d/bg.p%d" & else %s; fi' % (1000 + k, probe, k, probe))
    if _node.FABRIC_MANAGER in {name for name, _spec in specs}:
        out.append(
            "run fm nv-fabricmanager --version; "
            'if [ "$rc" != 0 ]; then run dpkg dpkg-query -W -f %s %s; '
            'if [ "$rc" != 0 ]; then run rpm rpm -qa --qf %s %s; fi; fi'
            % (
                quote(_node.DPKG_FORMAT),
                " ".join(quote(p) for p in _node.FM_PACKAGES),
                quote(_node.RPM_FORMAT),
                quote(_node.RPM_PATTERN),
            )
        )
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------------------------
# The node's answer
# ----------------------------------------------------------------------------------------------------------------


class Output:
    """The node's framed output: ``sections`` {name: (text, rc, stderr id)} (the last of a name wins), ``stderr``
    {id: text}, ``meta`` {key: value}, ``complete`` (the end marker came), ``problems`` (cut or malformed)."""

    def __init__(self) -> None:
        self.sections: Dict[str, Tuple[str, str, str]] = {}
        self.stderr: Dict[str, str] = {}
        self.meta: Dict[str, List[str]] = {}
        self.complete = False
        self.problems: List[str] = []

    def first(self, key: str) -> Optional[str]:
        """The first ``M key value`` line's value, stripped; None when absent or empty."""
        return (self.meta.get(key) or [""])[0].strip() or None

    @property
    def timeout_used(self) -> bool:
        """The node ran its tools under ``timeout`` (so exit 124/137 means timed out)."""
        return self.first("timeout") == "yes"


def parse_output(stdout: str, token: str) -> Output:
    """Split the node's output into its sections (see the module's doc). Never raises for bad output."""
    out = Output()
    marker = "@@gpuops:" + token + " "
    text = stdout if isinstance(stdout, str) else ""
    pos = text.find(marker)  # anything before the first marker (a login banner, become's own line) is not ours
    while pos != -1:
        eol = text.find("\n", pos)
        if eol == -1:
            out.problems.append("the output ends inside a marker line")
            break
        head = text[pos + len(marker) : eol].split(" ", 2)
        kind = head[0]
        if kind == "Z":
            out.complete = True
            break
        if kind == "M" and len(head) >= 2:
            out.meta.setdefault(head[1], []).append(head[2] if len(head) > 2 else "")
            pos = text.find(marker, eol + 1)
            continue
        if kind != "B" or len(head) != 2:
            out.problems.append("an unexpected marker line: %r" % text[pos : min(eol, pos + 120)])
            pos = text.find(marker, eol + 1)
            continue
        name = head[1]
        end = text.find("\n" + marker + "E " + name + " ", eol)
        nxt = text.find(marker, eol + 1)
        if end == -1 or (nxt != -1 and nxt < end + 1):
            out.problems.append("the section %s does not end (the output was cut)" % name)
            pos = nxt
            continue
        body = text[eol + 1 : end]
        line_end = text.find("\n", end + 1)
        if line_end == -1:  # cut inside the end line: its exit status may be cut too
            out.problems.append("the section %s does not end (the output was cut)" % name)
            break
        tail = text[end + 1 + len(marker) + 2 + len(name) + 1 : line_end].split()
        rc, err_id = (tail + ["", ""])[:2]
        if name.startswith("stderr:"):
            out.stderr[name.split(":", 1)[1]] = body
        else:
            out.sections[name] = (body, rc, err_id)
        pos = text.find(marker, line_end + 1)
    if not out.complete and not out.problems:
        out.problems.append("the node's output ended before the capture did")
    return out


def _result(argv: List[str], section: Optional[Tuple[str, str, str]], out: Output) -> CommandResult:
    """A section as the ``_runner.CommandResult`` the Python capture would have recorded."""
    res = CommandResult(argv)
    if section is None:
        res.error = "not in the node's answer"
        return res
    body, rc, err_id = section
    res.stdout = body
    res.stderr = out.stderr.get(err_id, "")
    if rc == "nf":
        res.error = "%s not found on PATH" % argv[0]
    elif rc.isdigit():
        res.rc = int(rc)
        if out.timeout_used and res.rc in TIMED_OUT_RC:
            res.rc, res.timed_out = None, True
    else:
        res.error = "no exit status (%r)" % rc[:20]
    return res


class ReplayIO(_node.LiveIO):
    """``_node``'s reads and runs answered from a node's shell capture (see ``_node.LiveIO``)."""

    def __init__(self, out: Output, mounts: List[str]) -> None:
        self.out = out
        self.files: Dict[str, List[str]] = {}
        self.procs: Dict[str, int] = {}
        listing = (out.sections.get("files") or ("", "", ""))[0]
        for line in listing.split("\n"):
            path, sep, value = line.partition(":")
            if not sep:
                continue
            m = re.fullmatch(r"/proc/([0-9]+)/comm", path)
            if m:  # comm -> lowest pid, as _node._process_names
                pid, comm = int(m.group(1)), value.strip()
                if pid < self.procs.get(comm, pid + 1):
                    self.procs[comm] = pid
            else:
                self.files.setdefault(path, []).append(value)
        # the node says which of NODE_TOOLS it has; the name stands for the path (ReplayIO.run goes by argument)
        self.which_map = {line.strip(): line.strip() for line in out.meta.get("which") or [] if line.strip()}
        self.dirs = {line.strip() for line in out.meta.get("isdir") or []}
        self.mounts = mounts

    def read(self, root: str, path: str) -> Optional[str]:
        lines = self.files.get(path)
        return None if lines is None else "".join(line + "\n" for line in lines)

    def which(self, name: str) -> Optional[str]:
        return self.which_map.get(name) or None

    def isdir(self, path: str) -> bool:
        m = re.fullmatch(r"/proc/([0-9]+)", path)
        if m:
            return int(m.group(1)) in self.procs.values()
        return path in self.dirs

    def run(self, argv: List[str], timeout: float) -> Any:
        names = {"is-active": "systemctl", "--version": "fm", "-W": "dpkg", "-qa": "rpm"}
        key = names.get(argv[1]) if len(argv) > 1 else None
        return _result(argv, self.out.sections.get(key) if key else None, self.out)

    def probe_all(self, paths: List[str], timeout: float) -> Dict[str, Dict[str, Any]]:
        got = {}
        for path in paths:
            k = self.mounts.index(path) if path in self.mounts else -1
            argv = ["stat", "-f", "-c", _node.STATFS_FORMAT, "--", path]
            got[path] = _node.probe_result(_result(argv, self.out.sections.get("probe:%d" % k), self.out), timeout)
        return got

    def process_names(self, root: str) -> Dict[str, int]:
        return dict(self.procs)

    def own_names(self, root: str) -> Tuple[Optional[str], Optional[str]]:
        return self.out.first("hostname"), None


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
        if name in ("files", "systemctl", "fm", "dpkg", "rpm") or name.startswith("probe:"):
            continue  # the node collector's inputs (node.json below)
        if name == "listing":
            _listing(tree, meta, section, out)
            continue
        if not NAME.fullmatch(name) or ".." in name:  # as _livetree.check_tree will require
            meta.setdefault("errors", []).append("a section name that is no capture file name: %r" % name[:80])
            continue
        res = _result(argvs.get(name, [name.split("-", 1)[0]]), section, out)
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
        io = ReplayIO(out, _mount_paths(node_options))
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
