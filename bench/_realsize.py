# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real-sized captures for the offline benchmark (issue 41; ``bench_offline.py --real-size``).

The simulator already renders a full ``nvidia-smi -q`` of 8 GPUs (text 73 KB, XML 159 KB) and per-HCA mlxlink,
but its kernel log (~2 KB), SEL (3 entries), SDR (~15 sensors) and IB sysfs dump (port counters only) are far
lighter than a real node's. This pads each capture, in place, to a real node's size with benign content only,
so the answer key still holds (the benchmark scores the report against it):

- kernel.log: a whole boot's PCI/ACPI enumeration before the simulator's lines, at the boot's first second: the
  benign lines of a real H100 node's boot log (/work/shared/reference/samples/xid-kmsg/
  gpud-boot-mlx5-insufficient-pcie-power.log, leptonai/gpud testdata; lines naming errors, power, AER, mlx5,
  NVIDIA left out), repeated to ~200 KB (a real boot's dmesg is 2,381 lines, 254 KB in that sample);
- ipmitool-sel.txt: 400 older entries (timestamp clock syncs and boots, months before the capture: outside every
  lookback window) before the simulator's, renumbered (a real SEL holds hundreds of entries; 512 is common);
- ipmitool-sdr.txt: 150 more sensors in the simulator's format, all ``ok`` at benign readings (a real 2U GPU
  server's SDR lists 150-250);
- infiniband-sysfs.txt: each port's ``hw_counters`` (the RDMA counters a real ``/sys/class/infiniband`` tree
  has beside ``counters``), all 0.

A marker file (``.realsize``) makes the padding happen once per generated cluster.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SAMPLE = Path("/work/shared/reference/samples/xid-kmsg/gpud-boot-mlx5-insufficient-pcie-power.log")
_KMSG = re.compile(r"^kern\s*:\w+\s*: \S+ ((?:pci|pci_bus|ACPI|acpi|PCI) .*)$")
_NOISY = re.compile(r"(?i)error|fail|warn|power|insufficient|AER|mlx|nvidia|NVRM|Xid|disabl|timeout")
KERNEL_TARGET = 200_000
HW_COUNTERS = (
    "duplicate_request implied_nak_seq_err lifespan local_ack_timeout_err np_cnp_sent np_ecn_marked_roce_packets "
    "out_of_buffer out_of_sequence packet_seq_err req_cqe_error req_cqe_flush_error req_remote_access_errors "
    "req_remote_invalid_request resp_cqe_error resp_cqe_flush_error resp_local_length_error "
    "resp_remote_access_errors rnr_nak_retry_err roce_adp_retrans roce_adp_retrans_to roce_slow_restart "
    "roce_slow_restart_cnps roce_slow_restart_trans rp_cnp_handled rp_cnp_ignored rx_atomic_requests "
    "rx_icrc_encapsulated rx_read_requests rx_write_requests"
).split()


def _boot_lines() -> list:
    if not SAMPLE.exists():
        raise SystemExit("--real-size needs %s (the real boot log the kernel log is padded with)" % SAMPLE)
    out = []
    for line in SAMPLE.read_text(errors="replace").splitlines():
        m = _KMSG.match(line)
        if m and not _NOISY.search(m.group(1)):
            out.append(m.group(1))
    return out


def _kernel(path: Path, boot: list) -> None:
    text = path.read_text(errors="replace") if path.exists() else ""
    first = text.split("\n", 1)[0].split(" ", 2)
    if len(first) < 3 or " kernel: " not in text.split("\n", 1)[0]:
        return  # an empty or unusual log (a fault's own): left as it is
    stamp, host = first[0], first[1]
    pad, size = [], 0
    while size < KERNEL_TARGET:
        for msg in boot:
            line = "%s %s kernel: %s\n" % (stamp, host, msg)
            pad.append(line)
            size += len(line)
    path.write_text("".join(pad) + text)


def _sel(path: Path) -> None:
    if not path.exists():
        return
    old = [line.split("|", 1)[1].strip() for line in path.read_text(errors="replace").splitlines() if "|" in line]
    rows = []
    for i in range(400):
        month, day = 3 + i // 100, 1 + (i % 100) // 4
        what = (
            "System Event #0x83 | Timestamp Clock Sync"
            if i % 2
            else "System Boot Initiated #0x01 | Initiated by power up"
        )
        rows.append("%02d/%02d/2026 | %02d:%02d:00 | %s | Asserted" % (month, day, i % 24, i % 60, what))
    path.write_text("".join("%4x | %s\n" % (n + 1, r) for n, r in enumerate(rows + old)))


def _sdr(path: Path) -> None:
    if not path.exists():
        return
    extra = []
    for i in range(32):
        extra.append("DIMM%02d Temp       | %02Xh | ok  | 32.%d | %d degrees C" % (i, 0x60 + i, i % 8, 33 + i % 5))
    for i in range(16):
        extra.append(
            "VR P%d VCCIN %d Temp | %02Xh | ok  |  3.%d | %d degrees C" % (i % 2, i, 0x90 + i, i % 8, 40 + i % 6)
        )
    for i in range(8):
        extra.append("GPU%d Board Temp    | %02Xh | ok  | 11.%d | %d degrees C" % (i, 0xA0 + i, i, 35 + i))
        extra.append("NVSW%d Temp         | %02Xh | ok  | 11.%d | %d degrees C" % (i % 4, 0xA8 + i, i, 38 + i % 3))
    for i in range(16):
        extra.append("FAN%dB             | %02Xh | ok  | 29.%d | %d RPM" % (i + 1, 0xB0 + i, i % 8, 7000 + 120 * i))
    for i in range(6):
        extra.append("PSU%d Status       | %02Xh | ok  | 10.%d | Presence detected" % (i + 1, 0xC0 + i, i))
        extra.append("PSU%d Input Power  | %02Xh | ok  | 10.%d | %d Watts" % (i + 1, 0xC8 + i, i, 900 + 20 * i))
    for i in range(58):
        extra.append("VOLT_%02d           | %02Xh | ok  |  7.%d | 1.%02d Volts" % (i, 0xD0 + i % 40, i % 8, 5 + i % 80))
    text = path.read_text(errors="replace")
    path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + "\n".join(extra) + "\n")


def _ib(path: Path) -> None:
    if not path.exists():
        return
    text = path.read_text(errors="replace")
    ports = sorted({m.group(1) for m in re.finditer(r"^(\./[^/\n]+/ports/\d+)/counters/", text, re.M)})
    extra = ["%s/hw_counters/%s:0" % (port, name) for port in ports for name in HW_COUNTERS]
    path.write_text(
        text + ("" if text.endswith("\n") or not text else "\n") + "\n".join(extra) + ("\n" if extra else "")
    )


def pad_cluster(sim: Path) -> dict:
    """Pad every capture (and previous capture) of a generated cluster once; return sizes before/after."""
    marker = sim / ".realsize"
    if marker.exists():
        return {"padded": "already"}
    boot = _boot_lines()
    before = after = nodes = 0
    for sub in ("captures", "previous"):
        base = sim / sub
        if not base.is_dir():
            continue
        for entry in sorted(os.scandir(base), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            d = Path(entry.path)
            before += sum(f.stat().st_size for f in d.iterdir() if f.is_file())
            _kernel(d / "kernel.log", boot)
            _sel(d / "ipmitool-sel.txt")
            _sdr(d / "ipmitool-sdr.txt")
            _ib(d / "infiniband-sysfs.txt")
            after += sum(f.stat().st_size for f in d.iterdir() if f.is_file())
            nodes += sub == "captures"
    marker.write_text("padded\n")
    return {
        "nodes": nodes,
        "kib_per_capture_before": before // max(nodes, 1) // 1024,
        "kib_per_capture_after": after // max(nodes, 1) // 1024,
    }
