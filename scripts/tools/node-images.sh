#!/usr/bin/env bash
# Ensure the images the local cluster's real node runs (localcluster/realnode.py imports them into its
# containerd) are in the tool cache as OCI archives, built on this machine without a registry:
#   busybox.oci.tar  the job template's default image (gpu_platform/jobs.py DEFAULT_IMAGE, fully qualified as the
#                    image allowlist reads it): Debian's busybox-static package, its applets linked in /bin
#   pause.oci.tar    the pod sandbox image (the kubelet's default sandbox image at its version, which
#                    realnode.py also gives containerd as sandbox_image): toolchain/node-images/pause.c, compiled
#                    statically here
# The version is a digest of this script and pause.c, so an edit builds again and an unchanged tree reuses.
# Needs root and apt-get on a machine without busybox-static's .deb or a static C tool chain (gcc, libc6-dev).
#
#   scripts/tools/node-images.sh              build (cold) or nothing (warm); prints nothing on stdout
#   scripts/tools/node-images.sh --print-dir  also print the directory of the archives on stdout
#   scripts/tools/node-images.sh --names      print "ARCHIVE IMAGE" per line (what each archive is imported as)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# docker.io/library/busybox:1.37: `busybox:1.37` (gpu_platform/jobs.py DEFAULT_IMAGE) read as Docker reads it
# (gpu_platform/images.py normalize); tests/unit/localcluster/test_realnode.py holds the two equal. Debian
# bookworm's busybox-static is 1.35.0: the name is the template's, the content Debian's (its version is in the
# image's org.opencontainers.image.version annotation).
BUSYBOX_IMAGE=docker.io/library/busybox:1.37
# The kubelet's default sandbox image at v1.33 (k8s.io/kubernetes v1.33.13 cmd/kubelet/app/options/
# container_runtime.go defaultPodSandboxImageName, defaultPodSandboxImageVersion); containerd 1.6's own default
# (sandbox_image, registry.k8s.io/pause:3.6 in `containerd config default`) is overridden with it.
PAUSE_IMAGE=registry.k8s.io/pause:3.10
SOURCE_DIR="$TC_REPO/toolchain/node-images"
VERSION="src-$(cat "${BASH_SOURCE[0]}" "$SOURCE_DIR/pause.c" | sha256sum | cut -c1-12)"
DIR="$TC_BUILD/node-images-$VERSION"
ARCHIVES=(busybox.oci.tar pause.oci.tar)

print_dir=0
case "${1:-}" in
  "") ;;
  --print-dir) print_dir=1 ;;
  --names) printf '%s %s\n' busybox.oci.tar "$BUSYBOX_IMAGE" pause.oci.tar "$PAUSE_IMAGE"; exit 0 ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
TC_TOOL=node-images TC_VERSION=$VERSION

built() { local a; for a in "${ARCHIVES[@]}"; do [ -s "$DIR/$a" ] || return 1; done; }

apt_install() {  # apt_install PACKAGE...: install Debian packages (root), as scripts/tools/etcd.sh does
  command -v apt-get >/dev/null || tc_die "$* missing and no apt-get; install them and retry"
  [ "$(id -u)" = 0 ] || tc_die "$* missing; run as root or: sudo apt-get install $*"
  tc_log "installing $* (Debian packages) ..."
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; } \
       >"$TC_SCRATCH/apt.log" 2>&1; then
    tail -n 20 "$TC_SCRATCH/apt.log" >&2
    tc_die "apt-get install $* failed"
  fi
}

# blob FILE: move FILE into blobs/sha256 of the layout in cwd; print "DIGEST SIZE"
blob() {
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  mv "$1" "blobs/sha256/$d"
  echo "sha256:$d $s"
}

# oci_archive ROOTFS IMAGE CONFIG VERSION OUT: ROOTFS as the one layer of an OCI image layout (image-spec v1.0)
# named IMAGE (containerd's io.containerd.image.name, which `ctr images import` names it by; the tag as
# org.opencontainers.image.ref.name), CONFIG the image config's "config" object, packed as the tar OUT.
# Reproducible: sorted entries, owner root, every time 0.
oci_archive() {
  local rootfs=$1 image=$2 config=$3 version=$4 out=$5 layout diff layer cfg manifest arch
  layout="$(mktemp -d "$TC_SCRATCH/layout.XXXXXX")"
  arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
  (
    cd "$layout"
    mkdir -p blobs/sha256
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu -C "$rootfs" -cf layer.tar .
    diff="sha256:$(sha256sum layer.tar | cut -d' ' -f1)"
    gzip -n -9 layer.tar
    read -r layer layer_size < <(blob layer.tar.gz)
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"scripts/tools/node-images.sh"}]}' \
      "$arch" "$config" "$diff" >config.json
    read -r cfg cfg_size < <(blob config.json)
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}],"annotations":{"org.opencontainers.image.version":"%s"}}' \
      "$cfg" "$cfg_size" "$layer" "$layer_size" "$version" >manifest.json
    read -r manifest manifest_size < <(blob manifest.json)
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
      "$manifest" "$manifest_size" "$arch" "$image" "${image##*:}" >index.json
    echo '{"imageLayoutVersion":"1.0.0"}' >oci-layout
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu -cf "$out" oci-layout index.json blobs
  )
}

build() {
  local out=$1 deb busybox version root
  # busybox: the package's static binary, one link per applet, a nobody user (the template's runAsUser 65534)
  mkdir deb
  (cd deb && apt-get download busybox-static >../apt-download.log 2>&1) \
    || { apt-get update >/dev/null 2>&1 && (cd deb && apt-get download busybox-static >../apt-download.log 2>&1); } \
    || { cat apt-download.log >&2; tc_die "apt-get download busybox-static failed"; }
  deb="$(ls deb/*.deb)"
  version="$(dpkg-deb -f "$deb" Version)"
  dpkg-deb -x "$deb" pkg
  busybox="$(find pkg -type f -name busybox -perm -u+x | head -n1)"
  [ -n "$busybox" ] || tc_die "busybox-static $version has no busybox binary"
  root=busybox-root
  mkdir -p "$root/bin" "$root/etc" "$root/root" "$root/tmp"
  chmod 1777 "$root/tmp"
  cp "$busybox" "$root/bin/busybox"
  local applet
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  oci_archive "$PWD/$root" "$BUSYBOX_IMAGE" \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"]}' \
    "debian-busybox-static-$version" "$out/busybox.oci.tar"

  # pause: this project's pause.c, static
  if ! command -v gcc >/dev/null || [ ! -e "$(gcc -print-file-name=libc.a)" ]; then
    apt_install gcc libc6-dev
  fi
  mkdir -p pause-root
  gcc -static -Os -s -Wall -Wextra -Werror -o pause-root/pause "$SOURCE_DIR/pause.c"
  oci_archive "$PWD/pause-root" "$PAUSE_IMAGE" '{"Entrypoint":["/pause"]}' "$VERSION" "$out/pause.oci.tar"
}

if ! built; then
  mkdir -p "$TC_BUILD" "$TC_CACHE/locks"
  exec 9>"$TC_CACHE/locks/node-images.lock"
  if ! flock -n 9; then
    tc_log "waiting for another build of node-images $VERSION ..."
    flock 9
  fi
  if ! built; then
    tc_log "building node-images $VERSION (busybox from Debian's busybox-static, pause from pause.c) ..."
    start=$SECONDS
    tc_scratch node-images
    mkdir "$TC_SCRATCH/out"
    (cd "$TC_SCRATCH" && build "$TC_SCRATCH/out")
    rm -rf "$DIR"
    mv "$TC_SCRATCH/out" "$DIR"
    tc_log "node-images $VERSION built in $((SECONDS - start))s"
  fi
  exec 9>&-
fi
[ "$print_dir" = 0 ] || echo "$DIR"
