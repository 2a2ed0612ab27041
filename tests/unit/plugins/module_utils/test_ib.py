# Unit tests for plugins/module_utils/collectors/ib.py (sysfs, ibstat, ibstatus, the ib collector).
from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as _ib
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ib_cases import FIX, GPUD_FLAT, GPUD_TREE, IBSTAT, PANIC, by_name, capture_with, read

# ----------------------------------------------------------------------------------------------- real samples


IBSTAT_SAMPLES = {
    # sample: (HCAs, IB ports, Ethernet ports, {hca: (state, phys_state, rate)} for the abnormal/odd ones)
    "gpud-a100-cx6-ib-hdr-all-active": (9, 8, 1, {"mlx5_0": ("ACTIVE", "LinkUp", 200.0)}),
    "gpud-h100-cx7-ib-all-active-bf3": (9, 8, 1, {}),
    "gpud-h100-cx7-ib-some-down": (
        12,
        8,
        4,
        {
            "mlx5_2": ("DOWN", "Disabled", 40.0),
            "mlx5_7": ("DOWN", "Disabled", 40.0),
            "mlx5_8": ("DOWN", "Disabled", 40.0),
        },
    ),
    "gpud-h100-cx7-roce-all-active": (12, 0, 12, {}),
    "gpud-h100-cx7-roce-some-down": (
        12,
        0,
        12,
        {"mlx5_5": ("DOWN", "Disabled", 40.0), "mlx5_11": ("DOWN", "Disabled", 40.0)},
    ),
}


@pytest.mark.parametrize("sample", sorted(IBSTAT_SAMPLES))
def test_ibstat_samples(tmp_path, sample):
    n_hca, n_ib, n_eth, odd = IBSTAT_SAMPLES[sample]
    assert os.path.exists(os.path.join(IBSTAT, sample + ".source.txt"))
    cap = capture_with(tmp_path, {"ibstat.txt": read(os.path.join(IBSTAT, sample + ".txt"))})
    out = _ib.collect(capture_dir=cap)
    assert out["errors"] == []
    assert out["source"] == "capture:ibstat.txt"
    assert len(out["hcas"]) == n_hca
    ports = [p for h in out["hcas"] for p in h["ports"]]
    assert sum(p["link_layer"] == "InfiniBand" for p in ports) == n_ib
    assert sum(p["link_layer"] == "Ethernet" for p in ports) == n_eth
    hcas = by_name(out["hcas"])
    for name, (state, phys, rate) in odd.items():
        p = hcas[name]["ports"][0]
        assert (p["state"], p["phys_state"], p["rate_gbps"]) == (state, phys, rate)
    healthy = [p for h in out["hcas"] if h["name"] not in odd for p in h["ports"]]
    assert all(p["state"] == "ACTIVE" and p["phys_state"] == "LinkUp" for p in healthy)
    for h in out["hcas"]:
        assert h["node_guid"].startswith("0x") and len(h["node_guid"]) == 18
        assert h["fw_version"] and h["ca_type"].startswith("MT")
        assert [p["port"] for p in h["ports"]] == [1]
        assert h["ports"][0]["counters"] == {} and h["ports"][0]["saturated"] == []
    # natural order: mlx5_2 before mlx5_10
    names = [h["name"] for h in out["hcas"]]
    if "mlx5_10" in names:
        assert names.index("mlx5_2") < names.index("mlx5_10")


def test_ibstat_values_some_down():
    hcas = by_name(_ib.parse_ibstat(read(os.path.join(IBSTAT, "gpud-h100-cx7-ib-some-down.txt"))))
    h = hcas["mlx5_0"]
    assert h["ca_type"] == "MT4129" and h["fw_version"] == "28.39.1002" and h["board_id"] is None
    assert h["node_guid"] == "0x946dae0300cde72c"
    p = h["ports"][0]
    assert p["lid"] == 75 and p["sm_lid"] == 334 and p["port_guid"] == "0x946dae0300cde72c"
    assert p["rate_label"] == "400" and p["width"] is None and p["speed"] is None
    assert hcas["mlx5_1"]["ports"][0]["port_guid"] == "0x966daefffec2b690"
    assert hcas["mlx5_1"]["ca_type"] == "MT4125"


def test_ibstat_space_indented_bf3():
    hcas = by_name(_ib.parse_ibstat(read(os.path.join(IBSTAT, "gpud-h100-cx7-ib-all-active-bf3.txt"))))
    bf3 = [h for h in hcas.values() if h["ca_type"] == "MT41692"]
    assert len(bf3) == 1 and bf3[0]["ports"][0]["link_layer"] == "Ethernet"
    assert bf3[0]["ports"][0]["rate_gbps"] == 200.0
    assert hcas["mlx5_0"]["ports"][0]["sm_lid"] == 1


def test_ibstatus_sample(tmp_path):
    assert os.path.exists(os.path.join(FIX, "ibstatus", "gpud-a100-ibstatus-hdr.source.txt"))
    text = read(os.path.join(FIX, "ibstatus", "gpud-a100-ibstatus-hdr.txt"))
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstatus.txt": text}))
    assert out["errors"] == [] and out["source"] == "capture:ibstatus.txt"
    hcas = by_name(out["hcas"])
    assert len(hcas) == 9
    p0 = hcas["mlx5_0"]["ports"][0]
    assert p0["lid"] == 0x33BF and p0["sm_lid"] == 1
    assert (p0["state"], p0["phys_state"], p0["rate_gbps"], p0["width"], p0["speed"]) == (
        "ACTIVE",
        "LinkUp",
        200.0,
        "4X",
        "HDR",
    )
    assert p0["port_guid"] == "0x00155dfffd3411eb"
    eth = hcas["mlx5_8"]["ports"][0]
    assert eth["link_layer"] == "Ethernet" and eth["port_guid"] is None and eth["rate_gbps"] == 40.0


def test_sysfs_gpud_tree_in_capture(tmp_path):
    meta = {"captured_at": "2026-12-02T10:00:00Z", "boot_id": "b-1"}
    out = _ib.collect(capture_dir=capture_with(tmp_path, tree=GPUD_TREE, meta=meta))
    assert out["errors"] == [] and out["source"] == "capture:sysfs"
    assert out["collected_at"] == 1796205600.0
    assert out["boot_id"] == "b-1"
    hcas = by_name(out["hcas"])
    assert list(hcas) == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    h1 = hcas["mlx5_1"]
    assert (h1["ca_type"], h1["board_id"], h1["fw_version"]) == ("MT4129", "MT_0000000838", "28.41.1000")
    p = h1["ports"][0]
    assert (p["state"], p["phys_state"], p["link_layer"]) == ("ACTIVE", "LinkUp", "InfiniBand")
    assert (p["rate_gbps"], p["width"], p["speed"], p["rate_label"]) == (400.0, "4X", "NDR", "400 Gb/sec (4X NDR)")
    c = p["counters"]
    assert c["link_downed"] == 255 and c["port_rcv_errors"] == 14 and c["port_rcv_switch_relay_errors"] == 2
    assert c["port_rcv_data"] == 205128687774249 and c["port_xmit_wait"] == 2489603687
    # hw_counters are merged into the same dict
    assert c["rnr_nak_retry_err"] == 0 and c["local_ack_timeout_err"] == 0 and c["roce_adp_retrans"] == 3
    assert len(c) == 21 + 26
    assert p["saturated"] == ["excessive_buffer_overrun_errors", "link_downed"]
    # every port in this fixture shows excessive_buffer_overrun_errors = 15 (4-bit ceiling)
    for name, h in hcas.items():
        sat = h["ports"][0]["saturated"]
        assert "excessive_buffer_overrun_errors" in sat
        assert ("link_downed" in sat) == (name == "mlx5_1")
    bond = hcas["mlx5_bond_0"]["ports"][0]
    assert (bond["link_layer"], bond["rate_gbps"], bond["width"]) == ("Ethernet", 200.0, "2X")


def test_sysfs_flat_listing_equals_tree():
    snap = _ib.parse_sysfs_flat(read(GPUD_FLAT), GPUD_FLAT)
    assert len(snap) == 486
    tree_hcas, errors = _ib.read_sysfs_class(GPUD_TREE)
    assert errors == []
    assert _ib.hcas_from_snapshot(snap) == tree_hcas


# ----------------------------------------------------------------------------------------------- ibstat: broken


def _some_down_cut(n_cas):
    text = read(os.path.join(IBSTAT, "gpud-h100-cx7-ib-some-down.txt"))
    blocks = text.split("CA '")
    return "CA '".join(blocks[: n_cas + 1])


def test_ibpanic_appended_keeps_hcas(tmp_path):
    text = _some_down_cut(8) + PANIC + "\n"
    out = _ib.collect(
        capture_dir=capture_with(tmp_path, {"ibstat.txt": text}, meta={"files": {"ibstat.txt": {"rc": 255}}})
    )
    assert len(out["hcas"]) == 8
    assert [e["kind"] for e in out["errors"]] == ["tool_error"]
    err = out["errors"][0]
    assert "mlx5_8" in err["message"] and "8 HCA(s)" in err["message"]
    assert err["line"] == text.count("\n") and err["parser"] == "ibstat"


def test_ibpanic_first_line_2to1_buffering(tmp_path):
    text = PANIC + "\n" + _some_down_cut(5)
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstat.txt": text}))
    assert len(out["hcas"]) == 5 and out["errors"][0]["line"] == 1


def test_ibpanic_only_in_capture_stderr(tmp_path):
    meta = {"files": {"ibstat.txt": {"rc": 255, "stderr": PANIC + "\n", "timed_out": False}}}
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstat.txt": _some_down_cut(3)}, meta=meta))
    assert len(out["hcas"]) == 3
    assert len(out["errors"]) == 1 and out["errors"][0]["source"] == "ibstat.txt (stderr)"


def test_capture_rc_and_timeout_reported(tmp_path):
    meta = {"files": {"ibstat.txt": {"rc": 1, "stderr": "ibstat: some failure\n"}}}
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstat.txt": _some_down_cut(2)}, meta=meta))
    assert len(out["hcas"]) == 2
    assert [(e["kind"], e["message"]) for e in out["errors"]] == [
        ("tool_error", "ibstat exited 1: ibstat: some failure")
    ]


def test_truncated_ibstat_keeps_partial():
    text = _some_down_cut(4) + "CA 'mlx5_3'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
    with pytest.raises(ParseError) as exc:
        _ib.parse_ibstat(text, "ibstat.txt")
    assert len(exc.value.partial) == 5 and exc.value.partial[-1]["ports"][0]["state"] == "ACTIVE"
    assert "truncated" in exc.value.message


@pytest.mark.parametrize(
    "text",
    ["", "   \n\n", PANIC + "\n"],
)
def test_ibstat_empty(text):
    assert _ib.parse_ibstat(text) == []


def test_ibstat_garbage_and_binary(tmp_path):
    with pytest.raises(ParseError):
        _ib.parse_ibstat("<html>502 Bad Gateway</html>\n")
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstat.txt": b"\xff\xfe\x00garbage\x80\n"}))
    assert out["hcas"] == [] and [e["kind"] for e in out["errors"]] == ["parse"]


def test_huge_capture_file_refused(tmp_path):
    cap = capture_with(tmp_path, {"ibstat.txt": ""})
    with open(os.path.join(cap, "ibstat.txt"), "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: costs nothing
    out = _ib.collect(capture_dir=cap)
    assert out["hcas"] == [] and [e["kind"] for e in out["errors"]] == ["unreadable"]


def test_many_hcas_fast():
    one = _some_down_cut(1)
    text = "".join(one.replace("'mlx5_0'", "'mlx5_%d'" % i) for i in range(2000))
    t0 = time.monotonic()
    hcas = _ib.parse_ibstat(text)
    assert len(hcas) == 2000 and time.monotonic() - t0 < 3


# ----------------------------------------------------------------------------------------------- capture dir rules


def test_capture_prefers_sysfs_over_ibstat(tmp_path):
    files = {"ibstat.txt": read(os.path.join(IBSTAT, "gpud-h100-cx7-ib-some-down.txt"))}
    out = _ib.collect(capture_dir=capture_with(tmp_path, files, tree=GPUD_TREE))
    assert out["source"] == "capture:sysfs" and len(out["hcas"]) == 9


def test_capture_empty_and_boot_id_from_node_json(tmp_path):
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"node.json": json.dumps({"boot_id": "nb-7"})}))
    assert out == {"source": None, "collected_at": None, "boot_id": "nb-7", "hcas": [], "errors": []}


def test_capture_bad_capture_json(tmp_path):
    cap = capture_with(tmp_path, {"capture.json": "{not json", "ibstat.txt": _some_down_cut(1)})
    out = _ib.collect(capture_dir=cap)
    assert len(out["hcas"]) == 1 and [e["kind"] for e in out["errors"]] == ["parse"]


def test_capture_timed_out_file(tmp_path):
    meta = {"captured_at": 1764669600, "files": {"ibstat.txt": {"rc": None, "timed_out": True}}}
    out = _ib.collect(capture_dir=capture_with(tmp_path, {"ibstat.txt": ""}, meta=meta))
    assert out["collected_at"] == 1764669600.0
    assert [e["kind"] for e in out["errors"]] == ["timeout"]


# ----------------------------------------------------------------------------------------------- live ibstat


def _script(tmp_path, body):
    path = tmp_path / "ibstat"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_live_ibstat_fallback(tmp_path):
    sample = os.path.join(IBSTAT, "gpud-h100-cx7-roce-some-down.txt")
    exe = _script(tmp_path, "cat '%s'\n" % sample)
    out = _ib.collect(sysfs_root=str(tmp_path / "no-sys"), ibstat_path=exe, timeout=10)
    assert out["source"] == "ibstat" and out["errors"] == [] and len(out["hcas"]) == 12


def test_live_ibstat_panic_on_stderr(tmp_path):
    part = tmp_path / "part.txt"
    part.write_text(_some_down_cut(6))
    exe = _script(tmp_path, "cat '%s'\necho \"%s\" >&2\nexit 255\n" % (part, PANIC))
    out = _ib.collect(sysfs_root=str(tmp_path), ibstat_path=exe, timeout=10)
    assert len(out["hcas"]) == 6
    assert [e["kind"] for e in out["errors"]] == ["tool_error"]
    assert out["errors"][0]["source"] == "ibstat (stderr)"


def test_live_ibstat_timeout_and_missing(tmp_path):
    exe = _script(tmp_path, "sleep 30\n")
    t0 = time.monotonic()
    out = _ib.collect(sysfs_root=str(tmp_path), ibstat_path=exe, timeout=1)
    assert time.monotonic() - t0 < 5
    assert [e["kind"] for e in out["errors"]] == ["timeout"]
    out = _ib.collect(sysfs_root=str(tmp_path), ibstat_path="ibstat-not-installed-here")
    assert out["source"] is None and out["errors"] == [] and out["hcas"] == []
    assert out["collected_at"] is not None


def test_collect_never_raises(monkeypatch, tmp_path):
    def boom(*a, **k):
        raise RuntimeError("bug")

    monkeypatch.setattr(_ib, "_collect_capture", boom)
    out = _ib.collect(capture_dir=str(tmp_path))
    assert [e["kind"] for e in out["errors"]] == ["internal"]


# ----------------------------------------------------------------------------------------------- normalisers


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("400 Gb/sec (4X NDR)", (400.0, "4X", "NDR")),
        ("200 Gb/sec (2X NDR)", (200.0, "2X", "NDR")),
        ("2.5 Gb/sec (1X SDR)", (2.5, "1X", "SDR")),
        ("10 Gb/sec (4X)", (10.0, "4X", None)),
        ("40 (FDR10)", (40.0, None, "FDR10")),
        ("400", (400.0, None, None)),
        ("unknown", (None, None, None)),
        (None, (None, None, None)),
    ],
)
def test_parse_rate(raw, expected):
    r = _ib.parse_rate(raw)
    assert (r["rate_gbps"], r["width"], r["speed"]) == expected


@pytest.mark.parametrize(
    "fn,raw,expected",
    [
        (_ib.norm_state, "4: ACTIVE", "ACTIVE"),
        (_ib.norm_state, "Initializing", "INIT"),
        (_ib.norm_state, "5: ACTIVE_DEFER", "ACTIVE_DEFER"),
        (_ib.norm_state, "???", None),
        (_ib.norm_phys_state, "7: Phy Test", "PhyTest"),
        (_ib.norm_phys_state, "4: ACTIVE", "ACTIVE"),  # odd value seen in a procfs fixture: kept as printed
        (_ib.norm_phys_state, "0: <unknown>", None),
        (_ib.norm_guid, "b83f:d203:0001:4a2c", "0xb83fd20300014a2c"),
        (_ib.norm_guid, "0xA088C20300E1B1C2", "0xa088c20300e1b1c2"),
        (_ib.norm_guid, "zz", None),
        (_ib.guid_from_gid, "0000:0000:0000:0000:0000:0000:0000:0000", None),
    ],
)
def test_normalisers(fn, raw, expected):
    assert fn(raw) == expected


def test_saturated_widths():
    c = {
        "link_downed": 255,
        "link_error_recovery": 254,
        "local_link_integrity_errors": 15,
        "excessive_buffer_overrun_errors": 14,
        "symbol_error": 65535,
        "port_xmit_data": 2**32 - 1,  # data counters: width unknown (32 or 64 bit), never flagged
        "rnr_nak_retry_err": 255,
    }
    assert _ib.saturated(c) == ["link_downed", "local_link_integrity_errors", "symbol_error"]


# ----------------------------------------------------------------------------------------------- fuzz

_LINES = st.sampled_from(
    [
        "CA 'mlx5_0'",
        "CA 'x'",
        "\tPort 1:",
        "Port 99999:",
        "\t\tState: Active",
        "\t\tRate: 400",
        "\t\tRate: 56 (FDR10)",
        "\tNumber of ports: 2",
        "\t\tLink layer: InfiniBand",
        "\t\tBase lid: 0xzz",
        PANIC,
        "Infiniband device 'mlx5_0' port 1 status:",
        "\tstate:\t4: ACTIVE",
        "\trate:\t\t400 Gb/sec (4X NDR)",
        "./mlx5_0/ports/1/counters/link_downed:255",
        "./../x:1",
        "",
    ]
)


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_LINES, st.text(max_size=40)), max_size=30))
def test_fuzz_text_parsers(lines):
    text = "\n".join(lines)
    for parser in (_ib.parse_ibstat, _ib.parse_ibstatus, _ib.parse_sysfs_flat):
        try:
            result = parser(text)
        except ParseError:
            continue
        json.dumps(result)
    try:
        snap = _ib.parse_sysfs_flat(text)
    except ParseError:
        return
    json.dumps(_ib.hcas_from_snapshot(snap))


@seed(7)
@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(alphabet="mlx5_/portscuneid0123.:", max_size=40), st.text(max_size=12), max_size=20))
def test_fuzz_snapshot(snap):
    json.dumps(_ib.hcas_from_snapshot(snap))


# ----------------------------------------------------------------------------------------------- compare()


def _reading(t, boot="b1", fw="28.41.1000", **counters):
    base = {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0}
    base.update(counters)
    port = {"port": 1, "counters": base, "saturated": _ib.saturated(base)}
    return {"collected_at": t, "boot_id": boot, "hcas": [{"name": "mlx5_0", "fw_version": fw, "ports": [port]}]}


def test_compare_rates_and_link_flap():
    res = _ib.compare(_reading(1000.0, link_downed=2), _reading(1060.0, link_downed=5, symbol_error=120))
    r = res["mlx5_0/1"]
    assert r["baseline"] is None and r["interval_s"] == 60.0
    assert r["deltas"] == {"symbol_error": 120, "link_downed": 3, "port_rcv_errors": 0}
    assert r["rates_per_s"]["symbol_error"] == 2.0


@pytest.mark.parametrize(
    "prev,cur,reason",
    [
        (None, _reading(1.0), "no earlier reading"),
        (_reading(1.0), _reading(2.0, boot="b2", link_downed=1), "new boot id"),
        (_reading(1.0), _reading(2.0, fw="28.42.1000"), "HCA firmware changed"),
        (_reading(5.0), _reading(5.0), "no usable interval between the readings"),
        (_reading(1.0, symbol_error=9), _reading(2.0, symbol_error=1), "counters went down (cleared)"),
    ],
)
def test_compare_new_baseline(prev, cur, reason):
    r = _ib.compare(prev, cur)["mlx5_0/1"]
    assert r["baseline"] == reason and r["deltas"] == {} and r["rates_per_s"] == {}


def test_compare_saturated_delta_unknown():
    r = _ib.compare(_reading(1.0, link_downed=250), _reading(2.0, link_downed=255))["mlx5_0/1"]
    assert r["saturated"] == ["link_downed"] and r["deltas"]["link_downed"] is None
    assert "link_downed" not in r["rates_per_s"] and r["deltas"]["symbol_error"] == 0


# ----------------------------------------------------------------------------------------------- more broken input


def test_ibstatus_broken():
    with pytest.raises(ParseError):
        _ib.parse_ibstatus("Infiniband is great\nrandom text\n")
    assert _ib.parse_ibstatus("") == []
    cut = "Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80:0000\n\tbase lid:"
    (h,) = _ib.parse_ibstatus(cut)
    assert h["name"] == "mlx5_0" and h["ports"][0]["state"] is None and h["ports"][0]["port_guid"] is None


def test_sysfs_non_utf8_and_odd_values(tmp_path):
    cls = tmp_path / "sys" / "class" / "infiniband"
    port = cls / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (cls / "mlx5_0" / "fw_ver").write_bytes(b"28.\xff\xfe.1000")
    (port / "state").write_bytes(b"4: ACTIVE")  # no trailing newline
    (port / "rate").write_text("\n")
    (port / "counters" / "symbol_error").write_text("N/A (no PMA)\n")
    (port / "counters" / "link_downed").write_text("  7\n\n")
    out = _ib.collect(capture_dir=str(tmp_path))
    assert out["errors"] == []
    (h,) = out["hcas"]
    assert h["fw_version"] == "28.\ufffd\ufffd.1000"
    p = h["ports"][0]
    assert p["state"] == "ACTIVE" and p["rate_gbps"] is None and p["rate_label"] is None
    assert p["counters"] == {"link_downed": 7}


def test_hca_with_nothing_readable_stays_visible(tmp_path):
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_3").mkdir(parents=True)
    out = _ib.collect(capture_dir=str(tmp_path))
    assert [(h["name"], h["ports"]) for h in out["hcas"]] == [("mlx5_3", [])]
    dest = str(tmp_path / "copy")
    assert _ib.capture_sysfs(str(tmp_path), dest, timeout=None)["hcas"] == ["mlx5_3"]
    assert [h["name"] for h in _ib.collect(capture_dir=dest)["hcas"]] == ["mlx5_3"]
