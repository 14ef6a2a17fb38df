package applier_test

import (
	"maps"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
)

// labelKeys are the keys random label sets are drawn from: Picchu's owner
// and marker labels, and one of someone else's.
var labelKeys = []string{
	picchuv1alpha1.LabelApp, picchuv1alpha1.LabelTarget, picchuv1alpha1.LabelInstance,
	picchuv1alpha1.LabelDeliveryNamespace, "team",
}

// labelValues are the values they take: few, so that sets agree often.
var labelValues = []string{"", "a", "b"}

// labelsFrom draws a label set from bits: for each key, whether it is set
// and which value it has.
func labelsFrom(bits uint16) map[string]string {
	out := map[string]string{}
	for _, k := range labelKeys {
		if bits&1 == 1 {
			out[k] = labelValues[int(bits>>1)%len(labelValues)]
		}
		bits >>= 3
	}
	return out
}

// owned is the rule, stated apart from Owner.Owns: an object is the
// owner's for want when someone labelled it with an app, the app and target
// want names (if any) are its own, and no marker label on it names another
// owner.
func owned(o applier.Owner, want, live map[string]string) bool {
	if live[picchuv1alpha1.LabelApp] == "" {
		return false
	}
	for _, k := range []string{picchuv1alpha1.LabelApp, picchuv1alpha1.LabelTarget} {
		w, wanted := want[k]
		if wanted && live[k] != w {
			return false
		}
	}
	if v, ok := live[picchuv1alpha1.LabelInstance]; ok && v != o.Instance {
		return false
	}
	if v, ok := live[picchuv1alpha1.LabelDeliveryNamespace]; ok && v != o.Namespace {
		return false
	}
	return true
}

// FuzzOwner_Owns drives the ownership decision with random owners and
// label sets: it never gives Picchu an object without an app label,
// another app's or target's, or one another Picchu or delivery namespace
// marked; and it always gives Picchu back what it wrote itself.
func FuzzOwner_Owns(f *testing.F) {
	f.Add(uint8(0), uint16(0), uint16(0))
	f.Add(uint8(5), uint16(0b001_001_000_011_011), uint16(0b001_001_000_011_011))
	f.Add(uint8(1), uint16(0b011_011), uint16(0))
	f.Fuzz(func(t *testing.T, ownerBits uint8, wantBits, liveBits uint16) {
		o := applier.Owner{
			Instance:  labelValues[int(ownerBits)%len(labelValues)],
			Namespace: labelValues[int(ownerBits>>2)%len(labelValues)],
		}
		want, live := labelsFrom(wantBits), labelsFrom(liveBits)
		if got, rule := o.Owns(want, live), owned(o, want, live); got != rule {
			t.Fatalf("owner %+v: Owns(want %v, live %v) = %v, want %v", o, want, live, got, rule)
		}
		// What Picchu writes for an app is its own again.
		if want[picchuv1alpha1.LabelApp] != "" {
			written := maps.Clone(want)
			maps.Copy(written, o.Labels())
			if !o.Owns(want, written) {
				t.Fatalf("owner %+v does not own what it wrote: %v", o, written)
			}
			// ...and no other owner's.
			other := applier.Owner{Instance: o.Instance, Namespace: o.Namespace + "x"}
			if other.Owns(want, written) {
				t.Fatalf("owner %+v owns what %+v wrote: %v", other, o, written)
			}
		}
	})
}

// TestOwner_Owns is the rule's table.
func TestOwner_Owns(t *testing.T) {
	o := applier.Owner{Instance: "i1", Namespace: "picchu"}
	app := map[string]string{picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production"}
	with := func(extra map[string]string) map[string]string {
		out := maps.Clone(app)
		maps.Copy(out, extra)
		return out
	}
	for _, tc := range []struct {
		name       string
		want, live map[string]string
		owns       bool
	}{
		{"someone else's namespace", app, map[string]string{"team": "platform"}, false},
		{"no labels at all", app, nil, false},
		{"another app", app, map[string]string{picchuv1alpha1.LabelApp: "cart", picchuv1alpha1.LabelTarget: "production"}, false},
		{"another target", app, map[string]string{picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "staging"}, false},
		{"written before marks: adopted", app, app, true},
		{"ours", app, with(o.Labels()), true},
		{"another Picchu's", app, with(map[string]string{picchuv1alpha1.LabelInstance: "i2", picchuv1alpha1.LabelDeliveryNamespace: "picchu"}), false},
		{"another delivery namespace's", app, with(map[string]string{picchuv1alpha1.LabelInstance: "i1", picchuv1alpha1.LabelDeliveryNamespace: "team-b"}), false},
		{"an empty instance label is another's", app, with(map[string]string{picchuv1alpha1.LabelInstance: ""}), false},
		{"replicas of our object", nil, with(o.Labels()), true},
		{"replicas of an unlabelled object", nil, map[string]string{"team": "platform"}, false},
	} {
		if got := o.Owns(tc.want, tc.live); got != tc.owns {
			t.Errorf("%s: Owns = %v, want %v", tc.name, got, tc.owns)
		}
	}
}
