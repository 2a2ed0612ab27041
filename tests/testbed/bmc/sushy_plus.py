"""sushy-emulator --fake, plus what the fake driver lacks for GPU-cluster tests (gpuops.cluster test bed).

In-process additions to sushy-tools 2.2.0 (no fork of its code):
  * /redfish/v1/UpdateService/FirmwareInventory[/<system>-<COMP>]: BIOS, BMC, GPU0..7, HCA0..7 per system
  * UpdateService.SimpleUpdate like real BMCs: 202 Accepted + Location of a TaskMonitor; the Task stays
    Running for BMC_TASK_POLLS polls, then Completed (or Exception when the ImageURI contains "fail").
    The new version is *pending* and becomes visible only after ComputerSystem.Reset of that system.
  * Systems/<id>/Memory (DIMM serials), Systems/<id>/LogServices/SEL/Entries (paginated, 2 per page)
  * Chassis/<id>/Power (legacy, PSU serials), PowerSubsystem/PowerSupplies, ThermalSubsystem/Fans,
    ThermalSubsystem/LeakDetection/LeakDetectors, Sensors (coolant: CoolantFlow LiquidFlow, CoolantPressure
    PressurekPa, CoolantSupplyTemp Temperature at LiquidInlet)
  * Fault injection (test-only, not Redfish): POST /emulator/faults {"psu": "PSU1", "psu_health": "Critical",
    "leak": "Critical", "coolant_flow": "Critical", "coolant_pressure": "Warning", "coolant_temp": "Critical"};
    DELETE /emulator/faults clears. Injected faults also add SEL log entries.
  * Power actions apply at once (the stock fake driver waits a random 1-11 s).
  * BIOS attributes with pending settings applied at ComputerSystem.Reset (sushy_plus_bios.py).
  * A SessionService (X-Auth-Token sessions beside Basic auth): sushy_plus_sessions.py.
  * Fault switches (test-only): POST /emulator/switches {"refuse_power": "<BMC message>", "stall": ["<path prefix>"],
    "die_on_update": N}; DELETE clears (sushy_plus_switches.py).
State: $BMC_WORK/plus-state.json (one file per run).
Run:  SUSHY_EMULATOR_CONFIG=sushy-fake.conf python sushy_plus.py --fake -i 127.0.0.1 -p 8443 --ssl-...
"""

import os

import flask

# the Redfish additions register their routes on the sushy-tools app when imported (order matters: Flask runs
# after_request hooks in reverse order of registration)
import sushy_plus_bios
import sushy_plus_chassis
import sushy_plus_sessions
import sushy_plus_switches
import sushy_plus_systems
import sushy_plus_update
from sushy_plus_state import (
    LOCK,
    _add_log,
    _load,
    _save,
    app,
    W,
)
from sushy_tools.emulator import main as sushy_main

#: The modules whose routes make up the additions.
ROUTES = (sushy_plus_systems, sushy_plus_chassis, sushy_plus_update, sushy_plus_sessions, sushy_plus_switches,
          sushy_plus_bios)


# ------------------------------------------------------------------------------------------ fault injection


@app.route("/emulator/faults", methods=["GET", "POST", "DELETE"])
def faults():
    with LOCK:
        st = _load()
        if flask.request.method == "DELETE":
            st["faults"] = {}
            st["log"] = []
        elif flask.request.method == "POST":
            body = flask.request.get_json(silent=True) or {}
            chassis = body.pop("chassis", "*")
            st["faults"].setdefault(chassis, {}).update(body)
            system = body.pop("system", "*")
            if body.get("psu"):
                _add_log(
                    st, system, body.get("psu_health", "Critical"), "%s Failure detected" % body["psu"], "Power Supply"
                )
            if body.get("leak") and body["leak"] != "OK":
                _add_log(st, system, body["leak"], "Coolant leak detected", "Cooling Device")
            for key, text in (("coolant_flow", "Coolant flow below lower threshold"),
                              ("coolant_pressure", "Coolant supply pressure out of range"),
                              ("coolant_temp", "Coolant supply temperature above upper threshold")):  # fmt: skip
                if body.get(key) and body[key] != "OK":
                    _add_log(st, system, body[key], text, "Cooling Device")
        _save(st)
        return flask.jsonify({"faults": st["faults"], "pending": st["pending"]})


if __name__ == "__main__":
    os.makedirs(W, exist_ok=True)
    raise SystemExit(sushy_main.main())
