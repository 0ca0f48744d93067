"""A real Slurm cluster on one machine: slurmctld, and one slurmd per network namespace.

    net = netns.Cluster(2, prefix="hvdsl", subnet="10.78.0")   # tests/multihost/netns.py
    net.setup()
    slurm = SlurmCluster(net).start()   # munged, slurmctld, slurmd h1 and h2; waits until idle
    slurm.run(["srun", "-N2", "-n4", "hostname"], timeout=30)
    slurm.submit(["job.sbatch"], timeout=60)   # sbatch, then waits: (id, JobState, ExitCode)
    slurm.stop()                        # cancels jobs, stops the daemons (net.teardown() after)

Layout (root namespace = the controller and the submit host):

    hvdsl-br 10.78.0.1   slurmctld (port 36817), munged, srun/sbatch/scontrol
      ├─ hvdsl-h1  10.78.0.11   slurmd -N h1 (port 36818)
      └─ hvdsl-h2  10.78.0.12   slurmd -N h2

Node names h1, h2 resolve nowhere: Slurm knows each node's address from NodeAddr,
as on clusters whose node names are not in DNS. Everything lives in the network
cluster's work directory: slurm.conf (SLURM_CONF points the commands at it), a
munge key and munged's socket (munged runs as the munge user), state, spool and
log files. slurmd runs under `nsenter --net` (not `ip netns exec`, which remounts
/sys and leaves slurmd without its cgroup tree), with proctrack/linuxproc and
task/none so that nothing needs cgroups. Each node claims 4 CPUs
(SlurmdParameters=config_overrides) whatever the machine has.
"""
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import time

CTLD_PORT = 36817
SLURMD_PORT = 36818
CPUS_PER_NODE = 4
COMMANDS = ("slurmctld", "slurmd", "srun", "sbatch", "scontrol", "sinfo", "squeue", "scancel",
            "munged", "nsenter")


def unavailable_reason():
    """Why a Slurm cluster cannot be started here, or None when it can."""
    if os.geteuid() != 0:
        return "the Slurm tests need root (network namespaces, slurmd, munged)"
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        return (f"the Slurm tests need {', '.join(missing)}: packages slurm-wlm, munge and "
                "util-linux (deploy/install-deps.sh --tests installs them)")
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "the Slurm tests need the munge user (the munge package makes it)"
    return None


def _conf(workdir, controller, nodes):
    d = workdir
    lines = [
        "ClusterName=hvdsl",
        f"SlurmctldHost={controller}",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={d}/ctld",
        f"SlurmdSpoolDir={d}/spool-%n",
        f"SlurmctldPidFile={d}/slurmctld.pid",
        f"SlurmdPidFile={d}/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/slurmctld.log",
        f"SlurmdLogFile={d}/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "KillWait=5",
        "MinJobAge=30",
        "InactiveLimit=0",
        "SlurmdTimeout=30",
    ]
    for name, address in nodes:
        lines.append(f"NodeName={name} NodeAddr={address} CPUs={CPUS_PER_NODE} State=UNKNOWN")
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class SlurmCluster:
    def __init__(self, net):
        self.net = net                       # a netns.Cluster that is set up
        self.dir = net.workdir
        self.conf = self.dir / "slurm.conf"
        self.nodes = [h.name for h in net.hosts]
        self._daemons = []                   # (what, Popen) in start order

    # ---- life cycle -------------------------------------------------------

    def start(self, timeout=40):
        try:
            self._no_dns()
            self._start_munged()
            controller = f"{socket.gethostname().split('.')[0]}({self.net.bridge_address})"
            for sub in ("ctld", *(f"spool-{n}" for n in self.nodes)):
                (self.dir / sub).mkdir(mode=0o755)
            self.conf.write_text(_conf(self.dir, controller,
                                       [(h.name, h.address) for h in self.net.hosts]))
            self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
            if not self.net.wait_tcp(self.net.bridge_address, CTLD_PORT, timeout,
                                     alive=self._alive):
                raise RuntimeError(f"slurmctld did not listen on {CTLD_PORT}\n{self.logs()}")
            for h in self.net.hosts:
                self._spawn(f"slurmd {h.name}",
                            ["nsenter", f"--net=/run/netns/{h.netns}", "slurmd", "-D",
                             "-N", h.name, "-f", self.conf])
            self._wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _no_dns(self):
        """The nodes reach no name server (an unreachable route to each): a name
        lookup fails at once instead of after the resolver's timeouts, and the
        node names resolve nowhere, as on a cluster whose names are not in DNS."""
        try:
            text = pathlib.Path("/etc/resolv.conf").read_text()
        except OSError:
            return
        servers = [parts[1] for parts in (line.split() for line in text.splitlines())
                   if len(parts) >= 2 and parts[0] == "nameserver" and ":" not in parts[1]]
        for h in self.net.hosts:
            for server in servers:
                subprocess.run(["ip", "-n", h.netns, "route", "add", "unreachable",
                                f"{server}/32"], capture_output=True, timeout=10)

    def _start_munged(self):
        munge = pwd.getpwnam("munge")
        os.chmod(self.dir, 0o755)  # munged (not root) reaches its directory through it
        d = self.dir / "munge"
        d.mkdir(mode=0o755)  # munged: "execute permissions for all required"
        os.chown(d, munge.pw_uid, munge.pw_gid)
        key = d / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        self._spawn("munged", ["munged", "-F",
                               f"--socket={d}/munge.socket", f"--key-file={key}",
                               f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                               f"--seed-file={d}/munged.seed"],
                    user=munge.pw_uid, group=munge.pw_gid, extra_groups=[])
        deadline = time.monotonic() + 10
        while not (d / "munge.socket").exists():
            if time.monotonic() > deadline or not self._alive():
                raise RuntimeError(f"munged did not start\n{self.logs()}")
            time.sleep(0.05)

    def _spawn(self, what, args, **popen_kwargs):
        log = open(self.dir / f"{what.replace(' ', '-')}.out", "w")
        with log:
            proc = self.net.spawn(args, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, env=self.env(), **popen_kwargs)
        self._daemons.append((what, proc))
        return proc

    def _alive(self):
        return all(p.poll() is None for _, p in self._daemons)

    def _wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        states = ""
        while time.monotonic() < deadline:
            if not self._alive():
                break
            r = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10, check=False)
            states = r.stdout.strip()
            idle = {line.split()[0] for line in states.splitlines()
                    if line.split()[1:] == ["idle"]}
            if idle >= set(self.nodes):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm nodes are not idle after {timeout} s: {states!r}\n"
                           f"{self.logs()}")

    def stop(self):
        """Cancels every job, stops slurmd, slurmctld and munged (TERM, then KILL). Never raises."""
        try:
            if self._daemons and self._alive():
                self.run(["scancel", "--full", "--quiet", "--user=root"], timeout=10, check=False)
        except Exception as e:  # teardown must not mask the test's own failure
            print(f"slurm teardown: scancel: {e}")
        for what, proc in reversed(self._daemons):
            try:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait(timeout=10)
                self.net.forget(proc)
            except Exception as e:
                print(f"slurm teardown: {what}: {e}")
        self._daemons = []

    # ---- commands ---------------------------------------------------------

    def env(self, extra=None):
        """Our environment without HVD_*, HOROVOD_* and SLURM_* settings, SLURM_CONF set."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HVD_", "HOROVOD_", "SLURM_"))}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    def run(self, args, timeout, env=None, check=True, cwd=None):
        """Runs a Slurm command (srun, sbatch, scontrol, ...) on the submit host."""
        args = [str(a) for a in args]
        try:
            r = subprocess.run(args, capture_output=True, text=True, errors="replace",
                               timeout=timeout, env=self.env(env), cwd=cwd,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"{' '.join(args)} did not end within {timeout} s\n"
                                 f"stdout:\n{e.stdout}\nstderr:\n{e.stderr}\n{self.logs()}")
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({r.returncode})\nstdout:\n{r.stdout}\n"
                                 f"stderr:\n{r.stderr}\n{self.logs()}")
        return r

    def submit(self, args, timeout, env=None, cwd=None):
        """sbatch ARGS, then waits (polling the controller every 0.2 s, where
        `sbatch --wait` sleeps up to 32 s between looks) until the job ended.
        Returns (job id, JobState, ExitCode)."""
        r = self.run(["sbatch", "--parsable", *args], timeout=30, env=env, cwd=cwd)
        job = r.stdout.strip().split(";")[0]
        deadline = time.monotonic() + timeout
        fields = {}
        while time.monotonic() < deadline:
            r = self.run(["scontrol", "show", "job", "-o", job], timeout=10, check=False)
            fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
            if fields.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                          "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"):
                return job, fields["JobState"], fields.get("ExitCode")
            time.sleep(0.2)
        self.run(["scancel", job], timeout=10, check=False)
        raise AssertionError(f"batch job {job} did not end within {timeout} s: {fields}\n"
                             f"{self.logs()}")

    def logs(self, tail=30):
        """The last lines of every daemon's log, for failure messages."""
        parts = []
        for path in sorted(self.dir.glob("*.log")) + sorted(self.dir.glob("*.out")):
            try:
                lines = path.read_text(errors="replace").splitlines()[-tail:]
            except OSError:
                continue
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)
