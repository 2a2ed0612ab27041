"""sushy_plus: fault switches of the Redfish emulator (test-only, not Redfish; tests/testbed/bmc/README.md).

``POST /emulator/switches`` with any of these keys (merged into the current switches), ``DELETE`` clears them all,
``GET`` shows them. Stored in plus-state.json under ``switches``.

* ``"refuse_power": "<BMC message>"``: ``ComputerSystem.Reset`` with a power-off type (ForceOff, GracefulShutdown,
  PushPowerButton; ``"refuse_power_types": [...]`` to choose) answers ``409 Conflict`` with a Redfish error body
  (``Base.1.8.ResourceInUse``, the message in ``@Message.ExtendedInfo``) and the power state does not change.
* ``"stall": ["/redfish/v1/UpdateService", ...]``: a request whose path starts with one of these prefixes is
  accepted and never answered (the handler waits until the switch is cleared, or ``stall_seconds``, default 3600).
  Other paths, and ``/emulator/*``, keep answering.
* ``"die_on_update": N``: the emulator process exits (connection refused from then on) after accepting a
  SimpleUpdate (N = 0, just after its 202) or at the N-th poll of the task it started. ``bmc.sh up`` brings it back
  (with a fresh state).
"""

import os
import re
import threading
import time

import flask

from sushy_plus_state import LOCK, _load, _save, app

POWER_OFF_TYPES = ("ForceOff", "GracefulShutdown", "PushPowerButton")
_RESET = re.compile(r"^/redfish/v1/Systems/[^/]+/Actions/ComputerSystem\.Reset/?$")
_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
_TASK = re.compile(r"^/redfish/v1/TaskService/(?:Tasks|TaskMonitors)/(\d+)$")
_POLLS = {}  # task id -> polls seen since the die_on_update switch was set


def _switches():
    with LOCK:
        return dict(_load().get("switches") or {})


@app.route("/emulator/switches", methods=["GET", "POST", "DELETE"])
def switches():
    with LOCK:
        st = _load()
        if flask.request.method == "DELETE":
            st["switches"] = {}
            _POLLS.clear()
        elif flask.request.method == "POST":
            body = flask.request.get_json(silent=True)
            if not isinstance(body, dict):
                return flask.jsonify({"error": "a JSON object of switches is required"}), 400
            st.setdefault("switches", {}).update(body)
        _save(st)
        return flask.jsonify({"switches": st.get("switches") or {}})


def _die_soon():
    """Exit the whole emulator right after the current response went out: connection refused from now on."""
    threading.Timer(0.3, os._exit, args=(0,)).start()


def _dies(sw):
    value = sw.get("die_on_update")
    return value is not None and value is not False  # 0 is a valid count (0 == False)


def _die_at(sw):
    """die_on_update as a poll count (true = 0: right after the SimpleUpdate answer)."""
    value = sw.get("die_on_update")
    return 0 if value is True else int(value)


def _refusal(message):
    body = {
        "error": {
            "code": "Base.1.8.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information.",
            "@Message.ExtendedInfo": [
                {
                    "@odata.type": "#Message.v1_1_1.Message",
                    "MessageId": "Base.1.8.ResourceInUse",
                    "Message": message,
                    "Severity": "Warning",
                    "MessageSeverity": "Warning",
                    "Resolution": "Remove the condition and resubmit the request if the operation failed.",
                }
            ],
        }
    }
    return flask.jsonify(body), 409


def _stall(path, sw):
    prefixes = sw.get("stall") or []
    if isinstance(prefixes, str):
        prefixes = [prefixes]
    if not any(path.startswith(p) for p in prefixes):
        return
    deadline = time.monotonic() + float(sw.get("stall_seconds", 3600))
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _switches().get("stall") or []
        if not any(path.startswith(p) for p in ([now] if isinstance(now, str) else now)):
            return


@app.before_request
def _apply_switches():
    path = flask.request.path
    if path.startswith("/emulator/"):
        return None
    sw = _switches()
    if not sw:
        return None
    _stall(path, sw)
    if sw.get("refuse_power") and flask.request.method == "POST" and _RESET.match(path):
        body = flask.request.get_json(silent=True) or {}
        if body.get("ResetType") in (sw.get("refuse_power_types") or POWER_OFF_TYPES):
            return _refusal(str(sw["refuse_power"]))
    m = _TASK.match(path.rstrip("/"))
    if m and _dies(sw) and flask.request.method == "GET":
        tid = m.group(1)
        _POLLS[tid] = _POLLS.get(tid, 0) + 1
        if _POLLS[tid] >= _die_at(sw):
            _die_soon()
    return None


@app.after_request
def _die_after_update(resp):
    if flask.request.path.rstrip("/") == _UPDATE and flask.request.method == "POST" and resp.status_code == 202:
        sw = _switches()
        if _dies(sw) and _die_at(sw) == 0:
            _die_soon()
    return resp
