package pprofconv

import (
	"errors"
	"fmt"
	"io/fs"
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
//
// When path is a symbolic link, WriteFile writes the file it points to, in
// the same way, and the link stays: a default.pgo that links to a profile
// kept elsewhere is updated where it is kept. An existing file keeps its
// permissions; a new one is made readable by all (0644), as a profile is
// meant to be shared. WriteFile refuses a path that is, or links to,
// something other than a regular file (a directory, a device, a pipe), or a
// link whose target does not exist, rather than replace it with a file.
func WriteFile(path string, p *pprof.Profile) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	target, mode, err := writeTarget(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+"-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = p.Write(tmp); err != nil {
		return err
	}
	// CreateTemp makes the file private.
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// writeTarget returns the file WriteFile replaces for path, following
// symbolic links, and the permissions to give it.
func writeTarget(path string) (string, os.FileMode, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, 0o644, nil
	}
	if err != nil {
		return "", 0, err
	}
	target := path
	if info.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return "", 0, fmt.Errorf("a symbolic link whose target cannot be written: %w", err)
		}
		if info, err = os.Stat(target); err != nil {
			return "", 0, err
		}
	}
	if !info.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is %s, not a regular file: refusing to replace it", target, fileKind(info.Mode()))
	}
	return target, info.Mode().Perm(), nil
}

// PGO returns the profile for profile-guided optimization (go build -pgo)
// made of cpu, a CPU profile Convert merged: the same stacks and values
// without labels, so that the samples of one stack in different spans are
// one sample. The compiler reads the call edges and their weights only, and
// the span labels would make the file several times larger.
func PGO(cpu *pprof.Profile) (*pprof.Profile, error) {
	// A shallow copy with samples of their own: Merge reads its sources
	// and builds its result anew, and Copy would encode and decode the
	// whole profile (and panics on what it cannot decode).
	p := pprof.Profile{
		SampleType: cpu.SampleType, DefaultSampleType: cpu.DefaultSampleType,
		Mapping: cpu.Mapping, Location: cpu.Location, Function: cpu.Function,
		PeriodType: cpu.PeriodType, Period: cpu.Period,
		TimeNanos: cpu.TimeNanos, DurationNanos: cpu.DurationNanos,
		Comments: cpu.Comments, DocURL: cpu.DocURL,
		DropFrames: cpu.DropFrames, KeepFrames: cpu.KeepFrames,
	}
	p.Sample = make([]*pprof.Sample, len(cpu.Sample))
	for i, s := range cpu.Sample {
		p.Sample[i] = &pprof.Sample{Location: s.Location, Value: s.Value}
	}
	// Merging a profile with itself alone merges its samples of the same
	// stack and labels.
	m, err := pprof.Merge([]*pprof.Profile{&p})
	if err != nil {
		return nil, fmt.Errorf("pgo profile: %w", err)
	}
	return m, nil
}
