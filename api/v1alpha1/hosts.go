package v1alpha1

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Of is the ingress named ingress: public or private (any other name is
// private, as ports' ingresses default).
func (in *ClusterIngresses) Of(ingress Ingress) *IngressInfo {
	if ingress == IngressPublic {
		return &in.Public
	}
	return &in.Private
}

// HostRefused says why a port's host may not be routed on this ingress, or
// nil when it may: a host is one of defaultDomains or allowedDomains or a
// name under one; a wildcard ("*.d") only under allowedDomains, since the
// default domains are shared by every team and a wildcard there would take
// every name of theirs no route claims yet.
func (info *IngressInfo) HostRefused(host string) error {
	host = normalDomain(host)
	name, wildcard := strings.CutPrefix(host, "*.")
	for _, d := range info.AllowedDomains {
		if under(name, d) {
			return nil
		}
	}
	for _, d := range info.DefaultDomains {
		if !under(name, d) {
			continue
		}
		if wildcard {
			return &HostNotAllowedError{Host: host, Reason: fmt.Sprintf(
				"is a wildcard under default domain %q, which every team shares: a wildcard must be under one of allowedDomains (%s)",
				d, listOrNone(info.AllowedDomains))}
		}
		return nil
	}
	return &HostNotAllowedError{Host: host, Reason: fmt.Sprintf("is under none of the ingress's domains (defaultDomains: %s; allowedDomains: %s)",
		listOrNone(info.DefaultDomains), listOrNone(info.AllowedDomains))}
}

// HostNotAllowedError is a port's host an ingress may not route, and why.
// +kubebuilder:object:generate=false
type HostNotAllowedError struct {
	Host, Reason string
}

func (e *HostNotAllowedError) Error() string { return fmt.Sprintf("host %q %s", e.Host, e.Reason) }

// under says name is domain or a name under it.
func under(name, domain string) bool {
	domain = normalDomain(domain)
	return domain != "" && (name == domain || strings.HasSuffix(name, "."+domain))
}

func normalDomain(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

func listOrNone(values []string) string {
	if len(values) == 0 {
		return "none"
	}
	return strings.Join(values, ", ")
}

// HostErrors are the errors, each under path ("spec.targets[i]") naming a
// port's host, of the hosts of t that an enabled cluster of clusters may
// not route on an ingress the port is exposed on there (one whose gateway
// the cluster sets): IngressInfo.HostRefused, with the first cluster that
// refuses the host and how many more do.
func (t *RevisionTarget) HostErrors(clusters []Cluster, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range t.Ports {
		p := &t.Ports[i]
		for k, host := range p.Hosts {
			var first error
			refusing := 0
			for c := range clusters {
				if err := clusters[c].hostRefused(p, host); err != nil {
					if first == nil {
						first = err
					}
					refusing++
				}
			}
			if first == nil {
				continue
			}
			msg := first.Error()
			if refusing > 1 {
				msg += fmt.Sprintf(" (and on %d more clusters of the fleet)", refusing-1)
			}
			errs = append(errs, field.Invalid(path.Child("ports").Index(i).Child("hosts").Index(k), host, msg))
		}
	}
	return errs
}

// hostRefused says why c may not route host of port p on an ingress p is
// exposed on, naming the cluster and the ingress; nil when it may, or c is
// disabled.
func (c *Cluster) hostRefused(p *PortInfo, host string) error {
	if !c.Spec.Enabled {
		return nil
	}
	for _, ingress := range Ingresses() {
		info := c.Spec.Ingresses.Of(ingress)
		if info.Gateway == "" || !p.ExposedOn(ingress) {
			continue
		}
		if err := info.HostRefused(host); err != nil {
			return fmt.Errorf("cluster %s, %s ingress: %w", c.Name, ingress, err)
		}
	}
	return nil
}
