package release_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/integration/harness"
)

// routeVersion is one version of an app's DestinationRule or
// VirtualService on a target, as its API server stored it.
type routeVersion struct {
	// revision is the object's resourceVersion: etcd's revision, one
	// counter for every object of the cluster, so versions of the two kinds
	// are ordered by it.
	revision int64
	rule     bool
	// subsets are the DestinationRule's subsets, or the subsets the
	// VirtualService's routes send to; none once the object is deleted.
	subsets []string
}

// subsetWatch records every version of an app's DestinationRule and
// VirtualService on every target, from when it starts.
type subsetWatch struct {
	mu       sync.Mutex
	versions map[string][]routeVersion
	errs     []error
	wg       sync.WaitGroup
}

// watchSubsets starts recording app's routing objects on every target
// until ctx ends.
func watchSubsets(ctx context.Context, t *testing.T, app string) *subsetWatch {
	t.Helper()
	sw := &subsetWatch{versions: map[string][]routeVersion{}}
	for _, target := range env.Targets {
		w, err := client.NewWithWatch(target.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range []client.ObjectList{&istionetworking.DestinationRuleList{}, &istionetworking.VirtualServiceList{}} {
			watch, err := w.Watch(ctx, list, client.InNamespace(app+"-production"), client.MatchingFields{"metadata.name": app})
			if err != nil {
				t.Fatalf("%s: watching %T: %v", target.Name, list, err)
			}
			t.Cleanup(watch.Stop)
			sw.wg.Add(1)
			go sw.record(ctx, target, watch)
		}
	}
	return sw
}

func (sw *subsetWatch) record(ctx context.Context, target *harness.Target, watch apiwatch.Interface) {
	defer sw.wg.Done()
	defer func() {
		if ctx.Err() == nil {
			sw.fail(fmt.Errorf("%s: the watch of the routes ended early: versions may be missing", target.Name))
		}
	}()
	for e := range watch.ResultChan() {
		if e.Type == apiwatch.Error {
			if ctx.Err() != nil {
				return // stopped
			}
			sw.fail(fmt.Errorf("%s: watching the routes: %v", target.Name, e.Object))
			return
		}
		obj, ok := e.Object.(client.Object)
		if !ok {
			continue
		}
		rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			sw.fail(fmt.Errorf("%s: resourceVersion %q: %w", target.Name, obj.GetResourceVersion(), err))
			return
		}
		v := routeVersion{revision: rv}
		switch o := obj.(type) {
		case *istionetworking.DestinationRule:
			v.rule = true
			for _, s := range o.Spec.Subsets {
				v.subsets = append(v.subsets, s.Name)
			}
		case *istionetworking.VirtualService:
			for _, route := range o.Spec.Http {
				for _, d := range route.Route {
					if d.Destination != nil && d.Destination.Subset != "" {
						v.subsets = append(v.subsets, d.Destination.Subset)
					}
				}
			}
		}
		if e.Type == apiwatch.Deleted {
			v.subsets = nil
		}
		sw.mu.Lock()
		sw.versions[target.Name] = append(sw.versions[target.Name], v)
		sw.mu.Unlock()
	}
}

func (sw *subsetWatch) fail(err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.errs = append(sw.errs, err)
}

// check stops watching (ctx's cancel must have been called) and reports
// every moment, on every target, a route sent to a subset its
// DestinationRule lacked: requests Istio would fail.
func (sw *subsetWatch) check(t *testing.T) {
	t.Helper()
	sw.wg.Wait()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, err := range sw.errs {
		t.Error(err)
	}
	for target, versions := range sw.versions {
		slices.SortFunc(versions, func(a, b routeVersion) int { return int(a.revision - b.revision) })
		var rule, routed []string
		for _, v := range versions {
			if v.rule {
				rule = v.subsets
			} else {
				routed = v.subsets
			}
			for _, s := range routed {
				if !slices.Contains(rule, s) {
					t.Errorf("%s at resourceVersion %d: the VirtualService routes to subset %s, which the DestinationRule lacks (it has %q)",
						target, v.revision, s, rule)
				}
			}
		}
		if len(versions) == 0 {
			t.Errorf("%s: no version of the routes seen", target)
		}
	}
}
