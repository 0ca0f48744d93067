#!/bin/bash
# leave_children.sh TOKEN ACTION...: a worker that leaves one child of each
# kind behind, then does the ACTION at index $HVD_RANK (the last one when
# there are fewer):
#   exit:N  exits with code N at once
#   sleep   sleeps (until it is killed)
# Each child is named TOKEN-RANK-KIND in ps (its argv[0]), so that a test can
# count what is left (tests/integration/test_containment.py,
# tests/unit/daemon/agent/containment_test.cc). The kinds:
#   group         a child in the worker's process group
#   nohup         nohup'd: ignores SIGHUP
#   ignores-term  ignores SIGTERM
#   setsid        in a new session (setsid)
#   setsid-tree   a new session whose leader waits for a child of its own
#   daemon        daemonized: a double fork into a new session whose middle
#                 process exits at once
# It prints "children up: 6" once all six run (it waits up to 30 s or so).
set -u
token=$1
shift
actions=("$@")
rank=${HVD_RANK:-0}
if [ "$rank" -lt "${#actions[@]}" ]; then action=${actions[$rank]}; else action=${actions[-1]}; fi
me=$token-$rank

(exec -a "$me-group" sleep 300) &
nohup bash -c "exec -a '$me-nohup' sleep 300" > /dev/null 2>&1 &
bash -c "trap '' TERM; exec -a '$me-ignores-term' sleep 300" &
setsid bash -c "exec -a '$me-setsid' sleep 300" &
setsid bash -c "(exec -a '$me-setsid-tree' sleep 300) & wait" &
setsid bash -c "(exec -a '$me-daemon' sleep 300) & exit 0" &

up=0
for _ in $(seq 600); do
  up=$(pgrep -c -f "^$me-")
  [ "$up" -ge 6 ] && break
  sleep 0.05
done
echo "children up: $up"
case $action in
  exit:*) exit "${action#exit:}" ;;
  *) exec sleep 300 ;;
esac
