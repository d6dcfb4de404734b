"""Running a NIC -> CPU transfer program (nic_to_host.py) and reading what it prints: what
run.py here and ../live_fields/run.py share."""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DMA = r"requests (\d+), descriptors (\d+), bytes read (\d+), bytes written (\d+)"
WINDOW = re.compile(r"^bench: nic dma window: " + DMA, re.M)
REPORT = re.compile(r"^floem: nic dma: " + DMA, re.M)


def floem_command():
    found = shutil.which("floem")
    if found:
        return found
    venv = os.path.join(HERE, "..", "..", ".venv", "bin", "floem")
    if os.path.exists(venv):
        return venv
    sys.exit("run.py: no `floem` on PATH (export PATH=/path/to/floem/.venv/bin:$PATH)")


def managers_option(managers):
    """The `floem run` option choosing the NIC's manager cores (none: the default)."""
    return [] if managers is None else ["--nic-managers", str(managers)]


def managers_text(managers):
    """How the setting line names the manager configuration."""
    return "with the default manager cores" if managers is None else f"--nic-managers {managers}"


def run_transfer(floem, app, settings, options, packets, managers, extra, label):
    """`floem run --report` of `app` with `settings` (its parameters from the environment),
    `packets` and `options`: its packets/s, DMA requests and bytes read and written a packet
    over the transfer window, the requests outside it, and its stderr. Exits with its output
    when it fails, counts a bad packet, or prints no rate line starting with `label`."""
    rate_line = re.compile(rf"^{re.escape(label)}: (\d+) packets in ([\d.]+) s .*, "
                           r"(\d+) packets/s, bad (\d+)$", re.M)
    env = dict(os.environ, PACKETS=str(packets), **settings)
    cmd = ([floem, "run", "--report", "--timeout", "300"] + managers_option(managers)
           + options + extra + [app])
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rate, window, report = rate_line.search(p.stdout), WINDOW.search(p.stderr), REPORT.search(p.stderr)
    if p.returncode != 0 or not (rate and window and report) or rate.group(4) != "0":
        given = " ".join(f"{k}={v}" for k, v in settings.items())
        sys.exit(f"run.py: {' '.join(cmd)} ({given} PACKETS={packets}) failed "
                 f"(status {p.returncode}):\n{p.stdout}{p.stderr}")
    w = [int(x) for x in window.groups()]
    r = [int(x) for x in report.groups()]
    return {"pps": float(rate.group(3)),
            "req": w[0] / packets, "read": w[2] / packets, "written": w[3] / packets,
            "extra_requests": r[0] - w[0]}, p.stderr
