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
// The schema admits RFC 3339 only (the date-time format alone also admits
// forms such as a lower-case "t" or a comma that Go's parser rejects).
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
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
