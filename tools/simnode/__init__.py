"""simnode: a simulated GPU node that answers with the REAL output formats of nvidia-smi, ibstat, ipmitool,
dcgmi, nccl-tests, journalctl/dmesg and sysfs (docs/simulation.md). Stdlib only; no collection imports."""

from simnode.capture import capture
from simnode.cli import run_tool
from simnode.faults import FAULTS, apply as apply_fault
from simnode.state import default_state, load, save

__all__ = ["FAULTS", "apply_fault", "capture", "default_state", "load", "run_tool", "save"]
