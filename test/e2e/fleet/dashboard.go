package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
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
	URL string
	// Printed is the URL it printed, with its secret: what a person opens.
	Printed string
	// Client is its owner's browser: it opened the URL the dashboard
	// printed, and holds the cookie the dashboard answers.
	Client *http.Client
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
	case printed := <-serving:
		if err := d.open(ctx, printed); err != nil {
			cancel()
			return nil, errors.Join(err, <-d.done)
		}
		return d, nil
	case err := <-d.done:
		cancel()
		return nil, fmt.Errorf("serving the dashboard: %w", err)
	case <-time.After(time.Minute):
		cancel()
		return nil, errors.New("serving the dashboard: it did not serve within a minute")
	}
}

// open opens the URL the dashboard printed with a new Client, which keeps
// the dashboard's cookie, and sets URL to where the dashboard sent it.
func (d *Dashboard) open(ctx context.Context, printed string) error {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return fmt.Errorf("opening the dashboard: %w", err)
	}
	d.Printed, d.Client = printed, &http.Client{Jar: jar}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, printed, nil)
	if err != nil {
		return fmt.Errorf("opening the dashboard: %w", err)
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return fmt.Errorf("opening the dashboard: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("opening the dashboard at %s: %s", resp.Request.URL, resp.Status)
	}
	d.URL = resp.Request.URL.String()
	return nil
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
