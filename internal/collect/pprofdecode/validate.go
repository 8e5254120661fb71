package pprofdecode

import (
	"errors"
	"fmt"
)

// Validate reports whether p is internally consistent: every sample has one
// value per sample type and every location, mapping and function index is
// in range. Profiles returned by Parse and Decoder.Decode are always valid;
// Validate is for profiles built or modified by other code.
func (p *Profile) Validate() error {
	if p == nil {
		return errors.New("profile: nil profile")
	}
	for i, s := range p.Samples {
		if len(s.Values) != len(p.SampleTypes) {
			return fmt.Errorf("profile: sample %d has %d values, want %d (one per sample type)", i, len(s.Values), len(p.SampleTypes))
		}
		for _, li := range s.Locations {
			if li < 0 || int(li) >= len(p.Locations) {
				return fmt.Errorf("profile: sample %d references location index %d, want [0,%d)", i, li, len(p.Locations))
			}
		}
	}
	for i, loc := range p.Locations {
		if loc.Mapping < -1 || int(loc.Mapping) >= len(p.Mappings) {
			return fmt.Errorf("profile: location %d references mapping index %d, want -1 or [0,%d)", i, loc.Mapping, len(p.Mappings))
		}
		for j, ln := range loc.Lines {
			if ln.Function < -1 || int(ln.Function) >= len(p.Functions) {
				return fmt.Errorf("profile: location %d line %d references function index %d, want -1 or [0,%d)", i, j, ln.Function, len(p.Functions))
			}
		}
	}
	return nil
}
