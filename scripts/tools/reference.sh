#!/usr/bin/env bash
# Ensure the reference data the tests judge against is in the tool cache ($CACHE/src/reference): the CRDs
# of the releases the stacks deploy (crds/<name>-<version>/*.yaml) and the default values of the charts
# whose keys the stacks set (reference/<chart>-<version>-chart-values.yaml), each fetched from its pinned
# upstream source:
#   kueue v0.19.2                the sigs.k8s.io/kueue module (config/components/crd/bases, charts/kueue/values.yaml)
#   karpenter v1.15.2            the github.com/aws/karpenter-provider-aws module (pkg/apis/crds)
#   prometheus-operator v0.93.0  the github.com/prometheus-operator/prometheus-operator module
#                                (example/prometheus-operator-crd)
#   gpu-operator v26.7.0         the chart in NVIDIA's Helm repository (crds/, values.yaml), where it can be
#                                reached: the module proxy refuses github.com/NVIDIA/gpu-operator at this release
#   kube-prometheus-stack 88.5.3 the chart in the prometheus-community Helm repository (values.yaml and its
#                                kube-state-metrics 8.4.0 subchart's), where it can be reached
# A part no upstream source gives is copied from the offline fallback, ../shared beside the checkout (the
# same layout; GPU_PLATFORM_SHARED names another directory, "none" allows no fallback). A part found
# neither way is left out and the script fails naming GPU_PLATFORM_CRDS and GPU_PLATFORM_REFERENCE, which
# make the tests read other directories. A complete tree is reused as it is (delete $CACHE/src/reference to
# fetch again); $CACHE/src/reference/SOURCES says where each part came from.
#
#   scripts/tools/reference.sh                   fetch (cold) or reuse (warm); prints nothing on stdout
#   scripts/tools/reference.sh --crds --values   also print the CRD and the chart values directories, one a
#                                                line in the order asked (printed even when a part is missing)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The releases the stacks deploy: the spec's defaults of addons.kueue.version, addons.karpenter.version and
# addons.gpuOperator.version, as scripts/tools/kueue.sh and karpenter.sh pin them
# (tests/unit/scripts/test_reference_data.py holds them equal).
KUEUE_VERSION=v0.19.2
KARPENTER_VERSION=v1.15.2
GPU_OPERATOR_VERSION=v26.7.0
# v0.93.0: the release whose monitoring.coreos.com/v1 schemas the ServiceMonitors, PodMonitors and
# PrometheusRules were written against (the stacks leave Prometheus to kube-prometheus-stack; v1 is stable).
PROMETHEUS_OPERATOR_VERSION=v0.93.0
# As scripts/tools/karpenter.sh: the module's go.mod asks for a newer Go than the machine's.
KARPENTER_GOTOOLCHAIN=go1.27.3
# The repository the stacks install the chart from (components/gpu_operator.py CHART_REPO).
GPU_OPERATOR_REPO=https://helm.ngc.nvidia.com/nvidia
# addons.monitoring.version's default (in-cluster mode) and the kube-state-metrics subchart it carries, which
# the managed mode installs on its own (addons.monitoring.kubeStateMetricsVersion).
KUBE_PROMETHEUS_STACK_VERSION=88.5.3
KUBE_STATE_METRICS_VERSION=8.4.0
PROMETHEUS_COMMUNITY_REPO=https://prometheus-community.github.io/helm-charts

REF_DIR="$TC_CACHE/src/reference"
SHARED="${GPU_PLATFORM_SHARED:-$(cd "$TC_REPO/.." && pwd)/shared}"
PARTS=(kueue karpenter prometheus-operator gpu-operator kube-prometheus-stack)

# files_<part>: one "DEST SRC" line per file: DEST in the reference tree (the layout of ../shared), SRC in
# the upstream source (a module's or a chart's root). Only the files the tests and the local cluster read.
files_kueue() {
  local n
  for n in admissionchecks clusterqueues cohorts localqueues multikueueclusters multikueueconfigs \
           provisioningrequestconfigs resourceflavors topologies workloadpriorityclasses workloads; do
    echo "crds/kueue-$KUEUE_VERSION/kueue.x-k8s.io_$n.yaml config/components/crd/bases/kueue.x-k8s.io_$n.yaml"
  done
  echo "reference/kueue-$KUEUE_VERSION-chart-values.yaml charts/kueue/values.yaml"
}
# pkg/apis/crds, not charts/karpenter-crd/templates: the chart's copies carry Helm template lines.
files_karpenter() {
  local n
  for n in karpenter.k8s.aws_ec2nodeclasses karpenter.sh_nodeclaims karpenter.sh_nodeoverlays karpenter.sh_nodepools; do
    echo "crds/karpenter-$KARPENTER_VERSION/$n.yaml pkg/apis/crds/$n.yaml"
  done
}
files_prometheus-operator() {
  local n
  for n in podmonitors prometheusrules servicemonitors; do
    echo "crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION/monitoring.coreos.com_$n.yaml" \
         "example/prometheus-operator-crd/monitoring.coreos.com_$n.yaml"
  done
}
files_gpu-operator() {
  local n
  for n in clusterpolicies nvidiadrivers; do
    echo "crds/gpu-operator-$GPU_OPERATOR_VERSION/nvidia.com_$n.yaml crds/nvidia.com_$n.yaml"
  done
  echo "reference/gpu-operator-$GPU_OPERATOR_VERSION-chart-values.yaml values.yaml"
}
files_kube-prometheus-stack() {
  echo "reference/kube-prometheus-stack-$KUBE_PROMETHEUS_STACK_VERSION-chart-values.yaml values.yaml"
  echo "reference/kube-state-metrics-$KUBE_STATE_METRICS_VERSION-chart-values.yaml charts/kube-state-metrics/values.yaml"
}

# upstream_<part> DIR SRC...: put the upstream files SRC... under DIR (which must not exist); print what the
# source was on stdout. Runs in a subshell with errexit; any failure leaves DIR absent or incomplete.
upstream_kueue() {
  local dir=$1; shift
  tc_module_files sigs.k8s.io/kueue "$KUEUE_VERSION" "$dir" "$@"
  echo "module sigs.k8s.io/kueue@$KUEUE_VERSION"
}
upstream_karpenter() {
  local dir=$1; shift
  GOTOOLCHAIN="$KARPENTER_GOTOOLCHAIN" \
    tc_module_files github.com/aws/karpenter-provider-aws "$KARPENTER_VERSION" "$dir" "$@"
  echo "module github.com/aws/karpenter-provider-aws@$KARPENTER_VERSION"
}
upstream_prometheus-operator() {
  local dir=$1; shift
  tc_module_files github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION" "$dir" "$@"
  echo "module github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION"
}
# NVIDIA's release packages deployments/gpu-operator of the release tag with `helm package --version <tag>`
# (github.com/NVIDIA/gpu-operator .github/workflows/release-rc-assets.yaml), which keeps crds/ and values.yaml
# byte for byte. The proxy answers 403 for the module at v26.7.0, v26.7.0+incompatible and the tag's
# pseudo-version, so only a connected machine fetches this part.
upstream_gpu-operator() {
  local dir=$1 helm; shift
  helm="$TC_BIN/helm"
  [ -x "$helm" ] || helm="$(command -v helm)" || tc_die "no helm (scripts/toolchain helm builds one) to pull the chart"
  tc_scratch gpu-operator-chart
  # A private Helm home: the pull neither reads nor changes the user's repositories.
  HELM_CACHE_HOME="$TC_SCRATCH/home/cache" HELM_CONFIG_HOME="$TC_SCRATCH/home/config" \
    HELM_DATA_HOME="$TC_SCRATCH/home/data" timeout 300 "$helm" pull gpu-operator --repo "$GPU_OPERATOR_REPO" \
    --version "$GPU_OPERATOR_VERSION" --untar --untardir "$TC_SCRATCH/chart" >&2
  local src
  for src in "$@"; do
    [ -f "$TC_SCRATCH/chart/gpu-operator/$src" ] || tc_die "the gpu-operator $GPU_OPERATOR_VERSION chart has no $src"
    mkdir -p "$dir/$(dirname "$src")"
    cp "$TC_SCRATCH/chart/gpu-operator/$src" "$dir/$src"
  done
  echo "chart gpu-operator $GPU_OPERATOR_VERSION from $GPU_OPERATOR_REPO"
}
# The chart as `helm pull` gives it, its subcharts under charts/ (kube-state-metrics among them).
upstream_kube-prometheus-stack() {
  local dir=$1 helm; shift
  helm="$TC_BIN/helm"
  [ -x "$helm" ] || helm="$(command -v helm)" || tc_die "no helm (scripts/toolchain helm builds one) to pull the chart"
  tc_scratch kube-prometheus-stack-chart
  HELM_CACHE_HOME="$TC_SCRATCH/home/cache" HELM_CONFIG_HOME="$TC_SCRATCH/home/config" \
    HELM_DATA_HOME="$TC_SCRATCH/home/data" timeout 300 "$helm" pull kube-prometheus-stack \
    --repo "$PROMETHEUS_COMMUNITY_REPO" --version "$KUBE_PROMETHEUS_STACK_VERSION" --untar \
    --untardir "$TC_SCRATCH/chart" >&2
  local src
  for src in "$@"; do
    [ -f "$TC_SCRATCH/chart/kube-prometheus-stack/$src" ] || \
      tc_die "the kube-prometheus-stack $KUBE_PROMETHEUS_STACK_VERSION chart has no $src"
    mkdir -p "$dir/$(dirname "$src")"
    cp "$TC_SCRATCH/chart/kube-prometheus-stack/$src" "$dir/$src"
  done
  echo "chart kube-prometheus-stack $KUBE_PROMETHEUS_STACK_VERSION from $PROMETHEUS_COMMUNITY_REPO"
}

# The DEST paths of every part, sorted: what a complete tree holds besides SOURCES.
manifest() {
  local part
  for part in "${PARTS[@]}"; do "files_$part"; done | awk '{print $1}' | sort
}

complete() {
  [ -d "$REF_DIR" ] || return 1
  [ "$(cd "$REF_DIR" && find . -type f ! -name SOURCES | sed 's|^\./||' | sort)" = "$(manifest)" ]
}

# fetch_part PART OUT: copy PART's files into the tree OUT from upstream, else from the fallback; append a
# line to OUT/SOURCES. When neither has them, add PART and the upstream's failure to MISSING. Never called
# under || or if, which would turn errexit off inside the upstream_<part> subshell too.
MISSING=()
fetch_part() {
  local part=$1 out=$2 dest src pairs=() srcs=() rc=0 how=""
  mapfile -t pairs < <("files_$part")
  for dest in "${pairs[@]}"; do srcs+=("${dest#* }"); done
  tc_scratch "reference-$part"
  local dir="$TC_SCRATCH/src" log="$TC_SCRATCH/log"
  set +e
  # Its own scratch list: the subshell's exit trap must not remove the caller's scratch directories.
  how="$(set -e; TC_SCRATCH_DIRS=(); "upstream_$part" "$dir" "${srcs[@]}" 2>"$log")"
  rc=$?
  set -e
  local why
  why="$(grep -h 'error:' "$log" | tail -n 1 | sed 's/^toolchain: error: //' || true)"
  [ -n "$why" ] || why="$(tail -n 1 "$log")"
  if [ "$rc" = 0 ]; then
    for dest in "${pairs[@]}"; do
      [ -f "$dir/${dest#* }" ] || { rc=1; why="no ${dest#* } in the upstream source"; }
    done
  fi
  if [ "$rc" != 0 ]; then
    tc_log "reference: $part from upstream failed: ${why:-exit $rc}"
    if [ "$SHARED" != none ] && [ -d "$SHARED" ]; then
      rc=0
      for dest in "${pairs[@]}"; do
        [ -f "$SHARED/${dest%% *}" ] || { rc=1; tc_log "reference: no ${dest%% *} in the fallback $SHARED"; }
      done
    fi
    if [ "$rc" != 0 ]; then
      echo "$part MISSING (upstream: ${why:-exit 1})" >>"$out/SOURCES"
      MISSING+=("$part (upstream: ${why:-exit 1})")
      return 0
    fi
    # The fallback has the tree's own layout: DEST in it is SRC here.
    rm -rf "$dir"
    for dest in "${pairs[@]}"; do
      mkdir -p "$dir/$(dirname "${dest#* }")"
      cp "$SHARED/${dest%% *}" "$dir/${dest#* }"
    done
    how="fallback $SHARED (upstream: $why)"
  fi
  for dest in "${pairs[@]}"; do
    src="${dest#* }"
    dest="${dest%% *}"
    mkdir -p "$out/$(dirname "$dest")"
    cp "$dir/$src" "$out/$dest"
  done
  echo "$part $how" >>"$out/SOURCES"
  tc_log "reference: $part from $how"
}

# ensure: make $REF_DIR the complete tree (warm: nothing to do); a part no source has is left out and named
# in MISSING.
ensure() {
  complete && return 0
  mkdir -p "$TC_CACHE/locks" "$TC_CACHE/src"
  exec 9>"$TC_CACHE/locks/reference.lock"
  if ! flock -n 9; then
    tc_log "reference: waiting for another fetch of the reference data ..."
    flock 9
  fi
  if complete; then exec 9>&-; return 0; fi
  tc_scratch reference
  local out="$TC_SCRATCH/out" part
  mkdir -p "$out"
  : >"$out/SOURCES"
  for part in "${PARTS[@]}"; do
    fetch_part "$part" "$out"
  done
  chmod -R u+w "$out"
  rm -rf "$REF_DIR"
  mv "$out" "$REF_DIR"
  exec 9>&-
}

for arg in "$@"; do
  case "$arg" in
    --crds|--values) ;;
    -h|--help) tc_help; exit 0 ;;
    *) tc_die "unknown argument: $arg (see --help)" ;;
  esac
done
ensure
for arg in "$@"; do
  case "$arg" in
    --crds) echo "$REF_DIR/crds" ;;
    --values) echo "$REF_DIR/reference" ;;
  esac
done
if [ "${#MISSING[@]}" != 0 ]; then
  fallback="the offline fallback $SHARED lacks it (GPU_PLATFORM_SHARED)"
  [ "$SHARED" != none ] || fallback="no offline fallback is allowed (GPU_PLATFORM_SHARED=none)"
  missing="$(printf '%s; ' "${MISSING[@]}")"
  tc_die "no source for the reference data of ${missing%; } and $fallback." \
    "Set GPU_PLATFORM_CRDS and GPU_PLATFORM_REFERENCE to directories that hold the reference CRDs and" \
    "chart values (the layout of $REF_DIR), or GPU_PLATFORM_SHARED to a copy of ../shared"
fi
