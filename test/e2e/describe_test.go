package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDescribedCommandsRun runs every kubectl command the demo's summary
// prints (Fleet.Describe) exactly as printed, with the kubectl this
// repository builds: on a machine with only Go they must work.
func TestDescribedCommandsRun(t *testing.T) {
	cmds := lab.Commands()
	if len(cmds) != 1+len(lab.Targets) {
		t.Fatalf("want a command per cluster, got %q", cmds)
	}
	described := lab.Describe()
	for i, cmd := range cmds {
		if !strings.Contains(described, cmd) {
			t.Errorf("Describe does not print %q:\n%s", cmd, described)
		}
		if !strings.HasPrefix(cmd, "/") && !strings.HasPrefix(cmd, "bin/kubectl ") {
			t.Errorf("%q does not start with the repository's kubectl", cmd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "sh", "-c", cmd).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, out)
			continue
		}
		// The delivery cluster lists the registered targets; a target lists
		// at least its kube-system pods or says there are none.
		if len(strings.TrimSpace(string(out))) == 0 {
			t.Errorf("%s printed nothing", cmd)
		}
		if i == 0 { // the delivery cluster's: its Revisions, ReleaseManagers and Clusters
			for _, target := range lab.Targets {
				if !strings.Contains(string(out), target.Name) {
					t.Errorf("%s does not list cluster %s:\n%s", cmd, target.Name, out)
				}
			}
		}
	}
}
