# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the EDA tests share (test_eda.py: the listener's boundaries; test_eda_bed.py: the rules' effects with the
real playbooks on the test bed): the shipped rulebook's paths, starting/stopping ansible-rulebook, Alertmanager
payloads and the authenticated POST."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.environ.get("GPUOPS_EDA_BIN", os.path.join(ROOT, "build", "venv-eda", "bin"))
RULEBOOK = os.path.join(ROOT, "extensions", "eda", "rulebooks", "gpuops.yml")
JAVA_HOME = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")

RECORDER = """---
- name: Record the targets instead of acting (EDA test)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One file per run, naming every node the rule asked us to act on
      ansible.builtin.copy:
        dest: "{{ lookup('env', 'GPUOPS_EDA_RECORD') }}/{{ gpuops_runbook }}.{{ 999999999 | random }}.json"
        content: >-
          {{ {'nodes': gpuops_targets.split(',') | select | list, 'ticket': gpuops_ticket, 'vars': __vars,
              'eda': ansible_eda | default(none)} | to_json }}
        mode: "0644"
      vars:
        __vars:
          isolate_nodes: "{{ isolate_nodes | default(none) }}"
          isolate_ticket: "{{ isolate_ticket | default(none) }}"
          isolate_reason: "{{ isolate_reason | default(none) }}"
          leak_response_source: "{{ leak_response_source | default(none) }}"
          leak_response_alert_id: "{{ leak_response_alert_id | default(none) }}"
"""


def _missing():
    if not os.path.isfile(os.path.join(VENV_BIN, "ansible-rulebook")):
        return "no ansible-rulebook in %s (run tests/testbed/eda-setup.sh)" % VENV_BIN
    if not os.path.isfile(os.path.join(JAVA_HOME, "bin", "java")):
        return "no Java at %s" % JAVA_HOME
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_rulebook(work, rec, **env_vars):
    """ansible-rulebook on the unmodified rulebook from `work`, with the GPUOPS_EDA_* variables given (as
    --env-vars). Returns (process, log path); the caller waits for the port or the exit."""
    env = dict(os.environ, JAVA_HOME=JAVA_HOME, **env_vars)
    env.update(PATH=VENV_BIN + os.pathsep + os.environ["PATH"], GPUOPS_EDA_RECORD=str(rec), ANSIBLE_FORKS="1")
    for k in ("ANSIBLE_CONFIG", "ANSIBLE_CALLBACKS_ENABLED", "VIRTUAL_ENV"):
        env.pop(k, None)
    # the event source gpuops.cluster.alertmanager comes from the collection (build/ansible_collections -> repo)
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, "build")
    log_path = work / ("rulebook-%s.log" % env_vars.get("GPUOPS_EDA_PORT", "x"))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [os.path.join(VENV_BIN, "ansible-rulebook"), "--rulebook", RULEBOOK, "-i", "inv.ini"]
            + ["--env-vars", ",".join(sorted(env_vars))],
            cwd=str(work),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return proc, log_path


def wait_listening(proc, port, log_path, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("ansible-rulebook did not start: %s" % log_path.read_text()[-3000:])
            time.sleep(0.2)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def listen_addresses(port):
    """Local addresses of the LISTEN sockets on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        with open(name, encoding="ascii") as f:
            for line in list(f)[1:]:
                cols = line.split()
                addr, hexport = cols[1].split(":")
                if cols[3] == "0A" and int(hexport, 16) == port:
                    found.add(addr)
    return found


#: The bearer token the shipped rulebook is started with (GPUOPS_EDA_TOKEN); `post` sends it unless told not to.
TOKEN = "eda-test-" + os.urandom(8).hex()


def post(url, payload, headers=None, token=TOKEN, raw=None, body=False):
    """POST an Alertmanager body (JSON of `payload`, or the bytes `raw`) with the bearer token; the status, or
    (status, response text) with body=True."""
    hdrs = {"Content-Type": "application/json"}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    hdrs.update(headers or {})
    req = urllib.request.Request(url, raw if raw is not None else json.dumps(payload).encode(), hdrs)
    with urllib.request.urlopen(req, timeout=90) as resp:
        return (resp.status, resp.read().decode()) if body else resp.status


def alert(name, node, status="firing", **labels):
    labels.update(alertname=name, node=node)
    return {"status": status, "labels": labels, "annotations": {}, "fingerprint": "%s-%s" % (name, node)}


def am_payload(group, *alerts):
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "version": "4",
        "groupKey": group,
        "status": "firing" if firing else "resolved",
        "receiver": "gpuops",
        "alerts": list(alerts),
    }
