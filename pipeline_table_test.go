package profiler

import (
	"context"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/delivery"
	"github.com/pprofotel/profiler/internal/export"
)

// TestExporterTable checks that every exporter kind is one row of the
// table, that the kinds accepted and named in messages are the table's, and
// that each row builds a pipeline that shuts down cleanly.
func TestExporterTable(t *testing.T) {
	want := []string{"otlp", "file", "none", "splunk"}
	if got := exporterNames(); !slices.Equal(got, want) {
		t.Fatalf("exporterNames() = %q, want %q", got, want)
	}
	for _, name := range want {
		if !ExporterKind(name).valid() {
			t.Errorf("%q is not valid", name)
		}
		c, err := newConfig([]Option{WithExporter(ExporterKind(name)), WithFileDir(t.TempDir())}, envOf(nil))
		if err != nil {
			t.Fatal(err)
		}
		pipe, err := newPipeline(c, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := pipe.shutdown(context.Background()); err != nil {
			t.Errorf("%s: shutdown: %v", name, err)
		}
	}
	if !grpcOnly(ExporterSplunk) || grpcOnly(ExporterOTLP) {
		t.Error("only the Splunk exporter is gRPC-only")
	}
}

// TestRetryConfigDocNamesTheRetryableCodes derives the list of retryable
// gRPC codes and HTTP statuses in RetryConfig's documentation from the
// classification itself (export.Retryable), so that the list lives in one
// place, the code, and the documentation cannot drift from it.
func TestRetryConfigDocNamesTheRetryableCodes(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := doc.NewFromFiles(fset, []*ast.File{f}, "github.com/pprofotel/profiler")
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, typ := range pkg.Types {
		if typ.Name == "RetryConfig" {
			text = typ.Doc
		}
	}
	if text == "" {
		t.Fatal("RetryConfig has no documentation")
	}
	words := regexp.MustCompile(`[A-Z_]{4,}|\b\d{3}\b`).FindAllString(text, -1)
	named := func(w string) bool { return slices.Contains(words, w) }

	withInfo, _ := status.New(codes.ResourceExhausted, "").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(0)})
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		name := strings.ToUpper(regexp.MustCompile(`([a-z])([A-Z])`).ReplaceAllString(c.String(), "${1}_$2"))
		if c == codes.Canceled {
			name = "CANCELLED" // as the OTLP specification spells it
		}
		retry, _ := export.Retryable(&export.ExportError{Protocol: export.ProtocolGRPC, Status: status.New(c, "")})
		if c == codes.ResourceExhausted {
			retry, _ = export.Retryable(&export.ExportError{Protocol: export.ProtocolGRPC, Status: withInfo})
		}
		if retry != named(name) {
			t.Errorf("gRPC %s: retryable %v, named in RetryConfig's documentation %v", name, retry, named(name))
		}
	}
	for code := 400; code < 600; code++ {
		retry, _ := export.Retryable(&export.ExportError{Protocol: export.ProtocolHTTPProtobuf, StatusCode: code})
		if s := strconv.Itoa(code); retry != named(s) && http.StatusText(code) != "" {
			t.Errorf("HTTP %d: retryable %v, named in RetryConfig's documentation %v", code, retry, named(s))
		}
	}
}

// TestEmptyWindowSendsNothing checks that a window without a profile (one
// between two reads of the goroutine-leak profile, when it is the only type
// asked for) is not queued: its request would hold the resource alone.
func TestEmptyWindowSendsNothing(t *testing.T) {
	for _, name := range []string{"otlp", "file", "splunk"} {
		t.Run(name, func(t *testing.T) {
			c, err := newConfig([]Option{WithExporter(ExporterKind(name)), WithFileDir(t.TempDir())}, envOf(nil))
			if err != nil {
				t.Fatal(err)
			}
			var stats delivery.Outcomes
			pipe, err := newPipeline(c, &stats, nil)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			queued, _, err := pipe.send(collect.Window{Start: now.Add(-time.Minute), End: now})
			if queued || err != nil {
				t.Errorf("send of an empty window = %v, %v; want false, nil", queued, err)
			}
			if err := pipe.shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if got := stats.Exported.Load() + stats.Failed.Load(); got != 0 {
				t.Errorf("%d windows delivered or failed, want none", got)
			}
		})
	}
}
