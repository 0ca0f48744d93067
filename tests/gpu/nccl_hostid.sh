#!/usr/bin/env bash
# Runs COMMAND as if this rank had a host of its own, for NCCL:
#
#   hvdrun -np 2 tests/gpu/nccl_hostid.sh python3 train.py
#   torchrun --no_python --nproc_per_node 2 tests/gpu/nccl_hostid.sh python3 train.py
#
# NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU
# detected") unless each rank claims its own host: NCCL_HOSTID changes the
# host hash NCCL compares, and the ranks then talk over sockets on loopback
# (no InfiniBand). The id is the rank's slot: HVD_RANK under hvdrun (an
# elastic replacement gets its predecessor's slot, which is free by then),
# RANK under torchrun and torch.distributed launchers.
export NCCL_HOSTID="rank${HVD_RANK:-${RANK:-0}}"
export NCCL_SOCKET_IFNAME=lo
export NCCL_IB_DISABLE=1
exec "$@"
