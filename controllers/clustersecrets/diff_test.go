package clustersecrets_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
)

const owner = "picchu/shared"

// wantedCopy is a copy as Copies makes it for owner.
func wantedCopy(name, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "shared",
			Labels:      map[string]string{clustersecrets.LabelOwner: "shared"},
			Annotations: map[string]string{clustersecrets.AnnotationOwner: owner},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"value": []byte(value)},
	}
}

// liveCopy is a copy as the cluster's cache shows it.
func liveCopy(w *corev1.Secret, edit func(*corev1.Secret)) corev1.Secret {
	l := w.DeepCopy()
	l.UID, l.ResourceVersion = "uid-"+k8stypes.UID(l.Name), "7"
	if edit != nil {
		edit(l)
	}
	return *l
}

func TestDiff(t *testing.T) {
	db, tls := wantedCopy("db", "s3cr3t-v1"), wantedCopy("tls", "cert")
	tests := []struct {
		name   string
		wanted []*corev1.Secret
		live   []corev1.Secret
		// The copies each action names, and the conflicts' count.
		create, update, replace, remove []string
		conflicts                       int
	}{
		{name: "nothing there yet", wanted: []*corev1.Secret{tls, db}, create: []string{"shared/db", "shared/tls"}},
		{name: "in line: nothing to do", wanted: []*corev1.Secret{db, tls},
			live: []corev1.Secret{liveCopy(db, nil), liveCopy(tls, nil)}},
		{name: "in line with nil and empty maps alike", wanted: []*corev1.Secret{func() *corev1.Secret {
			w := wantedCopy("empty", "")
			w.Data = map[string][]byte{}
			return w
		}()}, live: []corev1.Secret{liveCopy(wantedCopy("empty", ""), func(l *corev1.Secret) { l.Data = nil })}},
		{name: "rotated", wanted: []*corev1.Secret{wantedCopy("db", "s3cr3t-v2")},
			live: []corev1.Secret{liveCopy(db, nil)}, update: []string{"shared/db"}},
		{name: "a key added by someone", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Data["extra"] = []byte("x") })}, update: []string{"shared/db"}},
		{name: "a label added by someone", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Labels["x"] = "y" })}, update: []string{"shared/db"}},
		{name: "an annotation changed by someone", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Annotations["x"] = "y" })}, update: []string{"shared/db"}},
		{name: "the type changed", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Type = corev1.SecretTypeTLS })}, replace: []string{"shared/db"}},
		{name: "immutable and rotated", wanted: []*corev1.Secret{wantedCopy("db", "s3cr3t-v2")},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Immutable = ptr.To(true) })}, replace: []string{"shared/db"}},
		{name: "immutable and in line", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, func(l *corev1.Secret) { l.Immutable = ptr.To(true) })}},
		{name: "no longer selected", wanted: []*corev1.Secret{db},
			live: []corev1.Secret{liveCopy(db, nil), liveCopy(tls, nil)}, remove: []string{"shared/tls"}},
		{name: "a cluster no longer selected", live: []corev1.Secret{liveCopy(db, nil), liveCopy(tls, nil)},
			remove: []string{"shared/db", "shared/tls"}},
		{name: "the target namespace moved", wanted: []*corev1.Secret{func() *corev1.Secret {
			w := db.DeepCopy()
			w.Namespace = "moved"
			return w
		}()}, live: []corev1.Secret{liveCopy(db, nil)}, create: []string{"moved/db"}, remove: []string{"shared/db"}},
		{name: "another ClusterSecrets' copies are not touched", live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.Annotations[clustersecrets.AnnotationOwner] = "picchu/other" }),
			liveCopy(tls, func(l *corev1.Secret) { l.Annotations[clustersecrets.AnnotationOwner] = "elsewhere/shared" }),
		}},
		{name: "another ClusterSecrets' copy holds the name", wanted: []*corev1.Secret{db}, live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.Annotations[clustersecrets.AnnotationOwner] = "picchu/other" }),
		}, conflicts: 1},
		{name: "a copy without the ownership annotation is not ours", wanted: []*corev1.Secret{db}, live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.Annotations = nil }),
		}, conflicts: 1},
		{name: "ignored copies are left alone", wanted: []*corev1.Secret{wantedCopy("db", "s3cr3t-v2")}, live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.Labels[picchuv1alpha1.LabelIgnore] = "true" }),
			liveCopy(tls, func(l *corev1.Secret) { l.Labels[picchuv1alpha1.LabelIgnore] = "true" }),
		}},
		{name: "the ignore label with an empty value is honoured", wanted: []*corev1.Secret{wantedCopy("db", "s3cr3t-v2")}, live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.Labels[picchuv1alpha1.LabelIgnore] = "" }),
			liveCopy(tls, func(l *corev1.Secret) { l.Labels[picchuv1alpha1.LabelIgnore] = "" }),
		}},
		{name: "a copy being deleted is waited for", wanted: []*corev1.Secret{wantedCopy("db", "s3cr3t-v2")}, live: []corev1.Secret{
			liveCopy(db, func(l *corev1.Secret) { l.DeletionTimestamp = ptr.To(metav1.Now()) }),
			liveCopy(tls, func(l *corev1.Secret) { l.DeletionTimestamp = ptr.To(metav1.Now()) }),
		}},
	}
	names := func(list []*corev1.Secret) []string {
		var out []string
		for _, s := range list {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := clustersecrets.Diff(owner, tt.wanted, tt.live)
			var replaced []string
			for _, r := range a.Replace {
				replaced = append(replaced, r.Want.Namespace+"/"+r.Want.Name)
				if r.Live.UID == "" {
					t.Errorf("replacement of %s without the live copy", r.Want.Name)
				}
			}
			if got := names(a.Create); !slices.Equal(got, tt.create) {
				t.Errorf("create %v, want %v", got, tt.create)
			}
			if got := names(a.Update); !slices.Equal(got, tt.update) {
				t.Errorf("update %v, want %v", got, tt.update)
			}
			if !slices.Equal(replaced, tt.replace) {
				t.Errorf("replace %v, want %v", replaced, tt.replace)
			}
			if got := names(a.Delete); !slices.Equal(got, tt.remove) {
				t.Errorf("delete %v, want %v", got, tt.remove)
			}
			if len(a.Conflicts) != tt.conflicts {
				t.Errorf("conflicts %v, want %d", a.Conflicts, tt.conflicts)
			}
			if a.Empty() != (len(tt.create)+len(tt.update)+len(tt.replace)+len(tt.remove)+tt.conflicts == 0) {
				t.Errorf("Empty() = %v", a.Empty())
			}
			for _, u := range a.Update {
				if u.ResourceVersion != "7" || u.UID == "" {
					t.Errorf("update of %s without the live resourceVersion and UID", u.Name)
				}
				if !clustersecrets.Same(tt.wanted[0], u) {
					t.Errorf("update of %s does not make it what is wanted", u.Name)
				}
			}
			for _, c := range a.Conflicts {
				if strings.Contains(c, "s3cr3t") {
					t.Errorf("conflict quotes a value: %s", c)
				}
			}
		})
	}
}
