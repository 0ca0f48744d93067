"""The variables horovodrun (Gloo mode) gives its workers, given by hvdrun:
HOROVOD_RANK ... HOROVOD_CONTROLLER, with the HVD_* values; and the runtime,
which reads only HVD_*, is not misled by them."""
import pytest

from conftest import clear_outer_launcher, executable, run, worker_lines

# (HOROVOD_ name, HVD_ name) pairs that carry the same value.
PLACE = [("HOROVOD_RANK", "HVD_RANK"), ("HOROVOD_SIZE", "HVD_SIZE"),
         ("HOROVOD_LOCAL_RANK", "HVD_LOCAL_RANK"), ("HOROVOD_LOCAL_SIZE", "HVD_LOCAL_SIZE"),
         ("HOROVOD_CROSS_RANK", "HVD_CROSS_RANK"), ("HOROVOD_CROSS_SIZE", "HVD_CROSS_SIZE"),
         ("HOROVOD_HOSTNAME", "HVD_HOSTNAME")]
# Set by hvdrun in every job; "-" stands for unset.
JOB = ["HOROVOD_CONTROLLER", "HOROVOD_CPU_OPERATIONS", "HOROVOD_GLOO_IFACE", "NCCL_SOCKET_IFNAME",
       "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT", "PYTHONUNBUFFERED"]
NAMES = [n for pair in PLACE for n in pair] + JOB
SCRIPT = "echo \"" + "|".join("${%s--}" % n for n in NAMES) + "\""

@pytest.fixture(autouse=True)
def no_outer_launcher(monkeypatch):
    clear_outer_launcher(monkeypatch)


def worker_values(hvdrun, *args, env=None):
    r = run([hvdrun, *args, "sh", "-c", SCRIPT], timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    return {rank: dict(zip(NAMES, lines[0].split("|")))
            for rank, lines in worker_lines(r.stdout).items()}


def test_every_variable_per_rank_on_two_hosts(hvdrun):
    got = worker_values(hvdrun, "-np", "4", "-H", "localhost:2,127.0.0.1:2")
    expected = {  # rank: (size, local rank, local size, cross rank, cross size, host)
        0: ("4", "0", "2", "0", "2", "localhost"),
        1: ("4", "1", "2", "0", "2", "localhost"),
        2: ("4", "0", "2", "1", "2", "127.0.0.1"),
        3: ("4", "1", "2", "1", "2", "127.0.0.1"),
    }
    assert sorted(got) == [0, 1, 2, 3]
    for rank, values in got.items():
        want = dict(zip([h for h, _ in PLACE], (str(rank),) + expected[rank]))
        for horovod, hvd in PLACE:
            assert values[horovod] == want[horovod], (rank, horovod, values)
            assert values[hvd] == want[horovod], (rank, hvd, values)
        assert values["HOROVOD_CONTROLLER"] == "gloo"
        assert values["HOROVOD_CPU_OPERATIONS"] == "gloo"
        # No --network-interface: no interface named. Horovod's HTTP
        # rendezvous variables are never set (ours is not Horovod's).
        for unset in ("HOROVOD_GLOO_IFACE", "NCCL_SOCKET_IFNAME",
                      "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT"):
            assert values[unset] == "-", (rank, unset, values)
        assert values["PYTHONUNBUFFERED"] == "1"


def test_network_interface_and_overrides(hvdrun):
    # Inherited and -x values of these names lose to hvdrun's, as with horovodrun.
    got = worker_values(hvdrun, "-np", "2", "-H", "localhost:2", "--network-interface", "lo",
                        "-x", "HOROVOD_RANK=9", "-x", "HOROVOD_CONTROLLER=mpi",
                        "-x", "NCCL_SOCKET_IFNAME=eth9",
                        env={"HOROVOD_SIZE": "7", "HOROVOD_GLOO_IFACE": "eth7",
                             "PYTHONUNBUFFERED": "x"})
    for rank, values in got.items():
        assert values["HOROVOD_RANK"] == str(rank)
        assert values["HOROVOD_SIZE"] == "2"
        assert values["HOROVOD_CONTROLLER"] == "gloo"
        assert values["HOROVOD_GLOO_IFACE"] == "lo"
        assert values["NCCL_SOCKET_IFNAME"] == "lo"
        assert values["PYTHONUNBUFFERED"] == "x"  # a default only


def test_runtime_under_hvdrun_reads_hvd_names(hvdrun):
    r = run([hvdrun, "-np", "2", executable("foreign_check")], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = worker_lines(r.stdout)
    for rank in (0, 1):
        assert (f"foreign_check: rank {rank} size 2 local_rank {rank} local_size 2 "
                "cross_rank 0 cross_size 1") in lines[rank]
        assert f"foreign_check: rank {rank} OK" in lines[rank]


def test_horovod_names_alone_are_no_launcher():
    """HOROVOD_* without HVD_* (say, a program of a horovodrun job) is no
    launcher the runtime knows: a world of one, not a wait for rank 0."""
    env = {"HOROVOD_RANK": "1", "HOROVOD_SIZE": "2", "HOROVOD_LOCAL_RANK": "1",
           "HOROVOD_LOCAL_SIZE": "2", "HOROVOD_CROSS_RANK": "0", "HOROVOD_CROSS_SIZE": "1",
           "HOROVOD_HOSTNAME": "localhost", "HOROVOD_CONTROLLER": "gloo",
           "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_GLOO_RENDEZVOUS_ADDR": "127.0.0.1",
           "HOROVOD_GLOO_RENDEZVOUS_PORT": "1"}
    r = run([executable("foreign_check")], timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("foreign_check: rank 0 size 1 local_rank 0 local_size 1 cross_rank 0 cross_size 1"
            in r.stdout)
    assert "foreign_check: rank 0 OK" in r.stdout
