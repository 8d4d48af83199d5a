// Command pulumi-language-python is a small Python language host for the Pulumi engine.
//
// Why this exists: the upstream host (module github.com/pulumi/pulumi/sdk/python/cmd/
// pulumi-language-python/v3) has no tags, and the module mirror this project can reach does
// not serve any pseudo-version of it, so it cannot be built here. This host implements the
// parts of the LanguageRuntime protocol the project uses, on top of the same building blocks
// the upstream host uses from github.com/pulumi/pulumi/sdk/v3 (python/toolchain for the
// virtualenv handling, rpcutil for gRPC plumbing, PolicyProxy for policy packs):
//
//   - Run: starts the program with pulumi-language-python-exec (copied at build time from
//     the sdk/v3 module, and installed beside this binary), passing the same arguments and
//     PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS environment as upstream.
//   - GetRequiredPackages: reports resource plugins of installed Python packages from their
//     pulumi-plugin.json (so the engine loads e.g. the kubernetes provider at the SDK's version).
//   - RunPlugin: runs Python policy packs (`python -u -m pulumi.policy`) and plugins.
//   - InstallDependencies, About, GetProgramDependencies, GetPluginInfo, Handshake, Cancel.
//
// Code generation RPCs (GenerateProgram, GeneratePackage, Pack, Link, ...) are not
// implemented; the project does not use `pulumi convert`/`pulumi package` here.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

const (
	execName = "pulumi-language-python-exec"
	// Exit code with which the Python SDK says it already showed the user an error.
	exitBail = 32
)

func main() {
	showVersion := flag.Bool("version", false, "print the plugin version and exit")
	tracing := flag.String("tracing", "", "tracing endpoint, passed on to the program")
	useExec := flag.String("use-executor", "", "use this program instead of "+execName+" beside the binary")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	logging.InitLogging(false, 0, false)

	execPath := *useExec
	if execPath == "" {
		self, err := os.Executable()
		if err != nil {
			cmdutil.Exit(fmt.Errorf("could not determine current executable: %w", err))
		}
		// Resolve symlinks: the exec script sits beside the real binary, not beside a link to it.
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		execPath = filepath.Join(filepath.Dir(self), execName)
		if _, err := os.Stat(execPath); err != nil {
			cmdutil.Exit(fmt.Errorf("missing executor %s: %w", execPath, err))
		}
	}

	var engineAddress string
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	cancelChannel := make(chan bool)
	go func() {
		<-ctx.Done()
		cancel()
		close(cancelChannel)
	}()
	if engineAddress != "" {
		if err := rpcutil.Healthcheck(ctx, engineAddress, 5*time.Minute, cancel); err != nil {
			cmdutil.Exit(fmt.Errorf("could not start health check host RPC server: %w", err))
		}
	}

	runCtx, runCancel := context.WithCancel(context.Background())
	host := &languageHost{exec: execPath, engineAddress: engineAddress, tracing: *tracing,
		cancelCtx: runCtx, cancel: runCancel}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancelChannel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
		Options: rpcutil.TracingServerInterceptorOptions(nil),
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start language host RPC server: %w", err))
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host RPC stopped serving: %w", err))
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	exec          string
	engineAddress string
	tracing       string
	cancelCtx     context.Context
	cancel        context.CancelFunc
}

// options reads the `runtime.options` of Pulumi.yaml / PulumiPolicy.yaml that matter here.
func options(info *pulumirpc.ProgramInfo, isPlugin bool) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.GetRootDirectory(), ProgramDir: info.GetProgramDirectory()}
	m := info.GetOptions().AsMap()
	if v, ok := m["virtualenv"]; ok {
		s, ok := v.(string)
		if !ok {
			return opts, errors.New("virtualenv option must be a string")
		}
		opts.Virtualenv = s
	}
	if v, ok := m["toolchain"]; ok {
		switch v {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		case "uv":
			opts.Toolchain = toolchain.Uv
		default:
			return opts, fmt.Errorf("unsupported toolchain option: %v", v)
		}
	}
	if v, ok := m["typechecker"]; ok {
		return opts, fmt.Errorf("typechecker option %v is not supported by this language host", v)
	}
	if isPlugin && opts.Virtualenv == "" && (opts.Toolchain == toolchain.Pip || opts.Toolchain == toolchain.Auto) {
		opts.Virtualenv = "venv"
	}
	return opts, nil
}

func (h *languageHost) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.GetEngineAddress()
	hctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	if err := rpcutil.Healthcheck(hctx, h.engineAddress, 5*time.Minute, cancel); err != nil {
		return nil, fmt.Errorf("could not start health check host RPC server: %w", err)
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *languageHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancel()
	return &emptypb.Empty{}, nil
}

// pluginScript prints, as JSON, the pulumi-plugin.json contents of every installed
// distribution that ships one, with the distribution's name and version.
const pluginScript = `import importlib.metadata as md, json
out = []
for dist in md.distributions():
    for f in dist.files or []:
        if f.name == "pulumi-plugin.json":
            try:
                data = json.loads(f.read_text() or "{}")
            except Exception:
                continue
            out.append({"dist": dist.metadata["Name"], "distVersion": dist.version, "plugin": data})
            break
print(json.dumps(out))`

type pluginJSON struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`
}

var pep440 = regexp.MustCompile(`^(\d+(?:\.\d+)*)$`)

func (h *languageHost) GetRequiredPackages(ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	opts, err := options(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", pluginScript)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing Pulumi packages: %w", err)
	}
	var found []struct {
		Dist        string     `json:"dist"`
		DistVersion string     `json:"distVersion"`
		Plugin      pluginJSON `json:"plugin"`
	}
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("parsing package list: %w", err)
	}
	resp := &pulumirpc.GetRequiredPackagesResponse{}
	for _, f := range found {
		if !f.Plugin.Resource {
			continue
		}
		name := f.Plugin.Name
		if name == "" {
			name = strings.TrimPrefix(strings.ToLower(f.Dist), "pulumi-")
		}
		v := f.Plugin.Version
		if v == "" {
			if !pep440.MatchString(f.DistVersion) {
				logging.V(5).Infof("skipping %s: cannot map version %q to a plugin version", f.Dist, f.DistVersion)
				continue
			}
			v = f.DistVersion
		}
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		resp.Packages = append(resp.Packages, &pulumirpc.PackageDependency{
			Name: name, Kind: string(apitype.ResourcePlugin), Version: v, Server: f.Plugin.Server,
		})
	}
	return resp, nil
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	if h.engineAddress == "" {
		return nil, errors.New("must call Handshake before Run")
	}
	opts, err := options(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}

	args := []string{h.exec}
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engineAddress)
	add("project", req.GetProject())
	add("root_directory", req.GetInfo().GetRootDirectory())
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("dry_run", strconv.FormatBool(req.GetDryRun()))
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	add("organization", req.GetOrganization())
	args = append(args, req.GetInfo().GetEntryPoint())
	args = append(args, req.GetArgs()...)

	runCtx, runCancel := context.WithCancel(h.cancelCtx)
	defer runCancel()
	context.AfterFunc(ctx, runCancel)
	cmd, err := tc.Command(runCtx, args...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	if cfg := req.GetConfig(); cfg != nil {
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("failed to serialize configuration: %w", err)
		}
		env = append(env, "PULUMI_CONFIG="+string(b))
	}
	keys := req.GetConfigSecretKeys()
	if keys == nil {
		keys = []string{}
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("failed to serialize configuration secret keys: %w", err)
	}
	cmd.Env = append(env, "PULUMI_CONFIG_SECRET_KEYS="+string(b))

	if err := cmd.Run(); err != nil {
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.ExitStatus() == exitBail {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{
			Error: fmt.Sprintf("problem executing program (could not run language executor): %v", err),
		}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

func (h *languageHost) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	ctx := server.Context()
	isAnalyzer := req.GetKind() == string(apitype.AnalyzerPlugin)
	opts, err := options(req.GetInfo(), !isAnalyzer)
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	programDir := req.GetInfo().GetProgramDirectory()
	var args []string
	if isAnalyzer {
		// Policy packs: `python -u -m pulumi.policy <engine address> <pack dir>`.
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...)
		args = append(args, programDir)
	} else {
		args = append([]string{programDir}, req.GetArgs()...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()

	var proxy *sdk.PolicyProxy
	if isAnalyzer {
		// Policy packs run in their own directory and learn the stack from the environment;
		// the proxy answers the engine's configure call and then forwards to the pack.
		cmd.Dir = programDir
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return fmt.Errorf("could not start policy pack proxy: %w", err)
		}
		cfg, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("could not get stack configuration: %w", err)
		}
		if cfg != nil {
			setenv := func(k, v string) {
				if v != "" {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			setenv("PULUMI_ORGANIZATION", cfg.Organization)
			setenv("PULUMI_PROJECT", cfg.Project)
			setenv("PULUMI_STACK", cfg.Stack)
			setenv("PULUMI_DRY_RUN", strconv.FormatBool(cfg.DryRun))
			if cfg.Config != nil {
				b, err := json.Marshal(cfg.Config)
				if err != nil {
					return fmt.Errorf("could not marshal stack configuration: %w", err)
				}
				setenv("PULUMI_CONFIG", string(b))
			}
		}
	} else {
		cmd.Dir = req.GetPwd()
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	} else {
		cmd.Env = append(os.Environ(), cmd.Env...)
	}
	cmd.Env = append(cmd.Env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start plugin: %w", err)
	}
	if proxy != nil {
		err = proxy.Attach(ctx, cmd)
	} else {
		err = cmd.Wait()
	}
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return server.Send(&pulumirpc.RunPluginResponse{
				Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(exitErr.ExitCode())},
			})
		}
		return err
	}
	return closer.Close()
}

func (h *languageHost) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	opts, err := options(req.GetInfo(), req.GetIsPlugin())
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := tc.InstallDependencies(server.Context(), req.GetInfo().GetProgramDirectory(),
		req.GetUseLanguageVersionTools(), true, stdout, stderr); err != nil {
		return err
	}
	return closer.Close()
}

func (h *languageHost) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	opts, err := options(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: info.PythonExecutable,
		Version:    info.PythonVersion.String(),
		Metadata:   map[string]string{"toolchainVersion": info.ToolchainVersion.String()},
	}, nil
}

func (h *languageHost) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	opts, err := options(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, p := range pkgs {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return resp, nil
}
