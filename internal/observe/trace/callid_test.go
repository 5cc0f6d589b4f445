package trace

import "testing"

func TestCallID(t *testing.T) {
	tests := []struct {
		name, appID, key, want string
	}{
		// spec §7, live key example.
		{"live", "expense-triage", LiveCallKey(3, "reviewing", 2), "335599da002646d7"},
		// spec §7, cassette key example. The spec omits the app id; the
		// listed id is the one for app "expense-triage".
		{"cassette", "expense-triage", CassetteCallKey("audit_ok", 0), "498da50176b0b991"},
		{"empty app id differs", "", "audit_ok:0", "4a42630b57e529c3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CallID(tt.appID, tt.key); got != tt.want {
				t.Errorf("CallID(%q, %q) = %q, want %q", tt.appID, tt.key, got, tt.want)
			}
		})
	}
}

func TestCallKeys(t *testing.T) {
	if got := LiveCallKey(3, "reviewing", 2); got != "3:reviewing:2" {
		t.Errorf("LiveCallKey = %q", got)
	}
	if got := CassetteCallKey("audit_ok", 7); got != "audit_ok:7" {
		t.Errorf("CassetteCallKey = %q", got)
	}
}
