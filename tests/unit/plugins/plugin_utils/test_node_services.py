# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, observation 4: a local user cannot make a dead NVIDIA service look healthy (_node_services).

Before: a service counted as running when its unit was active *or any process* had its command name, so ``nobody``
running a copy of ``sleep`` named ``nv-fabricmanager`` turned ``node.fabric_manager`` P1 ``isolate`` into no
finding, even with systemd reporting the unit ``failed``; the same for every known service, in the live collector
(the code the root HealthCheckProgram runs) and through the shell capture. Now the unit's own state decides where
systemd knows it; elsewhere only the daemon counts (root's or its service account's, the expected executable).

Each state is checked three ways: the live collector on a fake root (``_node.collect(root=...)``), the same state
rendered as the shell capture's answer and replayed (``_shcapture.to_tree``), and the real script under
``/bin/sh`` in private mount and PID namespaces (real processes of root and of ``nobody``, a private ``/run``),
where the live collector runs beside it and must agree record for record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import shcapture as _shcapture
from checks_helpers import PROFILE, facts, only, run

NOBODY = 65534
#: service -> (comm: the kernel keeps 15 characters, daemon path, unit, pid file)
SERVICES = {
    "nvidia-fabricmanager": (
        "nv-fabricmanage",
        "/usr/bin/nv-fabricmanager",
        "nvidia-fabricmanager",
        "/run/nvidia-fabricmanager/nv-fabricmanager.pid",
    ),
    "nvidia-persistenced": (
        "nvidia-persiste",
        "/usr/bin/nvidia-persistenced",
        "nvidia-persistenced",
        "/run/nvidia-persistenced/nvidia-persistenced.pid",
    ),
    "nvidia-dcgm": ("nv-hostengine", "/usr/bin/nv-hostengine", "nvidia-dcgm", "/run/nvhostengine.pid"),
}


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


class Node:
    """A node's service evidence, written as a fake root for the live collector and rendered as the shell
    capture's answer: ``procs`` {pid: (comm, uids, exe, argv0)}, ``units`` {unit: (ActiveState, SubState)} (systemd
    runs the node when not None), ``pidfiles`` {path: text}."""

    def __init__(self, units=None):
        self.procs = {1: ("init", (0, 0, 0, 0), "/sbin/init", "/sbin/init")}
        self.units = units
        self.pidfiles = {}

    def proc(self, pid, comm, uid, exe, argv0=None):
        self.procs[pid] = (comm, (uid,) * 4 if isinstance(uid, int) else tuple(uid), exe, argv0 or exe)

    def show(self, units):
        blocks = []
        for u in units:
            active, sub = (self.units or {}).get(u, ("inactive", "dead"))
            load = "loaded" if u in (self.units or {}) else "not-found"
            blocks.append(
                "Id=%s.service\nLoadState=%s\nActiveState=%s\nSubState=%s\nMainPID=0\n" % (u, load, active, sub)
            )
        return "\n".join(blocks)

    def root(self, path, tools):
        for pid, (comm, uids, exe, argv0) in self.procs.items():
            base = os.path.join(path, "proc", str(pid))
            _write(os.path.join(base, "comm"), comm + "\n")
            _write(
                os.path.join(base, "status"),
                "Name:\t%s\nState:\tS (sleeping)\nUid:\t%d\t%d\t%d\t%d\n" % ((comm,) + uids),
            )
            os.symlink(exe, os.path.join(base, "exe"))
            _write(os.path.join(base, "cmdline"), argv0 + "\0")
        for pf, text in self.pidfiles.items():
            _write(os.path.join(path, pf.lstrip("/")), text)
        _write(
            os.path.join(path, "etc", "passwd"),
            "root:x:0:0::/root:/bin/sh\nnvidia-persistenced:x:120:128::/:/bin/false\n",
        )
        if self.units is not None:
            os.makedirs(os.path.join(path, "run", "systemd", "system"))
            out = os.path.join(path, "show.txt")
            _write(out, self.show(list(dict.fromkeys(u for s in _node.KNOWN_SERVICES.values() for u in s["units"]))))
            tools("systemctl", "cat %s\n" % out)
        return path

    def answer(self, token):
        """What the node's script prints for this state (the node part only), as _shcapture's _node_part gathers
        it: the pid files in the "files" listing, systemctl show, and the "procs" listing."""
        m = "@@gpuops:%s " % token
        lines = [m + "M hostname gpu-node-07", m + "M timeout yes"]
        if self.units is not None:
            lines += [m + "M which systemctl", m + "M isdir /run/systemd/system"]

        def section(name, body):
            lines.extend([m + "B " + name, body, m + "E %s 0 0" % name])

        section("files", "\n".join("%s:%s" % (pf, text.rstrip("\n")) for pf, text in self.pidfiles.items()))
        if self.units is not None:
            units = list(dict.fromkeys(u for s in _node.KNOWN_SERVICES.values() for u in s["units"]))
            section("systemctl", self.show(units))
        names = {s["processes"][0][:15] for s in _node.KNOWN_SERVICES.values()}
        shown = [pid for pid, p in sorted(self.procs.items()) if p[0] in names]
        for text in self.pidfiles.values():
            if text.strip().isdigit() and int(text) in self.procs and int(text) not in shown:
                shown.append(int(text))
        body = ["user nvidia-persistenced 120", "table"]
        for pid in shown:
            comm, uids, exe, argv0 = self.procs[pid]
            if comm in names:
                body.append("comm %d %s" % (pid, comm))
            body += [
                "%d Uid:\t%d\t%d\t%d\t%d" % ((pid,) + uids),
                "%d State:\tS (sleeping)" % pid,
                "%d exe %s" % (pid, exe),
            ]
            if uids[0] in (0, 120):
                body.append("%d argv0 %s" % (pid, argv0))
        section("procs", "\n".join(body))
        return "\n".join(lines) + "\n" + m + "Z\n"


@pytest.fixture
def tools(tmp_path, monkeypatch):
    found = {}

    def add(name, body):
        path = tmp_path / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        found[name] = str(path)

    monkeypatch.setattr(_node, "which", lambda name, path=None: found.get(name))
    return add


def _both(node, tmp_path, tools, check):
    """The services as the live collector and as the shell capture's replay see ``node``: ``check`` holds for each,
    the live collector's first, and they agree record for record."""
    live = _node.collect(root=node.root(str(tmp_path / "root"), tools))["services"]
    check(live)
    token = _shcapture.new_token()
    opts = _shcapture.check_options({"timeout": 5, "domains": ["node"], "node_options": {"services": None}})
    replayed = json.loads(_shcapture.to_tree(node.answer(token), token, opts)["node.json"])["services"]
    check(replayed)
    assert replayed == live
    return live


def _fm_findings(services):
    return only(run(facts(node={"services": services}), PROFILE)[0], "node.fabric_manager", code="not_running")


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_a_users_process_never_makes_a_failed_unit_running(service, tmp_path, tools):
    comm, path, unit, pidfile = SERVICES[service]
    node = Node(units={unit: ("failed", "failed")})
    # nobody's renamed sleep, and even the real binary started by nobody, with a pid file pointing at it
    node.proc(4242, comm, NOBODY, "/tmp/x/" + path.rsplit("/", 1)[1])
    node.proc(4243, comm, NOBODY, path)
    node.pidfiles[pidfile] = "4243\n"

    def check(services):
        rec = services[service]
        assert rec["running"] is False and rec["unit_state"] == "failed" and rec["method"] == "systemctl"
        if service == "nvidia-fabricmanager":
            [finding] = _fm_findings(services)
            assert (finding["severity"], finding["action"]) == ("P1", "isolate")
        if service == "nvidia-persistenced":
            assert only(run(facts(node={"services": services}), PROFILE)[0], "node.services", "service:" + service)

    _both(node, tmp_path, tools, check)


@pytest.mark.parametrize("service", sorted(SERVICES))
@pytest.mark.parametrize(
    "uid, exe, why",
    [
        (NOBODY, "/home/eve/sleep", "runs as uid 65534/65534/65534/65534"),
        (NOBODY, "/usr/bin/DAEMON", "runs as uid 65534"),  # nobody starting the real binary by hand
        ((NOBODY, 0, 0, 0), "/usr/bin/DAEMON", "runs as uid 65534/0/0/0"),  # setuid: the real uid is nobody's
        (0, "/usr/bin/sleep", "runs /usr/bin/sleep, not /usr/bin/DAEMON"),  # root's renamed sleep
    ],
)
def test_without_systemd_only_the_daemon_counts(service, uid, exe, why, tmp_path, tools):
    comm, path, _unit, pidfile = SERVICES[service]
    daemon = path.rsplit("/", 1)[1]
    node = Node(units=None)
    node.proc(4242, comm, uid, exe.replace("DAEMON", daemon), argv0="/tmp/" + daemon)
    node.pidfiles[pidfile] = "4242\n"

    def check(services):
        rec = services[service]
        assert rec["running"] is False and rec["pid"] is None
        assert why.replace("DAEMON", daemon) in rec["detail"]
        if service == "nvidia-fabricmanager":
            assert _fm_findings(services)

    _both(node, tmp_path, tools, check)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_the_daemon_itself_still_counts(service, tmp_path, tools):
    comm, path, unit, pidfile = SERVICES[service]
    uid = 120 if service == "nvidia-persistenced" else 0  # persistenced drops to its own account
    node = Node(units=None)
    node.proc(4200, comm, NOBODY, "/home/eve/" + comm)  # a decoy with a lower pid is passed over
    node.proc(4300, comm, uid, path + " (deleted)")  # upgraded under the running daemon
    node.proc(4400, "bash", 0, "/usr/bin/bash", argv0=path)  # an init script's `exec -a`: root's, argv[0] the path
    node.pidfiles[pidfile] = "4400\n"

    def by_pidfile(services):
        rec = dict(services[service])
        rec.pop("version", None)  # the fabric manager's (none here)
        assert rec == {"running": True, "unit_state": None, "pid": 4400, "method": "pidfile", "detail": None}

    def by_proc(services):
        rec = services[service]
        assert (rec["running"], rec["pid"], rec["method"], rec["detail"]) == (True, 4300, "proc", None)

    def by_unit(services):
        rec = services[service]
        assert (rec["running"], rec["unit_state"], rec["method"]) == (True, "active", "systemctl")
        if service == "nvidia-fabricmanager":
            assert not _fm_findings(services)

    _both(node, tmp_path, tools, by_pidfile)
    del node.pidfiles[pidfile]
    _both(node, tmp_path / "again", tools, by_proc)
    node.units = {unit: ("active", "running")}
    _both(node, tmp_path / "systemd", tools, by_unit)


# ----------------------------------------------------------------------------------------------------------------
# The real script under /bin/sh, real processes, private namespaces
# ----------------------------------------------------------------------------------------------------------------

_DRIVER = r"""set -e
mount -t tmpfs -o mode=755 gpuops-test-run /run
mkdir -p /run/bin /run/x /run/nvidia-fabricmanager
cp "$(command -v sleep)" /run/x/nv-fabricmanager
chmod 755 /run/x /run/x/nv-fabricmanager
cp "$STUB" /run/bin/systemctl; chmod 755 /run/bin/systemctl
[ "$SYSTEMD" = 1 ] && mkdir -p /run/systemd/system
export PATH=/run/bin:$PATH
# nobody's renamed sleep, pointed at by the pid file
started() {  # until process $1 has become the fake daemon (its comm: 15 characters), 5 s at most
  n=0
  until [ "$(cat "/proc/$1/comm" 2>/dev/null)" = nv-fabricmanage ]; do
    n=$((n+1)); [ "$n" -lt 500 ] || { echo "process $1 did not start" >&2; exit 3; }; sleep 0.01
  done
}
setpriv --reuid 65534 --regid 65534 --clear-groups /run/x/nv-fabricmanager 600 &
echo $! > /run/nvidia-fabricmanager/nv-fabricmanager.pid
started $!
# root's: the fake daemon as the test bed runs it (argv[0] the daemon's path), only when asked
if [ "$ROOTS" = 1 ]; then bash -c 'exec -a /usr/bin/nv-fabricmanager /run/x/nv-fabricmanager 600' & started $!; fi
/bin/sh -c '/bin/sh && sleep 0' <"$SCRIPT" >"$OUT/shell.txt"
"$PY" -c 'import json; from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node
print(json.dumps(_node.collect(timeout=10)["services"]))' >"$OUT/live.json"
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"),
    reason="needs root, unshare and setpriv (private mount and PID namespaces)",
)
@pytest.mark.parametrize(
    "systemd, roots, running",
    [(True, True, False), (False, False, False), (False, True, True)],
    ids=["unit-failed-root-daemon-too", "only-nobody", "root-daemon-no-systemd"],
)
def test_the_real_script_and_the_live_collector_agree(tmp_path, systemd, roots, running):
    """systemd (a private /run with /run/systemd/system, a systemctl that says the unit failed): not running though
    root's daemon runs too. Without systemd: nobody's copy of sleep named nv-fabricmanager in the pid file is not
    the daemon; root's daemon (argv[0] /usr/bin/nv-fabricmanager) is."""
    opts = _shcapture.check_options({"timeout": 10, "domains": ["node"], "node_options": {"services": None}})
    token = _shcapture.new_token()
    (tmp_path / "script.sh").write_text(_shcapture.build_script(token, opts))
    stub = tmp_path / "systemctl"
    stub.write_text(
        '#!/bin/sh\nshift 4\nfor u in "$@"; do [ "$u" = nvidia-fabricmanager ] && s=failed l=loaded || s=inactive'
        " l=not-found; printf 'Id=%s.service\\nLoadState=%s\\nActiveState=%s\\nSubState=%s\\nMainPID=0\\n\\n'"
        ' "$u" "$l" "$s" "$s"; done\n'
    )
    env = dict(
        os.environ,
        STUB=str(stub),
        SCRIPT=str(tmp_path / "script.sh"),
        OUT=str(tmp_path),
        PY=sys.executable,
        SYSTEMD="1" if systemd else "0",
        ROOTS="1" if roots else "0",
    )
    argv = ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "sh", "-c", _DRIVER]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    shell = (tmp_path / "shell.txt").read_text()
    live = json.loads((tmp_path / "live.json").read_text())
    replayed = json.loads(_shcapture.to_tree(shell, token, opts)["node.json"])["services"]
    for services in (live, replayed):
        fm = services["nvidia-fabricmanager"]
        assert fm["running"] is running, fm
        assert fm["method"] == ("systemctl" if systemd else "proc")  # the pid file names nobody's sleep: passed over
        if not running:
            assert only(run(facts(node={"services": services}), PROFILE)[0], "node.fabric_manager", code="not_running")
        if not systemd and not running:
            assert "runs as uid 65534" in fm["detail"]
    assert replayed == live
