// Command pprofotel turns the OTLP profiles that pprofotel exported back
// into pprof profiles, for go tool pprof and its flame graph, and into a
// profile for profile-guided optimization.
//
// Usage:
//
//	pprofotel pprof [flags] PATH...   write one pprof profile per runtime profile
//	pprofotel pgo [flags] PATH...     write a merged CPU profile for go build -pgo
//	pprofotel slow [flags] PATH...    list the slowest requests and where their time went
//
// A PATH is a file the profiler's file exporter wrote (.pb or .json), a file
// the Collector's file exporter wrote (format json: one OTLP/JSON request
// per line; format proto: protobuf requests each preceded by its 4-byte
// length; either compressed with zstd or not), a directory of such files,
// or - for standard input. The format is told by the content, not the file
// name; in a directory, only files ending in .pb, .json or .jsonl are read.
//
// The pprof subcommand writes DIR/cpu.pb.gz, DIR/heap.pb.gz, and so on, each
// holding all the sample types of its runtime profile, the selected windows
// merged. With -http it then serves one of them (-open, cpu by default) in
// pprof's web UI from the command itself, and prints the URL of its flame
// graph; it opens no browser, so it works on a server too:
//
//	go run ./cmd/pprofotel pprof -http=127.0.0.1:0 /tmp/profiles
//	go tool pprof -sample_index=inuse_space pprof/heap.pb.gz
//	go tool pprof -tagfocus span_id=00f067aa0ba902b7 pprof/cpu.pb.gz
//	go tool pprof -tagfocus route=/users/{id} pprof/cpu.pb.gz
//	go tool pprof -top pprof/requests.pb.gz
//
// The route of a request (the label "route") selects its CPU,
// off-CPU and goroutine samples with -tagfocus; DIR/requests.pb.gz holds
// the requests that ended in the selected windows, one frame per route,
// so that -top lists the routes by their requests.
//
// The pgo subcommand writes the merged CPU profile:
//
//	go run ./cmd/pprofotel pgo -o default.pgo /tmp/profiles
//	go build -pgo=default.pgo ./...
//
// The slow subcommand lists the slowest requests of the selected windows,
// from the slow-request profile that comes with the off-CPU one
// (docs/slow-requests.md): for each, its duration, route, trace id and
// span id, and the largest parts of its time, each with the state of its
// goroutine (on_cpu, off_cpu with the wait reason, runnable), the
// innermost function of the application it was in and the
// standard-library call it waited in, its share of the request's
// duration, and how much of it came before the tracer started:
//
//	go run ./cmd/pprofotel slow -n 5 /tmp/profiles
//
// An output file is replaced whole, never left half written; when it is a
// symbolic link, the file it points to is replaced and the link stays.
//
// # Untrusted input
//
// The command reads any file without panicking, hanging or running out of
// memory, and names the file and what is wrong with it when it refuses it:
//
//   - It reads at most 128 MiB (pprofconv.MaxInputSize) from any one input,
//     a file, a file in a directory or standard input, counting input
//     compressed with zstd at its decompressed size. In a directory it
//     reads regular files only (through symbolic links too) and refuses named
//     pipes and devices, without opening a pipe. A request length in the
//     Collector's protobuf output longer than what follows it is refused,
//     naming the file and the offset.
//   - The pprof profiles it builds hold at most 8 units per byte of OTLP
//     input, plus about a million (pprofconv.ExpansionPerByte,
//     pprofconv.ExpansionBase), where a location or a sample value is a
//     unit and a label value 8; the profiler's own windows hold less than
//     one. Converting and writing cost at most 80 bytes a unit, on top of
//     the decoded input, which takes at most 128 times the input's size. In
//     all, the command allocates less than 768 times its input plus 80 MiB
//     (130 to 570 times measured on inputs made to reach the limit).
//   - Windows of one profile with different sample or period types, and
//     values that add up past the int64 maximum, are refused; values below
//     zero are read as zero, with a warning that counts them.
//   - A window read twice (the same profile ids and samples, as in two
//     copies of a file) is converted once; the command says which.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	pprof "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler/pprofconv"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "pprofotel:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage:
  pprofotel pprof [flags] PATH...   write one pprof profile per runtime profile
  pprofotel pgo [flags] PATH...     write a merged CPU profile for go build -pgo
  pprofotel slow [flags] PATH...    list the slowest requests and where their time went

PATH is a file of OTLP profiles requests (protobuf, OTLP/JSON, or what the
Collector's file exporter writes: OTLP/JSON lines, or with format proto
length-prefixed protobuf, compressed with zstd or not), a directory of them,
or - for standard input. Run "pprofotel pprof -h" for the flags.
`

// run runs the command line args, reading "-" from stdin.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no subcommand")
	}
	switch args[0] {
	case "pprof":
		return runPprof(args[1:], stdin, stdout, stderr)
	case "pgo":
		return runPGO(args[1:], stdin, stdout, stderr)
	case "slow":
		return runSlow(args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// selection holds the flags that select windows, shared by both
// subcommands.
type selection struct {
	service, from, to, profiles string
}

func (s *selection) register(fs *flag.FlagSet, profiles bool) {
	fs.StringVar(&s.service, "service", "", "keep the windows of this service.name only")
	fs.StringVar(&s.from, "from", "", "keep the windows that end after this time (RFC 3339, e.g. 2026-11-23T14:05:00Z)")
	fs.StringVar(&s.to, "to", "", "keep the windows that start before this time (RFC 3339)")
	if profiles {
		fs.StringVar(&s.profiles, "profile", "", "comma-separated profiles to write (cpu,heap,goroutine,mutex,block,offcpu,slowrequests,goroutineleak,requests); default all")
	}
}

func (s *selection) filter() (pprofconv.Filter, error) {
	f := pprofconv.Filter{Service: s.service}
	for _, t := range []struct {
		flag, v string
		dst     *time.Time
	}{{"from", s.from, &f.Start}, {"to", s.to, &f.End}} {
		if t.v == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return f, fmt.Errorf("-%s %q: want an RFC 3339 time such as 2026-11-23T14:05:00Z", t.flag, t.v)
		}
		*t.dst = v
	}
	if s.profiles != "" {
		f.Profiles = strings.Split(s.profiles, ",")
	}
	return f, nil
}

// convert parses args with fs, which holds the selection's flags and
// prints usage before them on -h, reads the paths among args and converts
// the windows the flags select, telling stderr what it repaired or left
// out.
func (s *selection) convert(fs *flag.FlagSet, usage string, args []string, stdin io.Reader, stderr io.Writer) (map[string]*pprof.Profile, error) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f, err := s.filter()
	if err != nil {
		return nil, err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		return nil, errors.New("no PATH given: name files or directories of OTLP profiles, or - for standard input")
	}
	var reqs []pprofconv.Request
	for _, path := range paths {
		var r []pprofconv.Request
		var err error
		if path == "-" {
			r, err = pprofconv.Read(stdin, "standard input")
		} else {
			r, err = pprofconv.ReadPath(path)
		}
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r...)
	}
	profiles, report, err := pprofconv.Convert(reqs, f)
	if err != nil {
		return nil, err
	}
	warn(stderr, report)
	if len(profiles) == 0 {
		return nil, fmt.Errorf("no window of %d requests matches the selection", len(reqs))
	}
	return profiles, nil
}

func runPprof(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pprofotel pprof", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "pprof", "directory to write the profiles to, created if needed")
	http := fs.String("http", "", "then serve a profile in pprof's web UI at this address (host:port; \":\" or port 0 picks a free port on localhost) and print its URL; runs until interrupted")
	open := fs.String("open", "cpu", "with -http, the profile to open")
	var sel selection
	sel.register(fs, true)
	profiles, err := sel.convert(fs, "usage: pprofotel pprof [flags] PATH...\n\nWrites DIR/<profile>.pb.gz for each runtime profile in the selected windows, merged.\n\n", args, stdin, stderr)
	if err != nil {
		return err
	}
	if *http != "" && profiles[*open] == nil {
		return fmt.Errorf("-open %s: the selected windows hold no %s profile (they hold %s)", *open, *open, strings.Join(names(profiles), ", "))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, name := range names(profiles) {
		path := filepath.Join(*out, pprofconv.FileName(name))
		if err := pprofconv.WriteFile(path, profiles[name]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", path, describe(profiles[name]))
	}
	if *http == "" {
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveWeb(ctx, *http, *open, profiles[*open], stdout, stderr)
}

func runPGO(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pprofotel pgo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "default.pgo", "file to write the CPU profile to (go build -pgo=auto reads default.pgo in the main package's directory)")
	sel := selection{profiles: "cpu"}
	sel.register(fs, false)
	profiles, err := sel.convert(fs, "usage: pprofotel pgo [flags] PATH...\n\nWrites the CPU samples of the selected windows, merged, for go build -pgo.\n\n", args, stdin, stderr)
	if err != nil {
		return err
	}
	p, err := pprofconv.PGO(profiles["cpu"])
	if err != nil {
		return err
	}
	if err := pprofconv.WriteFile(*out, p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", *out, describe(p))
	return nil
}

// maxDuplicatesListed is how many windows read twice warn prints by name.
const maxDuplicatesListed = 10

// warn prints, once each, what Convert repaired or left out.
func warn(stderr io.Writer, r pprofconv.Report) {
	for i, d := range r.Duplicates {
		if i == maxDuplicatesListed {
			fmt.Fprintf(stderr, "pprofotel: and %d more windows read twice, left out\n", len(r.Duplicates)-i)
			break
		}
		fmt.Fprintf(stderr, "pprofotel: %s: %s window read already from %s (same profile ids and samples): left out\n", d.Source, d.Profile, d.First)
	}
	if r.NegativeValues > 0 {
		fmt.Fprintf(stderr, "pprofotel: warning: %d sample values or periods below zero read as 0: the input was not written by a profiler\n", r.NegativeValues)
	}
}

// names returns the keys of profiles in order.
func names(profiles map[string]*pprof.Profile) []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// describe summarises p: its time span and the total of each sample type.
func describe(p *pprof.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s from %s,", time.Duration(p.DurationNanos).Round(time.Millisecond),
		time.Unix(0, p.TimeNanos).UTC().Format(time.RFC3339))
	for i, st := range p.SampleType {
		var total int64
		for _, s := range p.Sample {
			total += s.Value[i]
		}
		fmt.Fprintf(&b, " %s=%d", st.Type, total)
		if st.Unit != "count" {
			b.WriteString(st.Unit)
		}
	}
	return b.String()
}
