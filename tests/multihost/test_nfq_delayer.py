"""multihost.nfq_delayer: the NFQUEUE delayer the chaos tests use for network delay.

One network namespace of its own (hvdnfq-<pid>, only `lo`; the hvdmh-* hosts
are not touched), TCP and UDP over loopback inside it, processes started with
`nsenter --net=/run/netns/NAME`:

    rtt       median ping-pong round trip without, then with
              `iptables -I OUTPUT -p tcp -j NFQUEUE --queue-num 7 --queue-bypass`
              and `nfq_delayer --queue-num 7 --delay-ms 40`: grows by ~2 x 40 ms
              (data and answer each pass OUTPUT once); 20 MB get through
              without a stall and the kernel drops nothing from the queue;
              a second delayer on the bound queue exits 1; SIGTERM ends it
              with exit 0 and the summary line; with the rule left and no
              delayer bound traffic passes undelayed (--queue-bypass)
    input     50 MB queued in INPUT instead: the sender's TCP small queues do
              not hold it back (in OUTPUT one delayed flow gets ~50 Mbit/s)
    order     UDP datagrams through --jitter-ms and --loss-percent: arrive in
              send order, and exactly the ones not counted as dropped arrive
    args      bad arguments exit 2 naming the token

Skips, saying why, without root, ip, iptables, nsenter or the nfq_delayer
binary (HVD_BUILD_DIR/bin; not built without libnetfilter_queue), or when the
kernel lacks NFQUEUE support. The namespace is deleted and every process this
file started is killed even when a test fails.
"""
import json
import os
import pathlib
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

import pytest

BUILD_DIR = pathlib.Path(
    os.environ.get("HVD_BUILD_DIR", pathlib.Path(__file__).resolve().parents[2] / "build"))
DELAYER = BUILD_DIR / "bin" / "nfq_delayer"
NS_PREFIX = "hvdnfq-"
DELAY_MS = 40
TCP_QUEUE = 7
UDP_QUEUE = 8
SUMMARY = re.compile(r"^nfq_delayer: queue (\d+): (\d+) packets, delayed (\d+) ms, dropped (\d+)$")

# Runs inside the namespace: `python3 -c PEER MODE ARG`; prints one JSON line.
PEER = r'''
import json, socket, sys, threading, time

mode, arg = sys.argv[1], int(sys.argv[2])
T = 20  # every socket wait is bounded


def listener():
    s = socket.create_server(("127.0.0.1", 0))
    s.settimeout(T)
    return s


def connect(lst):
    c = socket.create_connection(lst.getsockname(), timeout=T)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def recv_exact(c, n):
    got = b""
    while len(got) < n:
        d = c.recv(n - len(got))
        if not d:
            raise EOFError("peer closed")
        got += d
    return got


if mode == "rtt":  # arg round trips of 8 bytes
    lst = listener()

    def echo():
        c, _ = lst.accept()
        c.settimeout(T)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            d = c.recv(4096)
            if not d:
                return
            c.sendall(d)

    threading.Thread(target=echo, daemon=True).start()
    c = connect(lst)
    rtts = []
    for _ in range(arg):
        t = time.monotonic()
        c.sendall(b"ping1234")
        recv_exact(c, 8)
        rtts.append((time.monotonic() - t) * 1000)
    c.close()
    print(json.dumps({"rtts_ms": rtts}))
elif mode == "bulk":  # send arg bytes, wait for the receiver's 8-byte count
    lst = listener()

    def sink():
        c, _ = lst.accept()
        c.settimeout(T)
        n = 0
        while n < arg:
            d = c.recv(1 << 20)
            if not d:
                break
            n += len(d)
        c.sendall(n.to_bytes(8, "big"))

    threading.Thread(target=sink, daemon=True).start()
    c = connect(lst)
    t = time.monotonic()
    chunk = b"\x5a" * (1 << 20)
    left = arg
    while left > 0:
        c.sendall(chunk[:min(left, len(chunk))])
        left -= min(left, len(chunk))
    received = int.from_bytes(recv_exact(c, 8), "big")
    print(json.dumps({"seconds": time.monotonic() - t, "bytes": received}))
elif mode == "udp":  # arg numbered datagrams, 1 ms apart; which arrive, in what order
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(arg):
        tx.sendto(i.to_bytes(4, "big"), rx.getsockname())
        time.sleep(0.001)
    rx.settimeout(1.0)  # the last datagram is due well within this
    seqs = []
    try:
        while True:
            seqs.append(int.from_bytes(rx.recv(16), "big"))
    except socket.timeout:
        pass
    print(json.dumps({"seqs": seqs}))
'''


def _unavailable_reason():
    if os.geteuid() != 0:
        return "needs root (ip netns add, iptables, NFQUEUE)"
    for tool in ("ip", "iptables", "nsenter"):
        if shutil.which(tool) is None:
            return f"needs the '{tool}' command"
    if not (DELAYER.is_file() and os.access(DELAYER, os.X_OK)):
        return (f"nfq_delayer is not built: expected {DELAYER} "
                "(needs libnetfilter_queue, Debian's libnetfilter-queue-dev)")
    return None


def _run(args, timeout=20):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete_namespace(name):
    """Kills what runs in namespace `name` (only ever an hvdnfq-* one) and deletes it."""
    r = _run(["ip", "netns", "pids", name], timeout=10)
    for pid in r.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _run(["ip", "netns", "delete", name], timeout=10)


class Namespace:
    def __init__(self):
        self.name = f"{NS_PREFIX}{os.getpid()}"
        self.path = f"/run/netns/{self.name}"
        self.procs = []

    def args(self, argv):
        return ["nsenter", f"--net={self.path}", *[str(a) for a in argv]]

    def run(self, argv, timeout=20):
        return _run(self.args(argv), timeout=timeout)

    def peer(self, mode, arg, timeout=25):
        r = self.run([sys.executable, "-c", PEER, mode, arg], timeout=timeout)
        assert r.returncode == 0, f"peer {mode} {arg} failed: {r.stderr.strip()}"
        return json.loads(r.stdout.strip().splitlines()[-1])

    def iptables(self, action, queue, proto):
        rule = ["OUTPUT", "-p", proto, "-j", "NFQUEUE", "--queue-num", queue, "--queue-bypass"]
        return self.run(["iptables", action, *rule], timeout=10)

    def queue_line(self, queue):
        """The kernel's counters for `queue` in this namespace, or None if unbound."""
        r = self.run(["cat", "/proc/net/netfilter/nfnetlink_queue"], timeout=10)
        for line in r.stdout.splitlines():
            f = line.split()
            if f and f[0] == str(queue):
                keys = ("queue", "portid", "waiting", "copy_mode", "copy_range",
                        "queue_dropped", "user_dropped", "id_sequence")
                return dict(zip(keys, map(int, f)))
        return None

    def start_delayer(self, *args):
        """nfq_delayer in the namespace, returned once it printed its ready line."""
        p = subprocess.Popen(self.args([DELAYER, *args]), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        deadline = time.monotonic() + 10
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                line = p.stdout.readline()
                break
        if not line.startswith("nfq_delayer: ready"):
            p.kill()
            _, err = p.communicate(timeout=10)
            if "nfnetlink_queue kernel module" in err:
                pytest.skip(f"no NFQUEUE support in this kernel: {err.strip()}")
            pytest.fail(f"nfq_delayer {' '.join(args)} not ready in 10 s: "
                        f"stdout {line!r}, exit {p.returncode}, stderr {err.strip()!r}")
        assert line == f"nfq_delayer: ready queue {args[args.index('--queue-num') + 1]}\n"
        return p

    @staticmethod
    def stop_delayer(p):
        """SIGTERM; returns (exit code, stderr lines)."""
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=10)
        return p.returncode, err.strip().splitlines()

    def setup(self):
        # Leftovers of a killed earlier run of this file (its pid is gone).
        listing = _run(["ip", "netns", "list"], timeout=10)
        if listing.returncode != 0:
            pytest.skip(f"'ip netns' is unavailable: {listing.stderr.strip()}")
        for entry in listing.stdout.split("\n"):
            m = re.match(rf"^({NS_PREFIX}(\d+))\b", entry)
            if m and not _pid_alive(int(m.group(2))):
                _delete_namespace(m.group(1))
        r = _run(["ip", "netns", "add", self.name], timeout=10)
        if r.returncode != 0:
            pytest.skip(f"cannot add a network namespace here: {r.stderr.strip()}")
        r = _run(["ip", "-n", self.name, "link", "set", "lo", "up"], timeout=10)
        assert r.returncode == 0, f"lo up: {r.stderr.strip()}"

    def teardown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        _delete_namespace(self.name)  # its iptables rules go with it


@pytest.fixture(scope="module")
def ns():
    reason = _unavailable_reason()
    if reason:
        pytest.skip(reason)
    n = Namespace()
    try:
        n.setup()
        yield n
    finally:
        n.teardown()


def _summary(lines):
    assert lines, "nfq_delayer printed no summary"
    m = SUMMARY.match(lines[-1])
    assert m, f"last stderr line is not the summary: {lines}"
    return tuple(int(g) for g in m.groups())


def test_delay_rtt_bulk_and_shutdown(ns):
    base = statistics.median(ns.peer("rtt", 15)["rtts_ms"])

    r = ns.iptables("-I", TCP_QUEUE, "tcp")
    if r.returncode != 0:
        pytest.skip(f"iptables cannot queue to NFQUEUE here: {r.stderr.strip()}")
    p = ns.start_delayer("--queue-num", TCP_QUEUE, "--delay-ms", DELAY_MS)

    # The queue is taken: a second delayer says why and exits 1.
    busy = ns.run([DELAYER, "--queue-num", TCP_QUEUE, "--delay-ms", 1], timeout=10)
    assert busy.returncode == 1, busy
    assert len(busy.stderr.strip().splitlines()) == 1 and "queue 7" in busy.stderr, busy.stderr

    rtts = ns.peer("rtt", 15)["rtts_ms"]
    delayed = statistics.median(rtts)
    print(f"median RTT without delay {base:.2f} ms, with --delay-ms {DELAY_MS} "
          f"{delayed:.2f} ms (min {min(rtts):.2f}, max {max(rtts):.2f})")
    assert delayed - base >= 1.5 * DELAY_MS, (base, rtts)
    assert delayed - base <= 2 * DELAY_MS + 100, (base, rtts)

    size = 20 * 1000 * 1000
    bulk = ns.peer("bulk", size, timeout=25)
    print(f"{size} bytes through the delayer in {bulk['seconds']:.2f} s "
          f"({size * 8 / bulk['seconds'] / 1e6:.0f} Mbit/s)")
    assert bulk["bytes"] == size
    assert bulk["seconds"] < 15, bulk

    q = ns.queue_line(TCP_QUEUE)
    assert q is not None, "queue 7 is not bound while nfq_delayer runs"
    assert q["copy_mode"] == 1, q  # NFQNL_COPY_META
    assert q["queue_dropped"] == 0 and q["user_dropped"] == 0, f"kernel dropped packets: {q}"

    code, lines = ns.stop_delayer(p)
    assert code == 0, lines
    queue, packets, delay, dropped = _summary(lines)
    assert (queue, delay, dropped) == (TCP_QUEUE, DELAY_MS, 0), lines
    assert packets >= 30, lines  # round trips, handshakes and the bulk transfer
    assert ns.queue_line(TCP_QUEUE) is None, "queue 7 still bound after exit"

    # Rule left in place, nobody bound: --queue-bypass lets traffic through undelayed.
    after = statistics.median(ns.peer("rtt", 5)["rtts_ms"])
    assert after < DELAY_MS, f"RTT {after:.1f} ms with no delayer bound"
    r = ns.iptables("-D", TCP_QUEUE, "tcp")
    assert r.returncode == 0, r.stderr


def test_input_hook_keeps_up(ns):
    """Queued in INPUT (released from the sender's accounting), a delayed flow is
    limited by the TCP window only: 50 MB with 40 ms each way, no kernel drops."""
    rule = ["INPUT", "-p", "tcp", "-j", "NFQUEUE", "--queue-num", TCP_QUEUE, "--queue-bypass"]
    r = ns.run(["iptables", "-I", *rule], timeout=10)
    if r.returncode != 0:
        pytest.skip(f"iptables cannot queue to NFQUEUE here: {r.stderr.strip()}")
    p = ns.start_delayer("--queue-num", TCP_QUEUE, "--delay-ms", DELAY_MS)
    size = 50 * 1000 * 1000
    bulk = ns.peer("bulk", size, timeout=25)
    q = ns.queue_line(TCP_QUEUE)
    code, lines = ns.stop_delayer(p)
    r = ns.run(["iptables", "-D", *rule], timeout=10)
    assert r.returncode == 0, r.stderr
    print(f"INPUT hook: {size} bytes with --delay-ms {DELAY_MS} in {bulk['seconds']:.2f} s "
          f"({size * 8 / bulk['seconds'] / 1e6:.0f} Mbit/s)")
    assert bulk["bytes"] == size
    assert bulk["seconds"] < 15, bulk
    assert q is not None and q["queue_dropped"] == 0 and q["user_dropped"] == 0, q
    assert code == 0 and _summary(lines)[3] == 0, lines


def test_jitter_and_loss_keep_order(ns):
    r = ns.iptables("-I", UDP_QUEUE, "udp")
    if r.returncode != 0:
        pytest.skip(f"iptables cannot queue to NFQUEUE here: {r.stderr.strip()}")
    p = ns.start_delayer("--queue-num", UDP_QUEUE, "--delay-ms", 5, "--jitter-ms", 20,
                         "--loss-percent", 30, "--seed", 7)
    count = 200
    seqs = ns.peer("udp", count)["seqs"]
    code, lines = ns.stop_delayer(p)
    r = ns.iptables("-D", UDP_QUEUE, "udp")
    assert r.returncode == 0, r.stderr
    assert code == 0, lines
    queue, packets, delay, dropped = _summary(lines)
    assert (queue, packets, delay) == (UDP_QUEUE, count, 5), lines
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"reordered: {seqs}"
    assert len(seqs) == count - dropped, (len(seqs), lines)
    assert 0.15 * count <= dropped <= 0.45 * count, lines


@pytest.mark.parametrize("argv,token", [
    (["--queue-num", "7", "--delay-ms", "soon"], "soon"),
    (["--queue-num", "7", "--delay-ms", "40", "--no-such-flag"], "--no-such-flag"),
    (["--queue-num", "70000", "--delay-ms", "40"], "70000"),
    (["--queue-num", "7", "--delay-ms", "40", "--loss-percent", "150"], "150"),
    (["--delay-ms", "40"], "--queue-num"),
])
def test_bad_argument_exits_2(argv, token):
    if not (DELAYER.is_file() and os.access(DELAYER, os.X_OK)):
        pytest.skip(f"nfq_delayer is not built: expected {DELAYER}")
    r = _run([str(DELAYER), *argv], timeout=10)
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and token in lines[0], r.stderr
    assert r.stdout == ""
