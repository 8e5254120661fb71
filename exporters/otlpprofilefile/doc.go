// Package otlpprofilefile writes profiles into files, one OTLP profiles
// request (ExportProfilesServiceRequest) per window, as protobuf or as
// indented OTLP/JSON. The command cmd/pprofotel and package pprofconv read
// them back and turn them into pprof and PGO profiles.
//
// The profiles signal of OpenTelemetry is Alpha (v1development): the
// requests this package writes change with the protocol, and so may its API.
//
// Files are named profiles-<UTC time>-<pid>.pb (or .json), so that they sort
// in the order they were written and processes sharing a directory never
// collide. Each is written under a temporary name starting with "." and
// renamed into place: a reader never sees a partial file. After each write
// the oldest files of those names, those of earlier runs and other processes
// included, are removed until at most WithMaxFiles of them remain, taking at
// most WithMaxBytes in all; nothing else in the directory is counted or
// touched. The profiler counts the files removed (Stats.FilesRemoved). The
// first removal is logged at Info through slog.Default(), as the directory
// is then full and stays so, the later ones at Debug; a file that cannot be
// removed is a warning the first time, then Debug.
//
// Importing this package registers it under the name "file", which
// OTEL_PROFILES_EXPORTER=file selects when the profiler is started without
// an exporter (see package autoexport).
//
// # Environment variables
//
// New reads the following variables; an option wins over its variable. An
// invalid value is logged once, as a warning through slog.Default(), and
// ignored.
//
//   - PPROFOTEL_FILE_DIR: the directory, created if missing. A directory
//     that cannot be created is warned about and the default is used.
//     Default: "pprofotel-profiles" under os.TempDir(). Option: WithDir.
//   - PPROFOTEL_FILE_FORMAT: "proto" or "json". Default: proto. Option:
//     WithJSON.
//   - PPROFOTEL_FILE_MAX_FILES: the most files kept, 0 for no bound.
//     Default: 1000. Option: WithMaxFiles.
//   - PPROFOTEL_FILE_MAX_BYTES: the most bytes the files take in all, 0 for
//     no bound. Default: 1 GiB. Option: WithMaxBytes.
package otlpprofilefile
