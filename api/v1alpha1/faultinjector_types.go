package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FaultInjector adds Istio HTTP faults (delays and aborts) to an app's routes,
// for chaos testing. It applies to the app named by its label
// picchu.medium.engineering/app and, when its label
// picchu.medium.engineering/target is set, to that target only.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.metadata.labels.picchu\.medium\.engineering/app`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.metadata.labels.picchu\.medium\.engineering/target`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FaultInjector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec lists the faults per port. A FaultInjector without one injects
	// nothing (the original accepted it too).
	// +optional
	Spec FaultInjectorSpec `json:"spec"`
	// status reports where the faults were applied.
	// +optional
	Status FaultInjectorStatus `json:"status,omitempty"`
}

// FaultInjectorSpec lists faults per port.
type FaultInjectorSpec struct {
	// httpPortFaults are the faults, each on the routes of one port (or of
	// every port when portSelector is omitted).
	// +required
	// +kubebuilder:validation:MaxItems=64
	HTTPPortFaults []HTTPPortFault `json:"httpPortFaults"`
}

// HTTPPortFault is a fault on the routes of a port.
type HTTPPortFault struct {
	// portSelector selects the port by Service port number; omitted, the fault
	// applies to every port.
	// +optional
	PortSelector *PortSelector `json:"portSelector,omitempty"`
	// fault to inject.
	// +optional
	Fault *HTTPFaultInjection `json:"fault,omitempty"`
}

// FaultInjectorStatus reports where faults were applied.
type FaultInjectorStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// FaultInjectorList is a list of FaultInjectors.
type FaultInjectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FaultInjector `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FaultInjector{}, &FaultInjectorList{})
}
