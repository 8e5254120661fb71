package opamp

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/control"
)

// TestProfileNamesAsTheServerSpells: profile types spelt otherwise than
// the profiler spells them (another case, twice, two in one entry) are
// applied by a real profiler, reported APPLIED, and the effective
// configuration is reported again with the profiler's names.
func TestProfileNamesAsTheServerSpells(t *testing.T) {
	for _, tt := range []struct{ profiles, want string }{
		{`["CPU","block"]`, "[cpu block]"},
		{`["heap","heap"]`, "[heap]"},
		{`["goroutine,mutex"]`, "[goroutine mutex]"},
	} {
		t.Run(tt.profiles, func(t *testing.T) {
			p, err := profiler.Start(profiler.WithExporter(nopExporter{}), profiler.WithWindow(time.Second),
				profiler.WithProfileTypes(profiler.GoroutineProfile), profiler.WithProcessContext(false))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop(context.Background())
			target, ok := control.Lookup(p)
			if !ok {
				t.Fatal("no control target")
			}
			cfg, err := newConfig([]Option{WithLogger(slog.New(slog.DiscardHandler)), WithMinWindow(time.Second)},
				func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			c := newClient(cfg, target, p.Stats)
			fake := &fakeOpAMP{statuses: make(chan *protobufs.RemoteConfigStatus, 10), effective: make(chan struct{}, 10)}
			c.opamp = fake
			go c.run()
			defer c.Shutdown(context.Background())

			c.offer(remoteConfig("h", `{"profiles":`+tt.profiles+`}`))
			for _, want := range []protobufs.RemoteConfigStatuses{
				protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING,
				protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED,
			} {
				select {
				case s := <-fake.statuses:
					if s.Status != want {
						t.Fatalf("status %v %q, want %v", s.Status, s.ErrorMessage, want)
					}
				case <-time.After(time.Minute): // a deadline: the boundary comes within a second
					t.Fatalf("no status %v within a minute", want)
				}
			}
			<-fake.effective
			doc, _ := effectiveDocument(t, c)
			if got := fmt.Sprint(doc["profiles"]); got != tt.want {
				t.Errorf("effective profiles %s, want %s", got, tt.want)
			}
		})
	}
}
