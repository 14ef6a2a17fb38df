package v1alpha1

import (
	"slices"
	"strings"
)

// DefaultPortName is the port chosen as an ingress's default port when the
// ingress has several ports and none is flagged default.
const DefaultPortName = "http"

// DefaultIngresses returns the ingresses a port is exposed on: its explicit
// ingresses, or those its mode implies (private: [private]; public:
// [private, public]; local: none). A port with no mode is private, as the
// schema defaults it.
func (p *PortInfo) DefaultIngresses() []Ingress {
	if len(p.Ingresses) > 0 {
		return p.Ingresses
	}
	switch p.Mode {
	case PortModePublic:
		return []Ingress{IngressPrivate, IngressPublic}
	case PortModeLocal:
		return nil
	default:
		return []Ingress{IngressPrivate}
	}
}

// ExposedOn reports whether the port is exposed on the ingress.
func (p *PortInfo) ExposedOn(ingress Ingress) bool {
	return slices.Contains(p.DefaultIngresses(), ingress)
}

// DefaultIngressPort chooses the default port of an ingress among the
// target's ports: the one named in defaultIngressPorts; else the only port on
// that ingress; else the one flagged default; else the one named "http"
// (also when several are flagged, as in the original). It returns "" when
// there is no single choice.
func (t *RevisionTarget) DefaultIngressPort(ingress Ingress) string {
	if name, ok := t.DefaultIngressPorts[string(ingress)]; ok {
		return name
	}
	var exposed, flagged []string
	hasHTTP := false
	for i := range t.Ports {
		p := &t.Ports[i]
		if !p.ExposedOn(ingress) {
			continue
		}
		exposed = append(exposed, p.Name)
		if p.Default {
			flagged = append(flagged, p.Name)
		}
		if p.Name == DefaultPortName {
			hasHTTP = true
		}
	}
	switch {
	case len(exposed) == 1:
		return exposed[0]
	case len(flagged) == 1:
		return flagged[0]
	case hasHTTP:
		// No flag, or several (which the original let "http" settle).
		return DefaultPortName
	default:
		return ""
	}
}

// The port numbers an explicit 0 stands for, as in the original, which
// read 0 as unset.
const (
	defaultPortNumber        = 80
	defaultIngressPortNumber = 443
)

// DefaultRouting fills what the schema cannot default because it depends on
// other fields or is an explicit 0: each port's numbers (0 reads as unset, as
// in the original: port and containerPort 80, ingressPort 443), its
// ingresses (from its mode) and, per ingress that has ports, its default
// port. Entries already set are kept. It is
// idempotent; the mutating webhook runs it on admission and the controllers
// run it again on what they read, so routing is right even when the webhook
// did not run.
func (t *RevisionTarget) DefaultRouting() {
	for i := range t.Ports {
		p := &t.Ports[i]
		if p.Mode == "" {
			p.Mode = PortModePrivate
		}
		if p.Port == 0 {
			p.Port = defaultPortNumber
		}
		if p.ContainerPort == 0 {
			p.ContainerPort = defaultPortNumber
		}
		if p.IngressPort == 0 {
			p.IngressPort = defaultIngressPortNumber
		}
		if len(p.Ingresses) == 0 {
			p.Ingresses = p.DefaultIngresses()
		}
	}
	for _, ingress := range Ingresses() {
		if _, ok := t.DefaultIngressPorts[string(ingress)]; ok {
			continue
		}
		if name := t.DefaultIngressPort(ingress); name != "" {
			if t.DefaultIngressPorts == nil {
				t.DefaultIngressPorts = map[string]string{}
			}
			t.DefaultIngressPorts[string(ingress)] = name
		}
	}
}

// DefaultRouting runs RevisionTarget.DefaultRouting on every target.
func (r *Revision) DefaultRouting() {
	for i := range r.Spec.Targets {
		r.Spec.Targets[i].DefaultRouting()
	}
}

// DefaultScale sets each target's unset scale.default to its scale.min, or
// to 1 without a min. (The original defaulted it to 1 even with a min, and
// builds with min 16 ramped with 1 to 4 pods.)
func (r *Revision) DefaultScale() {
	for i := range r.Spec.Targets {
		s := &r.Spec.Targets[i].Scale
		if s.Default != 0 {
			continue
		}
		s.Default = 1
		if s.Min != nil && *s.Min > 0 {
			s.Default = *s.Min
		}
	}
}

// DefaultLabels sets the labels Picchu keeps on a Revision (KeptLabels),
// so that it carries them from its creation: Picchu finds Revisions by
// spec.app.name, the labels are for people and tools selecting them, and
// a Revision admitted with them costs the Revision controller no write.
func (r *Revision) DefaultLabels() {
	if r.Spec.App.Name == "" {
		return
	}
	r.Labels = r.KeptLabels()
}

// KeptLabels are the Revision's labels as Picchu keeps them: the user's,
// plus the app label (spec.app.name) and "fleet.picchu.medium.engineering/<fleet>"
// for each target's fleet, without fleet labels of fleets not targeted.
func (r *Revision) KeptLabels() map[string]string {
	out := make(map[string]string, len(r.Labels)+1+len(r.Spec.Targets))
	for k, v := range r.Labels {
		if !strings.HasPrefix(k, LabelFleetPrefix) {
			out[k] = v
		}
	}
	out[LabelApp] = r.Spec.App.Name
	for _, t := range r.Spec.Targets {
		out[LabelFleetPrefix+t.Fleet] = ""
	}
	return out
}
