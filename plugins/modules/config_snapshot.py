#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: config_snapshot
short_description: Read what a change touches on a node (configuration files, versions, BIOS/BMC settings) for a backup
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Reads the node's Slurm configuration and C(gres.conf), C(/etc/modprobe.d/*nvidia*), persistence daemon and fabric
    manager configuration, kernel command line and boot entries, network/IB configuration, installed driver,
    package and HCA firmware versions and C(mlxconfig -d <dev> query) (when installed). Each file or command output
    is one entry with its content (base64), sha256, size, owner, group and mode (C(docs/backup.md)).
  - A source that is not there is an entry with status C(absent); one that cannot be read is C(error).
    Nothing is skipped silently. A symbolic link or a setuid/setgid/sticky file is read as evidence only (C(restore)
    false, C(note) says why) - a restore never follows links and never sets those bits. More than 1000 entries or
    64 MiB in all turn the rest into C(error) entries; one file or output holds at most 8 MiB.
    The controller step M(gpuops.cluster.backup) stores and verifies the entries.
  - With O(redfish), reads the BIOS attributes and the BMC settings (Manager, NetworkProtocol) of the system over
    Redfish instead (run it delegated to the controller); every key that looks like a secret (passwords, tokens,
    keys) is removed before it is returned. Account passwords are never read.
  - With O(bios_restore), PATCHes the BIOS settings object (C(@Redfish.Settings) / C(Bios/Settings)) with the
    attributes that differ; the BMC applies them at the next reset of the system (O(bios_reset) resets it).
extends_documentation_fragment: [gpuops.cluster.common.attributes_action]
options:
  sources:
    description:
      - The sources to read, each a dict with one of C(path), C(glob), C(argv) (with C(name)), C(sysfs_fw),
        C(mlxconfig); C(restore=false) marks evidence that a restore never writes back. Default - the list in
        C(plugins/module_utils/_backup.py) (C(DEFAULT_SOURCES)).
    type: list
    elements: dict
  extra_paths:
    description: More files or glob patterns (absolute) to read besides O(sources).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds each command may run.
    type: float
    default: 30
  redfish:
    description:
      - Read the BIOS and BMC settings over Redfish (keys C(url), C(user), C(validate_certs), C(ca_path), C(auth),
        C(system_id)) instead of the node's files. The password is O(password), never part of this dict.
    type: dict
  password:
    description: The BMC password for O(redfish) (also E(GPUOPS_BMC_PASSWORD)). Never returned.
    type: str
  bios_restore:
    description: With O(redfish), the BIOS attributes to put back (the C(Attributes) of a snapshot's C(redfish/bios.json)).
    type: dict
  bios_reset:
    description: After a BIOS restore that changed something, reset the system (C(ForceRestart)) so that the BMC applies it.
    type: bool
    default: false
attributes:
  check_mode: {support: full, details: Reads only; with O(bios_restore) reports the attributes it would change.}
  diff_mode: {support: full, details: With O(bios_restore) the attributes before and after.}
  platform: {platforms: posix}
"""

EXAMPLES = r"""
- name: What the change touches
  gpuops.cluster.config_snapshot:
  register: snap

- name: BIOS attributes and BMC settings
  gpuops.cluster.config_snapshot:
    redfish: {url: "https://10.0.0.5", user: admin}
    password: "{{ bmc_password }}"
  delegate_to: localhost
"""

RETURN = r"""
entries:
  description: One per file or command output (C(status) C(ok), C(absent) or C(error)).
  returned: always
  type: list
  elements: dict
  sample:
    - {name: files/etc/slurm/gres.conf, source: /etc/slurm/gres.conf, kind: file, status: ok, sha256: "9f2c...",
       size: 81, mode: "0644", owner: root, group: root, restore: true, content: "TmFtZT1ncHUK"}
counts:
  description: Entries per status.
  returned: always
  type: dict
  sample: {ok: 9, absent: 14, error: 0}
bios_changes:
  description: With O(bios_restore), the attributes PATCHed (or that would be).
  returned: with bios_restore
  type: dict
  sample: {BootMode: Uefi}
"""

import base64
import json

from ansible.module_utils.basic import AnsibleModule, env_fallback

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as B
from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http, HttpError
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

_REDFISH_KEYS = ("url", "user", "validate_certs", "ca_path", "auth", "system_id")


def _http(module, rf):
    unknown = sorted(set(rf) - set(_REDFISH_KEYS))
    if unknown or not rf.get("url"):
        module.fail_json(msg="redfish needs url and takes only %s (got %s)" % (", ".join(_REDFISH_KEYS), unknown))
    try:
        return Http(rf["url"], rf.get("user"), module.params["password"], validate_certs=bool(rf.get("validate_certs", True)),
                    timeout=30, ca_path=rf.get("ca_path"), auth=rf.get("auth") or "auto")  # fmt: skip
    except (HttpError, ValueError) as exc:
        module.fail_json(msg="redfish: %s" % exc)


def _bios_restore(module, http, rf, result):
    entries = B.redfish_entries(http, rf.get("system_id"))
    bios = [e for e in entries if e["name"] == "redfish/bios.json" and e["status"] == "ok"]
    if not bios:
        errs = [e.get("error") for e in entries if e["status"] == "error"]
        module.fail_json(msg="cannot read the BIOS attributes: %s" % ("; ".join(errs) or "no Bios resource"))
    doc = json.loads(base64.b64decode(bios[0]["content"]))
    changes = B.bios_changes(module.params["bios_restore"], doc["Attributes"])
    result.update(changed=bool(changes), bios_changes=changes, settings_object=doc["settings_object"])
    result["diff"] = {"before": {k: doc["Attributes"][k] for k in changes}, "after": changes}
    if not changes or module.check_mode:
        return
    target = doc["settings_object"] or doc["bios"] + "/Settings"
    resp = http.request("PATCH", target, {"Attributes": changes})
    if not 200 <= resp.status < 300:
        module.fail_json(msg="PATCH %s refused: HTTP %s" % (target, resp.status), **result)
    result["pending_reset"] = True
    if module.params["bios_reset"]:
        resp = http.post_json(doc["system"] + "/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        result["pending_reset"] = not 200 <= resp.status < 300


def main():
    module = AnsibleModule(
        argument_spec={
            "sources": {"type": "list", "elements": "dict"},
            "extra_paths": {"type": "list", "elements": "str", "default": []},
            "timeout": {"type": "float", "default": 30},
            "redfish": {"type": "dict"},
            "password": {"type": "str", "no_log": True, "fallback": (env_fallback, ["GPUOPS_BMC_PASSWORD"])},
            "bios_restore": {"type": "dict"},
            "bios_reset": {"type": "bool", "default": False},
        },
        required_by={"bios_restore": ["redfish"]},
        supports_check_mode=True,
    )
    p = module.params
    result = {"changed": False}
    if p["redfish"]:
        rf = dict(p["redfish"])
        with _http(module, rf) as http:
            try:
                if p["bios_restore"] is not None:
                    _bios_restore(module, http, rf, result)
                    module.exit_json(**result)
                entries = B.redfish_entries(http, rf.get("system_id"))
            except HttpError as exc:
                module.fail_json(msg="redfish: %s" % exc, **result)
    else:
        sources = B.with_extra_paths(B.DEFAULT_SOURCES if p["sources"] is None else p["sources"], p["extra_paths"])
        try:
            entries = [B.filter_packages(e) for e in B.collect(sources, run_command, which, p["timeout"])]
        except B.BackupSourceError as exc:
            module.fail_json(msg=str(exc))
    counts = {s: sum(1 for e in entries if e["status"] == s) for s in ("ok", "absent", "error")}
    module.exit_json(entries=entries, counts=counts, **result)


if __name__ == "__main__":
    main()
