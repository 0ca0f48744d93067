#!/bin/sh
# hvdrun --host-discovery-script for an elastic job inside a Slurm allocation
# (sbatch/salloc): asks Slurm for the allocation's nodes and prints
# "ADDRESS:SLOTS" for each one Slurm still counts as usable - not down,
# drained, draining, failing or unresponsive - so that a node an admin
# drains leaves the job, which goes on at the smaller size (docs/deploy.md).
# ADDRESS is the node's NodeAddr, Slurm's own address for it: node names
# need not resolve. SLOTS: HVD_SLOTS_PER_NODE, else the allocation's
# --ntasks-per-node, else 1. hvd-agent must run on every node (docs/agent.md).
#
#   hvdrun --min-np 2 --host-discovery-script deploy/slurm/hvd-discover-hosts.sh \
#          --secret-file ~/.hvd/agent.secret /usr/bin/python3 train.py
set -eu
slots=${HVD_SLOTS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-1}}
nodes=$(scontrol show node -o "${SLURM_JOB_NODELIST:?not inside a Slurm allocation}")
printf '%s\n' "$nodes" | awk -v slots="$slots" '
  {
    addr = ""; state = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^NodeAddr=/) addr = substr($i, 10)
      else if ($i ~ /^State=/) state = substr($i, 7)
    }
    if (addr == "" || state ~ /DOWN|DRAIN|FAIL|NOT_RESPONDING|\*/) next
    print addr ":" slots
  }'
