// Package shard splits the apps of one delivery cluster between replicas of
// the operator. Each app belongs to one of N shards by a stable hash of its
// namespace and name (Of); each shard is held by one replica at a time
// through its own Lease (coordination.k8s.io/v1), which the Coordinator
// acquires, renews and releases; controllers ask the Set before they work
// on an app (Begin) and so never act on an app of a shard they do not hold,
// and run that work with the context Begin returns, which ends as soon as
// the shard is no longer held, so that a run in progress sends no write
// once another replica may hold the shard.
//
// Which replica takes which shard is decided by Decide, a pure function of
// what the replica observed: every live replica aims at its fair share
// (ceil(N / replicas)), gives back shards above it and takes free or
// expired ones below it, each replica preferring different shards
// (rendezvous hashing) so that they rarely contend for the same one.
package shard

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Of returns the shard of key among n shards (0 when n < 2): FNV-1a of the
// key, the same in every process and every version of Picchu.
func Of(key string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// AppKey is the key an app is sharded by: its namespace and name, so every
// object of an app (its Revisions, its ReleaseManagers in every target) is
// in the same shard.
func AppKey(namespace, app string) string { return namespace + "/" + app }

// ClusterKey is the key a Cluster is sharded by: the replica holding its
// shard writes its status.
func ClusterKey(namespace, name string) string { return "cluster:" + namespace + "/" + name }

// View is what one replica knows when it decides: the shards it holds
// (renewed in time), the shards nobody holds (never held, released, or
// whose holder stopped renewing for a lease duration), and the number of
// live replicas, itself included.
type View struct {
	Me     string
	Shards int
	Live   int
	Held   []int
	Free   []int
	// Mixed is set when a live replica runs with another number of
	// shards: its shards overlap ours, so nothing new is taken until it
	// is gone.
	Mixed bool
}

// Plan is what a replica does next: shards to take and shards to give back.
type Plan struct {
	Acquire []int
	Release []int
}

// FairShare is the most shards a replica holds when live replicas share n.
func FairShare(n, live int) int {
	if live < 1 {
		live = 1
	}
	return (n + live - 1) / live
}

// Decide returns the plan of a replica from its view: below its fair share
// it takes free shards, those it prefers first; above it, it gives back the
// ones it prefers least.
func Decide(v View) Plan {
	fair := FairShare(v.Shards, v.Live)
	var p Plan
	switch {
	case len(v.Held) > fair:
		held := byPreference(v.Me, v.Held)
		p.Release = held[fair:]
		slices.Sort(p.Release)
	case len(v.Held) < fair && !v.Mixed:
		free := byPreference(v.Me, v.Free)
		p.Acquire = free[:min(len(free), fair-len(v.Held))]
		slices.Sort(p.Acquire)
	}
	return p
}

// byPreference orders shards by me's rendezvous score, highest first.
func byPreference(me string, shards []int) []int {
	out := slices.Clone(shards)
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Or(cmp.Compare(score(me, b), score(me, a)), cmp.Compare(a, b))
	})
	return out
}

// score is the rendezvous weight of a shard for a replica.
func score(me string, shard int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(me))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(strconv.Itoa(shard)))
	return h.Sum64()
}
