package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/medium/picchu/controllers/silencer"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
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
	// The instance ends the marker Picchu finds its silences by.
	if err := silence.CheckInstance(o.InstanceID); err != nil {
		return fmt.Errorf("--instance-id: %w", err)
	}
	if err := silencer.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the silence metrics: %w", err)
	}
	if err := (&silencer.Reconciler{
		Client:       mgr.GetClient(),
		Alertmanager: am,
		MaxLength:    o.MaxSilence,
		Instance:     o.InstanceID,
		ClusterLabel: clusterLabel(o),
		Shards:       o.Shards,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the silence controller: %w", err)
	}
	return nil
}
