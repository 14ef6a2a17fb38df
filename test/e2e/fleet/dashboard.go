package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
)

// Dashboard is `kubectl picchu dashboard` run by this process against the
// delivery cluster, as a person would run it.
type Dashboard struct {
	// URL is where it serves, http://127.0.0.1:<port>/.
	URL    string
	cancel context.CancelFunc
	done   chan error
}

// ServeDashboard serves the dashboard of the delivery cluster, with its
// administrator's kubeconfig, on port (0 for a free one), until Stop or
// until ctx ends; errOut receives what it reports.
func (f *Fleet) ServeDashboard(ctx context.Context, port int, errOut io.Writer) (*Dashboard, error) {
	ctx, cancel := context.WithCancel(ctx)
	serving := make(chan string, 1)
	d := &Dashboard{cancel: cancel, done: make(chan error, 1)}
	go func() {
		cmd := plugin.NewRootCommandWithOptions(plugin.Options{
			IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: errOut},
			Serving:   func(url string) { serving <- url },
		})
		cmd.SetArgs([]string{"--kubeconfig", f.Delivery.Kubeconfig, "dashboard", "--port", strconv.Itoa(port)})
		d.done <- cmd.ExecuteContext(ctx)
	}()
	select {
	case d.URL = <-serving:
		return d, nil
	case err := <-d.done:
		cancel()
		return nil, fmt.Errorf("serving the dashboard: %w", err)
	case <-time.After(time.Minute):
		cancel()
		return nil, errors.New("serving the dashboard: it did not serve within a minute")
	}
}

// DashboardCommand is the command that serves the dashboard of the
// delivery cluster, for a person to run.
func (f *Fleet) DashboardCommand() string {
	return fmt.Sprintf("bin/kubectl-picchu --kubeconfig %s dashboard", shown(f.Delivery.Kubeconfig))
}

// Stop stops the dashboard and returns the error it ended with.
func (d *Dashboard) Stop() error {
	d.cancel()
	return <-d.done
}
