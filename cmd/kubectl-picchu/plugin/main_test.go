package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
	"github.com/medium/picchu/test/kit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the commands' output")

// The package's API server, a client of it, and the kubeconfig the plugin
// reads, set by TestMain.
var (
	k8s client.Client
	// apiConfig reaches the API server as its administrator.
	apiConfig *rest.Config
	// testEnv is the API server's environment, which adds users.
	testEnv    *envtest.Environment
	kubeconfig string
	// now is the plugin's clock: ages of objects created during the run
	// read "30d" whatever the wall clock, and the statuses' times are
	// written relative to it.
	now = time.Now().UTC().Truncate(time.Second).Add(30*24*time.Hour + 12*time.Hour)
)

// TestMain starts a delivery API server with Picchu's CRDs. Without
// KUBEBUILDER_ASSETS, the binaries are provisioned as every other envtest
// suite of the repository does (kit.Assets).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	flag.Parse()
	ctx := context.Background()
	assets, err := kit.Assets(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "provisioning kube-apiserver and etcd:", err)
		return 1
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), picchuv1alpha1.AddToScheme(scheme)); err != nil {
		fmt.Fprintln(os.Stderr, "building the scheme:", err)
		return 1
	}
	env := &envtest.Environment{
		ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout,
		Scheme:                   scheme,
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(kit.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
	}
	cfg, err := env.Start()
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
			code = 1
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	apiConfig, testEnv = cfg, env
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "building a client:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kubectl-picchu-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "writing the kubeconfig:", err)
		return 1
	}
	return m.Run()
}

// result is what a run of the plugin printed and returned.
type result struct {
	out, errOut string
	err         error
}

// kubectlPicchu runs the plugin in-process against the test API server,
// with the test clock and the user the API server names.
func kubectlPicchu(t *testing.T, args ...string) result {
	t.Helper()
	return kubectlPicchuWith(t, plugin.Options{}, args...)
}

func kubectlPicchuWith(t *testing.T, o plugin.Options, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return runPlugin(ctx, o, args...)
}

func runPlugin(ctx context.Context, o plugin.Options, args ...string) result {
	var out, errOut bytes.Buffer
	o.IOStreams = genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	if o.Now == nil {
		o.Now = func() time.Time { return now }
	}
	cmd := plugin.NewRootCommandWithOptions(o)
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run the tests with -update to write it): %v", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run the tests with -update to rewrite it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// failingUser stands for an API server that refuses SelfSubjectReviews.
func failingUser(context.Context, *rest.Config) (string, error) {
	return "", errors.New("selfsubjectreviews.authentication.k8s.io is forbidden")
}
