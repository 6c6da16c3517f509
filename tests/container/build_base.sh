#!/usr/bin/env bash
# Make the container test's base image locally, without any registry:
#   debootstrap a minimal Debian bookworm root filesystem with python3 (3.11) and python3-venv,
#   then `podman import` it as localhost/durable-base:bookworm.
# Idempotent: does nothing when the image already exists (pass --force to rebuild).
# Needs root, podman and debootstrap (apt-get install podman runc debootstrap).
#
# Environment:
#   BASE_IMAGE_TAG   image name to create      (default localhost/durable-base:bookworm)
#   DEBIAN_MIRROR    Debian mirror to use      (default: the one apt is configured with)
#   DEBIAN_SUITE     suite                     (default bookworm: its python3 is 3.11)
#   CONTAINERS_CONF  podman settings           (default: containers.conf beside this script)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$HERE/containers.conf}"
TAG="${BASE_IMAGE_TAG:-localhost/durable-base:bookworm}"
SUITE="${DEBIAN_SUITE:-bookworm}"

if [[ "${1:-}" != "--force" ]] && podman image exists "$TAG"; then
  echo "build_base: $TAG already exists, nothing to do"
  exit 0
fi

for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "build_base: $tool is missing (apt-get install podman runc debootstrap)" >&2; exit 2; }
done

# The mirror apt already uses on this machine (deb822 .sources first, then the one-line format).
mirror_from_apt() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk -v suite="$SUITE" '
      /^[[:space:]]*$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
      /^URIs:/   { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
      END        { if (uri != "" && ok) print uri }
    ' "$f" | head -1
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk -v suite="$SUITE" '$1 == "deb" && $3 == suite && $2 ~ /^https?:/ { print $2; exit }' "$f"
  done
}
MIRROR="${DEBIAN_MIRROR:-$(mirror_from_apt | head -1)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

WORK="$(mktemp -d /var/tmp/durable-base.XXXXXX)"
ROOTFS="$WORK/rootfs"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

start=$(date +%s)
echo "build_base: debootstrap $SUITE from $MIRROR into $ROOTFS"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
  tail -40 "$WORK/debootstrap.log" >&2
  exit 1
}

# Trim what an image does not need.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
  "$ROOTFS"/var/log/*.log "$ROOTFS"/var/cache/debconf/*-old
"$ROOTFS"/usr/bin/python3 --version 2>/dev/null || chroot "$ROOTFS" python3 --version

echo "build_base: importing as $TAG"
tar --numeric-owner -C "$ROOTFS" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  - "$TAG" >/dev/null
podman image exists "$TAG"
echo "build_base: $TAG ready in $(($(date +%s) - start))s ($(podman image inspect --format '{{.Size}}' "$TAG") bytes)"
