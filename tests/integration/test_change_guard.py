"""The change guard end to end: the decision matrix, real ansible-playbook runs with the audit callback,
the rolling batch gate, tamper detection on a real log, and secrets that must never reach it."""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.join(ROOT, "tests", "integration", "playbooks", "change_guard")
BIN = os.path.join(ROOT, ".venv", "bin")
SECRET = "Bmc-Sup3r-S3cret-42"


# ---- real ansible-playbook runs ---------------------------------------------------------------------------
def _epoch(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def playbook(tmp_path, name, *extra, audit=True, check=False, state="state"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GPUOPS_"))}
    env.update(
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        GPUOPS_STATE_DIR=str(tmp_path / state),
    )
    if audit:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "gpuops.cluster.audit"
    markers = tmp_path / "m"
    markers.mkdir(exist_ok=True)
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", "inventory.yml", name, "-e", "marker_dir=%s" % markers]
    if check:
        cmd.append("--check")
    for e in extra:
        cmd += ["-e", e]
    p = subprocess.run(cmd, cwd=TARGET, env=env, capture_output=True, text=True, timeout=120, check=False)
    return p.returncode, p.stdout + p.stderr


def records(tmp_path, state="state"):
    with open(tmp_path / state / "audit" / "audit.log") as f:
        return [json.loads(line) for line in f]


def markers(tmp_path):
    return sorted(os.listdir(tmp_path / "m"))


def test_run_in_window_is_audited_and_secrets_never_logged(tmp_path):
    rc, out = playbook(
        tmp_path,
        "guard.yml",
        "target=node1,node2",
        "change_guard_now=2026-12-05T02:30:00Z",
        "gpuops_change_id=CHG-77",
        "gpuops_ticket=OPS-5",
        "bmc_password=" + SECRET,
    )
    assert rc == 0, out
    assert [m for m in markers(tmp_path) if m.endswith(".drained")] == ["node1.drained", "node2.drained"]
    log = tmp_path / "state" / "audit" / "audit.log"
    text = log.read_text()
    assert SECRET not in text  # not from the module argument, the argv, the fail message nor the extra var
    recs = records(tmp_path)
    guard = next(r for r in recs if r["event"] == "guard")
    assert guard["guard"]["decision"] == "window" and guard["guard"]["clock_override"] is True
    assert guard["guard"]["clock"] == "2026-12-05T02:30:00+00:00"
    drains = [r for r in recs if r.get("task", "").startswith("Drain")]
    assert len(drains) == 2
    assert all(r["window"] == "weekend-night" and r["change_id"] == "CHG-77" and r["ticket"] == "OPS-5" for r in drains)
    assert {r["module"] for r in drains} == {"ansible.builtin.copy"} and all(r["changed"] for r in drains)
    failed = [r for r in recs if r["event"] == "task" and r["failed"]]
    assert len(failed) == 4 and all(r["ignore_errors"] for r in failed)
    assert any("BMC login refused for password ********" in (r["msg"] or "") for r in failed)
    assert [r["event"] for r in recs][:2] == ["run_start", "play_start"] and recs[-1]["event"] == "run_end"
    assert A.verify(str(log), str(tmp_path / "state" / "audit" / "head.json"))["ok"]

    # the audit_verify module agrees, then catches each kind of tampering
    head = str(tmp_path / "state" / "audit" / "head.json")
    with open(head) as f:
        head_before = json.load(f)  # the verify run below appends to the log: keep a copy of this log + head
    copy = tmp_path / "copy.log"
    copy.write_bytes(log.read_bytes())
    rc, out = playbook(tmp_path, "verify.yml", "audit_log=%s" % copy, "audit_head=%s" % head_before["hash"])
    assert rc == 0 and "VERIFY ok=True records=%d" % len(recs) in out, out
    lines = copy.read_bytes().splitlines(keepends=True)
    cases = {
        "edit": lines[:5] + [lines[5].replace(b'"changed":true', b'"changed":false')] + lines[6:],
        "delete": lines[:5] + lines[6:],
        "truncate": lines[:-1],
    }
    for kind, content in cases.items():
        bad = tmp_path / ("%s.log" % kind)
        bad.write_bytes(b"".join(content))
        res = A.verify(str(bad), head_before)
        assert not res["ok"], kind
        assert res["first_bad_line"] == {"edit": 6, "delete": 6, "truncate": len(lines)}[kind], (kind, res)
    rc, out = playbook(tmp_path, "verify.yml", "audit_log=%s" % (tmp_path / "delete.log"), "audit_head=%s" % head)
    assert rc != 0 and "does not verify" in out and "missing before line 6" in out


def test_refused_outside_window_and_check_mode(tmp_path):
    rc, out = playbook(
        tmp_path, "guard.yml", "target=node1", "change_guard_now=2026-12-04T12:00:00Z", "gpuops_change_id=CHG-1"
    )
    assert rc != 0
    assert "next window 'weekend-night' opens 2026-12-05T02:00:00+01:00" in out
    assert markers(tmp_path) == []
    guard = [r for r in records(tmp_path) if r.get("module") == "gpuops.cluster.change_window"]
    assert len(guard) == 1 and guard[0]["failed"] and "refused" in guard[0]["msg"]
    # check mode always runs and says what would happen, without failing
    rc, out = playbook(
        tmp_path,
        "guard.yml",
        "target=node1",
        "change_guard_now=2026-12-04T12:00:00Z",
        "gpuops_change_id=C",
        "gpuops_state_dir=/srv/elsewhere",
        check=True,
    )
    assert rc == 0 and "check mode: would refuse: refused: outside the maintenance window" in out
    assert "is not under gpuops_state_dir /srv/elsewhere" in out  # the callback writes somewhere else
    # hosts in another timezone, with no window in common right now
    rc, out = playbook(
        tmp_path, "guard.yml", "target=node1,ny1", "change_guard_now=2026-12-05T02:30:00Z", "gpuops_ticket=T"
    )
    assert rc != 0 and "outside the maintenance window for: ny1" in out


def test_corrective_and_emergency_outside_window_are_recorded(tmp_path):
    rc, out = playbook(tmp_path, "cases.yml", "change_guard_now=2026-12-04T12:00:00Z")
    assert rc == 0, out
    assert markers(tmp_path) == ["node1.isolated", "node2.isolated", "node3.activated"]
    assert (tmp_path / "m" / "node3.activated").read_text() == "emergency_override\n"
    guards = [r for r in records(tmp_path) if r["event"] == "guard"]
    assert [g["guard"]["decision"] for g in guards] == ["corrective", "emergency_override"]
    assert [f["id"] for f in guards[0]["guard"]["findings"]] == ["node1:gpu.xid:gpu3:79", "node2:ib.port:mlx5_0/1:down"]
    assert "evidence" not in guards[0]["guard"]["findings"][0]
    act = [r for r in records(tmp_path) if r.get("task") == "Activate firmware"][0]
    assert act["override"] == {"ticket": "INC-4711", "reason": "BMC CVE actively exploited"}
    assert act["ticket"] == "INC-4711"


def test_guard_refuses_without_audit_callback_and_records_opt_out(tmp_path):
    rc, out = playbook(
        tmp_path,
        "guard.yml",
        "target=node1",
        "change_guard_now=2026-12-05T02:30:00Z",
        "gpuops_change_id=C",
        audit=False,
    )
    assert rc != 0 and "gpuops.cluster.audit is not enabled" in out and markers(tmp_path) == []
    rc, out = playbook(
        tmp_path,
        "guard.yml",
        "target=node1,node2",
        "change_guard_now=2026-12-05T02:30:00Z",
        "gpuops_change_id=CHG-OPT",
        "change_guard_allow_unaudited=true",
        "gpuops_state_dir=%s" % (tmp_path / "gsd"),
        audit=False,
    )
    assert rc == 0, out
    assert markers(tmp_path) == ["node1.drained", "node2.drained"]
    recs = records(tmp_path, state="gsd")  # the opt-out goes to the collection's state dir
    assert [r["event"] for r in recs] == ["unaudited_opt_out"]
    assert recs[0]["change_id"] == "CHG-OPT" and recs[0]["clock_override"] is True
    assert recs[0]["hosts"] == ["node1", "node2"]


def test_rolling_play_stops_before_the_window_closes(tmp_path):
    rc, out = playbook(tmp_path, "rolling.yml", "fake_clock_start=%d" % _epoch("2026-12-09T01:00:00Z"))
    assert rc == 0, out
    assert markers(tmp_path) == ["node1.drained", "node2.drained", "node3.drained", "node4.drained"]
    assert (tmp_path / "m" / "node3.drained").read_text() == "batch 1\n"
    assert "stopping before batch node5,node6" in out and "1800s left" in out
    guards = [r["guard"] for r in records(tmp_path) if r["event"] == "guard"]
    assert [g["window"] for g in guards] == ["rollout"] * 3
    assert [g["clock"] for g in guards] == ["2026-12-09T01:00:00+00:00", "2026-12-09T01:30:00+00:00",
                                            "2026-12-09T02:00:00+00:00"]  # fmt: skip
    assert all(g["clock_override"] for g in guards)
    assert not any(r.get("host") in ("node5", "node6") and r.get("task") == "Drain" for r in records(tmp_path))


@pytest.mark.slow
def test_concurrent_playbook_runs_keep_one_chain(tmp_path):
    env_runs = []
    for i in range(2):
        d = tmp_path / ("r%d" % i)
        d.mkdir()
        env_runs.append(d)
    # two runs at once, one shared state dir: both write to the same log under the lock
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        futs = [
            ex.submit(playbook, d, "cases.yml", "change_guard_now=2026-12-04T12:00:00Z", state=str(tmp_path / "shared"))
            for d in env_runs
        ]
        results = [f.result() for f in futs]
    assert all(rc == 0 for rc, _unused in results), results
    log = str(tmp_path / "shared" / "audit" / "audit.log")
    res = A.verify(log, str(tmp_path / "shared" / "audit" / "head.json"))
    assert res["ok"] and len(res["runs"]) == 2, res


FAKE_SCONTROL = """#!/bin/sh
D=$(dirname "$0")
echo "$*" >> "$D/calls"
case "$1" in
  show) if [ -f "$D/resv_$3" ]; then cat "$D/resv_$3"; exit 0; fi; echo "Reservation $3 not found"; exit 1 ;;
  create) n=${3#ReservationName=}; printf '%s\n' "ReservationName=$n StartTime=2026-12-05T02:00:00 EndTime=2026-12-05T05:00:00 Duration=03:00:00" \
      "   Nodes=node[1-2] NodeCnt=2 CoreCnt=448 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES" \
      "   TRES=cpu=448" "   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a" \
      "   MaxStartDelay=(null)" > "$D/resv_$n"; echo "Reservation created: $n" ;;
  delete) n=${2#ReservationName=}; rm "$D/resv_$n" || exit 1 ;;
  *) exit 2 ;;
esac
"""


def test_reservation_is_idempotent_by_name(tmp_path):
    fake = tmp_path / "slurm" / "scontrol"
    fake.parent.mkdir()
    fake.write_text(FAKE_SCONTROL)
    fake.chmod(0o755)
    calls = fake.parent / "calls"
    # check mode: only looks
    controller = json.dumps({"change_guard_slurm_controller": {"host": "localhost", "scontrol_path": str(fake)}})
    rc, out = playbook(tmp_path, "reservation.yml", controller, audit=False, check=True)
    assert rc == 0, out
    assert calls.read_text().splitlines() == ["show reservation gpuops-maint"] * 4
    calls.unlink()
    # present, present, absent, absent: create once, delete once
    # the collection-wide setting (gpuops_slurm_controller) is the role's default
    controller = json.dumps({"gpuops_slurm_controller": {"scontrol_path": str(fake)}})
    state = str(tmp_path / "ledger")
    rc, out = playbook(tmp_path, "reservation.yml", controller, "resv_start=2026-12-05T02:00:00",
                       "resv_minutes=180", "gpuops_state_dir=%s" % state, audit=False)  # fmt: skip
    assert rc == 0, out
    assert calls.read_text().splitlines() == [
        "show reservation gpuops-maint",
        "create reservation ReservationName=gpuops-maint Flags=MAINT,IGNORE_JOBS StartTime=2026-12-05T02:00:00"
        " Duration=180 Nodes=node1,node2 Users=root",
        "show reservation gpuops-maint",  # read again (TZ=UTC) for the service ledger
        "show reservation gpuops-maint",
        "show reservation gpuops-maint",  # and again for the ledger (present twice: recorded once, then unchanged)
        "show reservation gpuops-maint",
        "delete ReservationName=gpuops-maint",
        "show reservation gpuops-maint",
    ]
    assert "changed=3" in out  # created, its window written, deleted (the window had ended: left as it was)
    # the MAINT reservation is a maintenance window of the service ledger: 02:00-05:00 UTC on node1, node2
    import sqlite3

    with sqlite3.connect(os.path.join(state, "gpuops.db")) as db:
        rows = db.execute("SELECT name, starts_at, ends_at, scope FROM maintenance_windows").fetchall()
    assert [(n, a, b, json.loads(sc)) for n, a, b, sc in rows] == [
        ("slurm:gpuops-maint", 1796436000.0, 1796446800.0, {"hosts": ["node1", "node2"]})
    ]


def test_role_defaults_mirror_argument_specs():
    import yaml

    role = os.path.join(ROOT, "roles", "change_guard")
    with open(os.path.join(role, "defaults", "main.yml")) as f:
        defaults = yaml.safe_load(f)
    with open(os.path.join(role, "meta", "argument_specs.yml")) as f:
        specs = yaml.safe_load(f)["argument_specs"]
    assert set(specs) == {"main", "batch_gate", "reservation"}
    for entry in specs.values():
        opts = entry["options"]
        assert set(opts) == set(defaults)
        for name, spec in opts.items():
            if "default" in spec:
                assert spec["default"] == defaults[name], name
            else:  # templated in defaults/main.yml, documented in the description
                assert "{{" in defaults[name] and defaults[name].strip('"') in " ".join(spec["description"]), name
            assert name.startswith("change_guard_")
    assert defaults["change_guard_slurm_controller"] == "{{ gpuops_slurm_controller | default({}) }}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
