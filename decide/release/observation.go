package release

// Replicas are a build's ReplicaSet counts on one cluster.
type Replicas struct {
	// Desired is spec.replicas.
	Desired int32
	// Available is status.availableReplicas.
	Available int32
}

// ClusterObservation is what one cluster of the fleet shows.
type ClusterObservation struct {
	// Name of the Cluster.
	Name string
	// Live clusters count for readiness and replica division; hot standby
	// clusters get every object but are not counted.
	Live bool
	// Observed says the cluster's ReplicaSets could be read; when false,
	// Tags is empty and says nothing.
	Observed bool
	// Tags maps each build's tag to its ReplicaSet counts.
	Tags map[string]Replicas
}

// Observation is what the whole fleet shows, one entry per enabled cluster.
type Observation []ClusterObservation

// LiveClusters counts the live clusters, observed or not.
func (o Observation) LiveClusters() int {
	n := 0
	for _, c := range o {
		if c.Live {
			n++
		}
	}
	return n
}

// Deployment says whether tag is deployed: on every live cluster a
// ReplicaSet with at least one available replica, and as many available as
// desired summed over the live clusters. It is Unknown when a live cluster
// was not observed or the fleet has no live cluster.
func (o Observation) Deployment(tag string) Deployment {
	if o.LiveClusters() == 0 {
		return Unknown
	}
	var desired, available int32
	deployed := true
	for _, c := range o {
		if !c.Live {
			continue
		}
		if !c.Observed {
			return Unknown
		}
		r, ok := c.Tags[tag]
		if !ok || r.Available < 1 {
			deployed = false
		}
		desired += r.Desired
		available += r.Available
	}
	if deployed && available >= desired {
		return IsDeployed
	}
	return NotDeployed
}

// Live sums tag's counts over the live, observed clusters.
func (o Observation) Live(tag string) Replicas {
	var sum Replicas
	for _, c := range o {
		if c.Live && c.Observed {
			r := c.Tags[tag]
			sum.Desired += r.Desired
			sum.Available += r.Available
		}
	}
	return sum
}

// Excluding is the fleet as a build sees it that runs no pod on the named
// clusters (an event-driven build on the clusters that disable such
// builds): they are not live for it, as hot standby clusters are not, so
// they count neither for the division of its replicas nor for its
// readiness (Deployment) nor for the pods the capacity gate waits for. The
// observation itself is not modified.
func (o Observation) Excluding(clusters map[string]bool) Observation {
	if len(clusters) == 0 {
		return o
	}
	out := make(Observation, len(o))
	for i, c := range o {
		out[i] = c
		if clusters[c.Name] {
			out[i].Live = false
		}
	}
	return out
}
