package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/otlp"
	"github.com/pprofotel/profiler/internal/otlpjson"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
)

// File name extensions written by the file exporter; package pprofconv
// reads them back.
const (
	extProtobuf = ".pb"
	extJSON     = ".json"
)

// fileTimeLayout has fixed width, so names sort in time order.
const fileTimeLayout = "20060102T150405.000000000Z"

// filePrefix starts the name of every file the exporter writes.
const filePrefix = "profiles-"

// The default retention of the file exporter (FileConfig.MaxFiles and
// MaxBytes). A thousand files are 16 h 40 min of windows at the default
// 60 s period: a working day and the night after it, enough to look back
// at an incident or to merge a PGO profile, while a directory left
// unattended no longer grows forever. A window of the default profiles
// takes tens to hundreds of kilobytes, so the count usually binds first;
// the gibibyte caps the disk when windows are large (many goroutines, a
// large heap, the JSON format), at a megabyte a window on average.
const (
	DefaultFileMaxFiles = 1000
	DefaultFileMaxBytes = 1 << 30
)

// fileExporter writes one file per request.
type fileExporter struct {
	dir      string
	json     bool
	maxFiles int
	maxBytes int64
	onRemove func(int, int64, error)
	shutdown atomic.Bool
	size     sizeHint
}

// NewFile returns an exporter that writes each request into its own file in
// cfg.Dir, creating the directory if needed. Files are named
// profiles-<UTC time>-<pid>.pb (or .json) so that they sort in write order
// and two processes sharing the directory never collide. Each file is
// written under a temporary name starting with "." and renamed into place, so
// a reader never sees a partial file. JSON files are indented OTLP/JSON.
// After each write the oldest files of those names are removed to keep
// within cfg.MaxFiles and cfg.MaxBytes.
func NewFile(cfg FileConfig) (Exporter, error) {
	if cfg.Dir == "" {
		return nil, errors.New("file exporter dir is empty")
	}
	if cfg.MaxFiles < 0 || cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("file exporter retention %d files, %d bytes: must not be negative", cfg.MaxFiles, cfg.MaxBytes)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("file exporter dir %q: %w", cfg.Dir, err)
	}
	return &fileExporter{dir: cfg.Dir, json: cfg.JSON,
		maxFiles: cfg.MaxFiles, maxBytes: cfg.MaxBytes, onRemove: cfg.OnRemove}, nil
}

// Export writes req to a new file.
func (e *fileExporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if e.shutdown.Load() {
		return ErrShutdown
	}
	if req == nil {
		return errNilRequest
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	ext := extProtobuf
	if e.json {
		ext = extJSON
		data, err = otlpjson.Marshal(req, true)
	} else {
		data, err = otlp.AppendRequest(e.size.buffer(), req)
		if err == nil {
			e.size.record(data)
		}
	}
	if err != nil {
		return fmt.Errorf("file exporter: %w", err)
	}
	name := nextFileName(ext)
	if err := writeFileAtomic(filepath.Join(e.dir, name), data); err != nil {
		return err
	}
	e.prune(name)
	return nil
}

// prune removes the oldest of the exporter's files in the directory, those
// of earlier runs and other processes included, until the rest are within
// the bounds, and reports what it removed. It never removes written, the
// file just written, nor the newest file: a single window larger than
// maxBytes stays. What is not a regular file named as the exporter names
// its files is neither counted nor removed.
func (e *fileExporter) prune(written string) {
	if e.maxFiles == 0 && e.maxBytes == 0 {
		return
	}
	entries, err := os.ReadDir(e.dir) // sorted by name, so oldest first
	if err != nil {
		e.reportRemoved(0, 0, fmt.Errorf("file exporter retention: %w", err))
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
		return e.maxFiles > 0 && n > e.maxFiles || e.maxBytes > 0 && total > e.maxBytes
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
		err := os.Remove(filepath.Join(e.dir, f.name))
		switch {
		case err == nil:
			removed++
			freed += f.size
		case errors.Is(err, fs.ErrNotExist):
			// Another process sharing the directory removed it.
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("file exporter retention: %w", err)
			}
			continue // it still counts; a newer file goes instead
		}
		left--
		total -= f.size
	}
	if removed > 0 || firstErr != nil {
		e.reportRemoved(removed, freed, firstErr)
	}
}

func (e *fileExporter) reportRemoved(files int, bytes int64, err error) {
	if e.onRemove != nil {
		e.onRemove(files, bytes, err)
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

// Shutdown marks the exporter closed; no file stays open between exports.
func (e *fileExporter) Shutdown(ctx context.Context) error {
	e.shutdown.Store(true)
	return nil
}

// fileClock hands out strictly increasing times to every file exporter of
// the process, so that names stay unique and in write order even when the
// wall clock is coarse or steps back.
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
		return fmt.Errorf("file exporter: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("file exporter %q: %w", path, err)
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
