# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster-level platform checks beside the node checks: the scheduler, jobs and parallel storage, where their
facts come from, and what Slurm's drain reasons mean."""
