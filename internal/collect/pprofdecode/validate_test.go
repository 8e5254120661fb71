package pprofdecode

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	valid := func() *Profile {
		return &Profile{
			SampleTypes: []ValueType{{Type: "samples", Unit: "count"}},
			Samples:     []Sample{{Locations: []int32{0, 1}, Values: []int64{3}}},
			Locations: []Location{
				{Mapping: 0, Lines: []Line{{Function: 0}, {Function: -1}}},
				{Mapping: -1},
			},
			Functions: []Function{{Name: "main.main"}},
			Mappings:  []Mapping{{File: "/bin/app"}},
		}
	}
	tests := []struct {
		name    string
		mutate  func(*Profile)
		wantErr string
	}{
		{name: "valid", mutate: func(*Profile) {}},
		{name: "value count", mutate: func(p *Profile) { p.Samples[0].Values = nil }, wantErr: "sample 0 has 0 values, want 1"},
		{name: "location past end", mutate: func(p *Profile) { p.Samples[0].Locations[1] = 2 }, wantErr: "sample 0 references location index 2, want [0,2)"},
		{name: "negative location", mutate: func(p *Profile) { p.Samples[0].Locations[0] = -1 }, wantErr: "sample 0 references location index -1"},
		{name: "mapping past end", mutate: func(p *Profile) { p.Locations[1].Mapping = 1 }, wantErr: "location 1 references mapping index 1, want -1 or [0,1)"},
		{name: "mapping below -1", mutate: func(p *Profile) { p.Locations[0].Mapping = -2 }, wantErr: "location 0 references mapping index -2"},
		{name: "function past end", mutate: func(p *Profile) { p.Locations[0].Lines[1].Function = 1 }, wantErr: "location 0 line 1 references function index 1, want -1 or [0,1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.mutate(p)
			err := p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
	var nilProfile *Profile
	if err := nilProfile.Validate(); err == nil {
		t.Error("Validate of a nil profile succeeded")
	}
}
