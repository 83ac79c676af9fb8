"""The one runner for every Slurm command wirewise runs (sbatch goes through submitit):

    slurm("sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", "1234")   -> its stdout
    slurm("scontrol", "update", NodeName="gpu01", State="DRAIN", Reason="wirewise:busbw")

An argument list, never a shell; keyword fields become `Key=value` arguments, the form
scontrol, sacctmgr and sinfo's filters take, one argument each. One timeout (TIMEOUT_S, or a
shorter one for a caller with a deadline of its own) and one error path: SlurmUnavailable when
the command is not installed here, SlurmTimeout when it does not answer, SlurmError when it
fails, each one line that names the command and Slurm's own first line of error, or
SlurmUnreachable (a SlurmError) where Slurm says it found no controller. A question
whose "no" comes as an error (an unknown node or job) asks with `or_none=True`: None then,
while a missing command or a silent controller still raise.
"""

from __future__ import annotations

import shutil
import subprocess

from wirewise.errors import UserError

COMMANDS = ("sacct", "squeue", "sinfo", "scontrol", "scancel")
# slurmctld answers within MessageTimeout (default 10 s) and clients retry; a busy controller
# takes longer, so a minute before giving up.
TIMEOUT_S = 60.0


class SlurmUnavailable(UserError):
    """The Slurm client command is not installed on this machine."""


class SlurmError(UserError):
    """A Slurm command that failed; `reason` is its first line on stderr."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class SlurmTimeout(SlurmError):
    """A Slurm command that did not answer within its timeout."""


class SlurmUnreachable(SlurmError):
    """A Slurm command that found no controller: no configuration here (`unconfigured`: a
    machine outside any cluster, e.g. a laptop placing on stored wirings), or slurmctld silent."""

    def __init__(self, message: str, reason: str = "", unconfigured: bool = False) -> None:
        super().__init__(message, reason)
        self.unconfigured = unconfigured


# Slurm's own words for "no controller to ask" (first line on stderr), and what they mean. Seen
# here: sinfo on a machine without slurm.conf tries DNS SRV records and says the first; a
# configured client whose slurmctld is down says the second (slurm_load_node: ...).
UNREACHABLE = (
    (("resolve_ctls_from_dns_srv", "fetch_config", "_establish_config_source", "Unable to process configuration file",
      "s_p_parse_file: cannot stat file"),
     "this machine has no slurm.conf, and DNS has no _slurmctld._tcp SRV record to find the controller by"),
    (("Unable to contact slurm controller", "Unable to establish controller machine", "Socket timed out",
      "Zero Bytes were transmitted or received", "Connection refused"),
     "slurmctld does not answer"),
    (("Munge encode failed", "Munge decode failed", "auth_g_create", "Invalid authentication credential"),
     "this machine cannot authenticate to slurmctld (munge)"),
)


def available(command: str = "scontrol") -> bool:
    return shutil.which(command) is not None


def slurm(command: str, *args: str, timeout: float = TIMEOUT_S, or_none: bool = False, **fields: str) -> str | None:
    """Run a Slurm client command; its stdout (None for an error answer, given `or_none`)."""
    if command not in COMMANDS:
        raise ValueError(f"not a Slurm command wirewise runs: {command!r}")
    argv = [command, *args, *(_field(key, value) for key, value in fields.items())]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise SlurmUnavailable(f"{command} not found: run this where the Slurm client commands are installed") from None
    except subprocess.TimeoutExpired:
        raise SlurmTimeout(f"{' '.join(argv[:2])} did not answer within {timeout:g} s (is slurmctld up?)") from None
    if proc.returncode != 0:
        if or_none:
            return None
        reason = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise _unreachable(command, proc.stderr, reason) or SlurmError(f"{' '.join(argv[:2])} failed: {reason}", reason)
    return proc.stdout


def _unreachable(command: str, stderr: str, reason: str) -> SlurmUnreachable | None:
    """Slurm's errors for a controller it cannot reach, as one line that says so, instead of
    its raw first line; None for any other error."""
    for position, (marks, meaning) in enumerate(UNREACHABLE):
        if any(mark in stderr for mark in marks):
            return SlurmUnreachable(f"Slurm is unreachable: {command} found no controller ({meaning})", reason,
                                    unconfigured=position == 0)
    return None


def _field(key: str, value: str) -> str:
    """Key=value as one argument; a line break would start another record in Slurm's parsers."""
    value = str(value)
    if any(c in value for c in "\n\r\0"):
        raise UserError(f"{key}={value!r}: a Slurm field value may not hold a line break or NUL")
    return f"{key}={value}"
