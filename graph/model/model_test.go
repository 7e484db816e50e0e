package model

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A time is written in UTC with seven fractional digits, as a JSON string.
func TestMarshalTime(t *testing.T) {
	at := time.Date(2024, 6, 6, 14, 35, 0, 288195700, time.FixedZone("CEST", 2*3600))
	want := `"2024-06-06T12:35:00.2881957Z"`
	// Into gqlgen's buffer, after what it holds, and into any writer.
	var b bytes.Buffer
	b.WriteString("[")
	MarshalTime(at).MarshalGQL(&b)
	if b.String() != "["+want {
		t.Errorf("got %s, want [%s", b.String(), want)
	}
	var sb strings.Builder
	MarshalTime(at).MarshalGQL(&sb)
	if sb.String() != want {
		t.Errorf("got %s, want %s", sb.String(), want)
	}
	var kb strings.Builder
	MarshalUserKey(42).MarshalGQL(&kb)
	if kb.String() != `"42"` {
		t.Errorf("user key: got %s", kb.String())
	}
}
