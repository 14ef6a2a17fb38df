// Package thirdparty_test releases apps whose objects on the fleet are of
// third-party kinds, on real API servers with those kinds' real CRDs:
// External Secrets Operator's ExternalSecret (on the delivery cluster and
// target-0 only), KEDA's ScaledObject and TriggerAuthentication (every
// target), and the Datadog Operator's DatadogMetric (target-0 only).
// target-1 disables event-driven builds. Each test checks what lands where,
// and that it goes when no longer wanted.
package thirdparty_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

// clusterPrometheus is the cluster Prometheus the operator is told of.
const clusterPrometheus = "http://prometheus.monitoring.svc:9090"

// crdModules are the CRDs of kinds Picchu writes unstructured, from the
// modules (at the versions the original was released against) that ship
// them: Picchu does not build against either.
var crdModules = []struct {
	module, version, file string
}{
	{"github.com/external-secrets/external-secrets", "v1.3.2", "config/crds/bases/external-secrets.io_externalsecrets.yaml"},
	{"github.com/DataDog/datadog-operator", "v1.29.0", "config/crd/bases/v1/datadoghq.com_datadogmetrics.yaml"},
}

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, setup)
}

func setup(s *harness.Suite) error {
	ctx := s.Ctx
	env = s.Env
	paths, err := moduleCRDs(ctx)
	if err != nil {
		return err
	}
	externalSecrets, datadogMetrics := paths[0], paths[1]
	// The operator asks the delivery cluster once, at start, whether it
	// serves ExternalSecrets.
	for _, install := range []struct {
		server *harness.Server
		paths  []string
	}{
		{env.Delivery, []string{externalSecrets}},
		{&env.Targets[0].Server, []string{externalSecrets, datadogMetrics}},
	} {
		if _, err := envtest.InstallCRDs(install.server.Config, envtest.CRDInstallOptions{
			Paths: install.paths, ErrorIfPathMissing: true, Scheme: env.Scheme,
		}); err != nil {
			return fmt.Errorf("installing %v: %w", install.paths, err)
		}
	}
	cl := env.Targets[1].Cluster.DeepCopy()
	if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
		cl.Spec.DisableEventDriven = true
	}); err != nil {
		return fmt.Errorf("disabling event-driven builds on %s: %w", cl.Name, err)
	}
	s.ServeReplicaSets()
	// A slow safety resync: what a test sees sooner came from a watch.
	_, err = inprocess.Run(s, operator.Options{
		SyncPeriod: time.Minute, ClusterTimeout: 5 * time.Second, ClusterPrometheusAddress: clusterPrometheus,
	})
	return err
}

// moduleCRDs are the paths of crdModules' files, downloaded with the Go
// command from the module proxy (cached after the first time).
func moduleCRDs(ctx context.Context) ([]string, error) {
	var out []string
	for _, m := range crdModules {
		cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", m.module+"@"+m.version)
		// Outside the repository's module: these are not its dependencies.
		cmd.Dir = os.TempDir()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var info struct{ Dir, Error string }
		if jsonErr := json.Unmarshal(stdout.Bytes(), &info); jsonErr != nil && err == nil {
			err = jsonErr
		}
		if err != nil || info.Error != "" || info.Dir == "" {
			return nil, fmt.Errorf("downloading %s@%s: %v %s %s", m.module, m.version, err, info.Error, stderr.String())
		}
		path := filepath.Join(info.Dir, filepath.FromSlash(m.file))
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("CRD of %s@%s: %w", m.module, m.version, err)
		}
		out = append(out, path)
	}
	return out, nil
}

// int32p is a pointer to n.
func int32p(n int32) *int32 { return ptr.To(n) }
