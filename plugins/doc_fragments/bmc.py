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
      - Verify the BMC's TLS certificate (Redfish). Most BMCs ship self-signed certificates; rather than turning
        this off, give their CA (or the certificates themselves) in O(ca_path).
    type: bool
    default: true
  ca_path:
    description:
      - A PEM file of CA certificates the BMC's TLS certificate is verified against (Redfish), instead of the
        system's trust store. A path that is not a file is an error.
    type: path
  auth:
    description:
      - How Redfish requests authenticate.
      - C(session) logs in once (POST to the service's C(SessionService/Sessions)), sends the C(X-Auth-Token) on
        every request, logs in again once if the session expired, and deletes the session at the end. BMCs of
        large fleets rate-limit Basic auth; a session costs one password check per run.
      - C(basic) sends HTTP Basic auth on every request.
      - C(auto) uses a session when the service root names a SessionService, else Basic auth (also when the
        Sessions collection refuses the login with 404/405/501). Wrong credentials fail; they are never retried
        with Basic auth.
    type: str
    choices: [auto, session, basic]
    default: auto
"""
