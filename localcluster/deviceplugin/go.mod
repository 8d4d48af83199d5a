// The local cluster's GPU device plugin (main.go), built by scripts/tools/gpu-device-plugin.sh. The kubelet's
// device-plugin API at the version of the kubelet it registers with (scripts/tools/kube-apiserver.sh
// KUBE_VERSION; k8s.io/kubelet is published as v0.<minor>.<patch>), gRPC at the version that kubelet pins.
module gpu-platform/localcluster/deviceplugin

go 1.24.0

require (
	google.golang.org/grpc v1.68.1
	k8s.io/kubelet v0.33.13
)

require (
	github.com/gogo/protobuf v1.3.2 // indirect
	golang.org/x/net v0.38.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20241209162323-e6fa225c2576 // indirect
	google.golang.org/protobuf v1.36.5 // indirect
)
