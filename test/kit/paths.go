package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// RepoRoot is the root of the Picchu repository, found from this file's path.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// ControlPlaneStartTimeout is how long an envtest.Environment's etcd and
// API server may each take to start. envtest's default, 20 s, is not
// enough on 2 cores while three test packages start theirs at once, and a
// start that times out leaves its process running while envtest tries
// again beside it.
const ControlPlaneStartTimeout = 2 * time.Minute

// Assets returns the directory holding kube-apiserver and etcd: the
// KUBEBUILDER_ASSETS environment variable when set, otherwise what
// hack/install-k8s-binaries.sh provisions (built once, then cached under bin/).
func Assets(ctx context.Context) (string, error) {
	assetsOnce.Do(func() {
		if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
			assetsDir = dir
			return
		}
		assetsDir, assetsErr = provision(ctx, "install-k8s-binaries.sh", "Kubernetes binaries")
	})
	return assetsDir, assetsErr
}

// provision runs the repository's script hack/<script>, which provisions
// what (once, then cached under bin/), and returns the path it prints.
func provision(ctx context.Context, script, what string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "hack", script))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("provisioning %s with hack/%s: %w: %s", what, script, err, stderr.String())
	}
	path := strings.TrimSpace(stdout.String())
	if path == "" {
		return "", fmt.Errorf("provisioning %s with hack/%s: no path printed: %s", what, script, stderr.String())
	}
	return path, nil
}

// KwokBinary returns the path of the kwok controller, which
// hack/install-k8s-binaries.sh builds beside the Kubernetes binaries (its
// version pinned by the module hack/k8s), with kwokctl.
func KwokBinary(ctx context.Context) (string, error) {
	dir, err := Assets(ctx)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kwok")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("kwok is not in %s (run hack/install-k8s-binaries.sh): %w", dir, err)
	}
	return path, nil
}

// thirdPartyCRDs lists, per module, the CRD files a target cluster gets. The
// modules are those Picchu builds against; their versions come from go.mod.
var thirdPartyCRDs = []struct {
	module string // module whose version go.mod pins
	source string // module that holds the CRD files (same version)
	files  []string
}{
	{"istio.io/api", "istio.io/api", []string{"kubernetes/customresourcedefinitions.gen.yaml"}},
	{
		"github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring",
		"github.com/prometheus-operator/prometheus-operator",
		[]string{
			"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
			"example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
			"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
		},
	},
	{"github.com/kedacore/keda/v2", "github.com/kedacore/keda/v2", []string{
		"config/crd/bases/keda.sh_scaledobjects.yaml",
		"config/crd/bases/keda.sh_triggerauthentications.yaml",
		"config/crd/bases/keda.sh_clustertriggerauthentications.yaml",
	}},
	{"github.com/slok/sloth", "github.com/slok/sloth", []string{
		"pkg/kubernetes/gen/crd/sloth.slok.dev_prometheusservicelevels.yaml",
	}},
	{"sigs.k8s.io/gateway-api", "sigs.k8s.io/gateway-api", []string{
		"config/crd/standard/gateway.networking.k8s.io_gateways.yaml",
		"config/crd/standard/gateway.networking.k8s.io_httproutes.yaml",
		"config/crd/standard/gateway.networking.k8s.io_grpcroutes.yaml",
	}},
}

var (
	crdOnce  sync.Once
	crdPaths []string
	crdErr   error
)

// ThirdPartyCRDPaths returns the CRD files of Istio, prometheus-operator, KEDA,
// Sloth and the Gateway API, read from their Go modules at the versions go.mod pins (located,
// and downloaded when missing, with "go mod download -json").
func ThirdPartyCRDPaths(ctx context.Context) ([]string, error) {
	crdOnce.Do(func() {
		for _, m := range thirdPartyCRDs {
			version, err := goCommand(ctx, "list", "-m", "-f", "{{.Version}}", m.module)
			if err != nil {
				crdErr = err
				return
			}
			out, err := goCommand(ctx, "mod", "download", "-json", m.source+"@"+version)
			if err != nil {
				crdErr = err
				return
			}
			var info struct{ Dir, Error string }
			if err := json.Unmarshal([]byte(out), &info); err != nil {
				crdErr = fmt.Errorf("decoding go mod download output for %s: %w", m.source, err)
				return
			}
			if info.Error != "" || info.Dir == "" {
				crdErr = fmt.Errorf("downloading %s@%s: %s", m.source, version, info.Error)
				return
			}
			for _, f := range m.files {
				crdPaths = append(crdPaths, filepath.Join(info.Dir, filepath.FromSlash(f)))
			}
		}
	})
	return crdPaths, crdErr
}

// GatewayAPICRDPaths returns the CRD files of the Gateway API's channel
// ("standard" or "experimental") for the kinds Picchu writes (Gateway,
// HTTPRoute, GRPCRoute), from its module at the version go.mod pins. The
// test clusters get the standard channel (ThirdPartyCRDPaths); a test that
// checks the experimental one starts an API server of its own with them.
func GatewayAPICRDPaths(ctx context.Context, channel string) ([]string, error) {
	version, err := goCommand(ctx, "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/gateway-api")
	if err != nil {
		return nil, err
	}
	out, err := goCommand(ctx, "mod", "download", "-json", "sigs.k8s.io/gateway-api@"+version)
	if err != nil {
		return nil, err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return nil, fmt.Errorf("decoding go mod download output for sigs.k8s.io/gateway-api: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return nil, fmt.Errorf("downloading sigs.k8s.io/gateway-api@%s: %s", version, info.Error)
	}
	var paths []string
	for _, kind := range []string{"gateways", "httproutes", "grpcroutes"} {
		paths = append(paths, filepath.Join(info.Dir, "config", "crd", channel, "gateway.networking.k8s.io_"+kind+".yaml"))
	}
	return paths, nil
}

func goCommand(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = RepoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

var (
	chromiumOnce   sync.Once
	chromiumBinary string
	chromiumErr    error
)

// ChromiumBinary returns the path of a command that starts Chromium, for the
// browser tests, provisioned once per process by hack/install-chromium.sh
// (which unpacks Debian's package under bin/chromium, and reuses what an
// earlier run unpacked).
func ChromiumBinary(ctx context.Context) (string, error) {
	chromiumOnce.Do(func() {
		chromiumBinary, chromiumErr = provision(ctx, "install-chromium.sh", "Chromium")
	})
	return chromiumBinary, chromiumErr
}
