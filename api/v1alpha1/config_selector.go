package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ConfigLabels parses the target's configSelector into a label selector:
// nil, selecting nothing, when it is unset or empty (an empty selector
// would otherwise select every ConfigMap and Secret of the namespace).
func (t *RevisionTarget) ConfigLabels() (labels.Selector, error) {
	if t.ConfigSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(t.ConfigSelector)
	if err != nil {
		return nil, fmt.Errorf("configSelector: %w", err)
	}
	if sel.Empty() {
		return nil, nil
	}
	return sel, nil
}
