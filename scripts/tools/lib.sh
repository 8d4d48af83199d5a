# shellcheck shell=bash
# Shared helpers for scripts/tools/<tool>.sh (source it; it is not executable), and the one place the
# shell spells the tool cache's location: scripts/toolchain, scripts/pulumi-env and .ci/run
# source it for $TC_CACHE too (Python's twin is localcluster/toolcache.py; tests/unit/scripts/test_tool_cache.py
# holds them equal).
#
# Layout (the tool cache lives outside the repo):
#   $TC_CACHE            ${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}
#   $TC_BUILD/<tool>-<version>/   finished build of one tool version (only ever appears complete)
#   $TC_BIN/<binary>              symlink to the binary in use; the only directory put on PATH
#   $TC_CACHE/tmp, $TC_CACHE/locks  scratch build directories and per-tool flock files
#
# A tool script typically does:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   tc_probe() { "$1" version; }             # print the version of binary $1 (for PATH reuse)
#   tc_build() { ...; }                      # build into "$1" (an empty dir); cwd is a scratch dir
#   tc_verify() { ...; }                     # optional: check the fresh build in dir "$1" (cwd: scratch dir)
#                                            # (default: tc_probe on the first binary)
#   tc_ensure TOOL VERSION BINARY...          # warm: relink; else reuse PATH binary; else build
# or, for the usual command line ("" | --print-path | -h/--help), end with:
#   tc_main "$@" -- TOOL VERSION BINARY...
#
# Progress goes to stderr as "toolchain: ..." lines; stdout stays empty.

TC_CACHE="${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}"
TC_BIN="$TC_CACHE/bin"
TC_BUILD="$TC_CACHE/build"
# shellcheck disable=SC2034  # used by the tool scripts
TC_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Seconds between "still building" lines during a long build.
TC_HEARTBEAT="${TC_HEARTBEAT:-60}"

tc_log() { echo "toolchain: $*" >&2; }
tc_die() { tc_log "error: $*"; exit 1; }

# tc_help: print the calling script's header comment (from line 2 to the first line that is not one).
tc_help() { sed -n '2,/^[^#]/p' "$0" | sed -n '/^#/s/^# \{0,1\}//p'; }

# tc_scratch NAME: a new scratch directory under $TC_CACHE/tmp in $TC_SCRATCH; every one is removed when
# the script exits.
TC_SCRATCH_DIRS=()
tc_scratch() {
  mkdir -p "$TC_CACHE/tmp"
  TC_SCRATCH="$(mktemp -d "$TC_CACHE/tmp/$1.XXXXXX")"
  TC_SCRATCH_DIRS+=("$TC_SCRATCH")
  trap 'rm -rf "${TC_SCRATCH_DIRS[@]}"' EXIT
}

# tc_link TARGET NAME: point $TC_BIN/NAME at TARGET (no-op when it already does).
tc_link() {
  mkdir -p "$TC_BIN"
  if [ "$(readlink "$TC_BIN/$2" 2>/dev/null)" != "$1" ]; then
    ln -sfn "$1" "$TC_BIN/$2"
  fi
}

# tc_on_path NAME: print the path of NAME found on PATH outside $TC_BIN (fails if none).
tc_on_path() {
  local d
  local IFS=:
  for d in $PATH; do
    [ -n "$d" ] || continue
    [ "$(cd "$d" 2>/dev/null && pwd -P)" = "$(cd "$TC_BIN" 2>/dev/null && pwd -P)" ] && continue
    if [ -x "$d/$1" ] && [ ! -d "$d/$1" ]; then
      echo "$d/$1"
      return 0
    fi
  done
  return 1
}

# tc_version_eq A B: versions equal, ignoring a leading "v".
tc_version_eq() { [ "${1#v}" = "${2#v}" ]; }

# tc_go_env: the Go settings every build uses (static binaries, the committed go.sum as is,
# no go.work from a parent directory, the machine's own Go release).
tc_go_env() {
  command -v go >/dev/null || tc_die "go is not on PATH (needed to build $TC_TOOL $TC_VERSION)"
  export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  export GOFLAGS="${GOFLAGS:-} -mod=readonly"
}

# tc_run_logged LOG CMD...: run CMD with output to LOG, printing a progress line every
# $TC_HEARTBEAT seconds; on failure print the end of LOG.
tc_run_logged() {
  local log=$1 pid start=$SECONDS rc=0
  shift
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    local waited=0
    while [ "$waited" -lt "$TC_HEARTBEAT" ] && kill -0 "$pid" 2>/dev/null; do
      sleep 1
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      tc_log "still building $TC_TOOL $TC_VERSION ($((SECONDS - start))s) ..."
    fi
  done
  wait "$pid" || rc=$?
  if [ "$rc" != 0 ]; then
    tail -n 40 "$log" >&2
  fi
  return "$rc"
}

# tc_installed TOOL VERSION BINARY...: all binaries of that build are present.
tc_installed() {
  local dir="$TC_BUILD/$1-$2" b
  shift 2
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# tc_ensure TOOL VERSION BINARY...: make $TC_BIN/BINARY... point at VERSION of TOOL.
#   1. warm: $TC_BUILD/TOOL-VERSION has every binary -> (re)link and return;
#   2. the first BINARY on PATH (outside $TC_BIN) reports VERSION via tc_probe -> record it
#      as TOOL-VERSION (symlinks) and link (skipped when tc_probe is not defined, or when
#      TC_NO_PATH_REUSE=1);
#   3. otherwise call tc_build OUTDIR in a scratch directory under $TC_CACHE/tmp, check the
#      binaries appeared, and move OUTDIR into place.
# Builds of one tool are serialised with flock, so concurrent callers wait and then reuse.
tc_ensure() {
  TC_TOOL=$1 TC_VERSION=$2
  shift 2
  local dir="$TC_BUILD/$TC_TOOL-$TC_VERSION" b
  if tc_installed "$TC_TOOL" "$TC_VERSION" "$@"; then
    for b in "$@"; do tc_link "$dir/$b" "$b"; done
    return 0
  fi

  mkdir -p "$TC_BUILD" "$TC_CACHE/tmp" "$TC_CACHE/locks" "$TC_BIN"
  exec 9>"$TC_CACHE/locks/$TC_TOOL.lock"
  if ! flock -n 9; then
    tc_log "waiting for another build of $TC_TOOL $TC_VERSION ..."
    flock 9
  fi
  if tc_installed "$TC_TOOL" "$TC_VERSION" "$@"; then
    for b in "$@"; do tc_link "$dir/$b" "$b"; done
    exec 9>&-
    return 0
  fi

  local tmp
  tc_scratch "$TC_TOOL"
  tmp=$TC_SCRATCH

  local found="" got=""
  if [ "${TC_NO_PATH_REUSE:-0}" != 1 ] && declare -F tc_probe >/dev/null && found="$(tc_on_path "$1")"; then
    got="$(tc_probe "$found" 2>/dev/null || true)"
    if tc_version_eq "$got" "$TC_VERSION"; then
      tc_log "using $TC_TOOL $TC_VERSION from $(dirname "$found")"
      mkdir -p "$tmp/out"
      for b in "$@"; do
        local p
        p="$(tc_on_path "$b")" || tc_die "$b not on PATH beside $found"
        ln -s "$(readlink -f "$p")" "$tmp/out/$b"
      done
    else
      found=""
    fi
  fi

  if [ -z "$found" ]; then
    tc_log "building $TC_TOOL $TC_VERSION ..."
    local start=$SECONDS
    mkdir -p "$tmp/out"
    # errexit must hold inside tc_build, so its subshell is not tested with || or if.
    local rc=0
    set +e
    (set -e; cd "$tmp"; tc_build "$tmp/out")
    rc=$?
    set -e
    [ "$rc" = 0 ] || tc_die "building $TC_TOOL $TC_VERSION failed (exit $rc)"
    for b in "$@"; do
      [ -x "$tmp/out/$b" ] || tc_die "build of $TC_TOOL $TC_VERSION did not produce $b"
    done
    if declare -F tc_verify >/dev/null; then
      (cd "$tmp" && tc_verify "$tmp/out") || tc_die "built $TC_TOOL $TC_VERSION failed verification"
    elif declare -F tc_probe >/dev/null; then
      got="$(tc_probe "$tmp/out/$1" 2>/dev/null || true)"
      tc_version_eq "$got" "$TC_VERSION" \
        || tc_die "built $1 reports version '$got', expected $TC_VERSION"
    fi
    tc_log "$TC_TOOL $TC_VERSION built in $((SECONDS - start))s"
  fi

  rm -rf "$dir"
  mv "$tmp/out" "$dir"
  for b in "$@"; do tc_link "$dir/$b" "$b"; done
  exec 9>&-
}

# tc_main ARGS... -- TOOL VERSION BINARY...: the command line every tool script takes. No argument:
# tc_ensure; --print-path: tc_ensure, then print the first binary's path; -h/--help: the header comment.
tc_main() {
  local arg=""
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    [ -z "$arg" ] || tc_die "unexpected argument: $1 (see --help)"
    arg=$1
    shift
  done
  [ "${1:-}" = -- ] || tc_die "tc_main: missing -- TOOL VERSION BINARY..."
  shift
  case "$arg" in
    "") tc_ensure "$@" ;;
    --print-path) tc_ensure "$@"; echo "$TC_BIN/$3" ;;
    -h|--help) tc_help ;;
    *) tc_die "unknown argument: $arg (see --help)" ;;
  esac
}

# tc_module_dir MODULE: print the module-cache directory of MODULE at the version the
# current (wrapper) module requires, downloading it if needed; when it cannot, fail with go's reason (the
# "Error" of its JSON answer, such as a proxy's 403).
tc_module_dir() {
  local json dir
  json="$(go mod download -json "$1")" || true
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")"
  [ -n "$dir" ] || tc_die "go mod download $1: $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$json" \
    | sed 's/\\n\\t/: /g; s/\\n/; /g')"
  echo "$dir"
}

# tc_module_files MODULE VERSION DIR PATH...: copy the files or directories PATH (relative to the module
# root) of the Go module MODULE@VERSION into DIR/PATH (downloading the module if needed; DIR is replaced
# whole, so it only ever appears complete). No-op when every PATH is there. Callers may set GOTOOLCHAIN for
# the download.
tc_module_files() {
  local module=$1 version=$2 dest=$3 path dir have=1
  shift 3
  for path in "$@"; do [ -e "$dest/$path" ] || have=0; done
  [ "$have" = 0 ] || return 0
  command -v go >/dev/null || tc_die "go is not on PATH (needed to fetch $* of $module $version)"
  tc_scratch "$(basename "$dest")-files"
  dir="$(cd "$TC_SCRATCH" && GOWORK=off GOFLAGS= tc_module_dir "$module@$version")"
  for path in "$@"; do
    [ -e "$dir/$path" ] || tc_die "the $module@$version module has no $path"
    mkdir -p "$TC_SCRATCH/out/$(dirname "$path")"
    cp -r "$dir/$path" "$TC_SCRATCH/out/$path"
  done
  chmod -R u+w "$TC_SCRATCH/out"
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest"
  mv "$TC_SCRATCH/out" "$dest"
  tc_log "$* of $module $version in $dest"
}

# tc_module_charts MODULE VERSION DIR CHART...: the Helm charts charts/CHART of a Go module, in DIR/charts/CHART.
tc_module_charts() {
  local module=$1 version=$2 dest=$3 chart paths=()
  shift 3
  for chart in "$@"; do paths+=("charts/$chart"); done
  tc_module_files "$module" "$version" "$dest" "${paths[@]}"
}

# tc_go_build OUTDIR MODULE@VERSION PKGDIR BINARY [LDFLAGS]: build one main package (PKGDIR, relative to the
# module root) of a Go module with the module's own go.mod and go.sum, into OUTDIR/BINARY, with progress
# lines. It builds inside the downloaded module rather than with `go install PKG@VERSION`, which also reads
# the module's version list for deprecation notices, and a proxy may serve a pinned version but not the list.
# Every such build shares the Go build cache, so the Kubernetes libraries the controllers have in common
# compile once per version.
tc_go_build() {
  local out=$1 modver=$2 pkgdir=$3 bin=$4 ldflags="-s -w ${5:-}" dir
  tc_go_env
  mkdir -p wrapper
  dir="$(cd wrapper && tc_module_dir "$modver")" || tc_die "cannot download $modver"
  (cd "$dir" && tc_run_logged "$OLDPWD/build.log" go build -trimpath -ldflags "$ldflags" -o "$out/$bin" "./$pkgdir")
}

# tc_go_built BINARY: the check after a tc_go_build (the binary is a Go executable for this machine).
tc_go_built() { go version "$1" >/dev/null; }

# tc_controller_main ARG -- TOOL VERSION MODULE PKGDIR BINARY LDFLAGS SRCPATH: the command line of a workload
# controller's tool script (jobset, lws, trainer, kuberay): build BINARY from PKGDIR of MODULE@VERSION (or
# link it), keep SRCPATH of the module (its chart or CRDs) in $TC_CACHE/src/TOOL-VERSION, and with --src print
# that directory.
tc_controller_main() {
  local arg="${1:-}"
  shift
  [ "${1:-}" = -- ] || tc_die "tc_controller_main: missing --"
  shift
  local tool=$1 version=$2 module=$3 pkgdir=$4 binary=$5 ldflags=$6 srcpath=$7
  case "$arg" in
    ""|--src) ;;
    -h|--help) tc_help; exit 0 ;;
    *) tc_die "unknown argument: $arg (see --help)" ;;
  esac
  # shellcheck disable=SC2317  # called by tc_ensure
  tc_verify() { tc_go_built "$1/$TC_CTL_BINARY"; }
  # shellcheck disable=SC2317
  tc_build() {
    tc_log "building $TC_TOOL $TC_VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
    tc_go_build "$1" "$TC_CTL_MODULE@$TC_VERSION" "$TC_CTL_PKGDIR" "$TC_CTL_BINARY" "$TC_CTL_LDFLAGS"
  }
  TC_CTL_BINARY=$binary TC_CTL_MODULE=$module TC_CTL_PKGDIR=$pkgdir TC_CTL_LDFLAGS=$ldflags
  tc_ensure "$tool" "$version" "$binary"
  tc_module_files "$module" "$version" "$TC_CACHE/src/$tool-$version" "$srcpath"
  [ "$arg" != --src ] || echo "$TC_CACHE/src/$tool-$version"
}
