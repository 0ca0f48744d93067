"""Checks of deploy/ for tests/deploy/test_manifests.py: loaders for the
Kubernetes manifests, the Dockerfile, the systemd unit and the Slurm script,
and check_* functions that return a list of problems (empty: fine), so that
a test can hand them a deliberately broken copy and see the problem named.
"""

import json
import pathlib
import re
import shlex

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
UNIT = DEPLOY / "systemd" / "hvd-agent.service"
SBATCH = DEPLOY / "slurm" / "hvd.sbatch"
DOC = REPO / "docs" / "deploy.md"

AGENT_PORT = 29470          # hvd-agent's --listen default and hvdrun's --agent-port default
MIN_SECRET_BYTES = 16       # common/secret_file.h kMinSecretBytes
OWNER_ONLY_MODES = (0o400, 0o600)
AGENT_TERMINATE_GRACE_S = 5  # --terminate-grace default: SIGTERM -> SIGKILL


# --- loading -----------------------------------------------------------------

def load_k8s():
    """{(kind, name): document} of every YAML document under deploy/kubernetes."""
    docs = {}
    for path in sorted(list(K8S.glob("*.yaml")) + list(K8S.glob("*.yml"))):
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                key = (doc["kind"], doc["metadata"]["name"])
                assert key not in docs, f"{path.name}: {key} defined twice"
                docs[key] = doc
    return docs


def one(docs, kind):
    found = [d for (k, _), d in docs.items() if k == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def pod_spec(workload):
    return workload["spec"]["template"]["spec"]


def container(workload, name_prefix):
    """The container whose command starts with name_prefix (hvd-agent, hvdrun)."""
    found = [c for c in pod_spec(workload)["containers"]
             if argv_of(c) and pathlib.PurePosixPath(argv_of(c)[0]).name == name_prefix]
    assert len(found) == 1, f"expected one container running {name_prefix}, found {len(found)}"
    return found[0]


def argv_of(c):
    return [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]


def flag(argv, *names):
    """The value of the first of names in argv (`--x V` or `--x=V`), else None."""
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1:]
    return None


def parse_hosts(spec):
    """'a:2,b:2' -> [('a', 2), ('b', 2)]"""
    hosts = []
    for item in spec.split(","):
        host, _, slots = item.rpartition(":")
        hosts.append((host, int(slots)))
    return hosts


def secret_mounts(workload, c):
    """[(secretName, items, defaultMode, mountPath)] of c's secret volumes."""
    volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
    out = []
    for m in c.get("volumeMounts", []):
        v = volumes.get(m["name"])
        if v is not None and "secret" in v:
            s = v["secret"]
            out.append((s.get("secretName"), s.get("items"), s.get("defaultMode"),
                        m["mountPath"]))
    return out


def secret_file_in_mount(path, mounts):
    """(secretName, key, defaultMode) of the secret volume that provides file path."""
    for name, items, mode, mount_path in mounts:
        prefix = mount_path.rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix):]
        if items is None:
            return name, rel, mode
        for it in items:
            if it["path"] == rel:
                return name, it["key"], it.get("mode", mode)
    return None


def container_port(c, port):
    """Resolve a numeric or named container port to its number."""
    if isinstance(port, int):
        return port
    for p in c.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


# --- Kubernetes checks -------------------------------------------------------

def check_secret(docs):
    problems = []
    secrets = [d for (k, _), d in docs.items() if k == "Secret"]
    if len(secrets) != 1:
        return [f"expected one Secret, found {len(secrets)}"]
    s = secrets[0]
    if s["metadata"]["name"] != "hvd-agent-secret":
        problems.append(f"Secret is named {s['metadata']['name']!r}, not 'hvd-agent-secret'")
    data = s.get("stringData") or {}
    if "secret" not in data and "secret" not in (s.get("data") or {}):
        problems.append("Secret has no key 'secret'")
    value = str(data.get("secret", ""))
    # Applied unchanged, the placeholder must make the agents refuse to start.
    if "secret" in data and len(value.strip()) >= MIN_SECRET_BYTES:
        problems.append(f"the placeholder secret {value!r} is long enough to be accepted; "
                        "a public value would be trusted")
    return problems


def check_agents(docs):
    problems = []
    sts = one(docs, "StatefulSet")
    svc_name = sts["spec"].get("serviceName")
    svc = docs.get(("Service", svc_name))
    if svc is None:
        return [f"StatefulSet serviceName {svc_name!r} names no Service"]
    if svc["spec"].get("clusterIP") != "None":
        problems.append(f"Service {svc_name} is not headless (clusterIP: None)")
    template_labels = sts["spec"]["template"]["metadata"].get("labels", {})
    for what, sel in (("Service selector", svc["spec"].get("selector", {})),
                      ("StatefulSet selector", sts["spec"]["selector"].get("matchLabels", {}))):
        if not sel or any(template_labels.get(k) != v for k, v in sel.items()):
            problems.append(f"{what} {sel} does not match the pod labels {template_labels}")

    c = container(sts, "hvd-agent")
    argv = argv_of(c)
    listen = flag(argv, "--listen")
    listen_port = int(listen.rpartition(":")[2]) if listen else AGENT_PORT
    if listen_port != AGENT_PORT:
        problems.append(f"agent --listen port {listen_port} is not {AGENT_PORT}, "
                        "hvdrun's default --agent-port")
    ports = {p["containerPort"]: p.get("name") for p in c.get("ports", [])}
    if listen_port not in ports:
        problems.append(f"container ports {sorted(ports)} lack the --listen port {listen_port}")
    svc_ports = [p for p in svc["spec"].get("ports", [])
                 if p.get("port") == listen_port and p.get("name") == "agent"]
    if not svc_ports:
        problems.append(f"Service {svc_name} has no port {listen_port} named 'agent'")
    for p in svc_ports:
        if container_port(c, p.get("targetPort", p["port"])) != listen_port:
            problems.append(f"Service targetPort {p.get('targetPort')} is not the agent's port")
    probe = (c.get("readinessProbe") or {}).get("tcpSocket")
    if probe is None or container_port(c, probe.get("port")) != listen_port:
        problems.append("readiness is not a tcpSocket probe of the agent port")
    if not pod_spec(sts).get("terminationGracePeriodSeconds", 0) > AGENT_TERMINATE_GRACE_S:
        problems.append("terminationGracePeriodSeconds must exceed the agent's terminate grace")
    if pod_spec(sts).get("securityContext", {}).get("fsGroup") is not None:
        problems.append("an fsGroup makes the secret file group-readable (0440): "
                        "the agent refuses it")

    secret_file = flag(argv, "--secret-file")
    if secret_file is None:
        problems.append("hvd-agent runs without --secret-file")
    else:
        problems += check_secret_source("agent", sts, c, secret_file, docs)
    slots = flag(argv, "--slots")
    if slots is None or int(slots) < 1:
        problems.append("hvd-agent has no --slots (the launcher's -H slots must fit in it)")
    return problems


def check_secret_source(who, workload, c, path, docs):
    problems = []
    src = secret_file_in_mount(path, secret_mounts(workload, c))
    if src is None:
        return [f"{who}: --secret-file {path} is not in a mounted secret volume"]
    name, key, mode = src
    secret = docs.get(("Secret", name))
    if secret is None:
        problems.append(f"{who}: mounts Secret {name!r}, which no manifest defines")
    elif key not in (secret.get("stringData") or {}) and key not in (secret.get("data") or {}):
        problems.append(f"{who}: Secret {name} has no key {key!r}")
    if mode not in OWNER_ONLY_MODES:
        problems.append(f"{who}: secret defaultMode {mode!r} is not 0400 (256) or 0600 (384); "
                        "hvd refuses group/other bits")
    return problems


def check_launcher(docs):
    problems = []
    job = one(docs, "Job")
    sts = one(docs, "StatefulSet")
    spec = pod_spec(job)
    if spec.get("restartPolicy") != "Never":
        problems.append("launcher restartPolicy is not Never")
    if job["spec"].get("backoffLimit") != 0:
        problems.append("launcher backoffLimit is not 0")

    c = container(job, "hvdrun")
    argv = argv_of(c)
    hosts_spec = flag(argv, "-H", "--hosts")
    if hosts_spec is None:
        return problems + ["hvdrun has no -H"]
    hosts = parse_hosts(hosts_spec)
    replicas = sts["spec"].get("replicas", 1)
    sts_name, svc_name = sts["metadata"]["name"], sts["spec"]["serviceName"]
    pattern = re.compile(rf"^{re.escape(sts_name)}-(\d+)\.{re.escape(svc_name)}"
                         r"(\.[a-z0-9-]+(\.svc(\.cluster\.local)?)?)?$")
    agent_slots = int(flag(argv_of(container(sts, "hvd-agent")), "--slots") or 0)
    for host, slots in hosts:
        m = pattern.match(host)
        if m is None:
            problems.append(f"-H host {host!r} is not {sts_name}-<i>.{svc_name}")
        elif int(m.group(1)) >= replicas:
            problems.append(f"-H host {host!r}: the StatefulSet has only {replicas} replicas")
        if slots > agent_slots:
            problems.append(f"-H host {host!r} asks for {slots} slots; agents have {agent_slots}")
    if len({h for h, _ in hosts}) != len(hosts):
        problems.append("-H names a host twice")
    np_ = flag(argv, "-np", "--np", "--num-proc")
    if np_ is None or int(np_) > sum(s for _, s in hosts):
        problems.append(f"-np {np_} does not fit in the -H slots")

    agent_argv = argv_of(container(sts, "hvd-agent"))
    listen = flag(agent_argv, "--listen")
    agent_listen_port = int(listen.rpartition(":")[2]) if listen else AGENT_PORT
    launcher_port = int(flag(argv, "--agent-port") or AGENT_PORT)
    if launcher_port != agent_listen_port:
        problems.append(f"hvdrun --agent-port {launcher_port} != agent --listen port "
                        f"{agent_listen_port}")

    secret_file = flag(argv, "--secret-file")
    if secret_file is None:
        problems.append("hvdrun runs without --secret-file")
    else:
        problems += check_secret_source("launcher", job, c, secret_file, docs)
        agent_src = secret_file_in_mount(flag(agent_argv, "--secret-file") or "",
                                         secret_mounts(sts, container(sts, "hvd-agent")))
        launcher_src = secret_file_in_mount(secret_file, secret_mounts(job, c))
        if agent_src and launcher_src and agent_src[:2] != launcher_src[:2]:
            problems.append(f"launcher secret {launcher_src[:2]} != agent secret {agent_src[:2]}")

    # The init container waits for exactly the hosts hvdrun names.
    for ic in spec.get("initContainers", []):
        script = " ".join(argv_of(ic))
        waited = set(re.findall(r"getent hosts (\S+)", script))
        if waited and waited != {h for h, _ in hosts}:
            problems.append(f"init container waits for {sorted(waited)}, hvdrun uses "
                            f"{sorted(h for h, _ in hosts)}")

    # The program hvdrun starts is in the image (Dockerfile COPY examples/).
    program = argv[argv.index("/usr/bin/python3") + 1] if "/usr/bin/python3" in argv else None
    if program is not None:
        problems += check_path_in_image(program)
    return problems


def images(docs):
    found = set()
    for (kind, _), d in docs.items():
        if kind in ("StatefulSet", "Job", "DaemonSet", "Deployment"):
            spec = pod_spec(d)
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                found.add(c["image"])
    return found


def check_images(docs):
    found = images(docs)
    return [] if len(found) == 1 else [f"more than one image: {sorted(found)}"]


def check_service_account_tokens(docs):
    return [f"{name}: pods mount a service account token they do not need"
            for (kind, name), d in docs.items()
            if kind in ("StatefulSet", "Job")
            and pod_spec(d).get("automountServiceAccountToken") is not False]


# --- Dockerfile --------------------------------------------------------------

def dockerfile_instructions(text):
    """[(INSTRUCTION, arguments)] with comments dropped and continuations joined."""
    out, current = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


def copy_destinations(text):
    """{destination: source} of the final stage's COPY lines from the context."""
    dests = {}
    for ins, args in dockerfile_instructions(text):
        if ins == "FROM":
            dests = {}
        if ins == "COPY" and not args.startswith("--from"):
            src, dst = args.split()[-2:]
            dests[dst] = src
    return dests


def check_path_in_image(path, text=None):
    """path (a file in the final image) comes from a COPY of a repository file."""
    text = DOCKERFILE.read_text(encoding="utf-8") if text is None else text
    for dst, src in copy_destinations(text).items():
        if dst.endswith("/") and path.startswith(dst):
            if (REPO / src / path[len(dst):]).is_file():
                return []
    return [f"{path} is not copied into the image from the repository"]


def context_copies(text):
    """[(source, destination)] of every COPY from the build context (all stages)."""
    return [tuple(args.split()[-2:]) for ins, args in dockerfile_instructions(text)
            if ins == "COPY" and not args.startswith("--from")]


def check_dockerfile(text):
    problems = []
    ins = dockerfile_instructions(text)
    first = next(((i, a) for i, a in ins if i != "ARG"), ("", ""))
    if first[0] != "FROM" or first[1].split()[:1] != ["debian:12"]:
        problems.append("the Dockerfile does not start FROM debian:12")
    runs = [a for i, a in ins if i == "RUN"]
    # The script that runs must be deploy/install-deps.sh (or its copy).
    scripts = {"deploy/install-deps.sh", "./deploy/install-deps.sh"}
    scripts |= {dst for src, dst in context_copies(text) if src == "deploy/install-deps.sh"}
    if not any(re.search(rf"(^|&&|;)\s*(bash|sh)\s+{re.escape(sc)}(\s|$)", r)
               for r in runs for sc in scripts):
        problems.append("the Dockerfile does not run deploy/install-deps.sh")
    if not any("cmake --build" in r for r in runs):
        problems.append("the Dockerfile does not build with cmake --build")
    if not any("cmake --install" in r for r in runs):
        problems.append("the Dockerfile does not run cmake --install")
    if not any("ldconfig" in r for r in runs):
        problems.append("the Dockerfile does not run ldconfig")
    if any(i == "ENTRYPOINT" for i, _ in ins):
        problems.append("the image has an ENTRYPOINT; the command must choose the role")
    cmds = [a for i, a in ins if i == "CMD"]
    if not cmds:
        problems.append("no CMD")
    else:
        try:
            cmd = json.loads(cmds[-1])
        except ValueError:
            cmd = shlex.split(cmds[-1])
        if cmd[:1] != ["hvd-agent"] or flag(cmd, "--secret-file") is None:
            problems.append(f"the default CMD {cmd} is not hvd-agent --secret-file FILE")
    for src, _ in context_copies(text):
        if not (REPO / src).exists():
            problems.append(f"COPY source {src} does not exist in the repository")
    return problems


def check_dockerignore(text):
    patterns = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    problems = []
    for needed in ("build*", ".git"):
        if needed not in patterns:
            problems.append(f"the ignore file lacks {needed!r}")
    for p in patterns:
        if p.lstrip("/").startswith(("deploy", "examples", "CMakeLists.txt")):
            problems.append(f"the ignore file drops {p!r}, which the build needs")
    return problems


# --- systemd -----------------------------------------------------------------

def parse_unit(text):
    """{section: [(key, value)]}; keys may repeat, as in systemd."""
    sections, current, pending = {}, None, ""
    for line in text.splitlines():
        s = line.strip()
        if not pending and (not s or s[0] in "#;"):
            continue
        if s.endswith("\\"):
            pending += s[:-1] + " "
            continue
        s, pending = pending + s, ""
        if s.startswith("[") and s.endswith("]"):
            current = s[1:-1]
            sections.setdefault(current, [])
        elif current is not None and "=" in s:
            k, _, v = s.partition("=")
            sections[current].append((k.strip(), v.strip()))
    return sections


def unit_value(unit, section, key):
    values = [v for k, v in unit.get(section, []) if k == key]
    return values[-1] if values else None


def seconds(value):
    m = re.fullmatch(r"(\d+)\s*(s|sec|min|m)?", value or "")
    if m is None:
        return None
    return int(m.group(1)) * (60 if m.group(2) in ("min", "m") else 1)


def check_unit(text):
    problems = []
    unit = parse_unit(text)
    for section in ("Unit", "Service", "Install"):
        if section not in unit:
            problems.append(f"no [{section}] section")
    exec_start = unit_value(unit, "Service", "ExecStart")
    if exec_start is None:
        return problems + ["no ExecStart"]
    argv = shlex.split(exec_start.lstrip("-@:+!"))
    if not argv[0].startswith("/") or pathlib.PurePosixPath(argv[0]).name != "hvd-agent":
        problems.append(f"ExecStart runs {argv[0]}, not an absolute path to hvd-agent")
    secret = flag(argv, "--secret-file")
    if secret is None or not secret.startswith("/"):
        problems.append("ExecStart has no --secret-file with an absolute path")
    if unit_value(unit, "Service", "Type") not in ("simple", "exec"):
        problems.append("Type is not simple/exec (the agent does not notify or fork)")
    if unit_value(unit, "Service", "KillMode") != "mixed":
        problems.append("KillMode is not mixed: the agent must stop its workers itself")
    stop = seconds(unit_value(unit, "Service", "TimeoutStopSec"))
    if stop is None or stop <= AGENT_TERMINATE_GRACE_S:
        problems.append("TimeoutStopSec must exceed the agent's terminate grace")
    if unit_value(unit, "Service", "Restart") != "on-failure":
        problems.append("Restart is not on-failure")
    if unit_value(unit, "Install", "WantedBy") != "multi-user.target":
        problems.append("not WantedBy=multi-user.target")
    # Options that would break the jobs the agent starts (docs/deploy.md).
    breaking = {"DynamicUser": "yes", "PrivateDevices": "yes", "ProtectClock": "yes",
                "MemoryDenyWriteExecute": "yes", "ProtectHome": "yes", "PrivateTmp": "yes",
                "DevicePolicy": None, "DeviceAllow": None, "SystemCallFilter": None}
    for key, bad in breaking.items():
        value = unit_value(unit, "Service", key)
        if value is not None and (bad is None or value.lower() in (bad, "true", "1", "on")):
            problems.append(f"{key}={value} would break the jobs the agent starts")
    if (unit_value(unit, "Service", "ProtectSystem") or "").lower() == "strict":
        problems.append("ProtectSystem=strict would break the jobs the agent starts")
    return problems


# --- Slurm -------------------------------------------------------------------

# The batch script's defaults must start on any cluster, even one small node:
# larger requests, or GPUs and partitions a site may not have, pend forever.
SBATCH_DEFAULT_LIMITS = {"--nodes": 1, "--ntasks-per-node": 2, "--ntasks": 2,
                         "--cpus-per-task": 1}
SBATCH_SITE_SPECIFIC = ("--gpus", "--gres", "--partition", "--constraint", "--mem")


def _sbatch_fits_any_cluster(directives):
    problems = []
    for line in directives:
        m = re.match(r"#SBATCH\s+(--[\w-]+)(?:=(\S+))?", line)
        if not m:
            continue
        option, value = m.groups()
        limit = SBATCH_DEFAULT_LIMITS.get(option)
        if limit is not None and not (value and value.isdigit() and int(value) <= limit):
            problems.append(f"'{line.strip()}' asks for more than a one-node cluster has "
                            f"(default at most {option}={limit}; users adapt it)")
        if option.startswith(SBATCH_SITE_SPECIFIC):
            problems.append(f"'{line.strip()}' is site-specific: leave it commented (##SBATCH)")
    return problems


def check_sbatch(text):
    problems = []
    lines = text.splitlines()
    if not lines or not lines[0].startswith("#!"):
        problems.append("no #! line")
    sbatch = [i for i, l in enumerate(lines) if l.startswith("#SBATCH ")]
    if not sbatch:
        problems.append("no #SBATCH lines")
    first_command = next((i for i, l in enumerate(lines)
                          if l.strip() and not l.lstrip().startswith("#")), len(lines))
    if any(i > first_command for i in sbatch):
        problems.append("#SBATCH lines after the first command (Slurm ignores them)")
    commands = [l.strip() for l in lines if l.strip() and not l.lstrip().startswith("#")]
    sruns = [c for c in commands if c.split()[0] == "srun"]
    if not sruns:
        problems.append("no srun line")
    elif not any("/usr/bin/python3" in c for c in sruns):
        problems.append("srun does not start /usr/bin/python3")
    if not any(re.match(r"(export\s+)?HVD_JOB_TOKEN=", c) for c in commands) or \
            not any(re.match(r"export\s+(\w+\s+)*HVD_JOB_TOKEN\b", c) for c in commands):
        problems.append("HVD_JOB_TOKEN is not made and exported for the tasks")
    problems += _sbatch_fits_any_cluster([lines[i] for i in sbatch])
    if any(re.match(r"(export\s+)?HVD_(RANK|SIZE|RENDEZVOUS_ADDR)=", c) for c in commands):
        problems.append("the script sets HVD_RANK/HVD_SIZE/HVD_RENDEZVOUS_ADDR: hvd.init() "
                        "would not read Slurm's variables")
    return problems
