package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sleeper is a daemon's command line that runs until killed and mentions
// dir, as every daemon of a fleet does.
func sleeper(dir string) []string {
	return []string{"tail", "-F", filepath.Join(dir, "marker")}
}

func TestDaemon_StartFindStop(t *testing.T) {
	dir := t.TempDir()
	d := daemon{dir, "sleeper"}
	if _, ok := d.running(); ok {
		t.Fatal("running before it started")
	}
	if err := d.start(sleeper(dir)); err != nil {
		t.Fatal(err)
	}
	pid, ok := d.running()
	if !ok {
		t.Fatal("not running after start")
	}
	if err := d.start(sleeper(dir)); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second start: %v, want already running", err)
	}
	pids, err := Processes(dir)
	if err != nil || !slices.Contains(pids, pid) {
		t.Errorf("Processes = %v, %v; want it to hold %d", pids, err, pid)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.running(); ok || alive(pid, dir) {
		t.Errorf("pid %d still running after stop", pid)
	}
	if _, err := os.Stat(d.pidFile()); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}
	if err := d.stop(); err != nil {
		t.Errorf("stopping a stopped daemon: %v", err)
	}
}

// A pid file naming a process that does not run the daemon (its pid was
// reused) is not taken for the daemon, and stop leaves that process alone.
func TestDaemon_ReusedPidIsNotTheDaemon(t *testing.T) {
	dir := t.TempDir()
	d := daemon{dir, "sleeper"}
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.pidFile(), []byte(strconv.Itoa(os.Getppid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.running(); ok {
		t.Fatal("an unrelated process is taken for the daemon")
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(os.Getppid(), "") {
		t.Fatal("stop killed an unrelated process")
	}
}

func TestDown_LeavesNoProcessOrFile(t *testing.T) {
	dir := t.TempDir()
	fleetDir := filepath.Join(dir, "fleet")
	for _, name := range []string{prometheusDaemon, meshDaemon} {
		if err := (daemon{fleetDir, name}).start(sleeper(fleetDir)); err != nil {
			t.Fatal(err)
		}
	}
	// A stray process of the fleet's that no pid file records.
	if err := (daemon{fleetDir, "stray"}).start(sleeper(fleetDir)); err != nil {
		t.Fatal(err)
	}
	if err := Down(context.Background(), fleetDir); err != nil {
		t.Fatal(err)
	}
	if pids, err := Processes(fleetDir); err != nil || len(pids) > 0 {
		t.Errorf("left running: %v %v", pids, err)
	}
	if _, err := os.Stat(fleetDir); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", fleetDir, err)
	}
	if err := Down(context.Background(), fleetDir); err != nil {
		t.Errorf("taking down a fleet that is gone: %v", err)
	}
}
