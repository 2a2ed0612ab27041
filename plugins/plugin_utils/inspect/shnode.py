# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node collector through the shell capture (``_shcapture``): the part of the node's script that reads and runs
what ``_node.collect`` reads and runs (:func:`node_part`), and :class:`ReplayIO`, which answers the collector's calls
on the controller from what the node sent, so that one collector, ``_node``'s, makes ``node.json`` either way.

The services (``_node_services``) are decided by the same function on the same evidence: ``systemctl show``'s
unit states, the services' pid files, and for each candidate process (its ``comm`` is a daemon's name, or its pid
is in a pid file) the ``Uid:`` and ``State:`` lines of its status, its ``exe`` link, and ``argv[0]`` when the
process runs as root or as a service account (as the collector reads it only then), plus the uids of the service
accounts from ``/etc/passwd``. A value the node could print across lines (a path holding a newline) is not sent.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    node as _node,
    node_services as _node_services,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.node import parse_proc_status
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.shanswer import (
    Output,
    ShellCaptureError,
    quote,
    section_result,
)

#: the node's tools looked up with ``command -v`` for the node collector's replay
NODE_TOOLS = ("systemctl", "stat", "nv-fabricmanager", "dpkg-query", "rpm")
_MAX_PATH = 4096
#: one line of the ``procs`` section: "<pid> Uid:...", "<pid> State:...", "<pid> exe <path>", "<pid> argv0 <arg>"
_PROC_LINE = re.compile(r"([0-9]{1,10}) (Uid:|State:|exe |argv0 )(.*)")


def check_path(value: Any, what: str, colon: bool = True) -> str:
    """``value`` when it is an absolute path on one line (and without ``:`` unless ``colon``)."""
    if (
        not isinstance(value, str)
        or not value.startswith("/")
        or len(value) > _MAX_PATH
        or "\n" in value
        or "\0" in value
        or (not colon and ":" in value)
    ):
        raise ShellCaptureError(
            "%s must be an absolute path on one line%s, not %r"
            % (what, "" if colon else " without ':'", str(value)[:80])
        )
    return value


def mount_paths(node_options: Dict[str, Any]) -> List[str]:
    paths = (_node._entry_path(item)[0] for item in node_options.get("mounts") or [])
    return list(dict.fromkeys(p for p in paths if p))


def service_specs(node_options: Dict[str, Any]) -> List[Tuple[str, Dict[str, List[str]]]]:
    """(name, spec) of each service ``_node.check_services`` checks, in its order."""
    services = node_options.get("services")
    items = _node.DEFAULT_SERVICES if services is None else services
    return [s for s in (_node.service_spec(i) for i in items) if s is not None]


def check_node_options(node_options: Dict[str, Any]) -> Dict[str, Any]:
    """The node collector's options checked for the script: mounts and pid files are paths, accounts are names."""
    for item in node_options.get("mounts") or []:
        check_path(_node._entry_path(item)[0], "a mount")
    for _name, spec in service_specs(node_options):
        for pf in spec["pidfiles"]:
            check_path(pf, "a pid file", colon=False)  # the listing is "path:line"
        for user in spec["users"]:
            if not _node_services.USER.fullmatch(user):
                raise ShellCaptureError("a service's user must be an account name, not %r" % user[:80])
    return node_options


# The evidence about the services' processes, run as `sh -c` under the capture's timeout (a read of a process's
# cmdline can block). @USERS@, @NAMES@, @PIDFILES@: quoted words from the service specs.
_PROCS = r"""nl='
'
ok=' 0 '; seen=' '
if [ -r /etc/passwd ]; then
  while IFS=: read -r un pw id rest; do
    case $un in @USERS@) case $id in ''|*[!0-9]*) ;; *) ok="$ok$id "; printf 'user %s %s\n' "$un" "$id";; esac;; esac
  done </etc/passwd
fi
show() {
  case $seen in *" $1 "*) return 0;; esac
  seen="$seen$1 "; s=/proc/$1; u=
  [ -r "$s/status" ] || return 0
  while IFS= read -r l; do
    case $l in Uid:*) u=$l; printf '%s %s\n' "$1" "$l";; State:*) printf '%s %s\n' "$1" "$l";; esac
  done <"$s/status"
  x=$(readlink "$s/exe" 2>/dev/null) || x=
  case $x in *"$nl"*) x=;; esac
  [ -z "$x" ] || printf '%s exe %s\n' "$1" "$x"
  p=$1; set -- $u
  case $ok in *" $2 "*)
    a=$(tr '\000' '\n' <"$s/cmdline" 2>/dev/null | head -n 1)
    printf '%s argv0 %s\n' "$p" "$a";;
  esac
}
t=
for p in /proc/[0-9]*; do
  [ -d "$p" ] || continue
  t=1; c=
  IFS= read -r c 2>/dev/null <"$p/comm" || continue
  @MATCH@
done
[ -z "$t" ] || echo table
for f in @PIDFILES@; do
  [ -r "$f" ] || continue
  q=; read -r q <"$f"
  case $q in [1-9]*) case $q in *[!0-9]*) ;; *) show "$q";; esac;; esac
done"""


def _procs_code(specs: List[Tuple[str, Dict[str, List[str]]]]) -> str:
    names = list(dict.fromkeys(p[: _node.COMM_LEN] for _n, spec in specs for p in spec["processes"]))
    users = list(dict.fromkeys(u for _n, spec in specs for u in spec["users"] if u != "root"))
    pidfiles = list(dict.fromkeys(pf for _n, spec in specs for pf in spec["pidfiles"]))
    match = (
        'case $c in %s) printf \'comm %%s %%s\\n\' "${p#/proc/}" "$c"; show "${p#/proc/}";; esac'
        % "|".join(quote(n) for n in names)
        if names
        else ":"
    )
    return (
        _PROCS.replace("@USERS@", "|".join(quote(u) for u in users) if users else "''")
        .replace("@MATCH@", match)
        .replace("@PIDFILES@", " ".join(quote(pf) for pf in pidfiles))
    )


def node_part(opts: Dict[str, Any]) -> str:
    """What ``_node.collect`` reads and runs on a live node, for :class:`ReplayIO` (``opts``: checked options)."""
    node_options = opts["node_options"]
    specs = service_specs(node_options)
    pidfiles = list(dict.fromkeys(pf for _n, spec in specs for pf in spec["pidfiles"]))
    out = [
        'for t in %s; do command -v "$t" >/dev/null 2>&1 && printf \'%%s M which %%s\\n\' "$M" "$t"; done'
        % " ".join(NODE_TOOLS),
        "[ -d /run/systemd/system ] && printf '%s M isdir /run/systemd/system\\n' \"$M\"",
        # every file the collector reads (the services' pid files too), in one process: "path:line"
        "run files grep -a -H -s -D skip '' %s" % " ".join(quote(p) for p in list(_node.READ_PATHS) + pidfiles),
    ]
    units = list(dict.fromkeys(u for _name, spec in specs for u in spec["units"]))  # as check_services asks
    if units:
        out.append(
            "if [ -d /run/systemd/system ]; then run systemctl systemctl show -p %s -- %s; fi"
            % (quote(_node_services.SHOW_PROPERTIES), " ".join(quote(u) for u in units))
        )
    if specs:
        out.append("run procs sh -c %s" % quote(_procs_code(specs)))
    for k, path in enumerate(mount_paths(node_options)):
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


class ReplayIO(_node.LiveIO):
    """``_node``'s reads and runs answered from a node's shell capture (see ``_node.LiveIO``)."""

    def __init__(self, out: Output, mounts: List[str]) -> None:
        self.out = out
        self.files: Dict[str, List[str]] = {}
        listing = (out.sections.get("files") or ("", "", ""))[0]
        for line in listing.split("\n"):
            path, sep, value = line.partition(":")
            if sep:
                self.files.setdefault(path, []).append(value)
        self._procs(out.sections.get("procs"))
        # the node says which of NODE_TOOLS it has; the name stands for the path (ReplayIO.run goes by argument)
        self.which_map = {line.strip(): line.strip() for line in out.meta.get("which") or [] if line.strip()}
        self.dirs = {line.strip() for line in out.meta.get("isdir") or []}
        self.mounts = mounts

    def _procs(self, section: Optional[Tuple[str, str, str]]) -> None:
        """The ``procs`` section: the candidate processes (comm -> pids), each one's status lines, exe, argv0, and
        the service accounts' uids. The first value of a kind per pid is kept (the node sends each pid once)."""
        self.table: Optional[Dict[str, List[int]]] = None
        self.status: Dict[int, List[str]] = {}
        self.exe: Dict[int, str] = {}
        self.argv0: Dict[int, str] = {}
        self.users: Dict[str, int] = {}
        if section is None:
            return
        table: Dict[str, List[int]] = {}
        for line in section[0].split("\n"):
            if line == "table":
                self.table = table
            elif line.startswith("comm "):
                _kw, pid, comm = (line.split(" ", 2) + ["", ""])[:3]
                if pid.isdigit() and pid.isascii():
                    table.setdefault(comm, []).append(int(pid))
            elif line.startswith("user "):
                parts = line.split(" ")
                if len(parts) == 3 and parts[2].isdigit() and parts[2].isascii():
                    self.users.setdefault(parts[1], int(parts[2]))
            else:
                m = _PROC_LINE.fullmatch(line)
                if not m:
                    continue
                pid, kind, value = int(m.group(1)), m.group(2), m.group(3)
                if kind in ("Uid:", "State:"):
                    self.status.setdefault(pid, []).append(kind + value)
                elif kind == "exe ":
                    self.exe.setdefault(pid, value)
                else:
                    self.argv0.setdefault(pid, value)
        for pids in table.values():
            pids.sort()

    def read(self, root: str, path: str) -> Optional[str]:
        lines = self.files.get(path)
        return None if lines is None else "".join(line + "\n" for line in lines)

    def which(self, name: str) -> Optional[str]:
        return self.which_map.get(name) or None

    def isdir(self, path: str) -> bool:
        return path in self.dirs

    def run(self, argv: List[str], timeout: float) -> Any:
        names = {"show": "systemctl", "--version": "fm", "-W": "dpkg", "-qa": "rpm"}
        key = names.get(argv[1]) if len(argv) > 1 else None
        return section_result(argv, self.out.sections.get(key) if key else None, self.out)

    def probe_all(self, paths: List[str], timeout: float) -> Dict[str, Dict[str, Any]]:
        got = {}
        for path in paths:
            k = self.mounts.index(path) if path in self.mounts else -1
            argv = ["stat", "-f", "-c", _node.STATFS_FORMAT, "--", path]
            got[path] = _node.probe_result(
                section_result(argv, self.out.sections.get("probe:%d" % k), self.out), timeout
            )
        return got

    def process_table(self, root: str) -> Optional[Dict[str, List[int]]]:
        return None if self.table is None else {k: list(v) for k, v in self.table.items()}

    def process_status(self, root: str, pid: int) -> Optional[Dict[str, Any]]:
        lines = self.status.get(pid)
        return None if lines is None else parse_proc_status("\n".join(lines))

    def process_exe(self, root: str, pid: int) -> Optional[str]:
        return self.exe.get(pid)

    def process_argv0(self, root: str, pid: int) -> Optional[str]:
        return self.argv0.get(pid)

    def user_uid(self, root: str, name: str) -> Optional[int]:
        return 0 if name == "root" else self.users.get(name)

    def own_names(self, root: str) -> Tuple[Optional[str], Optional[str]]:
        return self.out.first("hostname"), None
