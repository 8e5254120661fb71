package otlpprofilefile

import (
	"fmt"
	"strconv"
)

// Option configures an Exporter.
type Option interface {
	apply(*settings)
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// WithDir sets the directory the files are written into; it is created,
// with its parents, if missing, and New fails when it cannot be. It takes
// precedence over PPROFOTEL_FILE_DIR.
func WithDir(dir string) Option {
	return optionFunc(func(s *settings) {
		if dir == "" {
			s.fail("WithDir", strconv.Quote(dir), "directory must not be empty")
			return
		}
		s.dir = &dir
	})
}

// WithJSON writes indented OTLP/JSON files (.json) in place of protobuf
// (.pb). OTLP/JSON spells trace, span and profile ids in hex, as the OTLP
// specification asks. It takes precedence over PPROFOTEL_FILE_FORMAT.
func WithJSON() Option {
	return optionFunc(func(s *settings) {
		json := true
		s.json = &json
	})
}

// WithMaxFiles bounds the number of the exporter's files in the directory:
// after each write the oldest are removed until at most n remain. The
// newest file always stays. 0 sets no bound. The default, 1000 files, is
// 16 h 40 min of windows of a minute. It takes precedence over
// PPROFOTEL_FILE_MAX_FILES.
func WithMaxFiles(n int) Option {
	return optionFunc(func(s *settings) {
		if n < 0 {
			s.fail("WithMaxFiles", n, "bound must not be negative (0: no bound)")
			return
		}
		s.maxFiles = &n
	})
}

// WithMaxBytes bounds the summed size of the exporter's files in the
// directory: after each write the oldest are removed until they take at
// most n bytes. The newest file always stays, even when it alone is larger.
// 0 sets no bound. The default, 1 GiB, caps the disk when windows are large.
// It takes precedence over PPROFOTEL_FILE_MAX_BYTES.
func WithMaxBytes(n int64) Option {
	return optionFunc(func(s *settings) {
		if n < 0 {
			s.fail("WithMaxBytes", n, "bound must not be negative (0: no bound)")
			return
		}
		s.maxBytes = &n
	})
}

// fail records that option was given value, refused for reason.
func (s *settings) fail(option string, value any, reason string) {
	s.errs = append(s.errs, fmt.Errorf("otlpprofilefile: %s(%v): %s", option, value, reason))
}
