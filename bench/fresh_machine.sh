#!/usr/bin/env bash
# Times README command 1 on a fresh Debian 12: debootstraps bookworm (minbase)
# into DIR, clones this checkout into it and runs the command there in a
# chroot, printing when each of its parts started and the total.
#
#   bash bench/fresh_machine.sh DIR     (as root; needs debootstrap and Debian's mirror)
#
# DIR is created when missing and reused otherwise (remove it for a fresh run).
# Figures: README.md ("The two commands").
set -euo pipefail
dir=${1:?usage: bash bench/fresh_machine.sh DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${HVD_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ ! -x "$dir/usr/bin/apt-get" ]; then
  command -v debootstrap >/dev/null || { echo "fresh_machine: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
    { echo "fresh_machine: debootstrap failed, see $dir.debootstrap.log" >&2; exit 1; }
fi
cat >"$dir/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
cp /etc/resolv.conf "$dir/etc/resolv.conf"
echo "127.0.0.1 localhost $(hostname)" >"$dir/etc/hosts"

mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" || true; done; }
trap cleanup EXIT
mount -t proc proc "$dir/proc" && mounted+=("$dir/proc")
mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys" && mounted+=("$dir/sys")
mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev" && mounted+=("$dir/dev")

rm -rf "$dir/root/hvd"
git clone -q "$repo" "$dir/root/hvd"
command1=$(grep -m1 '^bash deploy/install-deps.sh && ' "$repo/README.md")
echo "fresh_machine: $command1"
chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c "cd /root/hvd && export PS4='+ \$(date +%T) ' && start=\$(date +%s) && set -x && $command1; rc=\$?; set +x; echo \"fresh_machine: exit \$rc after \$((\$(date +%s) - start)) s\"" 2>&1 |
  grep -E '^\+ [0-9:]+ (bash|cmake|hvdrun)|^fresh_machine:|^\[0\]<stdout>:epoch|^install-deps:'
