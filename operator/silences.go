package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/medium/picchu/alertmanager"
	"github.com/medium/picchu/controllers/silencer"
)

// setupSilences adds the controller that holds the Alertmanager silences
// of releases (Revisions' releaseSilences) to mgr, and registers its
// counter with the metrics the operator serves. Without
// o.AlertmanagerAddress it adds nothing.
func setupSilences(mgr ctrl.Manager, o Options) error {
	if o.AlertmanagerAddress == "" {
		return nil
	}
	am, err := alertmanager.New(alertmanager.Config{Address: o.AlertmanagerAddress})
	if err != nil {
		return fmt.Errorf("--alertmanager-address: %w", err)
	}
	if err := silencer.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the silence metrics: %w", err)
	}
	if err := (&silencer.Reconciler{
		Client:       mgr.GetClient(),
		Alertmanager: am,
		Shards:       o.Shards,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the silence controller: %w", err)
	}
	return nil
}
