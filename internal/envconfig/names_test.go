package envconfig

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"PPROFOTEL_WINDOW", "PPROFOTEL_PROFILES", "PPROFOTEL_CPU_DUTY_CYCLE", "PPROFOTEL_OFFCPU_DUTY_CYCLE"}
	tests := []struct {
		name, want string
	}{
		{"PPROFOTEL_WINDOWS", "PPROFOTEL_WINDOW"},
		{"PPROFOTEL_WINDW", "PPROFOTEL_WINDOW"},
		{"pprofotel_window", "PPROFOTEL_WINDOW"},
		{"PPROFOTEL_PROFILE", "PPROFOTEL_PROFILES"},
		{"PPROFOTEL_CPU_DUTYCYCLE", "PPROFOTEL_CPU_DUTY_CYCLE"},
		{"PPROFOTEL_CPUDUTY_CYCLE", "PPROFOTEL_CPU_DUTY_CYCLE"},
		{"PPROFOTEL_OFF_CPU_DUTY_CYCLE", "PPROFOTEL_OFFCPU_DUTY_CYCLE"},
		{"PPROFOTEL_COLOUR", ""},
		{"PPROFOTEL_X", ""},
		{"PPROFOTEL_DUTY", ""},
	}
	for _, tt := range tests {
		got, ok := Closest(tt.name, "PPROFOTEL_", known)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Closest(%q) = %q, %v, want %q", tt.name, got, ok, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"WINDOW", "WINDOWS", 1}, {"DUTY", "DUTY", 0},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
