"""gpuops-audit: the operator CLI that verifies a gpuops.cluster audit log without Ansible (docs/audit.md)."""
