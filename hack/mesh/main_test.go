package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/test/kit"
)

func Test_parseFlags(t *testing.T) {
	defaults := config{
		kubeconfigs: map[string]string{"a": "/k/a"},
		listen:      "127.0.0.1:9901",
		rps:         100,
		interval:    250 * time.Millisecond,
		lag:         time.Second,
	}
	for _, tc := range []struct {
		name string
		args []string
		want config
		err  string // a part of the error, when one is wanted
	}{
		{"defaults", []string{"--kubeconfig", "a=/k/a"}, defaults, ""},
		{"everything", []string{
			"--kubeconfig", "a=/k/a", "--kubeconfig=b=/k/b=c", "--listen", ":0", "--rps", "50", "--interval", "1s", "--lag", "2.5s",
			"--prometheus-url", "http://127.0.0.1:9090", "--rules-file", "/tmp/rules.yaml",
			"--error-ratio", "shop/v2=0.5", "--error-ratio", "cart/1a2b=1",
		}, config{
			kubeconfigs: map[string]string{"a": "/k/a", "b": "/k/b=c"},
			listen:      ":0", rps: 50, interval: time.Second, lag: 2500 * time.Millisecond,
			prometheusURL: "http://127.0.0.1:9090", rulesFile: "/tmp/rules.yaml",
			errorRatios: []errorRatio{{"shop", "v2", 0.5}, {"cart", "1a2b", 1}},
		}, ""},
		{"no kubeconfig", nil, config{}, "no --kubeconfig name=path given"},
		{"kubeconfig without name", []string{"--kubeconfig", "/k/a"}, config{}, `"/k/a" is not name=path`},
		{"kubeconfig twice", []string{"--kubeconfig", "a=/k/a", "--kubeconfig", "a=/k/b"}, config{}, "cluster a given twice"},
		{"prometheus without rules file", []string{"--kubeconfig", "a=/k/a", "--prometheus-url", "http://p"}, config{},
			"--prometheus-url and --rules-file go together"},
		{"rules file without prometheus", []string{"--kubeconfig", "a=/k/a", "--rules-file", "/r.yaml"}, config{},
			"--prometheus-url and --rules-file go together"},
		{"error ratio without tag", []string{"--kubeconfig", "a=/k/a", "--error-ratio", "shop=0.5"}, config{},
			`"shop=0.5" is not app/tag=ratio`},
		{"error ratio above 1", []string{"--kubeconfig", "a=/k/a", "--error-ratio", "shop/v2=2"}, config{},
			`ratio "2" of shop/v2 is not a number between 0 and 1`},
		{"zero rps", []string{"--kubeconfig", "a=/k/a", "--rps", "0"}, config{}, "--rps 0 is not a positive number"},
		{"zero interval", []string{"--kubeconfig", "a=/k/a", "--interval", "0s"}, config{}, "--interval 0s is not positive"},
		{"no lag", []string{"--kubeconfig", "a=/k/a", "--lag", "0"}, func() config { c := defaults; c.lag = 0; return c }(), ""},
		{"negative lag", []string{"--kubeconfig", "a=/k/a", "--lag", "-1s"}, config{}, "--lag -1s is negative"},
		{"argument", []string{"--kubeconfig", "a=/k/a", "extra"}, config{}, `unexpected argument "extra"`},
		{"unknown flag", []string{"--kubeconfig", "a=/k/a", "--port", "1"}, config{}, "flag provided but not defined: -port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(tc.args, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseFlags(%q): %v, want an error with %q", tc.args, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseFlags(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("parseFlags(-h): %v, want flag.ErrHelp", err)
		}
		if !strings.Contains(out.String(), "--kubeconfig name=path") {
			t.Errorf("usage %q does not show --kubeconfig", out.String())
		}
	})
}

// unreachableKubeconfig is a kubeconfig of a server nothing listens on.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: down
  cluster:
    server: https://127.0.0.1:1
users:
- name: down
  user:
    token: not-a-secret
contexts:
- name: down
  context:
    cluster: down
    user: down
current-context: down
`

// syncBuffer is a buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Test_run checks that the program serves while its cluster is down, logs
// that, and stops cleanly when its context is done.
func Test_run(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"--kubeconfig", "down=" + path, "--listen", "127.0.0.1:0", "--interval", "20ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, log.New(&logs, "", 0), func(a net.Addr) { addrs <- a }) }()

	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not listen within 10s")
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %s", resp.Status)
	}
	kit.Eventually(t, 10*time.Second, "the unreachable cluster logged", func() error {
		if !strings.Contains(logs.String(), "cluster down: listing VirtualServices") {
			return fmt.Errorf("logs:\n%s", logs.String())
		}
		return nil
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop within 10s of its context's end")
	}
	if !strings.HasSuffix(logs.String(), "stopped\n") {
		t.Errorf("logs do not end with stopped:\n%s", logs.String())
	}
}
