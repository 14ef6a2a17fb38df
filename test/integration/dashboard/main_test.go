// Package dashboard_test drives `kubectl picchu dashboard` in a real headless
// Chromium while the operator, assembled as main assembles it, releases
// builds to two target API servers: the pages a person sees, their live
// updates, the actions they click, the rights they lack, and what a hostile
// string does (nothing). Chromium is Debian's, unpacked under bin/chromium by
// hack/install-chromium.sh. Each test writes screenshots of the pages it saw
// to its artifact directory (go test -artifacts), and, with
// -screenshots=DIR, to DIR (docs/images is where docs/dashboard.md shows
// them).
package dashboard_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var (
	env *harness.Env
	// adminConfig is a kubeconfig of the delivery cluster for a user in
	// system:masters, the dashboard's when a test does not say otherwise.
	adminConfig string
	// chromium is the command that starts the browser.
	chromium string

	screenshots = flag.String("screenshots", "", "a directory to write the pages' screenshots to, besides each test's artifacts (docs/images for the docs)")
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, setup)
}

func setup(s *harness.Suite) error {
	env = s.Env
	s.ServeReplicaSets()
	var err error
	if chromium, err = kit.ChromiumBinary(s.Ctx); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "picchu-dashboard-")
	if err != nil {
		return err
	}
	s.OnStop(func() error { return os.RemoveAll(dir) })
	if adminConfig, err = kubeconfigOf(dir, envtest.User{Name: "admin", Groups: []string{"system:masters"}}); err != nil {
		return err
	}
	// Its safety resync is 10 minutes, so only events and its own deadlines
	// move a release along.
	_, err = inprocess.Run(s, operator.Options{SyncPeriod: 10 * time.Minute, ClusterTimeout: 5 * time.Second})
	return err
}

// kubeconfigOf writes into dir a kubeconfig of the delivery cluster for
// user, a new user of its API server, and returns its path.
func kubeconfigOf(dir string, user envtest.User) (string, error) {
	added, err := env.Delivery.Env.AddUser(user, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", user.Name, err)
	}
	config, err := added.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("the kubeconfig of %s: %w", user.Name, err)
	}
	path := filepath.Join(dir, user.Name+".kubeconfig")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user.Name, err)
	}
	return path, nil
}
