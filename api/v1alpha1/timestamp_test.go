package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimestamp_RoundTripsMicroseconds(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	b, err := json.Marshal(NewTimestamp(at))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"2026-11-21T10:00:00.123456Z"` {
		t.Errorf("marshalled %s", b)
	}
	var back Timestamp
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("read back %v, want %v", back.Time, at)
	}
}

func TestTimestamp_ReadsWholeSecondsAndNull(t *testing.T) {
	var ts Timestamp
	if err := json.Unmarshal([]byte(`"2026-11-21T10:00:00Z"`), &ts); err != nil {
		t.Fatal(err)
	}
	if !ts.Equal(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("read %v", ts.Time)
	}
	if err := json.Unmarshal([]byte(`null`), &ts); err != nil || !ts.IsZero() {
		t.Errorf("null read as %v (%v)", ts.Time, err)
	}
	if err := json.Unmarshal([]byte(`"yesterday"`), &ts); err == nil {
		t.Errorf("a malformed timestamp was accepted")
	}
	var st struct {
		At *Timestamp `json:"at,omitempty"`
	}
	if b, _ := json.Marshal(st); string(b) != `{}` {
		t.Errorf("unset timestamp marshalled as %s", b)
	}
}
