#!/usr/bin/env python3
"""Training throughput of hvd (DistributedOptimizer) beside torch DDP, the
same model, data and ranks, both measured in one invocation:

    . bundle/env.sh && python3 bench/gpu_train.py --mode nccl --np 2
    . bundle/env.sh && python3 bench/gpu_train.py --mode staged --np 2
    PYTHONPATH=python HVD_LIBRARY=build/lib/libhvd.so /usr/bin/python3 bench/gpu_train.py \\
        --hvdrun build/bin/hvdrun --device cpu --model small --steps 5 --warmup 2   # smoke test

ResNet-50 (torchvision's; a built-in copy of it when torchvision is missing)
on synthetic 224x224 images, batch 32 per rank, SGD with momentum:

  --mode nccl    hvd with HVD_GPU_TRANSPORT=nccl beside DDP with backend nccl.
                 Every rank runs through tests/gpu/nccl_hostid.sh, so several
                 ranks can share one GPU (each claims its own NCCL host).
  --mode staged  hvd with HVD_GPU_TRANSPORT=gloo (CUDA tensors staged through
                 pinned host memory) beside DDP with backend gloo on the same
                 CUDA tensors.
  --device cpu   both on CPU tensors over gloo (for a machine without a GPU).

hvd runs under `hvdrun -np N`; DDP's N processes are started by this script
with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT),
which avoids Debian torch 1.13's torchrun bug. Each rank times every step
(torch.cuda.synchronize() before and after); a side's img/s is the sum over
ranks of batch / the rank's median step time. Prints a table
`measure | hvd | torch | ratio` (ratio hvd/torch) and `SUMMARY|...` lines
for tests/gpu/run_from_bundle.sh. Exits 77 saying why when CUDA is asked for
but not available, 1 when a side failed. --plot FILE.png also draws the
table, hvd beside torch for each measure (bench/plots.py).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import plots

ROOT = pathlib.Path(__file__).resolve().parents[1]
WRAPPER = ROOT / "tests" / "gpu" / "nccl_hostid.sh"
RESULT = "GPU_TRAIN_RESULT"
SKIP = 77


# ---------------------------------------------------------------- models

class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class _ResNet50(nn.Module):
    """torchvision's resnet50 (v1.5: stride in the 3x3), 25.6 M parameters in
    161 tensors, for machines without torchvision."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, inplanes = [], 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(_Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        x = F.adaptive_avg_pool2d(self.layers(x), 1)
        return self.fc(torch.flatten(x, 1))


def _small_cnn(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Linear(32 * 16, 128), nn.ReLU(), nn.Linear(128, num_classes))


def build_model(name, num_classes=1000):
    """(model, description): torchvision's model when it is installed."""
    if name == "small":
        return _small_cnn(num_classes), "small CNN"
    try:
        import torchvision.models
        return getattr(torchvision.models, name)(num_classes=num_classes), f"torchvision {name}"
    except ImportError:
        if name != "resnet50":
            raise SystemExit(f"gpu_train: --model {name} needs torchvision, which is missing")
        return _ResNet50(num_classes), "resnet50 (built-in copy; torchvision is missing)"


# ---------------------------------------------------------------- workers

def _device(local_rank, kind):
    if kind == "cpu":
        torch.set_num_threads(1)
        return torch.device("cpu")
    index = local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    torch.backends.cudnn.benchmark = True
    return torch.device("cuda", index)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed_steps(a, model, optimizer, device):
    """Median seconds of one training step on this rank (after warm-up)."""
    torch.manual_seed(1234)
    images = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=device)
    labels = torch.randint(0, 1000, (a.batch_size,), device=device)
    model.train()
    times = []
    for i in range(a.warmup + a.steps):
        _sync(device)
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        _sync(device)
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), float(loss.item())


def _report(a, medians, loss, description, device):
    result = {"img_s": sum(a.batch_size / m for m in medians),
              "step_ms": statistics.median(medians) * 1e3, "ranks": len(medians),
              "loss": loss, "model": description,
              "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}
    print(f"{RESULT} {json.dumps(result)}", flush=True)


def worker_hvd(a):
    import hvd.torch as hvd

    hvd.init()
    device = _device(hvd.local_rank(), a.device)
    model, description = build_model(a.model)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    median, loss = _timed_steps(a, model, optimizer, device)
    medians = hvd.allgather_object(median, name="gpu_train.medians")
    if hvd.rank() == 0:
        _report(a, medians, loss, description, device)
    hvd.shutdown()


def worker_ddp(a):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = _device(int(os.environ.get("LOCAL_RANK", rank)), a.device)
    backend = "nccl" if a.device == "cuda" and a.mode == "nccl" else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=size)
    model, description = build_model(a.model)
    model.to(device)
    model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                    else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    median, loss = _timed_steps(a, model, optimizer, device)
    medians = [None] * size
    dist.all_gather_object(medians, median)
    if rank == 0:
        _report(a, medians, loss, description, device)
    # Every collective is done. Exit without tearing DDP down: torch 1.13's
    # ~Reducer joins gloo's threads holding the GIL, which one of them may
    # need (a deadlock at exit, seen here); the timing is already reported.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ---------------------------------------------------------------- driver

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_hvdrun(given):
    if given:
        return given
    build = os.environ.get("HVD_BUILD_DIR")
    if build and os.access(os.path.join(build, "bin", "hvdrun"), os.X_OK):
        return os.path.join(build, "bin", "hvdrun")
    found = shutil.which("hvdrun")
    if not found:
        raise SystemExit("no hvdrun: give --hvdrun, or source the bundle's env.sh")
    return found


def worker_args(a, side):
    return [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", side,
            "--mode", a.mode, "--device", a.device, "--model", a.model,
            "--batch-size", str(a.batch_size), "--image-size", str(a.image_size),
            "--steps", str(a.steps), "--warmup", str(a.warmup)]


def wrapped(a, command):
    """NCCL with several ranks on one GPU: each rank claims its own host."""
    return ["bash", str(WRAPPER), *command] if a.device == "cuda" and a.mode == "nccl" else command


def parse_result(text):
    for line in text.splitlines():
        m = re.search(RESULT + r" (\{.*\})", line)
        if m:
            return json.loads(m.group(1))
    return None


def tail(text, lines=40):
    return "\n".join(text.splitlines()[-lines:])


def run_bounded(cmd, env, timeout):
    """(exit code, or None when it ran past timeout, output). The command
    stays in our process group, so a `timeout` around this script reaches it
    too. At the deadline it gets SIGTERM (hvdrun then ends its workers),
    SIGKILL 10 s later."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        p.terminate()
    try:
        out, _ = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return None, out


def run_hvd(a):
    env = dict(os.environ)
    if a.device == "cuda":
        env["HVD_GPU_TRANSPORT"] = "nccl" if a.mode == "nccl" else "gloo"
    cmd = [find_hvdrun(a.hvdrun), "-np", str(a.np), *wrapped(a, worker_args(a, "hvd"))]
    rc, out = run_bounded(cmd, env, a.timeout)
    if rc is None:
        return None, f"hvd: timed out after {a.timeout} s\n{tail(out)}"
    result = parse_result(out)
    if rc != 0 or result is None:
        return None, f"hvd: exit {rc}\n{tail(out)}"
    return result, ""


def run_ddp(a):
    """Starts the N DDP ranks with torchrun's variables; output to files (no
    pipe can fill up while another rank is waited for)."""
    port = free_port()
    procs, files = [], []
    for rank in range(a.np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(a.np), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(a.np), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        files.append(tempfile.TemporaryFile(mode="w+"))
        procs.append(subprocess.Popen(wrapped(a, worker_args(a, "ddp")), env=env,
                                      stdout=files[-1], stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + a.timeout
    failed = ""
    while not failed and any(p.poll() is None for p in procs):
        bad = [(r, p.returncode) for r, p in enumerate(procs) if p.poll() not in (None, 0)]
        if bad:
            failed = f"ddp: rank {bad[0][0]} exit {bad[0][1]}"
        elif time.monotonic() > deadline:
            failed = f"ddp: timed out after {a.timeout} s"
        else:
            time.sleep(0.2)
    bad = [(r, p.returncode) for r, p in enumerate(procs) if p.poll() not in (None, 0)]
    if bad and not failed:
        failed = f"ddp: rank {bad[0][0]} exit {bad[0][1]}"
    for p in procs:  # a failed or stuck rank: end the others
        if p.poll() is None:
            p.kill()  # the wrapper exec'ed python: this is the worker itself
        p.wait()
    outputs = []
    for f in files:
        f.seek(0)
        outputs.append(f.read())
        f.close()
    result = parse_result(outputs[0])
    if failed or result is None:
        return None, f"{failed or 'ddp: no result'}\n" + "\n".join(
            f"[ddp rank {r}] {tail(o, 20)}" for r, o in enumerate(outputs))
    return result, ""


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def drive(a):
    if a.device == "cuda" and not torch.cuda.is_available():
        print(f"SKIP: torch.cuda.is_available() is false (no usable GPU, or a CPU-only torch "
              f"{torch.__version__}); run with --device cpu for a smoke test", flush=True)
        return SKIP
    if a.device == "cpu" and a.mode == "nccl":
        a.mode = "staged"  # CPU tensors: both sides on gloo
    if a.device == "cpu":
        sides = "hvd (CPU transport) vs DDP backend gloo, CPU tensors"
    elif a.mode == "nccl":
        sides = "hvd HVD_GPU_TRANSPORT=nccl vs DDP backend nccl"
    else:
        sides = "hvd HVD_GPU_TRANSPORT=gloo (staged) vs DDP backend gloo on CUDA tensors"
    print(f"gpu_train: {a.model}, batch {a.batch_size} per rank, {a.image_size}x{a.image_size}, "
          f"{a.np} ranks, device {a.device}; {sides}; median of {a.steps} steps after "
          f"{a.warmup} warm-up", flush=True)
    results, errors = {}, []
    for side, fn in (("hvd", run_hvd), ("ddp", run_ddp)):
        t0 = time.monotonic()
        results[side], error = fn(a)
        print(f"  {side}: {'done' if results[side] else 'FAILED'} in "
              f"{time.monotonic() - t0:.1f} s", flush=True)
        if error:
            errors.append(error)
    for error in errors:
        print(error, flush=True)
    h, d = results["hvd"], results["ddp"]
    if h or d:
        print(f"  model {(h or d)['model']}, device {(h or d)['device']}")
    label = f"train {a.model} {a.mode if a.device == 'cuda' else 'cpu'} np{a.np}"
    rows = (("img/s (total)", "img_s", ".1f", ">= 1.00"),
            ("step ms (median)", "step_ms", ".1f", "<= 1.00"))
    print(f"{'measure':<20} | {'hvd':>9} | {'torch':>9} | {'ratio':>6}")
    summary, table = [], []
    for measure, key, spec, target in rows:
        hv, dv = (h or {}).get(key), (d or {}).get(key)
        ratio = hv / dv if hv and dv else None
        table.append((measure, hv, dv, ratio))
        print(f"{measure:<20} | {fmt(hv, spec):>9} | {fmt(dv, spec):>9} | {fmt(ratio, '.2f'):>6}")
        if key == "img_s":
            summary.append(f"SUMMARY|{label} img/s|{fmt(hv, spec) if h else 'FAILED'}|"
                           f"{fmt(dv, spec) if d else 'FAILED'}|{fmt(ratio, '.2f')}|{target}")
    print("\n".join(summary), flush=True)
    if a.plot and (h or d):
        plot(a.plot, f"gpu_train: {(h or d)['model']}, {(h or d)['device']}, batch "
             f"{a.batch_size} per rank, {a.np} ranks; {sides}", table)
    return 0 if h and d else 1


def plot(path, title, table):
    """table: (measure, hvd, torch, ratio hvd/torch); a panel per measure."""
    plots.bars(path, title, ["measure", "hvd", "torch", "hvd / torch"], table,
               values=["hvd", "torch"], ratio="hvd / torch", per_row=True,
               ylabel=[m for m, *_ in table])
    plots.wrote(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=("nccl", "staged"), default="nccl")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--model", default="resnet50", help="resnet50 (default), a torchvision "
                   "model name, or small (a tiny CNN)")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--hvdrun", help="default: $HVD_BUILD_DIR/bin/hvdrun, else hvdrun on PATH")
    p.add_argument("--timeout", type=float, default=150, help="seconds per side")
    p.add_argument("--worker", choices=("hvd", "ddp"), help=argparse.SUPPRESS)
    plots.add_plot_argument(p)
    a = p.parse_args()
    if a.worker == "hvd":
        worker_hvd(a)
        return 0
    if a.worker == "ddp":
        worker_ddp(a)
        return 0
    plots.check_plot_argument(a.plot)
    return drive(a)


if __name__ == "__main__":
    sys.exit(main())
