package model

import (
	"bytes"
	"testing"
	"time"
)

// A time is written in UTC with seven fractional digits, as a JSON string.
func TestMarshalTime(t *testing.T) {
	at := time.Date(2024, 6, 6, 14, 35, 0, 288195700, time.FixedZone("CEST", 2*3600))
	var b bytes.Buffer
	MarshalTime(at).MarshalGQL(&b)
	if want := `"2024-06-06T12:35:00.2881957Z"`; b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}
}
