package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"
)

// serveWeb serves pprof's web UI for p, named name, from this process at
// addr until ctx is done, and prints its URL, the real port included, to
// stdout. It runs google/pprof's driver in process rather than go tool
// pprof, which the go command compiles on first use (about a minute) and
// which prints a port of 0 as given. No browser is opened: the URL is the
// way in, which also works on a machine without one.
func serveWeb(ctx context.Context, addr, name string, p *pprof.Profile, stdout, stderr io.Writer) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-http %q: want host:port, :port or : (%v)", addr, err)
	}
	if host == "" {
		// As go tool pprof does for ":": this machine only.
		host = "localhost"
	}
	if port == "" {
		port = "0"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("-http %q: %w", addr, err)
	}
	defer ln.Close()
	hostport := net.JoinHostPort(host, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	fmt.Fprintf(stdout, "%s profile in pprof's web UI: http://%s/ui/flamegraph\n", name, hostport)

	local := isLocalhost(host)
	return driver.PProf(&driver.Options{
		Flagset: newDriverFlags([]string{"-http=" + hostport, "-no_browser", "-symbolize=none", name}),
		Fetch:   fetcher{name: name, profile: p},
		UI:      webUI{stderr: stderr},
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			mux := http.NewServeMux()
			ui := http.StripPrefix("/ui", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if local {
					// A UI bound to this machine answers this machine only.
					if h, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || !isLocalhost(h) {
						http.Error(w, "permission denied", http.StatusForbidden)
						return
					}
				}
				h := args.Handlers[r.URL.Path]
				if h == nil {
					http.NotFound(w, r)
					return
				}
				h.ServeHTTP(w, r)
			}))
			mux.Handle("/ui/", ui)
			mux.Handle("/", http.RedirectHandler("/ui/flamegraph", http.StatusTemporaryRedirect))
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				srv.Close()
				<-done
				return nil
			}
		},
	})
}

func isLocalhost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetcher hands the driver the profile already converted.
type fetcher struct {
	name    string
	profile *pprof.Profile
}

// Fetch returns the profile with no source URL: a profile with one counts
// as fetched remotely, which the driver saves a copy of under ~/pprof.
func (f fetcher) Fetch(src string, _, _ time.Duration) (*pprof.Profile, string, error) {
	if src != f.name {
		return nil, "", fmt.Errorf("no profile %q", src)
	}
	return f.profile.Copy(), "", nil
}

// webUI is the driver's UI in web mode: its messages go to stderr (the
// URL, the one line a user needs, is printed to stdout by serveWeb), it
// never reads a terminal and never asks for a browser.
type webUI struct{ stderr io.Writer }

func (u webUI) ReadLine(string) (string, error)   { return "", io.EOF }
func (u webUI) Print(args ...any)                 { u.println(args...) }
func (u webUI) PrintErr(args ...any)              { u.println(args...) }
func (webUI) IsTerminal() bool                    { return false }
func (webUI) WantBrowser() bool                   { return false }
func (webUI) SetAutoComplete(func(string) string) {}

func (u webUI) println(args ...any) {
	msg := fmt.Sprint(args...)
	if strings.HasPrefix(msg, "Serving web UI on ") {
		return // serveWeb printed the URL, with the path that opens the flame graph
	}
	fmt.Fprintln(u.stderr, strings.TrimSuffix(msg, "\n"))
}

// driverFlags is the driver's FlagSet over a fixed command line.
type driverFlags struct {
	*flag.FlagSet
	args  []string
	extra []string
}

func newDriverFlags(args []string) *driverFlags {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &driverFlags{FlagSet: fs, args: args}
}

func (f *driverFlags) StringList(name, def, usage string) *[]*string {
	list := &stringList{def: def}
	f.Var(list, name, usage)
	return &list.values
}

func (f *driverFlags) ExtraUsage() string      { return strings.Join(f.extra, "\n") }
func (f *driverFlags) AddExtraUsage(eu string) { f.extra = append(f.extra, eu) }
func (f *driverFlags) Parse(usage func()) []string {
	if err := f.FlagSet.Parse(f.args); err != nil || f.NArg() == 0 {
		usage()
		return nil
	}
	return f.Args()
}

// stringList is a flag that may be given several times.
type stringList struct {
	def    string
	values []*string
}

func (l *stringList) String() string { return l.def }
func (l *stringList) Set(v string) error {
	l.values = append(l.values, &v)
	return nil
}

var _ driver.FlagSet = (*driverFlags)(nil)
