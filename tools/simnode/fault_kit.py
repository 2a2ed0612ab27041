"""The fault catalogue's registry and the helpers its entries share (simnode.faults is the API).

`@fault(name, doc, ...)` registers a function `fn(state, rng, **params) -> [expected finding, ...]` in FAULTS.
"""

from __future__ import annotations


class Fault:
    def __init__(self, name, fn, doc, needs_previous=False, benign=False, scope="node"):
        self.name = name
        self.fn = fn
        self.doc = doc
        self.needs_previous = needs_previous
        self.benign = benign
        self.scope = scope


FAULTS: dict = {}


def fault(name, doc, needs_previous=False, benign=False, scope="node"):
    def deco(fn):
        FAULTS[name] = Fault(name, fn, doc, needs_previous, benign, scope)
        return fn

    return deco


def _exp(check, component, severity, code=None):
    return {"check": check, "component": component, "severity_hint": severity, "code": code}


def _pci(g: dict) -> str:
    """Kernel form of a GPU bus id: 0000:19:00 (no function, lower case)."""
    return g["bus_id"][4:-2].lower()


def _log(state: dict, msg: str, ago: float = 600.0) -> None:
    state["kernel_log"].append({"time": state["now"] - ago, "msg": msg})


def _xid(state, g, code, text, pid="'<unknown>'", name="<unknown>", ago=600.0):
    _log(state, "NVRM: Xid (PCI:%s): %d, pid=%s, name=%s, %s" % (_pci(g), code, pid, name, text), ago)


def _pick_gpu(state, rng, gpu=None) -> dict:
    gpus = [g for g in state["gpus"] if not g.get("lost")]
    if gpu is not None:
        return next(g for g in state["gpus"] if g["index"] == int(gpu))
    return rng.choice(gpus)


def _pick_hca(state, rng, hca=None) -> dict:
    if hca is not None:
        return next(h for h in state["hcas"] if h["name"] == hca or h["name"] == "mlx5_%s" % hca)
    return rng.choice(state["hcas"])


def _diag_stops(state, g) -> list:
    """DCGM 3.x refuses to run with a pending row remap: the capture's dcgmi diag shows the Deployment error."""
    if str(state["dcgm"].get("version", "3")).split(".")[0] < "4":
        return [_exp("gpu.diag", "gpu%d" % g["index"], "P1", "fail")]
    return []


def _load(g, util=100, power=None):
    g["util_pct"] = util
    g["mem_util_pct"] = util // 3
    g["mem_used_mib"] = 71000 if util else 0
    g["clocks"].update({"graphics_mhz": 1980, "sm_mhz": 1980, "video_mhz": 1545})
    g["power_draw_w"] = power if power is not None else 655.0
    g["temp_c"] = max(g["temp_c"], 62)
    g["mem_temp_c"] = max(g["mem_temp_c"], 58)
    if util and not g["processes"]:
        g["processes"] = [{"pid": 41000 + g["index"], "name": "python3", "type": "C", "used_mib": 70400}]


def _remap_failed(g: dict) -> None:
    """A bank without spare rows: remapping failure, 8 uncorrectable remaps, the histogram of a failed bank."""
    g["remap"]["failure"] = True
    g["remap"]["unc"] += 8
    g["remap"]["histogram"].update({"max": 2552, "high": 4, "partial": 2, "low": 1, "none": 1})
