package pprofconv

import (
	"fmt"
	"os"
	"path/filepath"

	pprof "github.com/google/pprof/profile"
)

// FileName returns the name of the file that holds the pprof profile of
// the runtime profile name: name.pb.gz, as runtime/pprof names its profiles
// and pprof's own format, gzip-compressed profile.proto.
func FileName(name string) string { return name + ".pb.gz" }

// WriteFile writes p to path in pprof's format (gzip-compressed
// profile.proto), under a temporary name in the same directory that is
// renamed to path once complete: path never holds a partial profile.
func WriteFile(path string, p *pprof.Profile) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err = p.Write(tmp); err != nil {
		return err
	}
	// CreateTemp makes the file private; a profile is meant to be shared.
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PGO returns the profile for profile-guided optimization (go build -pgo)
// made of cpu, a CPU profile Convert merged: the same stacks and values
// without labels, so that the samples of one stack in different spans are
// one sample. The compiler reads the call edges and their weights only, and
// the span labels would make the file several times larger.
func PGO(cpu *pprof.Profile) (*pprof.Profile, error) {
	p := cpu.Copy()
	for _, s := range p.Sample {
		s.Label, s.NumLabel, s.NumUnit = nil, nil, nil
	}
	// Merging a profile with itself alone merges its samples of the same
	// stack and labels.
	m, err := pprof.Merge([]*pprof.Profile{p})
	if err != nil {
		return nil, fmt.Errorf("pgo profile: %w", err)
	}
	return m, nil
}
