# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_firmware_update
short_description: Flash firmware through a BMC (Redfish SimpleUpdate, task monitor polling) and reset or power cycle
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - With O(image_uri), POSTs C(UpdateService.SimpleUpdate) and polls the returned task monitor (202 + C(Location),
    C(Retry-After) honoured) until the task completes, fails or O(timeout) passes. The image is then staged; it
    takes effect after the activation (BMC reset, host reboot, power cycle).
  - With O(reset_type), POSTs C(ComputerSystem.Reset) of O(system_id) (after the update, when both are given) -
    C(PowerCycle) for a DC cycle, C(FullPowerCycle) for an AC-like one, C(ForceRestart), ...
  - Runs wherever the BMC is reachable, usually the controller (delegate the task to C(localhost)); C(throttle) the task.
  - Why not C(community.general.redfish_command)? Its SimpleUpdate returns a handle that a separate
    C(redfish_info) C(GetUpdateStatus) loop must poll, without one timeout for the whole update and without the
    task's failure reason in a failed result; this module does the 202/TaskMonitor protocol in one task.
extends_documentation_fragment: [gpuops.cluster.common.attributes_action]
options:
  url: {description: "BMC base URL, e.g. C(https://10.0.0.5).", type: str, required: true}
  user: {description: BMC user., type: str}
  password: {description: BMC password (also C(GPUOPS_BMC_PASSWORD))., type: str}
  validate_certs: {description: Verify the BMC's certificate., type: bool, default: true}
  ca_path: {description: "A PEM file of CA certificates the BMC's certificate is verified against.", type: path}
  auth:
    description:
      - C(session) (an C(X-Auth-Token) from the service's SessionService, deleted at the end), C(basic) (HTTP Basic
        auth on every request) or C(auto) (a session when the service has a SessionService, else Basic auth).
    type: str
    choices: [auto, session, basic]
    default: auto
  image_uri: {description: Image URI the BMC fetches (C(https://repo/bios-2.4.1.bin))., type: str}
  targets: {description: SimpleUpdate C(Targets) (FirmwareInventory / resource URIs)., type: list, elements: str}
  transfer_protocol: {description: "SimpleUpdate C(TransferProtocol) (C(HTTPS), C(HTTP), C(NFS), ...).", type: str}
  reset_type:
    description: C(ComputerSystem.Reset) ResetType sent after the update (or alone).
    type: str
    choices: ["On", ForceOff, GracefulShutdown, GracefulRestart, ForceRestart, ForceOn, PushPowerButton, PowerCycle,
              FullPowerCycle, Nmi]
  system_id: {description: "Systems member for the reset; default the only one (or the first).", type: str}
  timeout: {description: Seconds the update task may take., type: float, default: 1800}
  request_timeout: {description: Seconds per HTTP request., type: float, default: 30}
  power_off_s:
    description:
      - Seconds between C(ForceOff) and C(On) when the BMC does not offer the power cycle asked for (its
        C(ResetType@Redfish.AllowableValues)); the cycle is then done as C(ForceOff), wait, C(On).
    type: float
    default: 5
attributes:
  check_mode: {support: full, details: Nothing is sent but GETs; reports what would be done.}
  diff_mode: {support: none}
  platform: {platforms: posix}
"""

EXAMPLES = r"""
- name: Flash the BIOS through the BMC, then power cycle
  gpuops.cluster.redfish_firmware_update:
    url: "https://{{ bmc_address }}"
    user: admin
    password: "{{ vault_bmc_password }}"
    image_uri: "https://repo.example/fw/bios-2.4.1.bin"
    reset_type: PowerCycle
    timeout: 1200
  delegate_to: localhost
  throttle: 4
"""

RETURN = r"""
task: {description: The final Task document (or null)., returned: when image_uri, type: dict, sample: {TaskState: Completed}}
outcome:
  description: "Task summary: id, state, status, percent, message."
  returned: when image_uri
  type: dict
  sample: {state: Completed, percent: 100, message: "applied; pending reset"}
polls: {description: Task monitor GETs., returned: when image_uri, type: int, sample: 4}
monitor:
  description: The task monitor URI.
  returned: when image_uri
  type: str
  sample: /redfish/v1/TaskService/TaskMonitors/1000
reset:
  description: "The reset: system URI, ResetType asked for, the ResetTypes sent in order."
  returned: when reset_type
  type: dict
  sample: {system: /redfish/v1/Systems/1, type: PowerCycle, sequence: [ForceOff, "On"]}
"""

import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule, env_fallback  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.module_utils import _fwupdate as F  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http, HttpError  # noqa: E402


def _system(http, system_id):
    if system_id:
        return "/redfish/v1/Systems/%s" % system_id
    members = http.get_members("/redfish/v1/Systems")
    if not members:
        raise HttpError("no Systems member", http.url("/redfish/v1/Systems"))
    return members[0]["@odata.id"]


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "user": {"type": "str"},
            "password": {"type": "str", "no_log": True, "fallback": (env_fallback, ["GPUOPS_BMC_PASSWORD"])},
            "validate_certs": {"type": "bool", "default": True},
            "ca_path": {"type": "path"},
            "auth": {"type": "str", "choices": ["auto", "session", "basic"], "default": "auto"},
            "image_uri": {"type": "str"},
            "targets": {"type": "list", "elements": "str"},
            "transfer_protocol": {"type": "str"},
            "reset_type": {"type": "str", "choices": list(F.RESET_TYPES)},
            "system_id": {"type": "str"},
            "timeout": {"type": "float", "default": 1800},
            "request_timeout": {"type": "float", "default": 30},
            "power_off_s": {"type": "float", "default": 5},
        },
        required_one_of=[["image_uri", "reset_type"]],
        supports_check_mode=True,
    )
    p = module.params
    result = {"changed": False}
    try:
        http = Http(p["url"], p["user"], p["password"], validate_certs=p["validate_certs"],
                    timeout=p["request_timeout"], ca_path=p["ca_path"], auth=p["auth"])  # fmt: skip
    except HttpError as exc:
        module.fail_json(msg="redfish: %s" % exc, **result)
    with http:  # a session is deleted at the end, whatever happened
        _run(module, http, result)
    module.exit_json(**result)


def _run(module, http, result):
    """The update and/or reset; fails the module with ``result`` so far on an error."""
    p = module.params
    try:
        if p["image_uri"]:
            body = F.simple_update_body(p["image_uri"], p["targets"], p["transfer_protocol"])
            result.update(changed=True, monitor=None, task=None, outcome=None, polls=0)
            if not module.check_mode:
                r = http.post_json(F.SIMPLE_UPDATE, body)
                acc = F.accepted(r.status, r.headers, r.json)
                result.update(monitor=acc["monitor"], task=acc["task"])
                if not acc["done"]:

                    def get(url):
                        resp = http.request("GET", url)
                        return resp.status, resp.headers, resp.json

                    polled = F.poll_task(get, acc["monitor"], p["timeout"], interval=1.0, clock=time.monotonic)
                    result.update(task=polled["task"], outcome=polled["outcome"], polls=polled["polls"])
        if p["reset_type"]:
            system = _system(http, p["system_id"])
            doc = http.get_json(system)
            action = (doc.get("Actions") or {}).get("#ComputerSystem.Reset") or {}
            target = action.get("target") or system + "/Actions/ComputerSystem.Reset"
            seq = F.reset_sequence(p["reset_type"], action.get("ResetType@Redfish.AllowableValues"))
            result.update(changed=True, reset={"system": system, "type": p["reset_type"], "sequence": seq})
            for i, step in enumerate([] if module.check_mode else seq):
                if i:
                    time.sleep(p["power_off_s"])
                r = http.post_json(target, {"ResetType": step})
                if not 200 <= r.status < 300:
                    module.fail_json(msg="reset %s refused: HTTP %s%s" % (step, r.status, F.error_message(r.json)),
                                     **result)  # fmt: skip
    except F.UpdateError as exc:
        result.update(task=exc.task, timed_out=exc.timed_out)
        module.fail_json(msg=exc.message, **result)
    except (HttpError, F.ParseError, KeyError, TypeError, ValueError) as exc:
        module.fail_json(msg="redfish: %s" % exc, **result)


if __name__ == "__main__":
    main()
