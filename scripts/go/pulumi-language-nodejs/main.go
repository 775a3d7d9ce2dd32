// Command pulumi-language-nodejs is idforge's Node.js language host for the Pulumi engine.
//
// Why it exists: the upstream host (module github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3)
// has no release tags and the Go module proxy reachable from our machines refuses every version of it, so it
// cannot be built from modules here. The host's job is small, though: the engine launches it, talks gRPC
// (pulumirpc.LanguageRuntime) and asks it to Run the program; the real work happens in @pulumi/pulumi's own
// `cmd/run` entry point, which we resolve from the program's node_modules exactly like upstream does. Anything
// the engine needs for `stack init`, `up`, `preview`, `refresh` and `destroy` is implemented; code generation,
// `pulumi new` prompts, `pulumi install` and `pulumi package` are not (they return gRPC Unimplemented, which the
// engine reports or, for optional calls such as Handshake and GetRequiredPackages, falls back from).
//
// The contract with @pulumi/pulumi/cmd/run (see its usage text): flags --monitor, --engine, --organization,
// --project, --root-directory, --stack, --pwd, --dry-run, --parallel, --tracing, then the program path ("."
// means "the package in --pwd"); configuration in PULUMI_CONFIG (a JSON object) and PULUMI_CONFIG_SECRET_KEYS
// (a JSON array); TypeScript through PULUMI_NODEJS_TYPESCRIPT / PULUMI_NODEJS_TSCONFIG_PATH. Exit code 32 means
// "the error was already shown to the user", which maps to RunResponse.Bail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
)

// version is the Pulumi release this host is built to accompany; the build sets it with
// -ldflags "-X main.version=...". It is what GetPluginInfo reports to the engine.
var version = "3.259.0"

// runModule is the @pulumi/pulumi entry point that connects to the engine and runs the user's program.
const runModule = "@pulumi/pulumi/cmd/run"

// exitCodeAlreadyReported is the exit code @pulumi/pulumi/cmd/run uses after it has logged a user-actionable
// error through the engine: the engine should stop without printing anything more.
const exitCodeAlreadyReported = 32

func main() {
	flags := flag.NewFlagSet("pulumi-language-nodejs", flag.ContinueOnError)
	tracing := flags.String("tracing", "", "Zipkin-compatible endpoint to send tracing data to")
	showVersion := flags.Bool("version", false, "print the version and exit")
	// Flags the engine (or older engines) may pass; accepted so they never break start-up.
	flags.Bool("logtostderr", false, "log to stderr")
	flags.Bool("logflow", false, "flow logging settings to child processes")
	flags.Int("v", 0, "log verbosity")
	flags.String("root", "", "project root (unused: taken from ProgramInfo)")
	flags.Bool("typescript", true, "unused: taken from the runtime options in ProgramInfo")
	flags.String("tsconfig", "", "unused: taken from the runtime options in ProgramInfo")
	flags.String("nodeargs", "", "unused: taken from the runtime options in ProgramInfo")
	flags.String("packagemanager", "", "unused")
	if err := flags.Parse(os.Args[1:]); err != nil {
		fatalf("bad arguments: %v", err)
	}
	if *showVersion {
		fmt.Printf("v%s\n", version)
		return
	}

	// The engine passes its own address as the last positional argument; @pulumi/pulumi uses it for logging.
	engineAddress := ""
	if args := flags.Args(); len(args) > 0 {
		engineAddress = args[len(args)-1]
	}

	nodeBin, err := exec.LookPath("node")
	if err != nil {
		fatalf("could not find node on PATH: %v", err)
	}

	host := &languageHost{nodeBin: nodeBin, engineAddress: engineAddress, tracing: *tracing}
	// When the engine dies (kill -9, a crashed CI job), nobody will ever call us again: poll its health
	// endpoint, as Pulumi's own plugins do, and then stop the programs we run and exit, instead of
	// lingering with them for ever.
	host.watchEngine(engineAddress)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		fatalf("could not start the language host gRPC server: %v", err)
	}

	// The engine reads the port from our first line of stdout.
	fmt.Printf("%d\n", handle.Port)

	if err := <-handle.Done; err != nil {
		fatalf("language host gRPC server stopped: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: "+format+"\n", args...)
	os.Exit(1)
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	nodeBin       string
	engineAddress string
	tracing       string

	mu      sync.Mutex
	running map[*exec.Cmd]struct{}

	watchOnce sync.Once
}

// Handshake lets newer engines hand over the engine address and directories up front.
func (h *languageHost) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
		h.watchEngine(h.engineAddress)
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins lists resource-provider plugins declared by installed npm packages
// (package.json `"pulumi": {"resource": true}`), looking in the node_modules folders from the program
// directory upwards. Dynamic providers need none: the engine runs them through pulumi-resource-pulumi-nodejs.
func (h *languageHost) GetRequiredPlugins(
	_ context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram() //nolint:staticcheck // older engines send only this
	}
	plugins, err := providerPlugins(dir)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

type packageJSON struct {
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
	Pulumi          struct {
		Resource bool   `json:"resource"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Server   string `json:"server"`
	} `json:"pulumi"`
}

func readPackageJSON(path string) (*packageJSON, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pkg packageJSON
	if err := json.Unmarshal(b, &pkg); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return &pkg, nil
}

func providerPlugins(programDir string) ([]*pulumirpc.PluginDependency, error) {
	if programDir == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	var plugins []*pulumirpc.PluginDependency
	for dir := programDir; ; dir = filepath.Dir(dir) {
		nodeModules := filepath.Join(dir, "node_modules")
		manifests, _ := filepath.Glob(filepath.Join(nodeModules, "*", "package.json"))
		scoped, _ := filepath.Glob(filepath.Join(nodeModules, "@*", "*", "package.json"))
		for _, manifest := range append(manifests, scoped...) {
			pkg, err := readPackageJSON(manifest)
			if err != nil || !pkg.Pulumi.Resource {
				continue
			}
			name := pkg.Pulumi.Name
			if name == "" {
				name = strings.TrimPrefix(strings.TrimPrefix(pkg.Name, "@pulumi/"), "@")
			}
			ver := pkg.Pulumi.Version
			if ver == "" {
				ver = pkg.Version
			}
			if ver != "" && !strings.HasPrefix(ver, "v") {
				ver = "v" + ver
			}
			if seen[name] {
				continue // the nearest node_modules wins, as with require()
			}
			seen[name] = true
			plugins = append(plugins, &pulumirpc.PluginDependency{
				Name: name, Kind: "resource", Version: ver, Server: pkg.Pulumi.Server,
			})
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	sort.Slice(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	return plugins, nil
}

// resolveRunModule finds @pulumi/pulumi/cmd/run the way require() would from the program directory.
func resolveRunModule(programDir string) (string, error) {
	if override := os.Getenv("PULUMI_LANGUAGE_NODEJS_RUN_PATH"); override != "" {
		return override, nil
	}
	for dir := programDir; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "node_modules", filepath.FromSlash(runModule))
		if _, err := os.Stat(filepath.Join(candidate, "index.js")); err == nil {
			return candidate, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return "", fmt.Errorf("could not find %s from %s: it looks like @pulumi/pulumi is not installed "+
		"(run npm install in the project, or link its node_modules)", runModule, programDir)
}

// runtimeOptions are the `runtime.options` of Pulumi.yaml that matter when running a program.
type runtimeOptions struct {
	typescript bool
	tsconfig   string
	nodeargs   []string
}

func parseRuntimeOptions(opts *structpb.Struct) runtimeOptions {
	ro := runtimeOptions{typescript: true}
	if opts == nil {
		return ro
	}
	m := opts.AsMap()
	switch v := m["typescript"].(type) {
	case bool:
		ro.typescript = v
	case string:
		ro.typescript = v != "false"
	}
	if v, ok := m["tsconfig"].(string); ok {
		ro.tsconfig = v
	}
	if v, ok := m["nodeargs"].(string); ok && strings.TrimSpace(v) != "" {
		ro.nodeargs = strings.Fields(v)
	}
	return ro
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	rootDir := info.GetRootDirectory()
	if rootDir == "" {
		rootDir = programDir
	}
	pwd := req.GetPwd()
	if pwd == "" {
		pwd = programDir
	}

	runPath, err := resolveRunModule(programDir)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}

	opts := parseRuntimeOptions(info.GetOptions())

	args := append([]string{}, opts.nodeargs...)
	args = append(args, runPath)
	flagArg := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name+"="+value)
		}
	}
	flagArg("monitor", req.GetMonitorAddress())
	flagArg("engine", h.engineAddress)
	flagArg("organization", req.GetOrganization())
	flagArg("project", req.GetProject())
	flagArg("root-directory", rootDir)
	flagArg("stack", req.GetStack())
	flagArg("pwd", pwd)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if p := req.GetParallel(); p > 0 {
		flagArg("parallel", strconv.Itoa(int(p)))
	}
	flagArg("tracing", h.tracing)

	// The program: "." lets @pulumi/pulumi pick package.json's exports/main (or index.*) in --pwd.
	program := info.GetEntryPoint()
	if program == "" {
		program = req.GetProgram() //nolint:staticcheck // older engines send only this
	}
	if program == "" || program == "." {
		program = "."
	} else if !filepath.IsAbs(program) {
		program = filepath.Join(programDir, program)
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	config := req.GetConfig()
	if config == nil {
		config = map[string]string{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("serializing configuration: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("serializing secret configuration keys: %w", err)
	}

	env := os.Environ()
	env = append(env,
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
	)
	// V8's compile cache for the program (node's default place, where the provider host keeps its
	// own): every preview and up loads the same SDK, gRPC and idforge modules again, and compiling them
	// was about 1.5 s of the program's CPU on the critical path of a 500-tenant preview (README,
	// "Scale"). Entries are keyed by content, so a stale one is never used; NODE_COMPILE_CACHE or
	// NODE_DISABLE_COMPILE_CACHE in the environment win.
	if os.Getenv("NODE_COMPILE_CACHE") == "" && os.Getenv("NODE_DISABLE_COMPILE_CACHE") == "" {
		env = append(env, "NODE_COMPILE_CACHE="+filepath.Join(os.TempDir(), "node-compile-cache"))
	}
	if opts.typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if opts.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}

	cmd := exec.CommandContext(ctx, h.nodeBin, args...)
	cmd.Dir = pwd
	cmd.Env = env
	// The engine shows our stdout and stderr to the person, so node's own output (including a crash before it
	// could connect to the engine) reaches them unchanged.
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr

	h.track(cmd, true)
	err = cmd.Run()
	h.track(cmd, false)

	if err == nil {
		return &pulumirpc.RunResponse{}, nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code := exitErr.ExitCode()
		if code == exitCodeAlreadyReported {
			return &pulumirpc.RunResponse{Bail: true}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", code)}, nil
	}
	return &pulumirpc.RunResponse{
		Error: fmt.Sprintf("could not run %s %s: %v", h.nodeBin, strings.Join(args, " "), err),
	}, nil
}

func (h *languageHost) track(cmd *exec.Cmd, add bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running == nil {
		h.running = map[*exec.Cmd]struct{}{}
	}
	if add {
		h.running[cmd] = struct{}{}
	} else {
		delete(h.running, cmd)
	}
}

// engineHealthInterval is how often the host checks that the engine is still there.
const engineHealthInterval = 2 * time.Second

// watchEngine starts (once) the engine health check: when the engine stops answering, the programs
// this host runs are killed and the host exits.
func (h *languageHost) watchEngine(addr string) {
	if addr == "" {
		return
	}
	h.watchOnce.Do(func() {
		ctx, gone := context.WithCancel(context.Background())
		if err := rpcutil.Healthcheck(ctx, addr, engineHealthInterval, gone); err != nil {
			return
		}
		go func() {
			<-ctx.Done()
			h.mu.Lock()
			for cmd := range h.running {
				if cmd.Process != nil {
					_ = cmd.Process.Kill()
				}
			}
			h.mu.Unlock()
			fmt.Fprintln(os.Stderr, "pulumi-language-nodejs: the engine is gone; stopping")
			os.Exit(1)
		}()
	})
}

// Cancel is sent when the engine is interrupted; stop running programs so the engine can wind down.
func (h *languageHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for cmd := range h.running {
		if cmd.Process != nil {
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}
	return &emptypb.Empty{}, nil
}

func (h *languageHost) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	out, err := exec.Command(h.nodeBin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s --version: %w", h.nodeBin, err)
	}
	return &pulumirpc.AboutResponse{
		Executable: h.nodeBin,
		Version:    strings.TrimPrefix(strings.TrimSpace(string(out)), "v"),
	}, nil
}

// GetProgramDependencies reports the program's declared npm dependencies (from package.json), for
// `pulumi about` and update metadata.
func (h *languageHost) GetProgramDependencies(
	_ context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram() //nolint:staticcheck // older engines send only this
	}
	pkg, err := readPackageJSON(filepath.Join(dir, "package.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &pulumirpc.GetProgramDependenciesResponse{}, nil
		}
		return nil, err
	}
	deps := map[string]string{}
	for name, v := range pkg.Dependencies {
		deps[name] = v
	}
	if req.GetTransitiveDependencies() {
		for name, v := range pkg.DevDependencies {
			deps[name] = v
		}
	}
	names := make([]string, 0, len(deps))
	for name := range deps {
		names = append(names, name)
	}
	sort.Strings(names)
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, name := range names {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: name, Version: deps[name]})
	}
	return resp, nil
}
