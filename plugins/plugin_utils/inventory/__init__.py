# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first day on a cluster: the inventory from Slurm (``gpuops.cluster.slurm``), Slurm's topology, and the
preflight's verdicts (``gpuops.cluster.preflight``)."""
