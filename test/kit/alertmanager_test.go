package kit_test

import (
	"context"
	"testing"
	"time"

	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/test/kit"
)

// TestAlertmanager_HoldsSilences starts a real Alertmanager and has
// Picchu's client create, list, extend and expire a silence there, with
// the negative matchers release silences carry.
func TestAlertmanager_HoldsSilences(t *testing.T) {
	ctx := context.Background()
	am := kit.StartAlertmanager(ctx, t)
	c, err := alertmanager.New(alertmanager.Config{Address: am.URL()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := alertmanager.Silence{
		Matchers: []alertmanager.Matcher{
			{Name: "alertname", Value: "HighLatency", IsEqual: true},
			{Name: "slo", Value: "true"},
		},
		StartsAt: now, EndsAt: now.Add(time.Hour), CreatedBy: "picchu", Comment: "a test",
	}
	id, err := c.Post(ctx, s)
	if err != nil {
		t.Fatalf("creating: %v\n%s", err, am.LogTail())
	}
	listed, err := c.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].ID != id || listed[0].Status == nil || listed[0].Status.State != alertmanager.StateActive {
		t.Fatalf("List = %+v, %v; want %s active", listed, err, id)
	}
	if got := listed[0].Matchers; len(got) != 2 || got[1] != s.Matchers[1] {
		t.Errorf("matchers %+v, want %+v", got, s.Matchers)
	}
	// Extended with the start Alertmanager reports: the same silence.
	s.ID, s.StartsAt, s.EndsAt = id, listed[0].StartsAt, now.Add(2*time.Hour)
	if extended, err := c.Post(ctx, s); err != nil || extended != id {
		t.Errorf("extending = %q, %v; want %s in place", extended, err, id)
	}
	if err := c.Expire(ctx, id); err != nil {
		t.Fatalf("expiring: %v", err)
	}
	if err := c.Expire(ctx, id); err != nil {
		t.Errorf("expiring again: %v; want no error", err)
	}
	listed, err = c.List(ctx)
	if err != nil || len(listed) != 1 || !listed[0].Expired() {
		t.Errorf("List = %+v, %v; want %s expired", listed, err, id)
	}
}
