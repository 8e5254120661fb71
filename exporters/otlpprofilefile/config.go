package otlpprofilefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pprofotel/profiler/internal/envconfig"
)

// The environment variables New reads; doc.go lists them.
const (
	envDir      = "PPROFOTEL_FILE_DIR"
	envFormat   = "PPROFOTEL_FILE_FORMAT"
	envMaxFiles = "PPROFOTEL_FILE_MAX_FILES"
	envMaxBytes = "PPROFOTEL_FILE_MAX_BYTES"
)

// Defaults.
const (
	// defaultDirName is created under os.TempDir().
	defaultDirName = "pprofotel-profiles"

	// DefaultMaxFiles is the default of WithMaxFiles. A thousand files are
	// 16 h 40 min of windows of a minute: a working day and the night
	// after it, enough to look back at an incident or to merge a PGO
	// profile, while a directory left unattended does not grow forever.
	DefaultMaxFiles = 1000
	// DefaultMaxBytes is the default of WithMaxBytes. A window of the
	// default profiles takes tens to hundreds of kilobytes, so the count
	// usually binds first; the gibibyte caps the disk when windows are
	// large (many goroutines, a large heap, JSON), at a megabyte a window.
	DefaultMaxBytes = 1 << 30
)

// settings collects what the options asked for.
type settings struct {
	dir      *string
	json     *bool
	maxFiles *int
	maxBytes *int64
	errs     []error
}

// config is the resolved configuration.
type config struct {
	dir      string
	json     bool
	maxFiles int
	maxBytes int64
}

// resolve resolves s over the environment seen through getenv, creating
// the directory. It returns the option errors together, and the warnings
// about variables, which New logs once each.
func (s *settings) resolve(getenv func(string) string) (config, []error, error) {
	if len(s.errs) > 0 {
		return config{}, nil, errors.Join(s.errs...)
	}
	env := envconfig.New(getenv, "otlpprofilefile: ")
	cfg := config{maxFiles: DefaultMaxFiles, maxBytes: DefaultMaxBytes}
	switch {
	case s.dir != nil:
		if err := os.MkdirAll(*s.dir, 0o755); err != nil {
			return config{}, nil, fmt.Errorf("otlpprofilefile: WithDir(%s): %w", strconv.Quote(*s.dir), err)
		}
		cfg.dir = *s.dir
	default:
		// A directory the variable names but that cannot be made is the
		// operator's mistake: warned about, and the default serves.
		if v, ok := env.Lookup(envDir); ok {
			if err := os.MkdirAll(v, 0o755); err != nil {
				env.Invalid(envDir, v, err)
			} else {
				cfg.dir = v
			}
		}
		if cfg.dir == "" {
			cfg.dir = filepath.Join(os.TempDir(), defaultDirName)
			if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
				return config{}, env.Warnings(), fmt.Errorf("otlpprofilefile: default directory: %w", err)
			}
		}
	}
	if s.json != nil {
		cfg.json = *s.json
	} else if f, ok := env.Enum("format", []string{"proto", "json"}, envFormat); ok {
		cfg.json = f == "json"
	}
	if s.maxFiles != nil {
		cfg.maxFiles = *s.maxFiles
	} else if n, ok := env.IntAtLeast(envMaxFiles, 0, "must be a whole number of files, 0 for no bound"); ok {
		cfg.maxFiles = n
	}
	if s.maxBytes != nil {
		cfg.maxBytes = *s.maxBytes
	} else if n, ok := env.IntAtLeast(envMaxBytes, 0, "must be a whole number of bytes, 0 for no bound"); ok {
		cfg.maxBytes = int64(n)
	}
	return cfg, env.Warnings(), nil
}
