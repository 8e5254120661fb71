package otlpprofilefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/registry"
	"github.com/pprofotel/profiler/internal/export/report"
)

func init() {
	registry.Register("file", func(ctx context.Context) (registry.Exporter, error) {
		return New(ctx)
	})
}

// File name extensions; package pprofconv reads both.
const (
	extProtobuf = ".pb"
	extJSON     = ".json"
)

// fileTimeLayout has a fixed width, so that names sort in time order.
const fileTimeLayout = "20060102T150405.000000000Z"

// filePrefix starts the name of every file the exporter writes.
const filePrefix = "profiles-"

// ErrShutdown is returned by Export after Shutdown.
var ErrShutdown = errors.New("otlpprofilefile: exporter is shut down")

// Exporter writes each request it is given into a file of its own. Its
// methods are safe for concurrent use.
type Exporter struct {
	cfg      config
	logger   *slog.Logger
	shutdown atomic.Bool
	// lastSize is the size of the last protobuf encoding, the capacity of
	// the next one's buffer.
	lastSize atomic.Int64

	// mu serialises the retention pass and its log state.
	mu                          sync.Mutex
	removedBefore, failedBefore bool
}

// New returns an Exporter configured by opts over the environment variables
// listed in the package documentation, and creates its directory. An
// invalid option, or a directory given by WithDir that cannot be created,
// makes it fail with an error naming the option and its value. ctx is not
// used.
func New(ctx context.Context, opts ...Option) (*Exporter, error) {
	return newExporter(os.Getenv, export.LoggerFromContext(ctx), opts)
}

// newExporter is New reading the environment through getenv and logging
// through logger (nil: slog.Default()).
func newExporter(getenv func(string) string, logger *slog.Logger, opts []Option) (*Exporter, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if logger == nil {
		logger = slog.Default()
	}
	cfg, warnings, err := s.resolve(getenv)
	for _, w := range warnings {
		logger.Warn(w.Error())
	}
	if err != nil {
		return nil, err
	}
	return &Exporter{cfg: cfg, logger: logger}, nil
}

// Dir returns the directory the exporter writes into.
func (e *Exporter) Dir() string { return e.cfg.dir }

// String says where the exporter writes, for logs.
func (e *Exporter) String() string { return "otlpprofilefile: files in " + e.cfg.dir }

// Export writes req into a new file, then removes the oldest files beyond
// the retention bounds, reporting their number to the profiler. It reports
// no bytes sent: the profiler counts the request's protobuf size, whatever
// the format of the file. A failure
// to remove is logged, not returned: the window was written. Export does
// not keep req after it returns.
func (e *Exporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if e.shutdown.Load() {
		return ErrShutdown
	}
	if req == nil {
		return errors.New("otlpprofilefile: nil request")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	ext := extProtobuf
	if e.cfg.json {
		ext = extJSON
		data, err = otlpjson.Marshal(req, true)
	} else {
		n := e.lastSize.Load()
		data, err = otlp.AppendRequest(make([]byte, 0, n+n/8), req)
		if err == nil {
			e.lastSize.Store(int64(len(data)))
		}
	}
	if err != nil {
		return fmt.Errorf("otlpprofilefile: %w", err)
	}
	name := nextFileName(ext)
	if err := writeFileAtomic(filepath.Join(e.cfg.dir, name), data); err != nil {
		return err
	}
	e.prune(ctx, name)
	return nil
}

// Shutdown marks the exporter closed; no file stays open between exports.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.shutdown.Store(true)
	return nil
}

// prune removes the oldest of the exporter's files in the directory, those
// of earlier runs and other processes included, until the rest are within
// the bounds. It never removes written, the file just written, nor the
// newest file: a single window larger than maxBytes stays. What is not a
// regular file named as the exporter names its files is neither counted
// nor removed.
func (e *Exporter) prune(ctx context.Context, written string) {
	if e.cfg.maxFiles == 0 && e.cfg.maxBytes == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	entries, err := os.ReadDir(e.cfg.dir) // sorted by name, so oldest first
	if err != nil {
		e.logRemoved(ctx, 0, 0, err)
		return
	}
	type file struct {
		name string
		size int64
	}
	var files []file
	var total int64
	for _, de := range entries {
		if !de.Type().IsRegular() || !isExportedFileName(de.Name()) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		files = append(files, file{de.Name(), info.Size()})
		total += info.Size()
	}
	over := func(n int) bool {
		return e.cfg.maxFiles > 0 && n > e.cfg.maxFiles || e.cfg.maxBytes > 0 && total > e.cfg.maxBytes
	}
	var removed int
	var freed int64
	var firstErr error
	left := len(files)
	for _, f := range files[:max(len(files)-1, 0)] {
		if !over(left) {
			break
		}
		if f.name == written {
			continue
		}
		err := os.Remove(filepath.Join(e.cfg.dir, f.name))
		switch {
		case err == nil:
			removed++
			freed += f.size
		case errors.Is(err, fs.ErrNotExist):
			// Another process sharing the directory removed it.
		default:
			if firstErr == nil {
				firstErr = err
			}
			continue // it still counts; a newer file goes instead
		}
		left--
		total -= f.size
	}
	if removed > 0 || firstErr != nil {
		e.logRemoved(ctx, removed, freed, firstErr)
	}
}

// logRemoved reports removed files to the profiler and logs them: the
// first removal at Info, as the directory is then full and stays so, the
// later ones at Debug. A failure to remove is a warning the first time,
// then Debug, as it recurs every window. e.mu is held.
func (e *Exporter) logRemoved(ctx context.Context, files int, bytes int64, err error) {
	if files > 0 {
		report.FromContext(ctx).Removed(int64(files))
		level := slog.LevelDebug
		if !e.removedBefore {
			level, e.removedBefore = slog.LevelInfo, true
		}
		e.logger.Log(ctx, level, "otlpprofilefile: oldest profile files removed to keep within the retention bounds",
			"dir", e.cfg.dir, "removed", files, "bytes", bytes,
			"max_files", e.cfg.maxFiles, "max_bytes", e.cfg.maxBytes)
	}
	if err != nil {
		level := slog.LevelDebug
		if !e.failedBefore {
			level, e.failedBefore = slog.LevelWarn, true
		}
		e.logger.Log(ctx, level, "otlpprofilefile: profile file not removed; the directory may exceed its retention bounds",
			"dir", e.cfg.dir, "error", err)
	}
}

// isExportedFileName reports whether name is one nextFileName makes, in
// either format: profiles-<UTC time>-<pid>.pb or .json.
func isExportedFileName(name string) bool {
	rest, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return false
	}
	if r, ok := strings.CutSuffix(rest, extProtobuf); ok {
		rest = r
	} else if r, ok := strings.CutSuffix(rest, extJSON); ok {
		rest = r
	} else {
		return false
	}
	stamp, pid, ok := strings.Cut(rest, "-")
	if !ok || len(stamp) != len(fileTimeLayout) || pid == "" || strings.Trim(pid, "0123456789") != "" {
		return false
	}
	_, err := time.Parse(fileTimeLayout, stamp)
	return err == nil
}

// fileClock hands out strictly increasing times to every exporter of the
// process, so that names stay unique and in write order even when the wall
// clock is coarse or steps back.
var fileClock struct {
	sync.Mutex
	last time.Time
}

func nextFileName(ext string) string {
	fileClock.Lock()
	now := time.Now().UTC().Round(0)
	if !now.After(fileClock.last) {
		now = fileClock.last.Add(time.Nanosecond)
	}
	fileClock.last = now
	fileClock.Unlock()
	return fmt.Sprintf("%s%s-%d%s", filePrefix, now.Format(fileTimeLayout), os.Getpid(), ext)
}

// writeFileAtomic writes data to a temporary file in the target directory
// and renames it into place.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".profiles-*.tmp")
	if err != nil {
		return fmt.Errorf("otlpprofilefile: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("otlpprofilefile: %q: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	// CreateTemp makes the file private; exported profiles are meant to be
	// read by other tools.
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	// Sync before rename: after a crash the name must not point at an
	// empty file.
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
