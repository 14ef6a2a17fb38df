package plugin_test

import (
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// hostile holds what a terminal takes as commands: clear the screen, set
// the window's title, colours, NUL, backspace, DEL, the 8-bit CSI and OSC,
// a right-to-left override, and a newline and a tab that would break a
// table's row. Printed, it reads "deploy done redok next line".
const (
	hostile  = "deploy \x1b[2J\x1b]0;evil\x07done\x1b[31m red\x1b[0m\x00\x08\x7f\u009b2J\u009d0;t\u009c\u202eok\nnext\tline"
	defanged = "deploy done redok next line"
)

// TestViews_PrintNoControlCharacters writes hostile text where users and
// other controllers can write it (an Event's message, a ReleaseManager's
// condition, a build's alerts, a Revision's failed-reason) and runs every
// read-only command: none prints a control character, an escape sequence
// or a bidirectional override, and each shows the text that remains, on
// the table's row.
func TestViews_PrintNoControlCharacters(t *testing.T) {
	ns := newNamespace(t)
	rev := revision(ns, "evil", "v1")
	rev.Spec.Targets = rev.Spec.Targets[:1]
	rev.Spec.Failed = true
	rev.Annotations = map[string]string{picchuv1alpha1.AnnotationFailedReason: hostile}
	create(t, rev)
	rm := manager(ns, "evil", "production")
	rm.Status = picchuv1alpha1.ReleaseManagerStatus{
		Conditions: []metav1.Condition{condition(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, "Failed", hostile)},
		Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{{
			Tag: "v1", State: state("failed", time.Minute), PeakPercent: 10, TriggeredAlerts: []string{hostile},
		}},
	}
	createWithStatus(t, rm)
	event(t, ns, "Revision", "evil-v1", corev1.EventTypeWarning, "Failed", hostile, time.Minute, 1)

	for _, args := range [][]string{{"get"}, {"get", "evil"}, {"status", "evil"}, {"history", "evil"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := kubectlPicchu(t, append(args, "-n", ns)...)
			if res.err != nil {
				t.Fatalf("kubectl picchu %s: %v\n%s", strings.Join(args, " "), res.err, res.errOut)
			}
			for _, r := range res.out + res.errOut {
				if (unicode.IsControl(r) && r != '\n') || unicode.Is(unicode.Bidi_Control, r) {
					t.Fatalf("kubectl picchu %s printed %U:\n%q", strings.Join(args, " "), r, res.out)
				}
			}
			if args[0] != "get" || len(args) > 1 {
				if !strings.Contains(res.out, defanged) {
					t.Errorf("kubectl picchu %s lacks %q:\n%s", strings.Join(args, " "), defanged, res.out)
				}
			}
		})
	}
	// Each of the four texts is on a row of its own table.
	res := kubectlPicchu(t, "status", "evil", "-n", ns)
	for _, want := range []string{
		"Failed   " + defanged,           // the condition
		"revision/evil-v1   " + defanged, // the event
		"failed: " + defanged + " fired", // the alerts, in the timeline
	} {
		if !strings.Contains(res.out, want) {
			t.Errorf("kubectl picchu status lacks %q:\n%s", want, res.out)
		}
	}
}
