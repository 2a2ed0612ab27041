# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parsers' fast paths (issue 17: ~12 ms -> ~8 ms of CPU a captured node) give exactly what the general path
gives: nvidia-smi XML parsed whole vs streamed, NVLink lines matched by the fast patterns vs :func:`_nvlink._line`,
sysfs listing paths looked up in the per-process memo vs worked out, ``num_unit`` on text vs the stripped text.
Real samples first, then broken, truncated and hostile variants of them."""

from __future__ import annotations

import glob
import os
import random
import re

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _common
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib_sysfs as _ib_sysfs
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvlink as _nvlink, nvsmi_xml as _nvsmi_xml
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
NEVER = re.compile(r"(?!)")  # a pattern that matches nothing: the fast path off


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _outcome(fn, *args, **kwargs):
    """What a parse gives: its result, or the error and its partial result."""
    try:
        return ("ok", fn(*args, **kwargs))
    except ParseError as exc:
        return ("error", exc.message, exc.line, getattr(exc, "partial", None))


# --- nvidia-smi -q -x: the whole document vs the stream ---------------------------------------------------------

XML_SAMPLES = sorted(glob.glob(os.path.join(FIX, "nvidia-smi-xml", "*.xml")))


def _xml_variants():
    out = []
    for path in XML_SAMPLES:
        text = _read(path)
        name = os.path.basename(path)
        out.append((name, text))
        out.append((name + "/cut-in-second-gpu", text[: text.find("<gpu ", text.find("<gpu ") + 1) + 300]))
        out.append((name + "/cut-after-root", text[: text.find("</nvidia_smi_log>")]))
        # an error line captured into the document (2>&1): character data, read as an unreadable GPU
        out.append(
            (
                name + "/error-inside",
                text.replace(
                    "<gpu ", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n<gpu ", 1
                ),
            )
        )
        out.append((name + "/wrong-root", text.replace("nvidia_smi_log", "nvsmi_log")))
        out.append((name + "/garbage-after", text + "\nNVIDIA-SMI has failed because it couldn't communicate\n"))
        out.append((name + "/broken-tag", text.replace("<product_name>", "<product_name", 1)))
    for path in sorted(glob.glob(os.path.join(FIX, "nvidia-smi-errors", "*.txt"))):
        if not path.endswith(".source.txt"):
            out.append((os.path.basename(path), _read(path)))
    return out


@pytest.mark.parametrize("name,text", _xml_variants(), ids=[v[0] for v in _xml_variants()])
def test_a_whole_document_reads_as_the_stream_reads_it(monkeypatch, name, text):
    whole = _outcome(_nvsmi_xml.parse, text, name)
    monkeypatch.setattr(_nvsmi_xml, "_whole_document", lambda body: None)
    streamed = _outcome(_nvsmi_xml.parse, text, name)
    assert whole == streamed


def test_the_whole_document_path_is_the_one_taken_for_a_real_sample(monkeypatch):
    """The equality above would hold trivially if the fast path were never taken."""
    taken = []
    real = _nvsmi_xml._whole_document
    monkeypatch.setattr(_nvsmi_xml, "_whole_document", lambda body: taken.append(real(body)) or taken[-1])
    res = _nvsmi_xml.parse(_read(XML_SAMPLES[0]))
    assert taken and taken[0] is not None and taken[0].tag == "nvidia_smi_log"
    assert res["gpus"]
    taken.clear()
    text = _read(XML_SAMPLES[0])
    with pytest.raises(ParseError) as exc:
        _nvsmi_xml.parse(text[: len(text) // 2])
    assert taken == [None]  # cut: the stream, which keeps the complete GPUs
    assert exc.value.partial["gpus"]


# --- NVLink: the fast patterns vs _line ---------------------------------------------------------------------------

NVLINK_SAMPLES = sorted(p for p in glob.glob(os.path.join(FIX, "nvlink", "*.txt")) if not p.endswith(".source.txt"))


def _nvlink_variants():
    out = [(os.path.basename(p), _read(p)) for p in NVLINK_SAMPLES]
    e = "\n".join(
        ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-e9629ca3-b97c-5c5e-c5d0-bfe7e6b5f0db)"]
        + ["\t Link %d: %s: %d" % (n, what, n * 7) for n in range(18) for what in ("Replay Errors", "CRC Errors")]
    )
    out.append(("synthetic-e", e))
    out.append(("counter-not-a-number", e.replace("Link 3: CRC Errors: 21", "Link 3: CRC Errors: lots")))
    out.append(("counter-na", e.replace("Link 3: CRC Errors: 21", "Link 3: CRC Errors: N/A")))
    out.append(("counter-huge", e.replace("Link 3: CRC Errors: 21", "Link 3: CRC Errors: " + "9" * 70)))
    out.append(("spaces", e.replace("Link 4: Replay Errors", "Link  4 :  Replay  Errors ")))
    out.append(("lines-before-any-gpu", "\t Link 0: Replay Errors: 5\n\t Link 1: 25 GB/s\n" + e))
    out.append(("bad-header", e.replace("GPU 0:", "GPU x:", 1)))
    out.append(("header-too-long", e.replace("NVIDIA H100", "N" * 5000, 1)))
    s = "GPU 1: NVIDIA A100 (UUID: GPU-1)\n" + "\n".join("\t Link %d: 25 GB/s" % n for n in range(12))
    out.append(("synthetic-s", s))
    out.append(("inactive", s.replace("Link 5: 25 GB/s", "Link 5: <inactive>")))
    out.append(("odd-speed", s.replace("Link 6: 25 GB/s", "Link 6: 25.0.1 GB/s").replace("Link 7: 25", "Link 7: .5")))
    out.append(("two-gpus", s + "\n" + e))
    out.append(
        (
            "all-inactive",
            "GPU 0: X (UUID: GPU-0)\n\tNVML: Unable to retrieve NVLink information as all links are inactive\n",
        )
    )
    return out


@pytest.mark.parametrize("name,text", _nvlink_variants(), ids=[v[0] for v in _nvlink_variants()])
def test_nvlink_fast_lines_read_as_the_general_path_reads_them(monkeypatch, name, text):
    fast = (_outcome(_nvlink.parse, text, name), _outcome(_nvlink.parse, text, name, []))
    errors_fast = []
    _nvlink.parse(text, name, errors_fast) if fast[1][0] == "ok" else None
    monkeypatch.setattr(_nvlink, "_FAST_COUNTER", NEVER)
    monkeypatch.setattr(_nvlink, "_FAST_SPEED", NEVER)
    general = (_outcome(_nvlink.parse, text, name), _outcome(_nvlink.parse, text, name, []))
    errors_general = []
    _nvlink.parse(text, name, errors_general) if general[1][0] == "ok" else None
    assert fast == general
    assert errors_fast == errors_general


def test_the_fast_nvlink_patterns_take_the_real_lines():
    """Both real formats go through the fast patterns (else the equality above proves nothing)."""
    for path in NVLINK_SAMPLES:
        lines = [ln.strip() for ln in _read(path).splitlines() if ln.strip().startswith("Link")]
        fast = [ln for ln in lines if _nvlink._FAST_COUNTER.fullmatch(ln) or _nvlink._FAST_SPEED.fullmatch(ln)]
        if lines and "inactive" not in _read(path):
            assert fast == lines, path


# --- sysfs listing: the per-process memo of paths -----------------------------------------------------------------

LISTING = _read(os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-flat.txt"))


def _hostile_listing(seed):
    rnd = random.Random(seed)
    hcas = ["mlx5_0", "mlx5_1", "bad name", "../etc", "mlx5_2", "x" * 70]
    lines = []
    for _i in range(400):
        hca = rnd.choice(hcas)
        port = rnd.choice(["1", "2", "00001", "x", "²", "123456"])
        tail = rnd.choice(
            [
                "state:4: ACTIVE",
                "rate:400 Gb/sec (4X NDR)",
                "gids/0:fe80:0000:0000:0000:0000:0000:0000:0001",
                "gids/1:fe80::2",
                "counters/port_rcv_errors:%d" % rnd.randint(0, 9),
                "hw_counters/out_of_buffer:%d" % rnd.randint(0, 9),
                "counters/../x:1",
                "link_layer:InfiniBand",
                "uevent:x",
            ]
        )
        lines.append(rnd.choice(["./", "", "/sys/class/infiniband/"]) + "%s/ports/%s/%s" % (hca, port, tail))
        lines.append(
            "./%s/%s"
            % (
                hca,
                rnd.choice(
                    [
                        "fw_ver:28.39.1002",
                        "board_id:MT_0000000838",
                        "hca_type:MT4129",
                        "node_guid:0000:0000:0000:0001",
                        "uevent:x",
                        "ports:",
                    ]
                ),
            )
        )
    return "\n".join(lines) + "\n"


def _parse_listing(text):
    errors = []
    snap = _ib_sysfs.snapshot_flat(text, "listing", errors)
    return snap, _ib_sysfs.hcas_from_snapshot(snap, "listing", errors), errors


@pytest.mark.parametrize("text", [LISTING] + [_hostile_listing(s) for s in range(5)], ids=["real"] + ["hostile"] * 5)
def test_a_listing_reads_the_same_with_the_memo_cold_warm_and_off(monkeypatch, text):
    monkeypatch.setattr(_ib_sysfs, "_FLAT_KEYS", {})
    monkeypatch.setattr(_ib_sysfs, "_SNAP_PATHS", {})
    cold = _parse_listing(text)
    assert _ib_sysfs._FLAT_KEYS and _ib_sysfs._SNAP_PATHS  # filled: the second read is from the memo
    warm = _parse_listing(text)
    monkeypatch.setattr(_ib_sysfs, "_FLAT_KEYS_MAX", 0)
    monkeypatch.setattr(_ib_sysfs, "_FLAT_KEYS", {})
    monkeypatch.setattr(_ib_sysfs, "_SNAP_PATHS", {})
    off = _parse_listing(text)
    assert not _ib_sysfs._FLAT_KEYS and not _ib_sysfs._SNAP_PATHS
    assert cold == warm == off
    assert cold[1]  # the HCAs were read


def test_the_memo_is_bounded_by_a_listing_of_distinct_paths(monkeypatch):
    monkeypatch.setattr(_ib_sysfs, "_FLAT_KEYS", {})
    monkeypatch.setattr(_ib_sysfs, "_SNAP_PATHS", {})
    many = "".join("./mlx5_0/ports/1/counters/c%06d:1\n" % i for i in range(_ib_sysfs._FLAT_KEYS_MAX + 500))
    snap, hcas, _errors = _parse_listing(many)
    assert len(_ib_sysfs._FLAT_KEYS) == _ib_sysfs._FLAT_KEYS_MAX
    assert len(_ib_sysfs._SNAP_PATHS) <= _ib_sysfs._FLAT_KEYS_MAX
    # read all the same, within the tree reader's caps
    assert len(snap) == _ib_sysfs.MAX_COUNTERS
    assert len(hcas[0]["ports"][0]["counters"]) == _ib_sysfs.MAX_COUNTERS


# --- num_unit: text straight to the pattern -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    sorted(_common.SENTINELS)
    + sorted(s.upper() for s in _common.SENTINELS)
    + [
        "67.03 W",
        "  67.03 W  ",
        "67 W\n",
        "\t-5 C",
        "+1e3 MHz",
        ".5",
        "5.",
        "1e999 W",
        "nan",
        "inf W",
        "1_000",
        "٣",
        "²",
        "0x1f",
        "12 " + "9" * 70,
        "9" * 70,
        "1.5e-3",
        "--1",
        "3 4 5",
        "4\nfoo",
        " ",
        "",
    ],
)
def test_num_unit_on_text_is_num_unit_on_the_stripped_text(value):
    want = _common.num_unit(value.strip()) if value.strip().lower() not in _common.SENTINELS else (None, None)
    assert _common.num_unit(value) == want
    assert _common.num_unit(value) == _common.num_unit(_TextLike(value))


class _TextLike(str):
    """A str subclass (as Ansible's unsafe text is): the same answer as plain text."""
