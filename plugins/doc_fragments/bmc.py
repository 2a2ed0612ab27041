# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Connection options of modules that talk to a BMC (IPMI over LAN or Redfish over HTTPS).
    DOCUMENTATION = r"""
options:
  bmc_host:
    description:
      - Address or name of the BMC. When unset, the local BMC is read in-band with C(ipmitool) (C(/dev/ipmi0)).
      - For O(protocol=redfish) an C(https://) URL is accepted as well.
    type: str
  bmc_user:
    description:
      - BMC user name.
      - Defaults to the environment variable E(GPUOPS_BMC_USER) of the process running the module.
    type: str
  bmc_password:
    description:
      - BMC password. Never placed on a command line (ipmitool reads it from E(IPMI_PASSWORD)) nor in results.
      - Defaults to the environment variable E(GPUOPS_BMC_PASSWORD) of the process running the module.
    type: str
  protocol:
    description:
      - How to reach a remote BMC given in O(bmc_host). Ignored for in-band access.
      - C(ipmi) runs C(ipmitool -I lanplus -C 3); C(redfish) uses HTTPS.
    type: str
    choices: [ipmi, redfish]
    default: redfish
  port:
    description:
      - BMC port. Defaults to 623 for IPMI and 443 for Redfish.
    type: int
  validate_certs:
    description:
      - Verify the BMC's TLS certificate (Redfish). Most BMCs ship self-signed certificates.
    type: bool
    default: true
"""
