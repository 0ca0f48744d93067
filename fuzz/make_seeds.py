#!/usr/bin/python3
"""Writes the seed inputs of fuzz/corpus/ (run from anywhere; rewrites them).

Text seeds are real examples of each input (-H values, hostfiles, discovery
output, config files, secrets); binary seeds are the wire formats the
targets read: engine negotiation payloads and headers
(runtime/engine/message_codec.h), serialized protobuf requests
(proto/hvd/v1/*.proto, encoded by hand below) and credentials. The first
byte of a binary seed is the target's mode byte (see each fuzz_<name>.cc).
"""
import hashlib
import hmac
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --- protobuf wire encoding (enough for the hvd messages) ---
def varint(n):
    n &= (1 << 64) - 1  # negative int32/int64 travel as 10-byte varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def worker(rank, argv, env, cwd=""):
    out = f_int(1, rank)
    for a in argv:
        out += f_bytes(2, a)
    for k, v in env.items():
        out += f_bytes(3, f_bytes(1, k) + f_bytes(2, v))
    if cwd:
        out += f_bytes(4, cwd)
    return out


# --- engine payloads: see message_codec.h ---
def request(name, op=0, dtype=7, reduce_op=0, shape=(), root=-1, device=-1,
            pre=1.0, post=1.0, pset=0, group=-1, gsize=0, splits=()):
    out = struct.pack("<I", len(name)) + name.encode()
    out += struct.pack("<iii", op, dtype, reduce_op)
    out += struct.pack("<I", len(shape)) + b"".join(struct.pack("<q", s) for s in shape)
    out += struct.pack("<ii", root, device) + struct.pack("<dd", pre, post)
    out += struct.pack("<iii", pset, group, gsize)
    out += struct.pack("<I", len(splits)) + b"".join(struct.pack("<q", s) for s in splits)
    return out


def payload(*requests):
    return struct.pack("<I", len(requests)) + b"".join(requests)


def header(capacity, payload_bytes, flags, bits, inline=b"", tune=(0, 0, 0, 0), clock=123456789):
    words = (capacity + 63) // 64
    out = struct.pack("<QIIqqqq", payload_bytes, flags, tune[0], clock, tune[1], tune[2], tune[3])
    out += b"".join(struct.pack("<Q", b) for b in (list(bits) + [0] * words)[:words])
    return out + inline.ljust(256, b"\0")


def agent_proof(secret, method, t, nonce):
    msg = f"hvd-agent-v1\n{method}\n{t}\n{nonce}".encode()
    mac = hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()
    return f"HVD-HMAC-SHA256 t={t},n={nonce},m={mac}"


def record(kind, message):
    assert len(message) < 256
    return bytes([kind, len(message)]) + message


def seeds():
    yaml_default = open(os.path.join(ROOT, "config", "hvd.yaml"), "rb").read()
    return {
        "host_list": {
            "one": b"localhost", "counts": b"a:2,b:2,c:1", "spaces": b" node-1 : 4 , node-2 ",
            "ipv6": b"[::1]:2,fe80::1%eth0,[2001:db8::7]", "dup": b"h1:1,h1:2",
            "bad_count": b"h:0,h2:x", "too_many": b"h:1000000",
        },
        "hostfile": {
            "slots": b"# cluster\nnode1 slots=4\nnode2 slots=4\n\nnode3:2\nnode4  # one slot\n",
            "ipv6": b"[::1] slots=2\n[fe80::1%eth0]:3\r\n",
            "twice": b"a slots=1 slots=2\n", "junk": b"a b\n", "empty": b"\n# nothing\n",
        },
        "discovery": {  # byte 0: --slots-per-host (bits 0-6), need_hosts when bit 7 clear
            "hosts": b"\x04host-1:4\nhost-2:4\n# spare\n\nhost-3\n",
            "none_ok": b"\x81# none yet\n", "none": b"\x01\n\n",
            "bad": b"\x02h1 h2\nh3,h4\n[::1]:2\n",
        },
        "config": {
            "hvd.yaml": yaml_default,
            "small": b"log_level: debug\nstart_timeout: 60\nfusion_threshold: 64MiB\n",
            "dup": b"cycle_time: 5\ncycle_time: 6\n", "nested": b"log_level: [a, b]\n",
            "unknown": b"no_such_setting: 1\n", "list": b"- a\n- b\n", "flow": b"{log_level: info}\n",
        },
        "engine_codec": {  # byte 0 even: payload; odd: header (byte 1: capacity / 16)
            "empty": b"\0" + payload(),
            "allreduce": b"\0" + payload(request("grad/w1", shape=(1024, 16))),
            "mixed": b"\0" + payload(
                request("b", op=2, root=0, shape=(3,)),
                request("a2a", op=3, shape=(8, 2), splits=(2, 2, 4)),
                request("grp", op=0, group=5, gsize=2, pre=0.5, post=2.0, device=0),
                request("", op=6)),
            "bad_op": b"\0" + payload(request("x", op=99)),
            "header": b"\1\x04" + header(64, 12, 1, [0xF0F0], inline=b"inline bytes"),
            "header_big": b"\1\x08" + header(128, 4096, 6, [1, 2], tune=(3, 1 << 26, 5000000, 0)),
        },
        "rendezvous": {  # byte 0: the job; then [kind, length, request]
            "join": b"\x02" + record(0, f_int(1, 0) + f_int(2, 2) + f_bytes(3, "h1") + f_int(4, 42)
                                     + f_int(6, 0) + f_int(7, 2)),
            "join_one": b"\x00" + record(0, f_int(1, 0) + f_int(2, 1) + f_bytes(3, "h1")),
            "kv": b"\x00" + record(1, f_bytes(1, "round0/addr/0") + f_bytes(2, b"10.0.0.1:5000"))
                  + record(2, f_bytes(1, "round0/addr/0") + f_int(2, 10))
                  + record(3, f_bytes(1, "counter") + f_int(2, 5))
                  + record(4, f_bytes(1, "round0/addr/0") + f_bytes(1, "x"))
                  + record(5, f_bytes(1, "counter")),
            "elastic": b"\x0b" + record(0, f_int(1, 1) + f_int(2, 2) + f_bytes(3, "h2") + f_int(8, -1))
                       + record(6, f_int(1, 1) + f_int(2, 0)) + record(6, f_int(1, 1) + f_int(3, 1))
                       + record(7, f_int(1, 4) + f_bytes(2, "spare-host")),
            "wrong_token": b"\x00" + record(9, f_bytes(1, "k") + f_bytes(2, "v")),
        },
        "agent": {  # byte 0 even: LaunchRequest; odd: Signal/TerminateRequest
            "launch": b"\0" + f_bytes(1, "job-1a2b") + f_bytes(2, worker(0, ["python3", "train.py"],
                {"HVD_RANK": "0", "PATH": "/usr/bin"}, "/home/user")) + f_bytes(2, worker(
                1, ["python3", "train.py"], {"HVD_RANK": "1"})) + f_int(4, 30000),
            "append": b"\0" + f_bytes(1, "job") + f_bytes(2, worker(2, ["./a.out"], {})) + f_int(3, 1),
            "dup_rank": b"\0" + f_bytes(1, "j") + f_bytes(2, worker(0, ["x"], {}))
                        + f_bytes(2, worker(0, ["y"], {})),
            "bad_env": b"\0" + f_bytes(1, "j") + f_bytes(2, worker(0, ["x"], {"A=B": "1"})),
            "signal": b"\1" + f_bytes(1, "job-1a2b") + f_int(2, 15) + f_int(3, 0),
            "terminate": b"\1" + f_bytes(1, "job 1") + f_int(2, 5000),
        },
        "secret": {
            "base64": b"k3J9vQ2xP0m8Lw1sYt6Zc4Rn7Ea5Ud0FhGi2Jo9Bq8M=\n",
            "hex": b"8f2a61c0d94b3e7715aa09c2be44f613\r\n", "short": b"hunter2\n",
            "repeats": b"abababababababababababab\n", "blanks": b"a b c d e f g h i j k l m n o p\n\n",
        },
        "http": {
            "get": b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nAccept: */*\r\n\r\n",
            "query": b"GET /state.json?t=1 HTTP/1.0\r\n\r\n",
            "post": b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            "bare": b"GET / HTTP/1.1\n\n", "bad": b"GET  / HTTP/1.1\r\n\r\n",
            "partial": b"GET /metr",
        },
        "token": {  # byte 0 even: an authorization value; odd: offset + nonce for a real proof
            "bearer": b"\0Bearer 0123456789abcdef0123456789abcdef",
            "bearer_wrong": b"\0Bearer 0123456789abcdef",
            "proof": b"\0" + agent_proof("fuzz-agent-secret-Zq8t3vXw", "Launch", 1800000000000,
                                         "00112233445566778899aabbccddeeff").encode(),
            "proof_other": b"\0" + agent_proof("x", "Info", 1700000000000, "ab" * 16).encode(),
            "make_proof": b"\1\x10\x00" + bytes(range(16)),
            "make_late": b"\1\x40\x01" + bytes(range(16, 32)),
        },
    }


def main():
    for target, files in seeds().items():
        folder = os.path.join(HERE, "corpus", target)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print(f"{folder}: {len(files)} seeds")


if __name__ == "__main__":
    main()
