package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/shard"
)

// shardFlags split the apps between replicas (--shards and the lease
// timings).
type shardFlags struct {
	n                                         int
	identity                                  string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func (s *shardFlags) bind(fs *flag.FlagSet) {
	fs.IntVar(&s.n, "shards", 0, "split the apps into this many shards, each held by one replica at a time through a Lease in --leader-election-namespace (0 or 1: one replica drives every app; run more than one replica only with --enable-leader-election)")
	fs.StringVar(&s.identity, "shard-identity", "", "this replica's name in the shard leases, unique among replicas (default: $POD_NAME or the host name, with a random suffix)")
	fs.DurationVar(&s.leaseDuration, "shard-lease-duration", shard.DefaultLeaseDuration, "how long a replica that stops renewing keeps its shards before others take them")
	fs.DurationVar(&s.renewDeadline, "shard-renew-deadline", shard.DefaultRenewDeadline, "how long after its last renewal a replica stops driving a shard it cannot renew (less than --shard-lease-duration)")
	fs.DurationVar(&s.retryPeriod, "shard-retry-period", shard.DefaultRetryPeriod, "how often a replica renews its shards and balances them with the others (less than --shard-renew-deadline)")
}

// check says what is wrong with the shard flags, naming the flag.
func (s *shardFlags) check(leaderElection bool) error {
	if s.n < 0 {
		return fmt.Errorf("--shards must be 0 or more, got %d", s.n)
	}
	if s.n < 2 {
		return nil
	}
	if leaderElection {
		return errors.New("--shards and --enable-leader-election exclude each other: with shards, each shard has its own lease")
	}
	if s.retryPeriod <= 0 || s.renewDeadline <= s.retryPeriod || s.leaseDuration <= s.renewDeadline {
		return fmt.Errorf("need 0 < --shard-retry-period (%s) < --shard-renew-deadline (%s) < --shard-lease-duration (%s)",
			s.retryPeriod, s.renewDeadline, s.leaseDuration)
	}
	return nil
}

// coordinator returns the shard coordinator the flags ask for (nil when
// not sharded), and names the delivery client after the replica, so that
// managed fields show which replica wrote an object.
func (s *shardFlags) coordinator(cfg *rest.Config, scheme *runtime.Scheme, namespace string) (*shard.Coordinator, error) {
	if s.n < 2 {
		return nil, nil
	}
	if namespace == "" {
		b, err := os.ReadFile(inClusterNamespace)
		if err != nil {
			return nil, errors.New("--shards needs --leader-election-namespace (or $POD_NAMESPACE) outside a cluster")
		}
		namespace = strings.TrimSpace(string(b))
	}
	identity := s.identity
	if identity == "" {
		identity = defaultIdentity()
	}
	cfg.UserAgent = "picchu-" + identity
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the client of shard leases: %w", err)
	}
	return shard.New(shard.Config{
		Client: c, Namespace: namespace, Name: "picchu", Identity: identity, Shards: s.n,
		LeaseDuration: s.leaseDuration, RenewDeadline: s.renewDeadline, RetryPeriod: s.retryPeriod,
		Log: ctrl.Log.WithName("shards"),
	})
}

// defaultIdentity is $POD_NAME or the host name, with a random suffix: a
// restarted replica waits for the leases of the one it replaces rather
// than trust it is gone.
func defaultIdentity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	return name + "-" + strings.ToLower(rand.Text()[:6])
}
