package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"
)

// timestampLayout writes microseconds, as metav1.MicroTime does.
const timestampLayout = "2006-01-02T15:04:05.000000Z07:00"

// Timestamp is a point in time stored with microsecond precision. The
// release engine times traffic steps and canaries from the timestamps in a
// ReleaseManager's status; whole seconds would let a restarted operator
// shorten a step by up to a second. It reads RFC 3339 with or without
// fractional seconds, so statuses written by the original still decode.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
// +kubebuilder:object:generate=false
type Timestamp struct {
	time.Time `json:"-"`
}

// NewTimestamp returns t as a Timestamp, to the microsecond it is stored with.
func NewTimestamp(t time.Time) Timestamp {
	return Timestamp{Time: t.Round(0).Truncate(time.Microsecond)}
}

// DeepCopyInto copies the timestamp into out.
func (t *Timestamp) DeepCopyInto(out *Timestamp) { *out = *t }

// DeepCopy returns a copy of the timestamp.
func (t *Timestamp) DeepCopy() *Timestamp {
	if t == nil {
		return nil
	}
	out := *t
	return &out
}

// MarshalJSON writes RFC 3339 in UTC with microseconds, or null when zero.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(timestampLayout))
}

// UnmarshalJSON reads RFC 3339 with or without fractional seconds, or null.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", s, err)
	}
	t.Time = parsed.Truncate(time.Microsecond).Local()
	return nil
}
