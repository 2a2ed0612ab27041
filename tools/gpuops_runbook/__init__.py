"""gpuops.cluster ticket hook: ticket payload -> runbook catalogue -> ansible-runner -> result JSON."""

__version__ = "0.1.0"
