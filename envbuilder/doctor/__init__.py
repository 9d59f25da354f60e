"""Doctor: probe a host (driver, GPUs, toolkits, capacity, containers) and judge it against a target.

    from envbuilder.doctor import run_doctor, HostSources
    report = run_doctor("blackwell-sm120")            # this host
    report = run_doctor("blackwell-sm120", saved_smi=Path("gpus.csv"))   # another host, from saved output
    report.verdict, report.checks, report.to_json()
"""

from envbuilder.doctor.model import Check, DoctorReport, HostFacts
from envbuilder.doctor.service import run_doctor
from envbuilder.doctor.sources import HostSources

__all__ = ["Check", "DoctorReport", "HostFacts", "HostSources", "run_doctor"]
