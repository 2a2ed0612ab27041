# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Firmware and driver upgrades: baseline + compatibility matrix validation, current versions, per-node plan.

Pure functions, no Ansible imports (controller side, but Python 3.8 compatible). Format and semantics are
documented in docs/upgrades.md.

* ``validate_baseline(baseline, matrix)`` -> list of problems (empty: the targets may be rolled out).
* ``current_versions(facts)`` -> the installed versions of one node, from the facts of docs/facts.md.
* ``plan_node(current, target, node_class)`` -> ordered upgrade steps (empty list: the node is at target).
* ``pending_text(steps)`` / ``components_text(nodes)`` -> the verify failure and plan lines the role shows.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: Components a baseline may name, per node class.
COMPONENTS = ("bmc", "bios", "vbios", "hca_fw", "driver", "fabric_manager", "cuda", "ofed")
#: Components that are only checked against the matrix, never flashed by the plan (see docs/upgrades.md):
#: ``cuda`` follows from the driver (the driver's supported CUDA), ``ofed`` has no fact yet.
VALIDATE_ONLY = ("cuda", "ofed")
#: Components with a compatibility range per driver branch in the matrix.
RANGED = ("cuda", "vbios", "hca_fw", "ofed", "bmc", "bios")
MATRIX_KEYS = frozenset(("fabric_manager_matches_driver", "require_driver_entry", "driver"))
RANGE_KEYS = frozenset(("min", "max"))

#: Activations, weakest first. ``reset`` resets the component itself (BMC reset, mlxfwreset), the host stays up.
ACTIVATIONS = ("none", "reset", "reboot", "dc_power_cycle", "ac_power_cycle")

#: Step order and defaults: BMC -> BIOS -> GPU/baseboard -> HCA -> driver + fabric manager together.
#: est_duration_s includes the activation. Override per node class with ``methods`` (see plan_node()).
DEFAULT_METHODS: Dict[str, Dict[str, Any]] = {
    "bmc": {"tool": "redfish_simple_update", "activation": "reset", "est_duration_s": 900},
    "bios": {"tool": "redfish_simple_update", "activation": "reboot", "est_duration_s": 1200},
    "vbios": {"tool": "nvfwupd", "activation": "dc_power_cycle", "est_duration_s": 1800},
    "hca_fw": {"tool": "mlxfwmanager", "activation": "reboot", "est_duration_s": 900},
    "driver": {"tool": "apt", "activation": "reboot", "est_duration_s": 900},
}
STEP_ORDER = ("bmc", "bios", "vbios", "hca_fw", "driver")
METHOD_KEYS = frozenset(("tool", "activation", "est_duration_s"))
TOOLS = frozenset(("redfish_simple_update", "nvfwupd", "mlxfwmanager", "apt", "dnf", "manual"))

_BMC_WORDS = re.compile(r"(?:^|[^a-z])(bmc|idrac|ilo|xcc|imm|cimc|manager)(?:[^a-z]|$)|hostbmc|bmc_", re.IGNORECASE)
_BIOS_WORDS = re.compile(r"(?:^|[^a-z])(bios|uefi|system rom)(?:[^a-z]|$)|hostbios|bios_", re.IGNORECASE)
_NOT_HOST = re.compile(r"gpu|hca|nic|nvme|psu|power|cpld|fpga|hgx|erot|retimer|nvswitch|disk|drive", re.IGNORECASE)
#: Inventory entries that are not the running image: Dell "Previous-...", Lenovo "BMC-Backup", staged updates.
_NOT_ACTIVE = re.compile(r"previous|backup|pending|staged|rollback|recovery|secondary|inactive", re.IGNORECASE)


#: A version as vendors print it: "550.127.05", "28.41.1000", "1.45.455b66-rev4", "U32 v2.52 (11/17/2021)".
_VERSION_TEXT = re.compile(r"^[0-9A-Za-z][\x20-\x7e]{0,127}$")


class UpgradeError(ValueError):
    """Invalid input to the planner (a programming or inventory error, named by ``key``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__("%s: %s" % (key, message))
        self.key = key
        self.message = message


# ------------------------------------------------------------------------------------------ versions


def version_key(version: Any) -> Tuple[Tuple[int, Any], ...]:
    """A sort key for dotted versions: ``550.127.05`` > ``550.54.15``; numeric parts compare as numbers.

    Parts are split on ``.``, ``-``, ``_``, ``:``, ``/``, parentheses and blanks; a numeric part sorts before a
    text part at the same place, so mixed versions never raise TypeError.
    """
    parts = [p for p in re.split(r"[.\-_:\s/()]+", str(version).strip()) if p != ""]
    return tuple((0, int(p)) if p.isdigit() else (1, p.lower()) for p in parts)


def compare_versions(a: Any, b: Any) -> int:
    """-1, 0 or 1. ``550.127.05`` equals ``550.127.5`` (numeric parts)."""
    ka, kb = version_key(a), version_key(b)
    return (ka > kb) - (ka < kb)


def in_range(version: Any, rng: Dict[str, Any]) -> bool:
    """Whether ``version`` lies within ``{min, max}`` (both inclusive, both optional).

    Bounds compare on as many parts as the bound has: ``max: "28.43"`` admits ``28.43.2100``, ``min: "12"``
    admits ``12.0``. So a range can name a branch without knowing its last build.
    """
    v = version_key(version)
    lo, hi = rng.get("min"), rng.get("max")
    if lo is not None:
        k = version_key(lo)
        if v[: len(k)] < k:
            return False
    if hi is not None:
        k = version_key(hi)
        if v[: len(k)] > k:
            return False
    return True


def _range_text(rng: Dict[str, Any]) -> str:
    lo, hi = rng.get("min"), rng.get("max")
    if lo is not None and hi is not None:
        return "%s..%s" % (lo, hi)
    if lo is not None:
        return ">= %s" % lo
    if hi is not None:
        return "<= %s" % hi
    return "any"


def _version_value(value: Any, key: str, problems: List[Dict[str, Any]], node_class: Optional[str]) -> Optional[str]:
    """A version as a string, or None after recording why it is not one."""
    if isinstance(value, bool) or value is None:
        problems.append(_problem(node_class, key, "must be a version string, got %r" % (value,)))
        return None
    if isinstance(value, float):
        problems.append(
            _problem(
                node_class,
                key,
                "version %r was read as a number: quote it (YAML turns 12.10 into 12.1)" % (value,),
            )
        )
        return None
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or not _VERSION_TEXT.match(value.strip()):
        problems.append(_problem(node_class, key, "not a version: %r" % (value,)))
        return None
    return value.strip()


def _problem(node_class: Optional[str], key: str, message: str) -> Dict[str, Any]:
    return {"node_class": node_class, "key": key, "message": "%s: %s" % (key, message)}


# ------------------------------------------------------------------------------------------ validation


def _check_matrix(matrix: Any, problems: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Structural checks of the matrix; returns the usable part {fm_equal, require_entry, driver: {branch: ranges}}."""
    out: Dict[str, Any] = {"fm_equal": True, "require_entry": True, "driver": {}}
    if matrix is None:
        return out
    if not isinstance(matrix, dict):
        problems.append(_problem(None, "gpuops_compat_matrix", "must be a mapping, got %s" % type(matrix).__name__))
        return out
    for key in sorted(matrix, key=str):
        if key not in MATRIX_KEYS:
            problems.append(
                _problem(
                    None,
                    "gpuops_compat_matrix.%s" % key,
                    "unknown key (known: %s)" % ", ".join(sorted(MATRIX_KEYS)),
                )
            )
    for flag, name in (("fm_equal", "fabric_manager_matches_driver"), ("require_entry", "require_driver_entry")):
        if name in matrix:
            if isinstance(matrix[name], bool):
                out[flag] = matrix[name]
            else:
                problems.append(_problem(None, "gpuops_compat_matrix.%s" % name, "must be true or false"))
    drivers = matrix.get("driver", {})
    if not isinstance(drivers, dict):
        problems.append(_problem(None, "gpuops_compat_matrix.driver", "must be a mapping of driver branch -> ranges"))
        return out
    for branch in sorted(drivers, key=str):
        ranges = _check_branch(branch, drivers[branch], problems)
        if ranges is not None:
            out["driver"][str(branch)] = ranges
    return out


def _check_branch(branch: Any, entry: Any, problems: List[Dict[str, Any]]) -> Optional[Dict[str, Dict[str, str]]]:
    """One driver branch of the matrix: its usable ranges {component: {min, max}}, or None when unusable."""
    bkey = "gpuops_compat_matrix.driver.%s" % branch
    if isinstance(branch, float):
        problems.append(_problem(None, bkey, "driver branch %r was read as a number: quote it" % branch))
        return None
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        problems.append(_problem(None, bkey, "must be a mapping of component -> {min, max}"))
        return None
    ranges: Dict[str, Dict[str, str]] = {}
    for comp in sorted(entry, key=str):
        ckey = "%s.%s" % (bkey, comp)
        if comp not in RANGED:
            problems.append(_problem(None, ckey, "unknown component (known: %s)" % ", ".join(RANGED)))
            continue
        rng = entry[comp]
        if not isinstance(rng, dict):
            problems.append(_problem(None, ckey, "must be a mapping {min, max}"))
            continue
        clean: Dict[str, str] = {}
        for bound in sorted(rng, key=str):
            if bound not in RANGE_KEYS:
                problems.append(_problem(None, "%s.%s" % (ckey, bound), "unknown key (known: max, min)"))
                continue
            v = _version_value(rng[bound], "%s.%s" % (ckey, bound), problems, None)
            if v is not None:
                clean[bound] = v
        ranges[comp] = clean
    return ranges


def matrix_entry(driver: str, branches: Dict[str, Any]) -> Optional[str]:
    """The most specific matrix branch matching a driver version: ``550.127`` beats ``550`` for 550.127.05."""
    best, best_len = None, -1
    dk = version_key(driver)
    for branch in branches:
        bk = version_key(branch)
        if bk and dk[: len(bk)] == bk and len(bk) > best_len:
            best, best_len = branch, len(bk)
    return best


def validate_baseline(baseline: Any, matrix: Any = None) -> List[Dict[str, Any]]:
    """Every problem of a baseline against the compatibility matrix; an empty list means it may be rolled out.

    Each problem is ``{node_class, key, message}``; ``message`` names the key and says why
    (``h100-sxm-8.fabric_manager: 550.127.04 must equal the driver 550.127.05``).
    """
    problems: List[Dict[str, Any]] = []
    mat = _check_matrix(matrix, problems)
    if not isinstance(baseline, dict) or not baseline:
        problems.append(
            _problem(None, "gpuops_upgrade_baseline", "must be a non-empty mapping of node class -> component versions")
        )
        return problems
    for node_class in sorted(baseline, key=str):
        targets = baseline[node_class]
        nc = str(node_class)
        if not isinstance(targets, dict) or not targets:
            problems.append(_problem(nc, nc, "must be a non-empty mapping of component -> version"))
            continue
        versions: Dict[str, str] = {}
        for comp in sorted(targets, key=str):
            key = "%s.%s" % (nc, comp)
            if comp == "images":
                _check_images(nc, targets[comp], problems)
                continue
            if comp not in COMPONENTS:
                problems.append(_problem(nc, key, "unknown component (known: %s)" % ", ".join(COMPONENTS)))
                continue
            v = _version_value(targets[comp], key, problems, nc)
            if v is not None:
                versions[comp] = v
        _check_compat(nc, versions, mat, problems)
    return problems


def _check_images(nc: str, images: Any, problems: List[Dict[str, Any]]) -> None:
    """``images``: component -> ``{sha256: <64 hex>}``, the digest of the image a step flashes (docs/upgrades.md)."""
    if not isinstance(images, dict):
        problems.append(_problem(nc, "%s.images" % nc, "must be a mapping of component -> {sha256}"))
        return
    for comp in sorted(images, key=str):
        entry = images[comp]
        sha = entry.get("sha256") if isinstance(entry, dict) else None
        if comp not in COMPONENTS or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
            problems.append(
                _problem(nc, "%s.images.%s" % (nc, comp), "must be a known component with a sha256 (64 hex)")
            )


def _check_compat(nc: str, versions: Dict[str, str], mat: Dict[str, Any], problems: List[Dict[str, Any]]) -> None:
    driver = versions.get("driver")
    fm = versions.get("fabric_manager")
    if fm is not None and driver is None:
        problems.append(
            _problem(nc, "%s.fabric_manager" % nc, "a fabric manager target needs a driver target (they go together)")
        )
    if driver is None:
        return
    if mat["fm_equal"] and fm is not None and compare_versions(fm, driver) != 0:
        problems.append(
            _problem(
                nc,
                "%s.fabric_manager" % nc,
                "%s must equal the driver %s (the fabric manager refuses to start with another driver version)"
                % (fm, driver),
            )
        )
    branch = matrix_entry(driver, mat["driver"])
    if branch is None:
        if mat["require_entry"]:
            known = ", ".join(sorted(mat["driver"], key=version_key)) or "none"
            problems.append(
                _problem(
                    nc,
                    "%s.driver" % nc,
                    "driver %s has no entry in gpuops_compat_matrix.driver (branches known: %s)" % (driver, known),
                )
            )
        return
    for comp, rng in sorted(mat["driver"][branch].items()):
        have = versions.get(comp)
        if have is None or not rng:
            continue
        if not in_range(have, rng):
            problems.append(
                _problem(
                    nc,
                    "%s.%s" % (nc, comp),
                    "%s is outside %s for driver %s (gpuops_compat_matrix.driver.%s.%s)"
                    % (have, _range_text(rng), driver, branch, comp),
                )
            )


# ------------------------------------------------------------------------------------------ current versions


def _d(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _s(v: Any) -> Optional[str]:
    if v is None or isinstance(v, bool):
        return None
    s = str(v).strip()
    return s or None


def _firmware_match(firmware: List[Any], words: Any) -> Optional[str]:
    """The version of the first Redfish FirmwareInventory entry whose id or name says BMC (or BIOS)."""
    for fw in firmware:
        if not isinstance(fw, dict):
            continue
        label = "%s %s" % (fw.get("id") or "", fw.get("name") or "")
        if words.search(label) and not _NOT_HOST.search(label) and not _NOT_ACTIVE.search(label):
            v = _s(fw.get("version"))
            if v:
                return v
    return None


def current_versions(facts: Any) -> Dict[str, Any]:
    """Installed versions of one node from its facts (docs/facts.md); ``None`` where the facts do not say.

    ``vbios`` is the list of per-GPU versions (GPU index order) and ``hca_fw`` of per-HCA versions (``hca_names``
    in the same order). BMC: the Redfish FirmwareInventory entry for the BMC, else the manager's
    FirmwareVersion, else IPMI ``mc info``. BIOS: the system's BiosVersion, else the inventory's BIOS entry.
    """
    facts = _d(facts)
    gpu, ib, bmc, node = _d(facts.get("gpu")), _d(facts.get("ib")), _d(facts.get("bmc")), _d(facts.get("node"))
    gpus = sorted(
        (g for g in _l(gpu.get("gpus")) if isinstance(g, dict)),
        key=lambda g: g.get("index") if isinstance(g.get("index"), int) else 1 << 30,
    )
    driver = _s(gpu.get("driver_version"))
    if driver is None:
        driver = next((_s(g.get("driver_version")) for g in gpus if _s(g.get("driver_version"))), None)
    cuda = _s(gpu.get("cuda_version"))
    if cuda is None:
        cuda = next((_s(g.get("cuda_version")) for g in gpus if _s(g.get("cuda_version"))), None)
    fm = _s(node.get("fabric_manager_version"))
    if fm is None:
        fm = _s(_d(_d(node.get("services")).get("nvidia-fabricmanager")).get("version"))
    hcas = sorted((h for h in _l(ib.get("hcas")) if isinstance(h, dict)), key=lambda h: str(h.get("name") or ""))
    redfish = _d(bmc.get("redfish"))
    firmware = _l(redfish.get("firmware"))
    bmc_v = _firmware_match(firmware, _BMC_WORDS)
    if bmc_v is None:
        bmc_v = next((_s(m.get("firmware_version")) for m in _l(redfish.get("managers")) if isinstance(m, dict)), None)
    if bmc_v is None:
        bmc_v = _s(_d(bmc.get("mc")).get("firmware_revision"))
    bios = next((_s(s.get("bios_version")) for s in _l(redfish.get("systems")) if isinstance(s, dict)), None)
    if bios is None:
        bios = _firmware_match(firmware, _BIOS_WORDS)
    return {
        "driver": driver,
        "fabric_manager": fm,
        "cuda": cuda,
        "vbios": [_s(g.get("vbios_version")) for g in gpus],
        "gpu_indexes": [g.get("index") for g in gpus],
        "hca_fw": [_s(h.get("fw_version")) for h in hcas],
        "hca_names": [_s(h.get("name")) for h in hcas],
        "bmc": bmc_v,
        "bios": bios,
    }


# ------------------------------------------------------------------------------------------ plan


def check_methods(methods: Any) -> Dict[str, Dict[str, Any]]:
    """Defaults merged with per-class overrides ``{component: {tool, activation, est_duration_s}}``."""
    merged = {k: dict(v) for k, v in DEFAULT_METHODS.items()}
    if methods is None:
        return merged
    if not isinstance(methods, dict):
        raise UpgradeError("methods", "must be a mapping of component -> {tool, activation, est_duration_s}")
    for comp, over in methods.items():
        if comp not in merged:
            raise UpgradeError("methods.%s" % comp, "unknown step (known: %s)" % ", ".join(STEP_ORDER))
        if not isinstance(over, dict):
            raise UpgradeError("methods.%s" % comp, "must be a mapping")
        for k, v in over.items():
            key = "methods.%s.%s" % (comp, k)
            if k not in METHOD_KEYS:
                raise UpgradeError(key, "unknown key (known: %s)" % ", ".join(sorted(METHOD_KEYS)))
            if k == "activation" and v not in ACTIVATIONS:
                raise UpgradeError(key, "must be one of %s" % ", ".join(ACTIVATIONS))
            if k == "tool" and v not in TOOLS:
                raise UpgradeError(key, "must be one of %s" % ", ".join(sorted(TOOLS)))
            if k == "est_duration_s" and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
            ):
                raise UpgradeError(key, "must be a finite number of seconds >= 0")
            merged[comp][k] = v
    return merged


def _outdated(have: Sequence[Optional[str]], want: str) -> Tuple[List[int], List[int], List[int]]:
    """Positions below target, above target (downgrade) and unknown."""
    below, above, unknown = [], [], []
    for i, v in enumerate(have):
        if v is None:
            unknown.append(i)
            continue
        c = compare_versions(v, want)
        if c < 0:
            below.append(i)
        elif c > 0:
            above.append(i)
    return below, above, unknown


def plan_node(
    current: Dict[str, Any],
    target: Dict[str, Any],
    node_class: Optional[str] = None,
    methods: Any = None,
) -> List[Dict[str, Any]]:
    """Ordered upgrade steps of one node; an empty list means the node is at target (idempotent).

    Order: BMC -> BIOS -> GPU/baseboard (vbios) -> HCA firmware -> driver + fabric manager (one step, installed
    together). A component whose current version is unknown is not flashed blindly: it becomes a step with
    ``action: verify`` (see ``unknown_components``), which the rolling play must resolve (or refuse) first.
    A version above the target is a ``downgrade: true`` step; the caller decides whether downgrades are allowed.
    Each step: ``{component, components, action, from, to, targets, tool, activation, est_duration_s,
    downgrade, node_class}``.
    """
    meth = check_methods(methods)
    current = _d(current)
    target = _d(target)
    steps: List[Dict[str, Any]] = []

    def add(comp: str, components: List[str], have: Any, want: Any, targets: Any, down: bool, unknown: bool) -> None:
        m = meth[comp]
        steps.append(
            {
                "component": comp,
                "components": components,
                "action": "verify" if unknown else ("downgrade" if down else "upgrade"),
                "from": have,
                "to": want,
                "targets": targets,
                "tool": m["tool"],
                "activation": m["activation"],
                "est_duration_s": m["est_duration_s"],
                "downgrade": down,
                "node_class": node_class,
            }
        )

    for comp in ("bmc", "bios"):
        want = _s(target.get(comp))
        if want is None:
            continue
        have = _s(current.get(comp))
        if have is None:
            add(comp, [comp], None, want, None, False, True)
        elif compare_versions(have, want) != 0:
            add(comp, [comp], have, want, None, compare_versions(have, want) > 0, False)

    for comp, ids_key in (("vbios", "gpu_indexes"), ("hca_fw", "hca_names")):
        want = _s(target.get(comp))
        if want is None:
            continue
        have_list = [_s(v) for v in _l(current.get(comp))]
        ids = _l(current.get(ids_key))
        if len(ids) != len(have_list):
            ids = list(range(len(have_list)))
        if not have_list:
            add(comp, [comp], [], want, [], False, True)
            continue
        below, above, unknown = _outdated(have_list, want)
        if unknown:
            add(comp, [comp], have_list, want, [ids[i] for i in unknown], False, True)
        todo = sorted(below + above)
        if todo:
            add(
                comp,
                [comp],
                sorted({have_list[i] for i in todo}, key=version_key),
                want,
                [ids[i] for i in todo],
                bool(above),
                False,
            )

    want_drv, want_fm = _s(target.get("driver")), _s(target.get("fabric_manager"))
    if want_drv is not None or want_fm is not None:
        have_drv, have_fm = _s(current.get("driver")), _s(current.get("fabric_manager"))
        pairs = [("driver", have_drv, want_drv), ("fabric_manager", have_fm, want_fm)]
        pairs = [p for p in pairs if p[2] is not None]
        unknown = [c for c, h, _w in pairs if h is None]
        differ = [c for c, h, w in pairs if h is not None and compare_versions(h, w) != 0]
        if unknown or differ:
            # driver and fabric manager always travel together: one step installs both target versions
            comps = [c for c, _h, _w in pairs]
            down = any(compare_versions(h, w) > 0 for _c, h, w in pairs if h is not None)
            add(
                "driver",
                comps,
                {c: h for c, h, _w in pairs},
                {c: w for c, _h, w in pairs},
                None,
                down,
                bool(unknown) and not differ,
            )
    return steps


def unknown_components(steps: List[Dict[str, Any]]) -> List[str]:
    """Components whose current version the facts did not give (steps with ``action: verify``)."""
    return [s["component"] for s in steps if s.get("action") == "verify"]


def summarize(steps: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Totals of a node plan: ``{est_duration_s, activation (strongest), components, downgrade, verify}``."""
    strongest = "none"
    for s in steps:
        if ACTIVATIONS.index(s["activation"]) > ACTIVATIONS.index(strongest):
            strongest = s["activation"]
    return {
        "est_duration_s": sum(s["est_duration_s"] for s in steps),
        "activation": strongest,
        "components": [s["component"] for s in steps],
        "downgrade": any(s["downgrade"] for s in steps),
        "verify": unknown_components(steps),
    }


def _jinja_text(value: Any) -> str:
    """A value as the role's messages always showed it (Jinja2 in a string: None empty, lists/dicts as Python)."""
    return "" if value is None else str(value)


def pending_text(steps: List[Dict[str, Any]]) -> str:
    """The components still off target, for the verify message: ``vbios 1.0 (want 2.0); bmc  (want 1.2)``."""
    return "; ".join(
        "%s %s (want %s)" % (s.get("component"), _jinja_text(s.get("from")), _jinja_text(s.get("to"))) for s in steps
    )


def components_text(nodes: Dict[str, Any]) -> str:
    """The plan's ``components:`` line: ``n1: vbios+hca_fw, n3: driver`` (nodes with steps, in plan order)."""
    return ", ".join(
        "%s: %s" % (h, "+".join(str(c) for c in _l(_d(n.get("summary")).get("components"))))
        for h, n in nodes.items()
        if isinstance(n, dict) and n.get("steps")
    )


def target_for(baseline: Dict[str, Any], node_class: Optional[str]) -> Optional[Dict[str, Any]]:
    """The baseline entry of a node class (None: the class has no baseline)."""
    if node_class is None or not isinstance(baseline, dict):
        return None
    t = baseline.get(node_class)
    return t if isinstance(t, dict) else None
