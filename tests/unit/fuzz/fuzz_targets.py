# -*- coding: utf-8 -*-
"""Fuzz targets for every parser of the collection, shared by the short seeded hypothesis tests
(tests/unit/fuzz/test_fuzz_parsers.py, part of ``make test``) and the long campaign (``make fuzz``,
tests/fuzz/run_fuzz.py).

A target parses mutated real samples (tests/fixtures and ../shared/reference/samples): line drops and
duplicates, truncation, byte flips, Unicode digits, huge numbers, ``inf``/``nan``, CRLF, NUL bytes. The contract
(issue 12, "parsers lose at most a line"): only ParseError may escape a parser; with an ``errors`` list, a
malformed record becomes a ``parse`` entry there and the rest of the result is returned.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import random
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import fuzz_sched
import fuzz_storage
from fuzz_structured import structural

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    capture as _capture,
    dcgm as _dcgm,
    ib as _ib,
    kernel_events as _kernel_events,
    nccl as _nccl,
    node as _node,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    ethtool as _ethtool,
    ipmi as _ipmi,
    mlxlink as _mlxlink,
    nvlink as _nvlink,
    nvsmi_text as _nvsmi_text,
    nvsmi_xml as _nvsmi_xml,
    redfish as _redfish,
    sched as _sched_parse,
    slurm as _slurm_parse,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SAMPLES = os.path.normpath(os.path.join(ROOT, "..", "shared", "reference", "samples"))

#: What mutations put into a line: numbers a tool never prints, and bytes it never sends.
TOKENS = (
    "²",
    "٣",
    "１２",
    "𝟗",
    "1e999",
    "-1e999",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "Infinity",
    "9" * 5000,
    "0x" + "f" * 200,
    "2.7.1",
    "1..2",
    "-",
    "+",
    "0x",
    "",
    "\x00",
    "\r",
    "\ufffd",
    "|",
    ":",
    " : ",
    "=",
    "'",
    "<",
    "</gpu>",
    '<gpu id="x">',
    "GPU 0:",
    "Port 1:",
    "CA 'mlx5_9'",
    "NodeName=x",
    "-1",
    "18446744073709551616",
    "1" * 64,
    "%s",
    "\u202e",
)

N_OPS = 10


def _read(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def samples(*dirs: str, pattern: str = "*") -> List[str]:
    """Texts of the real samples in ``dirs`` (under tests/fixtures and the shared reference samples)."""
    paths = set()
    for d in dirs:
        for base in (FIXTURES, SAMPLES):
            for p in glob.glob(os.path.join(base, d, pattern)):
                if os.path.isfile(p) and not p.endswith(".source.txt"):
                    paths.add(p)
    return [_read(p) for p in sorted(paths)]


def mutate(text: str, ops: Sequence[Tuple[int, int, int]]) -> str:
    """Apply mutation ops ``(op, a, b)`` (integers; taken modulo what they index) to ``text``."""
    for op, a, b in ops:
        op %= N_OPS
        lines = text.splitlines(True)
        if op == 0 and lines:  # drop a line
            del lines[a % len(lines)]
            text = "".join(lines)
        elif op == 1:  # truncate
            text = text[: a % (len(text) + 1)]
        elif op == 2 and lines:  # replace a number with a token
            i = a % len(lines)
            found = list(re.finditer(r"[0-9][0-9.xa-fA-F]*", lines[i]))
            if found:
                m = found[b % len(found)]
                lines[i] = lines[i][: m.start()] + TOKENS[(a ^ b) % len(TOKENS)] + lines[i][m.end() :]
            text = "".join(lines)
        elif op == 3 and text:  # flip a character
            i = a % len(text)
            text = text[:i] + chr(b % 0x3000) + text[i + 1 :]
        elif op == 4:  # CRLF line ends
            text = text.replace("\n", "\r\n")
        elif op == 5 and lines:  # duplicate a line somewhere else
            lines.insert(b % (len(lines) + 1), lines[a % len(lines)])
            text = "".join(lines)
        elif op == 6 and lines:  # replace a whitespace-separated field with a token
            i = a % len(lines)
            toks = lines[i].split(" ")
            toks[b % len(toks)] = TOKENS[(a + b) % len(TOKENS)]
            lines[i] = " ".join(toks)
            text = "".join(lines)
        elif op == 7:  # insert a token anywhere
            i = a % (len(text) + 1)
            text = text[:i] + TOKENS[b % len(TOKENS)] + text[i:]
        elif op == 8 and lines:  # a NUL byte run inside a line
            i = a % len(lines)
            lines[i] = lines[i][: b % (len(lines[i]) + 1)] + "\x00" * (1 + b % 8) + lines[i][b % (len(lines[i]) + 1) :]
            text = "".join(lines)
        elif op == 9 and lines:  # a very long line
            i = a % len(lines)
            lines[i] = lines[i].rstrip("\r\n") * (1 + b % 50) + "\n"
            text = "".join(lines)
    return text


# ------------------------------------------------------------------------------------------ JSON (Redfish)

_JSON_VALUES: Tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    -float("inf"),
    10**400,
    -(10**30),
    "²",
    "٣",
    "1e999",
    "NaN",
    None,
    True,
    [],
    {},
    [None, 1, "x"],
    {"Health": "Critical"},
    "Critical",
    "",
    "9" * 5000,
)


def mutate_json(obj: Any, ops: Sequence[Tuple[int, int, int]]) -> Any:
    """Replace values inside a decoded JSON document (Redfish) with values a BMC should never send."""
    for _op, a, b in ops:
        slots = _slots(obj)
        value = copy.deepcopy(_JSON_VALUES[b % len(_JSON_VALUES)])  # never one object twice (a cycle)
        if not slots:
            return value
        parent, key = slots[a % len(slots)]
        parent[key] = value
    return obj


def _slots(obj: Any) -> List[Tuple[Any, Any]]:
    """(container, key) of every value inside a decoded JSON document (bounded)."""
    slots: List[Tuple[Any, Any]] = []
    stack = [(obj, 0)]
    while stack and len(slots) < 2000:
        node, depth = stack.pop()
        if depth > 12:
            continue
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            slots.append((node, k))
            stack.append((v, depth + 1))
    return slots


# ------------------------------------------------------------------------------------------ targets


class Target:
    """One parser under fuzz: ``run(text, errors)`` parses; ``count(result)`` counts its records."""

    def __init__(
        self,
        name: str,
        inputs: List[str],
        run: Callable[[str, List[Dict[str, Any]]], Any],
        count: Callable[[Any], int],
        kind: str = "text",
        structure: Optional[str] = None,
    ) -> None:
        self.name = name
        self.inputs = inputs
        self.run = run
        self.count = count
        self.kind = kind
        #: "json" or "xml": the input is a structured document, also mutated in its nesting, size and encoding
        #: (fuzz_structured, issue 35)
        self.structure = structure or (kind if kind in ("json", "xml") else None)

    def generate(self, rng: random.Random) -> str:
        """One generated input (text; for JSON targets, the JSON text of a mutated document)."""
        base = rng.choice(self.inputs)
        ops = [
            (rng.randrange(N_OPS), rng.randrange(1 << 30), rng.randrange(1 << 30)) for _k in range(rng.randint(1, 5))
        ]
        return self.apply(base, ops)

    def apply(self, base: str, ops: Sequence[Tuple[int, int, int]]) -> str:
        if self.kind == "json":
            text = json.dumps(mutate_json(json.loads(base), ops))
        else:
            text = mutate(base, ops)
        return structural(self.structure, text, ops) if self.structure else text


def _len(result: Any) -> int:
    return len(result) if isinstance(result, (list, dict)) else 0


def _redfish_docs(text: str, errors: List[Dict[str, Any]]) -> Any:
    try:
        doc = _safejson.loads(text, what="fuzz")  # as the collector reads it (_bmc)
    except ValueError:
        return {}  # not JSON, or over the budget: the collector's own error record, not the parser's
    out = _redfish.empty()
    for d in doc if isinstance(doc, list) else [doc]:
        _redfish.merge(out, _redfish.parse_document(d, "fuzz", errors))
    return out


def _sysfs(text: str, errors: List[Dict[str, Any]]) -> Any:
    return _ib.hcas_from_snapshot(_ib.parse_sysfs_flat(text, "fuzz"), "fuzz", errors)


def _node_all(text: str, errors: List[Dict[str, Any]]) -> Any:
    out = {
        "os": _node.os_name(_node.parse_os_release(text)),
        "mem": _node.parse_meminfo(text),
        "mounts": _node.parse_mounts(text),
        "fm": _node.parse_fm_version(text),
        "dpkg": _node.parse_dpkg_versions(text),
        "rpm": _node.parse_rpm_versions(text),
        "active": _node.parse_is_active(text, ["a", "b", "c"]),
    }
    try:
        out["stat"] = _node.parse_stat_f(text, "fuzz")
    except Exception as exc:  # only ParseError is allowed: re-raised unless it is one
        if type(exc).__name__ != "ParseError":
            raise
    return out


_NODE_SAMPLES = [
    'NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\nID=ubuntu\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n',
    "MemTotal:       2113531904 kB\nMemFree:        2013531904 kB\n",
    "sysfs /sys sysfs rw,nosuid 0 0\n/dev/nvme0n1p2 / ext4 rw,relatime 0 0\nlustre@o2ib:/fs /lustre lustre rw 0 0\n"
    "host:/export /mnt/with\\040space nfs4 rw 0 0\n",
    "1953514581 1853514581 1753514581 4096\n",
    "Fabric Manager version is : 535.161.08\n",
    "ii  nvidia-fabricmanager-535 535.161.08-1 amd64\nrc  old 1.0-1 amd64\n",
    "nvidia-fabricmanager 535.161.08\n",
    "active\ninactive\nfailed\n",
]


_DCGMI_JSON = json.dumps(
    {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": "Deployment",
                    "tests": [
                        {"name": "Denylist", "results": [{"gpu_ids": "0-3", "status": "Pass"}]},
                        {"name": "PCIe", "results": [{"gpu_id": 1, "status": "Fail", "warnings": ["x"]}]},
                    ],
                },
                {"category": "Hardware", "tests": [{"name": "GPU Memory", "test_summary": {"status": "Skip"}}]},
            ]
        }
    },
    indent=1,
)

_CAPTURE_META = json.dumps(
    {
        "hostname": "gpu-node-01",
        "captured_at": "2026-12-03T11:58:00Z",
        "boot_id": "0f4b2c1e-7d39-4a60-8a3c-5b1e2f3a4b5c",
        "domains": ["gpu", "kernel", "ib", "bmc", "slurm", "node"],
        "files": {
            "nvidia-smi-q.xml": {"rc": 0, "stderr": "", "timed_out": False},
            "kernel.log": {"rc": 0, "stderr": ""},
            "ipmitool-sel.txt": {"rc": 1, "stderr": "Could not open device", "timed_out": False},
        },
    },
    indent=1,
)

_SCONTROL_JSON = json.dumps(
    {
        "nodes": [
            {"name": "gpu-node-01", "state": ["IDLE", "DRAIN"], "reason": "Xid 79", "gres": "gpu:h100:8"},
            {"name": "gpu-node-02", "state": "MIXED", "state_flags": ["COMPLETING"], "partitions": ["gpu"]},
        ]
    },
    indent=1,
)


def _dcgmi_json(text: str, errors: List[Dict[str, Any]]) -> Any:
    return _dcgm.parse_diag(text, "fuzz")


def _capture_meta(text: str, errors: List[Dict[str, Any]]) -> Any:
    """capture.json as every collector reads it (``_capture.meta_or_error``): never raises."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gpuops-fuzz-") as d:
        with open(os.path.join(d, "capture.json"), "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        meta = _capture.meta_or_error(d, errors, "capture")
    return {"files": _capture.file_status(meta, "kernel.log"), "meta": meta}


def _sched_json(fn: Callable[..., Any]) -> Callable[[str, List[Dict[str, Any]]], Any]:
    return lambda text, errors: fn(text, "fuzz")


def _scontrol_json(text: str, errors: List[Dict[str, Any]]) -> Any:
    """``scontrol show node --json`` as the ``slurm_domain`` filter reads it (_safejson, then the parser)."""
    try:
        doc = _safejson.loads(text, what="scontrol JSON")
    except ValueError as exc:
        raise _slurm_parse.ParseError("invalid scontrol JSON: %s" % exc, _slurm_parse.PARSER, "fuzz") from None
    return _slurm_parse.parse_json_nodes(doc, "fuzz")


def _json_samples(d: str, pattern: str) -> List[str]:
    return [t for t in samples(d, pattern=pattern) if _is_json(t)]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def targets() -> List[Target]:
    """Every parser of the collection, with its real samples."""
    return [
        Target("nvlink", samples("nvlink"), lambda t, e: _nvlink.parse(t, "fuzz", e), _len),
        Target(
            "kernel_log",
            samples("xid-kmsg"),
            lambda t, e: _kernel_events.parse_kernel_log(t, "fuzz", None, e),
            _len,
        ),
        Target("ibstat", samples("ibstat"), lambda t, e: _ib.parse_ibstat(t, "fuzz", e), _len),
        Target("ibstatus", samples("ibstatus"), lambda t, e: _ib.parse_ibstatus(t, "fuzz", e), _len),
        Target("sysfs_ib", samples("sysfs-infiniband", pattern="*.txt"), _sysfs, _len),
        Target(
            "ipmi_sdr",
            samples("ipmitool-sdr", "ipmitool-sensor"),
            lambda t, e: _ipmi.parse_sdr(t, "fuzz", e),
            _len,
        ),
        Target("ipmi_sel", samples("ipmitool-sel", pattern="*l*st*"), lambda t, e: _ipmi.parse_sel(t, "fuzz", e), _len),
        Target("ipmi_mc_info", samples("ipmitool-mc-info"), lambda t, e: _ipmi.parse_mc_info(t, "fuzz"), _len),
        Target(
            "ipmi_sel_info",
            samples("ipmitool-sel", pattern="*info*"),
            lambda t, e: _ipmi.parse_sel_info(t, "fuzz"),
            _len,
        ),
        Target("ipmi_fru", samples("ipmitool-fru"), lambda t, e: _ipmi.parse_fru(t, "fuzz", e), _len),
        Target(
            "dcgmi_diag", samples("dcgmi-diag"), lambda t, e: _dcgm.parse_diag(t, "fuzz"), lambda r: _len(r["tests"])
        ),
        Target("dcgmi_json", [_DCGMI_JSON], _dcgmi_json, lambda r: _len(r["tests"]), structure="json"),
        Target("nccl", samples("nccl"), lambda t, e: _nccl.parse(t, "fuzz"), lambda r: _len(r["rows"])),
        Target(
            "nvsmi_xml",
            samples("nvidia-smi-xml"),
            lambda t, e: _nvsmi_xml.parse(t, "fuzz"),
            lambda r: _len(r["gpus"]),
            structure="xml",
        ),
        Target(
            "nvsmi_text",
            samples("nvidia-smi-q-text", "nvidia-smi-errors"),
            lambda t, e: _nvsmi_text.parse(t, "fuzz"),
            lambda r: _len(r["gpus"]),
        ),
        Target(
            "scontrol_node",
            samples("scontrol-show-node"),
            lambda t, e: _slurm_parse.parse_show_node(t, "fuzz", e),
            _len,
        ),
        Target(
            "redfish", samples("redfish", pattern="*.json"), _redfish_docs, lambda r: _len(r.get("sensors")), "json"
        ),
        Target("node", _NODE_SAMPLES, _node_all, lambda r: 1),
        # issue 37: optics outputs as operators paste them (cut, without the Identifier line, garbage EEPROMs)
        Target("mlxlink", samples("mlxlink"), lambda t, e: _mlxlink.parse_mlxlink(t, "fuzz"), lambda r: 1),
        Target("ethtool_m", samples("ethtool-m"), lambda t, e: _ethtool.parse_ethtool_module(t, "fuzz"), lambda r: 1),
        Target("capture_meta", [_CAPTURE_META], _capture_meta, lambda r: 1, structure="json"),
        Target(
            "sacct_json",
            _json_samples("slurm-platform", "*sacct.json"),
            _sched_json(_sched_parse.parse_sacct_json),
            _len,
            structure="json",
        ),
        Target(
            "squeue_json",
            _json_samples("slurm-platform", "*squeue.json"),
            _sched_json(_sched_parse.parse_squeue_json),
            _len,
            structure="json",
        ),
        Target("scontrol_json", [_SCONTROL_JSON], _scontrol_json, _len, structure="json"),
        # issue 37: storage outputs as printed (tests/fixtures/storage, cluster-formats.md 5-7) plus generated
        # lfs df / mmhealth -Y variants (fuzz_storage)
        *fuzz_storage.targets(Target, samples, _len),
        # issue 37: the scheduler's text as operators capture it, real samples plus generated column orders,
        # widths and cuts (fuzz_sched)
        Target(
            "sinfo_text",
            samples("slurm-platform", pattern="*sinfo*") + fuzz_sched.sinfo_variants(),
            lambda t, e: _sched_parse.parse_sinfo(t, "fuzz", e),
            _len,
        ),
        Target(
            "sacct_text",
            samples("slurm-platform", pattern="*sacct.txt") + fuzz_sched.sacct_variants(),
            lambda t, e: _sched_parse.parse_sacct_text(t, "fuzz", e),
            _len,
        ),
        Target(
            "squeue_text",
            samples("slurm-platform", pattern="*squeue.txt") + fuzz_sched.squeue_variants(),
            lambda t, e: _sched_parse.parse_squeue_text(t, "fuzz", e),
            _len,
        ),
        Target(
            "sdiag",
            samples("slurm-platform", pattern="*sdiag.txt") + samples("slurm-cli", pattern="*sdiag*"),
            lambda t, e: _sched_parse.parse_sdiag(t, "fuzz"),
            lambda r: _len(r.get("rpc_types")),
        ),
    ]


def by_name() -> Dict[str, Target]:
    return {t.name: t for t in targets()}


def partial_count(target: Target, exc: Any) -> Optional[int]:
    """Records a ParseError's ``partial`` carries (None when it carries none)."""
    part = getattr(exc, "partial", None)
    return None if part is None else target.count(part)
