// Command gpu-device-plugin advertises a GPU pool's resource on the local cluster's real node through the
// kubelet's device-plugin API, so that the real kubelet admits, counts and releases GPU pods as it does with
// NVIDIA's plugin on EKS (localcluster/realnode.py starts it; docs/local-cluster.md).
//
// There is no GPU behind the devices: each is a name. Allocate answers what NVIDIA's plugin answers under its
// default envvar strategy, the devices' IDs in NVIDIA_VISIBLE_DEVICES, and nothing else (no device node, no
// mount).
//
// Why a device plugin rather than a node-status patch: the kubelet keeps a plugin's resource across its own
// restarts. When the kubelet starts it deletes every socket in the device-plugin directory, its checkpoint
// aside (k8s.io/kubernetes v1.33.13 pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go Start, manager.go
// CleanupPluginDirectory), so this plugin watches its own socket and serves and registers again once it is gone; an extended resource patched
// into the node's status is zeroed when the kubelet finds no device checkpoint (pkg/kubelet/kubelet_node_status.go
// reconcileExtendedResource).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// plugin serves one resource of count healthy devices.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
	stop    chan struct{}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once: they never change health. The stream stays open until the kubelet
// closes it or the plugin stops (a closed stream tells the kubelet the devices are gone).
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
	case <-p.stop:
	}
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	known := map[string]bool{}
	for _, d := range p.devices {
		known[d.ID] = true
	}
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIDs {
			if !known[id] {
				return nil, fmt.Errorf("unknown device %q", id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIDs, ",")},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// serve listens on socket and registers resource with the kubelet; it returns the running server.
func serve(p *plugin, dir, socket, resource string) (*grpc.Server, error) {
	path := filepath.Join(dir, socket)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, filepath.Base(pluginapi.KubeletSocket)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: socket, ResourceName: resource, Options: &pluginapi.DevicePluginOptions{},
	}, grpc.WaitForReady(true))
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("registering %s with the kubelet: %w", resource, err)
	}
	return srv, nil
}

func main() {
	resource := flag.String("resource", "", "extended resource to advertise, such as nvidia.com/gpu")
	count := flag.Int("count", 0, "devices to advertise")
	prefix := flag.String("device-prefix", "gpu", "device IDs are PREFIX-0 ... PREFIX-(count-1)")
	dir := flag.String("socket-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory")
	socket := flag.String("socket", "gpu-platform.sock", "this plugin's socket name in --socket-dir")
	ready := flag.String("ready-file", "", "file written once registered (and again after each re-registration)")
	flag.Parse()
	if *resource == "" || *count < 1 || strings.Contains(*socket, "/") {
		log.Fatalf("--resource, --count >= 1 and a --socket name without '/' are required")
	}

	p := &plugin{stop: make(chan struct{})}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("%s-%d", *prefix, i), Health: pluginapi.Healthy})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	var srv *grpc.Server
	path := filepath.Join(*dir, *socket)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if srv == nil {
			var err error
			if srv, err = serve(p, *dir, *socket, *resource); err != nil {
				log.Printf("%v (retrying)", err)
			} else {
				log.Printf("registered %d x %s at %s", *count, *resource, path)
				if *ready != "" {
					if err := os.WriteFile(*ready, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
						log.Fatalf("writing %s: %v", *ready, err)
					}
				}
			}
		}
		select {
		case s := <-signals:
			log.Printf("%v: stopping", s)
			close(p.stop)
			if srv != nil {
				srv.Stop()
			}
			_ = os.Remove(path)
			return
		case <-tick.C:
			// A kubelet that starts deletes the directory's sockets: serve and register again.
			if _, err := os.Stat(path); srv != nil && err != nil {
				log.Printf("%s is gone (the kubelet restarted): registering again", path)
				srv.Stop()
				srv = nil
			}
		}
	}
}
