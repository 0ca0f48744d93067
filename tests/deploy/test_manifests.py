"""Static checks of deploy/: the files parse, and the names that tie them
together agree (nothing here talks to a cluster, Slurm, systemd or Docker).
The checks live in deploy_checks.py; every one of them is also run on a
deliberately broken copy below, to show that it can fail.

    /usr/bin/python3 -m pytest -q tests/deploy
"""

import copy
import re
import shutil
import subprocess

import pytest

from deploy_checks import (
    DEPLOY, DOC, DOCKERFILE, DOCKERIGNORE, REPO, SBATCH, UNIT, argv_of, check_agents,
    check_dockerfile, check_dockerignore, check_images, check_launcher, check_sbatch,
    check_secret, check_service_account_tokens, check_unit, container, flag, load_k8s,
    one, pod_spec)


# --- the tests: the files as they are ----------------------------------------

@pytest.fixture(scope="module")
def k8s():
    return load_k8s()


def test_every_yaml_parses_into_the_expected_objects(k8s):
    kinds = sorted(k for k, _ in k8s)
    assert kinds == ["Job", "Secret", "Service", "StatefulSet"], kinds
    for (kind, name), d in k8s.items():
        assert d.get("apiVersion"), f"{kind}/{name} has no apiVersion"


def test_secret(k8s):
    assert check_secret(k8s) == []


def test_agents(k8s):
    assert check_agents(k8s) == []


def test_launcher(k8s):
    assert check_launcher(k8s) == []


def test_one_image(k8s):
    assert check_images(k8s) == []


def test_no_service_account_tokens(k8s):
    assert check_service_account_tokens(k8s) == []


def test_init_container_script_is_valid_sh(k8s):
    for (kind, _), d in k8s.items():
        if kind in ("Job", "StatefulSet"):
            for ic in pod_spec(d).get("initContainers", []):
                argv = argv_of(ic)
                assert argv[:2] == ["sh", "-c"], argv
                subprocess.run(["sh", "-n", "-c", argv[2]], check=True)


def test_dockerfile():
    assert check_dockerfile(DOCKERFILE.read_text(encoding="utf-8")) == []


def test_dockerignore():
    assert check_dockerignore(DOCKERIGNORE.read_text(encoding="utf-8")) == []


def test_systemd_unit():
    assert check_unit(UNIT.read_text(encoding="utf-8")) == []


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_unit_verifies(tmp_path):
    # hvd-agent may not be installed here: verify a copy that runs /bin/true.
    text = re.sub(r"^ExecStart=\S+", "ExecStart=/bin/true", UNIT.read_text(encoding="utf-8"),
                  flags=re.M)
    copy_path = tmp_path / UNIT.name
    copy_path.write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", str(copy_path)],
                       capture_output=True, text=True)
    # Only what it says about this unit counts (not the host's other units).
    messages = [l for l in (r.stdout + r.stderr).splitlines()
                if "hvd-agent.service" in l]
    assert messages == [], r.stdout + r.stderr


def test_sbatch():
    assert check_sbatch(SBATCH.read_text(encoding="utf-8")) == []


def test_sbatch_is_valid_bash():
    subprocess.run(["bash", "-n", str(SBATCH)], check=True)


def test_slurm_discovery_script_is_valid_sh():
    script = SBATCH.parent / "hvd-discover-hosts.sh"
    assert script.stat().st_mode & 0o111, f"{script} is not executable"
    subprocess.run(["sh", "-n", str(script)], check=True)


def test_doc_describes_every_deploy_file():
    doc = DOC.read_text(encoding="utf-8")
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(REPO).as_posix()
            assert rel in doc, f"docs/deploy.md does not mention {rel}"


# --- the tests: broken copies must be caught ---------------------------------

def _sts(d):
    return one(d, "StatefulSet")


def _job(d):
    return one(d, "Job")


def _agent_cmd(d):
    return container(_sts(d), "hvd-agent")["command"]


def _launcher_cmd(d):
    return container(_job(d), "hvdrun")["command"]


def _replace(seq, old, new):
    seq[seq.index(old)] = new


def _rename_secret(d):
    s = one(d, "Secret")
    del d[("Secret", s["metadata"]["name"])]
    s["metadata"]["name"] = "other-secret"
    d[("Secret", "other-secret")] = s


K8S_MUTATIONS = {
    "secret renamed": (_rename_secret, check_agents, "no manifest defines"),
    "secret key renamed": (lambda d: one(d, "Secret")["stringData"].update(
        {"token": one(d, "Secret")["stringData"].pop("secret")}), check_launcher, "no key"),
    "usable placeholder": (lambda d: one(d, "Secret")["stringData"].update(
        secret="0123456789abcdef0123"), check_secret, "long enough"),
    "agent mode 0644": (lambda d: pod_spec(_sts(d))["volumes"][0]["secret"].update(
        defaultMode=0o644), check_agents, "defaultMode"),
    "launcher mode 0400 written as decimal 400": (
        lambda d: pod_spec(_job(d))["volumes"][0]["secret"].update(defaultMode=400),
        check_launcher, "defaultMode"),
    "fsGroup": (lambda d: pod_spec(_sts(d)).update(securityContext={"fsGroup": 1000}),
                check_agents, "fsGroup"),
    "serviceName": (lambda d: _sts(d)["spec"].update(serviceName="hvd-agents"),
                    check_agents, "names no Service"),
    "not headless": (lambda d: one(d, "Service")["spec"].update(clusterIP="10.0.0.1"),
                     check_agents, "headless"),
    "selector": (lambda d: one(d, "Service")["spec"]["selector"].update(
        {"app.kubernetes.io/name": "agent"}), check_agents, "does not match"),
    "listen port": (lambda d: _replace(_agent_cmd(d), "0.0.0.0:29470", "0.0.0.0:29471"),
                    check_agents, "not 29470"),
    "launcher agent port": (lambda d: _replace(_launcher_cmd(d), "29470", "29471"),
                            check_launcher, "--agent-port"),
    "readiness port": (lambda d: container(_sts(d), "hvd-agent")["readinessProbe"].update(
        tcpSocket={"port": 8080}), check_agents, "readiness"),
    "host beyond replicas": (lambda d: _sts(d)["spec"].update(replicas=1),
                             check_launcher, "only 1 replicas"),
    "host name": (lambda d: _replace(
        _launcher_cmd(d), flag(_launcher_cmd(d), "-H"),
        flag(_launcher_cmd(d), "-H").replace("hvd-agent-0.hvd-agent", "hvd-agent-0.agents")),
        check_launcher, "is not hvd-agent-<i>.hvd-agent"),
    "too many slots": (lambda d: _replace(_agent_cmd(d), "2", "1"), check_launcher, "slots"),
    "np too large": (lambda d: _replace(_launcher_cmd(d), "4", "5"), check_launcher, "-np"),
    "launcher secret path": (lambda d: _replace(_launcher_cmd(d), "/etc/hvd/secret",
                                                "/etc/hvd/agent.secret"),
                             check_launcher, "not in a mounted secret volume"),
    "restartPolicy": (lambda d: pod_spec(_job(d)).update(restartPolicy="OnFailure"),
                      check_launcher, "restartPolicy"),
    "backoffLimit": (lambda d: _job(d)["spec"].update(backoffLimit=6),
                     check_launcher, "backoffLimit"),
    "program not in image": (lambda d: _replace(_launcher_cmd(d),
                                                "/opt/hvd/examples/pytorch_mnist.py",
                                                "/opt/hvd/examples/train.py"),
                             check_launcher, "not copied into the image"),
    "image": (lambda d: container(_job(d), "hvdrun").update(image="hvd:v2"),
              check_images, "more than one image"),
    "service account token": (lambda d: pod_spec(_job(d)).pop("automountServiceAccountToken"),
                              check_service_account_tokens, "service account"),
}


@pytest.mark.parametrize("name", sorted(K8S_MUTATIONS))
def test_k8s_checks_catch(k8s, name):
    mutate, check, expected = K8S_MUTATIONS[name]
    assert check(k8s) == [], "the check fails on the unmodified manifests"
    broken = copy.deepcopy(k8s)
    mutate(broken)
    problems = check(broken)
    assert any(expected in p for p in problems), problems


TEXT_MUTATIONS = {
    "docker base": (DOCKERFILE, check_dockerfile, "FROM debian:12", "FROM ubuntu:22.04",
                    "debian:12"),
    "docker deps": (DOCKERFILE, check_dockerfile, "bash /tmp/install-deps.sh", "true",
                    "install-deps.sh"),
    "docker install": (DOCKERFILE, check_dockerfile, "cmake --install /src/build", "true",
                       "cmake --install"),
    "docker entrypoint": (DOCKERFILE, check_dockerfile, "CMD [", "ENTRYPOINT [",
                          "ENTRYPOINT"),
    "docker copy source": (DOCKERFILE, check_dockerfile, "COPY examples/", "COPY example/",
                           "does not exist"),
    "dockerignore build": (DOCKERIGNORE, check_dockerignore, "build*\n", "", "build*"),
    "unit no install": (UNIT, check_unit, "[Install]", "[Other]", "[Install]"),
    "unit binary": (UNIT, check_unit, "/usr/local/bin/hvd-agent", "/usr/local/bin/hvdrun",
                    "hvd-agent"),
    "unit secret": (UNIT, check_unit, "--secret-file /etc", "--secret /etc", "--secret-file"),
    "unit killmode": (UNIT, check_unit, "KillMode=mixed", "KillMode=control-group", "KillMode"),
    "unit timeout": (UNIT, check_unit, "TimeoutStopSec=30", "TimeoutStopSec=3",
                     "TimeoutStopSec"),
    "unit dynamicuser": (UNIT, check_unit, "User=hvd\n", "User=hvd\nDynamicUser=yes\n",
                         "DynamicUser"),
    "unit privatedevices": (UNIT, check_unit, "ProtectControlGroups=yes",
                            "ProtectControlGroups=yes\nPrivateDevices=yes", "PrivateDevices"),
    "sbatch directives": (SBATCH, check_sbatch, "#SBATCH", "# SBATCH", "no #SBATCH"),
    "sbatch late directive": (SBATCH, check_sbatch, "set -euo pipefail",
                              "set -euo pipefail\n#SBATCH --exclusive", "after the first"),
    "sbatch srun": (SBATCH, check_sbatch, "\nsrun ", "\nmpirun ", "no srun"),
    "sbatch token": (SBATCH, check_sbatch, "export HVD_JOB_TOKEN\n", "\n", "HVD_JOB_TOKEN"),
    "sbatch rank": (SBATCH, check_sbatch, "set -euo pipefail",
                    "set -euo pipefail\nexport HVD_RANK=0", "HVD_RANK"),
    "sbatch two nodes": (SBATCH, check_sbatch, "#SBATCH --nodes=1", "#SBATCH --nodes=2",
                         "more than a one-node cluster"),
    "sbatch cpus": (SBATCH, check_sbatch, "#SBATCH --cpus-per-task=1",
                    "#SBATCH --cpus-per-task=4", "more than a one-node cluster"),
    "sbatch gpus": (SBATCH, check_sbatch, "##SBATCH --gpus-per-task=1",
                    "#SBATCH --gpus-per-task=1", "site-specific"),
}


@pytest.mark.parametrize("name", sorted(TEXT_MUTATIONS))
def test_text_checks_catch(name):
    path, check, old, new, expected = TEXT_MUTATIONS[name]
    text = path.read_text(encoding="utf-8")
    assert check(text) == [], "the check fails on the unmodified file"
    assert old in text, f"{old!r} is not in {path.name}: update this mutation"
    problems = check(text.replace(old, new))
    assert any(expected in p for p in problems), problems
