package labels

// Option configures the wrapper made by WrapTracerProvider.
type Option interface {
	apply(*config)
}

// config holds the choices made with Options.
type config struct {
	localRootsOnly bool
	// pyroscopeProfileID sets PyroscopeProfileIDKey on local roots.
	pyroscopeProfileID bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithLocalRootSpansOnly labels only local root spans: spans that have no
// parent span in this process. Their descendants in the process run with
// the root's labels. Without this option every sampled span is labelled.
func WithLocalRootSpansOnly() Option {
	return optionFunc(func(c *config) { c.localRootsOnly = true })
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}
