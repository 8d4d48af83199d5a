#!/usr/bin/env bash
# Ensure the acceptance test's trainer image is in the tool cache as an OCI archive, built on this machine from
# Debian packages without a registry: Python 3 with torch (python3-torch 1.13.1, CPU only; its libtorch links
# libgloo0, the all-reduce of step 3) and boto3 (python3-boto3, the data path's S3 client). The acceptance
# workload itself (workloads/acceptance/train.py) is not in the image: the acceptance command ships it as a
# ConfigMap, as it does on EKS with the team's production image.
#
# How: apt resolves the packages' dependency closure as if nothing were installed (an empty dpkg status), downloads
# it, and each package's files are unpacked into one merged-/usr root file system (no maintainer scripts run: the
# two update-alternatives links libtorch needs, libblas.so.3 and liblapack.so.3, are made here, and ldconfig
# writes the root's library cache); documentation, manuals and locales are left out. Packed as one layer.
#
#   scripts/tools/trainer-image.sh              build (cold) or nothing (warm); prints nothing on stdout
#   scripts/tools/trainer-image.sh --print-path also print the archive's path on stdout
#   scripts/tools/trainer-image.sh --name       print the image name the archive is imported as
#
# Needs apt-get and dpkg-deb (a Debian or Ubuntu machine); about 270 MB of packages, 1 GB unpacked.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(python3-torch python3-boto3)
# An image name under localhost/ (never pulled: a registry named localhost is this machine's), which the
# acceptance live test's stack allows (tests/live/acceptance_stack.yaml images.allowedRegistries). The tag is
# the torch package's upstream version.
IMAGE=localhost/gpu-platform/acceptance-trainer:torch-1.13.1
VERSION="src-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
DIR="$TC_BUILD/trainer-image-$VERSION"
ARCHIVE=trainer.oci.tar

case "${1:-}" in
  "") mode=build ;;
  --print-path) mode=print ;;
  --name) echo "$IMAGE"; exit 0 ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
TC_TOOL=trainer-image TC_VERSION=$VERSION

# blob FILE: move FILE into blobs/sha256 of the layout in cwd; print "DIGEST SIZE"
blob() {
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  mv "$1" "blobs/sha256/$d"
  echo "sha256:$d $s"
}

# oci_archive ROOTFS CONFIG OUT: ROOTFS as the one layer of an OCI image layout (image-spec v1.0) named $IMAGE
# (containerd's io.containerd.image.name, which `ctr images import` names it by), CONFIG the image config's
# "config" object, packed as the tar OUT. Reproducible: sorted entries, owner root, every time 0.
oci_archive() {
  local rootfs=$1 config=$2 out=$3 layout diff layer layer_size cfg cfg_size manifest manifest_size arch
  layout="$(mktemp -d "$TC_SCRATCH/layout.XXXXXX")"
  arch="$(dpkg --print-architecture)"
  (
    cd "$layout"
    mkdir -p blobs/sha256
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu -C "$rootfs" -cf layer.tar .
    diff="sha256:$(sha256sum layer.tar | cut -d' ' -f1)"
    gzip -n -1 layer.tar
    read -r layer layer_size < <(blob layer.tar.gz)
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"scripts/tools/trainer-image.sh"}]}' \
      "$arch" "$config" "$diff" >config.json
    read -r cfg cfg_size < <(blob config.json)
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}],"annotations":{"org.opencontainers.image.version":"%s"}}' \
      "$cfg" "$cfg_size" "$layer" "$layer_size" "$VERSION" >manifest.json
    read -r manifest manifest_size < <(blob manifest.json)
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
      "$manifest" "$manifest_size" "$arch" "$IMAGE" "${IMAGE##*:}" >index.json
    echo '{"imageLayoutVersion":"1.0.0"}' >oci-layout
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu -cf "$out" oci-layout index.json blobs
  )
}

build() {
  local out=$1 root=rootfs deb triplet lib target
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || tc_die "apt-get and dpkg-deb are needed"
  # The closure as apt resolves it for an empty system: an empty dpkg status and package cache of our own.
  mkdir -p apt/archives/partial apt/state
  : >apt/state/status
  local opts=(-o Dir::State::status="$PWD/apt/state/status" -o Dir::Cache::archives="$PWD/apt/archives"
              -o Debug::NoLocking=1)
  if ! apt-get install --download-only -y -q --no-install-recommends "${opts[@]}" "${PACKAGES[@]}" >apt.log 2>&1; then
    { apt-get update && apt-get install --download-only -y -q --no-install-recommends "${opts[@]}" "${PACKAGES[@]}"; } \
      >apt.log 2>&1 || { tail -n 20 apt.log >&2; tc_die "downloading ${PACKAGES[*]} and their dependencies failed"; }
  fi
  # merged /usr, as Debian 12 lays it out (the packages' /bin, /lib, ... land in /usr through these links)
  mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" "$root/etc" "$root/tmp"
  for lib in bin sbin lib lib64; do ln -s "usr/$lib" "$root/$lib"; done
  chmod 1777 "$root/tmp"
  for deb in apt/archives/*.deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$root" \
      --exclude=./usr/share/doc --exclude=./usr/share/man --exclude=./usr/share/locale --exclude=./usr/share/info
  done
  triplet="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
  # update-alternatives' links (libblas3's and liblapack3's postinst)
  for lib in blas lapack; do
    target="$root/usr/lib/$triplet/$lib/lib$lib.so.3"
    [ -e "$target" ] || tc_die "lib$lib.so.3 is not in the closure (apt chose another provider: see apt.log)"
    ln -sf "$lib/lib$lib.so.3" "$root/usr/lib/$triplet/lib$lib.so.3"
  done
  printf 'include /etc/ld.so.conf.d/*.conf\n' >"$root/etc/ld.so.conf"
  ldconfig -r "$root"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  # The check that matters: torch with its gloo backend and boto3 import in the root as the image runs them.
  # (torch reads /dev/urandom at import: the container runtime provides /dev, the check binds the host's)
  if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
    local rc=0 dev
    mkdir "$root/dev"
    for dev in null urandom; do touch "$root/dev/$dev" && mount --bind "/dev/$dev" "$root/dev/$dev"; done
    chroot "$root" /usr/bin/python3 -c 'import torch, torch.distributed as d, boto3; assert d.is_gloo_available(); print(torch.__version__)' \
      >check.log 2>&1 || rc=$?
    for dev in null urandom; do umount "$root/dev/$dev"; done
    rm -rf "$root/dev"
    [ "$rc" = 0 ] || { cat check.log >&2; tc_die "torch, gloo or boto3 does not import in the image"; }
    tc_log "trainer image: torch $(tail -n1 check.log) with gloo, boto3"
  fi
  oci_archive "$PWD/$root" \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","PYTHONDONTWRITEBYTECODE=1","PYTHONUNBUFFERED=1","HOME=/tmp"],"Cmd":["python3"]}' \
    "$out/$ARCHIVE"
}

if [ ! -s "$DIR/$ARCHIVE" ]; then
  mkdir -p "$TC_BUILD" "$TC_CACHE/locks"
  exec 9>"$TC_CACHE/locks/trainer-image.lock"
  if ! flock -n 9; then
    tc_log "waiting for another build of trainer-image $VERSION ..."
    flock 9
  fi
  if [ ! -s "$DIR/$ARCHIVE" ]; then
    tc_log "building trainer-image $VERSION (${PACKAGES[*]} and their Debian dependencies) ..."
    start=$SECONDS
    tc_scratch trainer-image
    mkdir "$TC_SCRATCH/out"
    (cd "$TC_SCRATCH" && build "$TC_SCRATCH/out")
    rm -rf "$DIR"
    mv "$TC_SCRATCH/out" "$DIR"
    tc_log "trainer-image $VERSION built in $((SECONDS - start))s ($(du -h "$DIR/$ARCHIVE" | cut -f1))"
  fi
  exec 9>&-
fi
[ "$mode" = build ] || echo "$DIR/$ARCHIVE"
