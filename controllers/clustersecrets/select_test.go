package clustersecrets_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
	"github.com/medium/picchu/fleet/access"
)

func secret(namespace, name string, labels map[string]string, typ corev1.SecretType) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       typ,
		Data:       map[string][]byte{"value": []byte(name + "-s3cr3t")},
	}
}

func parse(t *testing.T, s picchuv1alpha1.ClusterSecretsSpec) clustersecrets.Selection {
	t.Helper()
	sel, problems := clustersecrets.Parse(clusterSecrets(s))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return sel
}

func TestSelectSecrets(t *testing.T) {
	copyMe := map[string]string{"copy": "yes"}
	deleting := secret("picchu", "deleting", copyMe, corev1.SecretTypeOpaque)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	secrets := []corev1.Secret{
		secret("picchu", "tls", copyMe, corev1.SecretTypeTLS),
		secret("picchu", "db", copyMe, corev1.SecretTypeOpaque),
		secret("picchu", "other", nil, corev1.SecretTypeOpaque),
		secret("elsewhere", "db2", copyMe, corev1.SecretTypeOpaque),
		secret("picchu", "east", copyMe, corev1.SecretTypeOpaque),
		secret("picchu", "datadog", map[string]string{"copy": "yes", access.LabelCredentials: "true"}, corev1.SecretTypeOpaque),
		secret("picchu", "sa-token", copyMe, corev1.SecretTypeServiceAccountToken),
		secret("picchu", "bootstrap-token-abcdef", copyMe, corev1.SecretTypeBootstrapToken),
		deleting,
	}
	clusters := map[string]bool{"east": true}
	tests := []struct {
		name     string
		spec     picchuv1alpha1.ClusterSecretsSpec
		copied   []string
		withheld []string
	}{
		{"by label", spec("copy=yes", "", "", ""), []string{"db", "tls"}, []string{"bootstrap-token-abcdef", "datadog", "east", "sa-token"}},
		{"by label and name, in memory", spec("copy=yes", "metadata.name=db", "", ""), []string{"db"}, nil},
		{"by name alone", spec("", "metadata.name=other", "", ""), []string{"other"}, nil},
		{"by type", spec("copy=yes", "type=kubernetes.io/tls", "", ""), []string{"tls"}, nil},
		{"by a name excluded", spec("copy=yes", "metadata.name!=db,metadata.name!=sa-token", "", ""), []string{"tls"}, []string{"bootstrap-token-abcdef", "datadog", "east"}},
		{"everything of the namespace", spec("", "", "", ""), []string{"db", "other", "tls"}, []string{"bootstrap-token-abcdef", "datadog", "east", "sa-token"}},
		{"nothing", spec("copy=no", "", "", ""), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			copied, withheld := clustersecrets.SelectSecrets(parse(t, tt.spec), secrets, clusters)
			var got, gotWithheld []string
			for _, s := range copied {
				got = append(got, s.Name)
			}
			for _, w := range withheld {
				gotWithheld = append(gotWithheld, w.Name)
				if w.Why == "" {
					t.Errorf("%s withheld without a reason", w.Name)
				}
			}
			if !slices.Equal(got, tt.copied) || !slices.Equal(gotWithheld, tt.withheld) {
				t.Errorf("copied %v, withheld %v; want %v, %v", got, gotWithheld, tt.copied, tt.withheld)
			}
		})
	}
}

func cluster(name string, enabled bool, labels map[string]string) picchuv1alpha1.Cluster {
	return picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "picchu", Labels: labels},
		Spec:       picchuv1alpha1.ClusterSpec{Enabled: enabled},
	}
}

func TestSelectClusters(t *testing.T) {
	prod := map[string]string{picchuv1alpha1.LabelFleet: "production"}
	deleting := cluster("gone", true, prod)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	clusters := []picchuv1alpha1.Cluster{
		cluster("west", true, prod),
		cluster("east", true, prod),
		cluster("staging", true, map[string]string{picchuv1alpha1.LabelFleet: "staging"}),
		cluster("off", false, prod),
		deleting,
	}
	tests := []struct {
		name             string
		spec             picchuv1alpha1.ClusterSecretsSpec
		selected, others []string
	}{
		{"every enabled cluster", spec("", "", "", ""), []string{"east", "staging", "west"}, nil},
		{"a fleet", spec("", "", picchuv1alpha1.LabelFleet+"=production", ""), []string{"east", "west"}, []string{"staging"}},
		{"a fleet but one", spec("", "", picchuv1alpha1.LabelFleet+"=production", "metadata.name!=west"), []string{"east"}, []string{"staging", "west"}},
		{"a disabled cluster by name", spec("", "", "", "metadata.name=off"), nil, []string{"east", "staging", "west"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selected, others := clustersecrets.SelectClusters(parse(t, tt.spec), clusters)
			names := func(cs []*picchuv1alpha1.Cluster) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.Name)
				}
				return out
			}
			if got := names(selected); !slices.Equal(got, tt.selected) {
				t.Errorf("selected %v, want %v", got, tt.selected)
			}
			if got := names(others); !slices.Equal(got, tt.others) {
				t.Errorf("others %v, want %v", got, tt.others)
			}
		})
	}
}

func TestCopies_KeepNameTypeAndDataAndReplaceTheMetadata(t *testing.T) {
	s := spec("", "", "", "")
	s.Target.Labels = map[string]string{"team": "platform"}
	s.Target.Annotations = map[string]string{"note": "copied"}
	sel := parse(t, s)
	src := secret("picchu", "tls", map[string]string{"copy": "yes"}, corev1.SecretTypeTLS)
	src.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	src.UID, src.ResourceVersion = "uid-1", "42"
	copies := clustersecrets.Copies(sel, []*corev1.Secret{&src})
	if len(copies) != 1 {
		t.Fatalf("%d copies", len(copies))
	}
	c := copies[0]
	if c.Name != "tls" || c.Namespace != "shared" || c.Type != corev1.SecretTypeTLS || string(c.Data["value"]) != "tls-s3cr3t" {
		t.Errorf("copy %s/%s of type %s, data %d keys", c.Namespace, c.Name, c.Type, len(c.Data))
	}
	if c.UID != "" || c.ResourceVersion != "" {
		t.Errorf("the copy carries the source's identity: %q %q", c.UID, c.ResourceVersion)
	}
	if c.Labels["copy"] != "" || c.Labels["team"] != "platform" || c.Labels[clustersecrets.LabelOwner] != "shared" {
		t.Errorf("labels %v", c.Labels)
	}
	if len(c.Annotations) != 2 || c.Annotations[clustersecrets.AnnotationOwner] != "picchu/shared" {
		t.Errorf("annotations %v", c.Annotations)
	}
	c.Data["value"][0] = 'X'
	c.Labels["team"] = "other"
	if strings.HasPrefix(string(src.Data["value"]), "X") || sel.Labels["team"] != "platform" {
		t.Error("the copy shares memory with its source or the selection")
	}
}
