package model

import "testing"

// A user's Node id is its decimal database id, read back only in the form
// UserID writes it.
func TestUserID(t *testing.T) {
	for _, id := range []int64{1, 42, 9223372036854775807} {
		if got, ok := ParseUserID(UserID(id)); !ok || got != id {
			t.Errorf("ParseUserID(UserID(%d)) = %d, %v", id, got, ok)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", "007", " 7", "7 ", "1e3", "User:1", "9223372036854775808", "abc"} {
		if id, ok := ParseUserID(s); ok {
			t.Errorf("ParseUserID(%q) = %d, want no id", s, id)
		}
	}
}
