package db

import (
	"testing"
	"time"
)

// The writer's CreatedAt texts are formatSQLiteTime's, from year 0 to
// 9999, each day's text kept or not.
func TestTicksTextIsFormatSQLiteTime(t *testing.T) {
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 100, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for i := range 50000 {
		times = append(times, time.Unix(minWrittenTime+int64(i)*6317629%(maxWrittenTime-minWrittenTime), int64(i)*7919%1e9))
	}
	tt := new(ticksText)
	m := &followPages{}
	for _, tm := range times {
		if !m.add(FollowRow{At: tm}) {
			t.Fatalf("%v not held", tm)
		}
	}
	for i, tm := range times {
		if got, want := string(tt.append(nil, m.rows[i].at)), formatSQLiteTime(tm); got != want {
			t.Errorf("ticks of %v written %q, want %q", tm, got, want)
		}
		if back := m.row(i).At; !back.Equal(tm.Truncate(100)) {
			t.Errorf("%v held and read back as %v", tm, back)
		}
	}
}
