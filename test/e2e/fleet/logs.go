package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

var logOnce sync.Once

// logToFile sends what this process' Kubernetes libraries log
// (controller-runtime's logger, which installing CRDs uses, and client-go's
// klog) to <dir>/logs/fleet.log, as the fleet's daemons log to files of
// their own, so that nothing but the fleet's own progress lines reaches the
// terminal. It takes effect once per process: the first fleet's file wins.
func logToFile(dir string) error {
	var err error
	logOnce.Do(func() {
		path := filepath.Join(dir, "logs", "fleet.log")
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			err = fmt.Errorf("creating the fleet's log directory: %w", err)
			return
		}
		var file *os.File
		// Left open for the life of the process: the loggers are global.
		if file, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			err = fmt.Errorf("opening the fleet's log: %w", err)
			return
		}
		logger := zap.New(zap.WriteTo(file))
		ctrl.SetLogger(logger)
		klog.SetLogger(logger)
	})
	return err
}
