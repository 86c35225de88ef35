#!/usr/bin/env bash
# fresh-check.sh — `make fresh-check`: the README's two commands on a bare Debian 12 root,
# as a new user's machine meets them: only what a minimal Debian has (compiler, make, git,
# pkg-config, python3) and none of the project's packages, so a missing install step that
# CI cannot see (CI runs where the packages already are) fails here. Run it before
# submitting any change to the build or the dependencies.
#
#   tools/fresh-check.sh [COMMAND...]       default: make exp EXP=quickstart && make test
#
# Needs root, debootstrap (apt-get install debootstrap), network access to the Debian
# mirror of /etc/apt, about 2 GB in /var/tmp and 5-10 minutes. The bare root is built once
# and cached as /var/tmp/fresh-check-base.tar (FRESH_CHECK_BASE to change it); every run
# starts from a fresh copy of it, in its own mount namespace (nothing stays mounted, even
# if the run is killed), and tests the committed HEAD of this checkout.
set -euo pipefail
die() { echo "fresh-check: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (it builds a chroot)"
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null) || die "run from the project's checkout"
command -v debootstrap >/dev/null || die "apt-get install -y debootstrap"
command -v unshare >/dev/null || die "unshare (util-linux) is needed"
cmd=${*:-"make exp EXP=quickstart && make test"}
base=${FRESH_CHECK_BASE:-/var/tmp/fresh-check-base.tar}
commit=$(git -C "$repo" rev-parse HEAD)
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
    echo "fresh-check: note: uncommitted changes are not tested (HEAD $commit is)"
mirror=$(awk '/^URIs:/ && !done {print $2; done=1}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1=="deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
root=$(mktemp -d /var/tmp/fresh-check.XXXXXX)
trap 'rm -rf --one-file-system "$root"' EXIT

if [ ! -f "$base" ]; then
    echo "fresh-check: building the bare Debian 12 root (once, cached in $base)..."
    debootstrap --variant=minbase --include=build-essential,ca-certificates,git,make,pkg-config,python3 \
        bookworm "$root" "$mirror" >/var/tmp/fresh-check-debootstrap.log 2>&1 \
        || die "debootstrap failed, see /var/tmp/fresh-check-debootstrap.log"
    tar -C "$root" -cf "$base.part" . && mv "$base.part" "$base"
    rm -rf --one-file-system "$root"; mkdir -p "$root"
fi
tar -C "$root" -xf "$base"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-checkout "$repo" "$root/src/boost-c"
git -C "$root/src/boost-c" checkout -q "$commit"
cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)   # the toolkit the project's machines carry
echo "fresh-check: $commit in a bare Debian 12 root: $cmd"
start=$(date +%s)
set +e
unshare -m --propagation private bash -s "$root" "$cuda" "$cmd" <<'INNER'
set -e
root=$1 cuda=$2 cmd=$3
mount -t proc proc "$root/proc"; mount --rbind /sys "$root/sys"; mount --rbind /dev "$root/dev"
if [ -n "$cuda" ] && [ -d "$cuda" ]; then
    mkdir -p "$root/usr/local/cuda"; mount --bind "$cuda" "$root/usr/local/cuda"; mount -o remount,bind,ro "$root/usr/local/cuda"
fi
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    bash -lc "cd /src/boost-c && $cmd"
INNER
rc=$?
set -e
echo "fresh-check: exit $rc after $(( $(date +%s) - start )) s"
exit $rc
