package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePod checks the fields Picchu copies into the app container and
// the pod of every build's ReplicaSet (env, resources, probes, pod
// annotations), and the app's PodDisruptionBudget, by the rules the target clusters' API servers apply to
// them (Kubernetes 1.36, pkg/apis/core/validation), so that a build no
// cluster would accept is rejected at admission, naming the field. Their
// schemas are Kubernetes' own types, whose maps and lists the CRD's CEL
// rules cannot check at a bounded cost, hence the webhook.
func (t *RevisionTarget) validatePod(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateEnv(t.Env, path.Child("env"))...)
	errs = append(errs, validateResources(&t.Resources, path.Child("resources"))...)
	errs = append(errs, validateProbe(t.LivenessProbe, path.Child("livenessProbe"), true)...)
	errs = append(errs, validateProbe(t.ReadinessProbe, path.Child("readinessProbe"), false)...)
	errs = append(errs, apivalidation.ValidateAnnotations(t.PodAnnotations, path.Child("podAnnotations"))...)
	errs = append(errs, validatePodDisruptionBudget(t.PodDisruptionBudget, path.Child("podDisruptionBudget"))...)
	return errs
}

var unhealthyPodEvictionPolicies = sets.New(policyv1.IfHealthyBudget, policyv1.AlwaysAllow)

// validatePodDisruptionBudget checks the budget as Kubernetes checks a
// PodDisruptionBudget's spec; Picchu sets its selector. (The schema has
// the rule that only one of maxUnavailable and minAvailable is set.)
func validatePodDisruptionBudget(spec *policyv1.PodDisruptionBudgetSpec, path *field.Path) field.ErrorList {
	if spec == nil {
		return nil
	}
	var errs field.ErrorList
	for _, b := range []struct {
		name  string
		value *intstr.IntOrString
	}{{"minAvailable", spec.MinAvailable}, {"maxUnavailable", spec.MaxUnavailable}} {
		if b.value != nil {
			errs = append(errs, podBudget(*b.value, path.Child(b.name))...)
		}
	}
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && !unhealthyPodEvictionPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(path.Child("unhealthyPodEvictionPolicy"), *p, sets.List(unhealthyPodEvictionPolicies)))
	}
	return errs
}

// podBudget checks a number of pods (at least 0) or a percent (0% to 100%).
func podBudget(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(path, v.IntVal, "must be greater than or equal to 0")}
		}
		return nil
	}
	if msgs := validation.IsValidPercent(v.StrVal); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, v.StrVal, strings.Join(msgs, "; "))}
	}
	// As Kubernetes reads it: a percent too large for an int is the largest int.
	if percent, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%")); percent > 100 {
		return field.ErrorList{field.Invalid(path, v.StrVal, "must not be greater than 100%")}
	}
	return nil
}

// envFieldPaths are the pod fields an env var may read (fieldRef).
var envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// envResourceFields are the container resources an env var may read
// (resourceFieldRef), besides requests.hugepages-* and limits.hugepages-*.
var envResourceFields = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage")

// Divisors a resourceFieldRef may have, by resource.
var (
	cpuDivisors  = sets.New("1m", "1")
	sizeDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range env {
		e, p := &env[i], path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		for _, msg := range relaxedEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
		}
		if e.ValueFrom != nil {
			errs = append(errs, validateEnvSource(e, p.Child("valueFrom"))...)
		}
	}
	return errs
}

func relaxedEnvVarName(name string) []string {
	if name == "" {
		return nil
	}
	return validation.IsRelaxedEnvVarName(name)
}

func validateEnvSource(e *corev1.EnvVar, path *field.Path) field.ErrorList {
	from := e.ValueFrom
	var errs field.ErrorList
	sources := 0
	if f := from.FieldRef; f != nil {
		sources++
		errs = append(errs, validateEnvFieldRef(f, path.Child("fieldRef"))...)
	}
	if r := from.ResourceFieldRef; r != nil {
		sources++
		errs = append(errs, validateEnvResourceRef(r, path.Child("resourceFieldRef"))...)
	}
	if c := from.ConfigMapKeyRef; c != nil {
		sources++
		errs = append(errs, validateKeyRef(c.Name, c.Key, path.Child("configMapKeyRef"))...)
	}
	if s := from.SecretKeyRef; s != nil {
		sources++
		errs = append(errs, validateKeyRef(s.Name, s.Key, path.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		sources++
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateEnvFieldRef(f *corev1.ObjectFieldSelector, path *field.Path) field.ErrorList {
	if f.APIVersion != "" && f.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(path.Child("apiVersion"), f.APIVersion, "must be v1")}
	}
	if f.FieldPath == "" {
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	if object, key, ok := subscripted(f.FieldPath); ok {
		switch object {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), path)
		case "metadata.labels":
			return qualifiedName(key, path)
		}
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), f.FieldPath, "only metadata.annotations and metadata.labels take a subscript")}
	}
	fieldPath := f.FieldPath
	if fieldPath == "spec.host" {
		fieldPath = "spec.nodeName" // as Kubernetes converts it
	}
	if !envFieldPaths.Has(fieldPath) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), f.FieldPath, sets.List(envFieldPaths))}
	}
	return nil
}

// subscripted splits "metadata.labels['key']" into its object and key.
func subscripted(fieldPath string) (object, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	object, key, found = strings.Cut(s, "['")
	return object, key, found && object != ""
}

func qualifiedName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateEnvResourceRef(r *corev1.ResourceFieldSelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hugePages := strings.HasPrefix(r.Resource, "requests.hugepages-") || strings.HasPrefix(r.Resource, "limits.hugepages-")
	switch {
	case r.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case !envResourceFields.Has(r.Resource) && !hugePages:
		errs = append(errs, field.NotSupported(path.Child("resource"), r.Resource, sets.List(envResourceFields)))
	}
	if r.Divisor.Cmp(resource.Quantity{}) == 0 {
		return errs
	}
	divisors := sizeDivisors
	if strings.HasSuffix(r.Resource, ".cpu") {
		divisors = cpuDivisors
	} else if !hugePages && !strings.HasSuffix(r.Resource, ".memory") && !strings.HasSuffix(r.Resource, ".ephemeral-storage") {
		return errs
	}
	if !divisors.Has(r.Divisor.String()) {
		errs = append(errs, field.Invalid(path.Child("divisor"), r.Divisor.String(),
			fmt.Sprintf("must be one of %s for %s", strings.Join(sets.List(divisors), ", "), r.Resource)))
	}
	return errs
}

func validateKeyRef(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path.Child("name"), name, msg))
	}
	if key == "" {
		return append(errs, field.Required(path.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Child("key"), key, msg))
	}
	return errs
}

// containerResources are the unprefixed resources a container may ask
// for, besides hugepages-<size>.
var containerResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)

func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limitsPath, requestsPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	check := func(name corev1.ResourceName, q resource.Quantity, p *field.Path) {
		errs = append(errs, validateResourceName(name, p)...)
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
		if extendedResource(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be an integer"))
		}
		if isHugePages(name) {
			hugePages = true
			if !hugePagesDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not a positive integer multiple of %s's page size", q.String(), name)))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for name, q := range r.Limits {
		check(name, q, limitsPath.Key(string(name)))
	}
	for name, q := range r.Requests {
		check(name, q, requestsPath.Key(string(name)))
		limit, limited := r.Limits[name]
		switch {
		case limited && q.Cmp(limit) != 0 && !overcommitAllowed(name):
			errs = append(errs, field.Invalid(requestsPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case limited && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(requestsPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !limited && !overcommitAllowed(name):
			errs = append(errs, field.Required(limitsPath, fmt.Sprintf("%s has a request, so it needs a limit (it cannot be overcommitted)", name)))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	if len(r.Claims) > 0 {
		errs = append(errs, field.Forbidden(path.Child("claims"), "Picchu's pods have no resourceClaims to refer to"))
	}
	return errs
}

// validateResourceName checks a container's resource name: cpu, memory,
// ephemeral-storage, hugepages-<size>, or a qualified extended resource.
func validateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := content.IsQualifiedName(string(name)); len(msgs) > 0 {
		var errs field.ErrorList
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(path, name, msg))
		}
		return errs
	}
	switch {
	case !strings.Contains(string(name), "/"):
		if !containerResources.Has(name) && !isHugePages(name) {
			return field.ErrorList{field.Invalid(path, name, "must be a standard resource for containers: cpu, memory, ephemeral-storage or hugepages-<size>")}
		}
	case !nativeResource(name) && !extendedResource(name):
		return field.ErrorList{field.Invalid(path, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// nativeResource: unprefixed, or in the kubernetes.io/ namespace.
func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// extendedResource: a device or other resource outside kubernetes.io/.
func extendedResource(name corev1.ResourceName) bool {
	if nativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(content.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func overcommitAllowed(name corev1.ResourceName) bool {
	return nativeResource(name) && !isHugePages(name)
}

func hugePagesDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

var httpSchemes = sets.New(corev1.URISchemeHTTP, corev1.URISchemeHTTPS)

// validateProbe checks a probe as Kubernetes does once it has defaulted it.
func validateProbe(p *corev1.Probe, path *field.Path, liveness bool) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbeHandler(p, path)
	return append(errs, validateProbeTimings(p, path, liveness)...)
}

// probeHandler is one of a probe's handler types: whether the probe sets
// it, its field and how it is checked.
type probeHandler struct {
	set   bool
	name  string
	check func(*field.Path) field.ErrorList
}

// validateProbeHandler checks that p has exactly one handler, and that
// handler.
func validateProbeHandler(p *corev1.Probe, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	handlers := 0
	for _, h := range []probeHandler{
		{p.Exec != nil, "exec", func(path *field.Path) field.ErrorList { return validateExecAction(p.Exec, path) }},
		{p.HTTPGet != nil, "httpGet", func(path *field.Path) field.ErrorList { return validateHTTPGetAction(p.HTTPGet, path) }},
		{p.TCPSocket != nil, "tcpSocket", func(path *field.Path) field.ErrorList {
			return portNumOrName(p.TCPSocket.Port, path.Child("port"))
		}},
		{p.GRPC != nil, "grpc", func(path *field.Path) field.ErrorList {
			return portNumOrName(intstr.FromInt32(p.GRPC.Port), path.Child("port"))
		}},
	} {
		if !h.set {
			continue
		}
		if handlers++; handlers > 1 {
			errs = append(errs, field.Forbidden(path.Child(h.name), "may not specify more than 1 handler type"))
			continue
		}
		errs = append(errs, h.check(path.Child(h.name))...)
	}
	if handlers == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type: exec, httpGet, tcpSocket or grpc"))
	}
	return errs
}

// validateExecAction checks that a probe's exec runs a command.
func validateExecAction(a *corev1.ExecAction, path *field.Path) field.ErrorList {
	if len(a.Command) == 0 {
		return field.ErrorList{field.Required(path.Child("command"), "")}
	}
	return nil
}

// validateHTTPGetAction checks a probe's httpGet: its port, scheme and
// header names.
func validateHTTPGetAction(a *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	errs := portNumOrName(a.Port, path.Child("port"))
	if s := a.Scheme; s != "" && !httpSchemes.Has(s) {
		errs = append(errs, field.NotSupported(path.Child("scheme"), s, sets.List(httpSchemes)))
	}
	for i, h := range a.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(h.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return errs
}

// validateProbeTimings checks p's delays, thresholds and grace period: a
// liveness probe succeeds once, and only it may set a grace period.
func validateProbeTimings(p *corev1.Probe, path *field.Path, liveness bool) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold},
	} {
		if f.value < 0 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, "must be greater than or equal to 0"))
		}
	}
	if liveness && p.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if tgps := p.TerminationGracePeriodSeconds; tgps != nil {
		switch {
		case !liveness:
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *tgps, "must not be set for readinessProbes"))
		case *tgps <= 0:
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *tgps, "must be greater than 0"))
		}
	}
	return errs
}

func portNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(path, port.StrVal, msg))
	}
	return errs
}
