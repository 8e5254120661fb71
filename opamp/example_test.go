package opamp_test

import (
	"context"
	"log"
	"time"

	"github.com/pprofotel/profiler"
	_ "github.com/pprofotel/profiler/offcpu" // so that a server can turn the off-CPU profile on
	"github.com/pprofotel/profiler/opamp"
)

// A service that lets its OpAMP server turn profiling up during an
// incident, within bounds of its own: off-CPU at most 25 % of the time,
// windows no shorter than 30s, for at most an hour at a time.
func Example() {
	ctx := context.Background()
	p, err := profiler.Start(profiler.WithServiceName("checkout"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(ctx)

	c, err := opamp.Start(ctx, p,
		opamp.WithEndpointURL("wss://opamp.example.com/v1/opamp"),
		opamp.WithHeaders(map[string]string{"Authorization": "Bearer " + "token"}),
		opamp.WithMaxOffCPUDutyCycle(25),
		opamp.WithMinWindow(30*time.Second),
		opamp.WithMaxExpiry(time.Hour),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(ctx)

	// The server now sees the service, its settings and its health, and
	// may send, in the AgentConfigMap under "pprofotel":
	//
	//	{"profiles": ["cpu", "heap", "goroutine", "offcpu"], "offcpu_duty_cycle": 25, "expires_in": "15m"}
}
