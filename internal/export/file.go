package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// fileExporter writes one file per request.
type fileExporter struct {
	dir      string
	json     bool
	shutdown atomic.Bool
	size     sizeHint
}

// NewFile returns an exporter that writes each request into its own file in
// cfg.Dir, creating the directory if needed. Files are named
// profiles-<UTC time>-<pid>.pb (or .json) so that they sort in write order
// and two processes sharing the directory never collide. Each file is
// written under a temporary name starting with "." and renamed into place, so
// a reader never sees a partial file. JSON files are indented OTLP/JSON.
func NewFile(cfg FileConfig) (Exporter, error) {
	if cfg.Dir == "" {
		return nil, errors.New("file exporter dir is empty")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("file exporter dir %q: %w", cfg.Dir, err)
	}
	return &fileExporter{dir: cfg.Dir, json: cfg.JSON}, nil
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
	return writeFileAtomic(filepath.Join(e.dir, nextFileName(ext)), data)
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
	return fmt.Sprintf("profiles-%s-%d%s", now.Format(fileTimeLayout), os.Getpid(), ext)
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
