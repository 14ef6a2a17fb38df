package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ScalingStrategy is how traffic grows during a release.
// +kubebuilder:validation:Enum=linear;geometric
type ScalingStrategy string

const (
	// ScalingStrategyLinear adds increment percent every delay.
	ScalingStrategyLinear ScalingStrategy = "linear"
	// ScalingStrategyGeometric starts at start percent and multiplies by factor every delay.
	ScalingStrategyGeometric ScalingStrategy = "geometric"
)

// Schedule says when a release may start: humane, inhumane or always.
// Any other string is accepted, with an admission warning, and behaves as
// always, as in the original.
type Schedule string

const (
	// ScheduleAlways releases at any time.
	ScheduleAlways Schedule = "always"
	// ScheduleInhumane releases on weekdays that are not holidays.
	ScheduleInhumane Schedule = "inhumane"
	// ScheduleHumane releases on weekdays that are not holidays during business
	// hours in America/Los_Angeles, with an earlier cut-off on Fridays and the
	// day before a holiday.
	ScheduleHumane Schedule = "humane"
)

// ReleaseInfo is the plan for moving traffic to a build.
type ReleaseInfo struct {
	// eligible lets the build be released. A build that is not eligible is
	// deployed (and can be tested through its tag route) but takes no traffic.
	// +optional
	Eligible bool `json:"eligible,omitempty"`
	// max is the highest percent of traffic the build may take. 0 and
	// anything above 100 (accepted with a warning) mean 100.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=0
	Max int32 `json:"max,omitempty"`
	// scalingStrategy is how traffic grows: linear or geometric.
	// +optional
	// +kubebuilder:default=geometric
	ScalingStrategy ScalingStrategy `json:"scalingStrategy,omitempty"`
	// geometricScaling sets the steps of the geometric strategy.
	// +optional
	// +kubebuilder:default={}
	GeometricScaling GeometricScaling `json:"geometricScaling,omitempty"`
	// linearScaling sets the steps of the linear strategy.
	// +optional
	// +kubebuilder:default={}
	LinearScaling LinearScaling `json:"linearScaling,omitempty"`
	// schedule says when a release may start: always, inhumane (weekdays that
	// are not holidays) or humane (weekday business hours in America/Los_Angeles).
	// Any other value behaves as always (with an admission warning), as in
	// the original; the kill switch --humane-releases-enabled=false lets
	// only "always" itself release.
	// +optional
	// +kubebuilder:default=inhumane
	Schedule Schedule `json:"schedule,omitempty"`
	// ttl is how long, in seconds after its creation, a build that was never
	// released is kept deployed before it retires, and how long a retired
	// build is kept before garbage collection. Five days by default; 0: it
	// never expires. A target keeps at most 20 builds that are done with
	// (retired, failed) whatever their ttl: older ones are collected.
	// +optional
	// +kubebuilder:default=432000
	// +kubebuilder:validation:Minimum=0
	TTL int64 `json:"ttl,omitempty"`
	// waves release the target cluster by cluster: an ordered list of
	// groups of the fleet's Clusters. The canary runs in the first wave
	// only; each next wave starts its ramp once the build is released in
	// the wave before and has stayed so, its alerts clear, for that wave's
	// bake. A build that fails in any wave is rolled back in every wave.
	// A Cluster goes in the first wave whose selector selects it, or in
	// the last wave when none does. Fewer than two waves: every cluster
	// moves together, as without waves.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Waves []ReleaseWave `json:"waves,omitempty"`
	// watch is how long a build stays judged once released: until it has
	// reached max in every wave, and for watch after it, its SLO alerts
	// and baseline comparisons fail it and roll it back, as before. 0 by
	// default: judged until released. The operator's --slo-proven-percent,
	// when set, stops judging a build earlier, at that peak, as the
	// original did.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s')",message="must be a non-negative duration such as 10s, 5m or 1h30m, no longer than 2562047h47m16.854775807s"
	Watch *metav1.Duration `json:"watch,omitempty"`
	// scaleDownDelay is how long a build that lost its last route keeps
	// its pods before they go (retired, rolled back, replaced by a
	// recommissioned build, or deleted): proxies apply a route change
	// seconds after it is written, and until they do they still send it
	// requests. The operator's --scale-down-delay (30s by default) when
	// unset; 0 removes the pods in the run after the route.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s')",message="must be a non-negative duration such as 10s, 5m or 1h30m, no longer than 2562047h47m16.854775807s"
	ScaleDownDelay *metav1.Duration `json:"scaleDownDelay,omitempty"`
	// rollback is how a failed build's traffic goes back to the build
	// before it: paced (the default) steps it back at the ramp of the
	// build taking it, as the original did; immediate takes it all back
	// in one step on every cluster, as Argo Rollouts' abort does.
	// +optional
	Rollback RollbackMode `json:"rollback,omitempty"`
}

// RollbackMode is how a failed build's traffic goes back: paced or immediate.
// +kubebuilder:validation:Enum=paced;immediate
type RollbackMode string

const (
	// RollbackPaced steps a failed build's traffic back at the pace of the
	// ramp of the build that takes it back.
	RollbackPaced RollbackMode = "paced"
	// RollbackImmediate takes a failed build's traffic back in one step on
	// every cluster.
	RollbackImmediate RollbackMode = "immediate"
)

// ReleaseWave is one group of Clusters of a release that goes wave by wave.
type ReleaseWave struct {
	// name of the wave, shown in status; wave-<n> (from 1) when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`
	// selector selects, by their labels, the Clusters of the fleet that
	// release in this wave. An empty selector selects every Cluster not
	// taken by an earlier wave.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`
	// bake is how long the build must stay released in this wave, its
	// alerts clear, before the next wave starts. 0 by default.
	// +optional
	Bake *metav1.Duration `json:"bake,omitempty"`
}

// GeometricScaling starts a release at start percent and multiplies the
// traffic by factor every delay.
type GeometricScaling struct {
	// start is the first percent of traffic. 0 means the default, 10, as in
	// the original; above release.max (accepted with a warning) the first
	// step goes to release.max.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	Start int32 `json:"start,omitempty"`
	// factor multiplies the traffic at each step; it must be greater than 1
	// (a factor of 1 or less never ramps). 0 means the default, 2, as in the
	// original.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:XValidation:rule="self == 0 || self > 1",message="must be greater than 1 (or 0 for the default, 2): traffic is multiplied by factor at each step, and a factor of 1 or less never ramps"
	Factor int32 `json:"factor,omitempty"`
	// delay between steps, as a duration such as 10s or 5m.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s')",message="must be a non-negative duration such as 10s, 5m or 1h30m, no longer than 2562047h47m16.854775807s"
	Delay *metav1.Duration `json:"delay,omitempty"`
}

// LinearScaling adds increment percent of traffic every delay.
type LinearScaling struct {
	// increment is the percent of traffic added at each step. 0 means the
	// default, 5, as in the original; above 100 (accepted with a warning) a
	// step goes to release.max.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	Increment int32 `json:"increment,omitempty"`
	// delay between steps, as a duration such as 10s or 5m.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s')",message="must be a non-negative duration such as 10s, 5m or 1h30m, no longer than 2562047h47m16.854775807s"
	Delay *metav1.Duration `json:"delay,omitempty"`
}
